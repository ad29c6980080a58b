#include "sim/flow_model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>
#include <utility>

#include "sim/check.h"

namespace podsim::sim {

namespace {

// Relative tolerance when deciding whether a resource is saturated or a flow's rate is the
// largest on a resource. Rates come out of sums and divisions of doubles, so exact equality would
// make the max-min check fail on rounding noise; 1e-9 is far below any modelled effect.
constexpr double kRelativeEpsilon = 1e-9;
// A re-solved rate within this relative distance of the old one keeps the old rate and its
// completion event: rescheduling would change nothing observable.
constexpr double kRateChangeEpsilon = 1e-12;
// SolveSubset finds each level's bottleneck by scanning the shared resources' current shares
// while the scans have read at most this many shares per resource and level of a binary heap of
// them (its height), then by the heap. A scan's comparisons are predictable where the heap's
// sifts are not: on the shared torus of bench/flow_model_bench.cc (142 resources and 25 levels a
// solve on average) 3.82-3.87 k completions/s against 3.16-3.41 k with the heap alone (2026-12-06,
// alternated). The budget adds at most O(n log n) to a solve of n resources, the order of the
// heap's own worst case.
constexpr size_t kScanBudgetPerSift = 8;
// Feasibility slack for the invariant check on resource usage.
constexpr double kFeasibilitySlack = 1e-6;

std::string Describe(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

}  // namespace

FlowModel::FlowModel(Engine* engine) : engine_(engine) {
  PODSIM_CHECK(engine_ != nullptr) << "FlowModel needs an engine";
}

StatusOr<ResourceId> FlowModel::AddResource(double capacity_bytes_per_s) {
  if (!(std::isfinite(capacity_bytes_per_s) && capacity_bytes_per_s > 0)) {
    return Status::InvalidArgument("resource capacity must be finite and > 0 bytes/s (got " +
                                   Describe(capacity_bytes_per_s) + ")");
  }
  resources_.push_back(Resource{capacity_bytes_per_s, 0, 0, {}});
  tags_.emplace_back();
  resource_dirty_.push_back(0);
  resource_solving_.push_back(0);
  residual_.push_back(0);
  unfixed_.push_back(0);
  unfixed_weight_.push_back(0);
  return ResourceId{static_cast<uint32_t>(resources_.size() - 1)};
}

double FlowModel::capacity(ResourceId resource) const {
  PODSIM_CHECK(resource.value < resources_.size()) << "unknown resource " << resource.value;
  return resources_[resource.value].capacity;
}

double FlowModel::usage(ResourceId resource) const {
  PODSIM_CHECK(resource.value < resources_.size()) << "unknown resource " << resource.value;
  return resources_[resource.value].usage;
}

size_t FlowModel::flow_count(ResourceId resource) const {
  PODSIM_CHECK(resource.value < resources_.size()) << "unknown resource " << resource.value;
  return resources_[resource.value].flows.size();
}

bool FlowModel::exists(FlowId flow) const {
  return flow.valid() && flow.slot < flows_.size() && flows_[flow.slot].live &&
         flows_[flow.slot].generation == flow.generation;
}

double FlowModel::rate(FlowId flow) const {
  PODSIM_CHECK(exists(flow)) << "rate() of a flow that does not exist";
  return flows_[flow.slot].rate;
}

void FlowModel::AddObserver(FlowObserver* observer) {
  PODSIM_CHECK(observer != nullptr) << "null observer";
  observers_.push_back(observer);
  if (observer->WantsFlowUsage()) usage_observers_.push_back(observer);
}

void FlowModel::EchoUsage(ResourceId resource, double used_bytes_per_s) {
  PODSIM_CHECK(resource.value < resources_.size()) << "unknown resource " << resource.value;
  PODSIM_CHECK(tags_[resource.value].held_until_ps >= Now().picoseconds())
      << "usage echoed on resource " << resource.value << ", which is not held";
  for (FlowObserver* observer : observers_) {
    observer->OnUsageEchoed(Now(), resource, used_bytes_per_s);
  }
}

bool FlowModel::Unused(std::span<const ResourceId> resources) const {
  PODSIM_CHECK(tracking_) << "waiting flows are counted only once holds are in use";
  const int64_t now_ps = Now().picoseconds();
  for (ResourceId r : resources) {
    PODSIM_CHECK(r.value < resources_.size()) << "unknown resource " << r.value;
    const Tags& tags = tags_[r.value];
    if (!resources_[r.value].flows.empty() || tags.waiting > 0 || tags.held_until_ps > now_ps) {
      return false;
    }
  }
  return true;
}

void FlowModel::Hold(std::span<const ResourceId> resources, Time until, uint32_t owner) {
  PODSIM_CHECK(until > Now()) << "a hold must end after now";
  PODSIM_CHECK(tracking_) << "a hold without an intrusion handler";
  PODSIM_CHECK(Unused(resources)) << "holding resources in use";
  const uint32_t cls = InfoOf(owner).cls;
  for (ResourceId r : resources) {
    tags_[r.value].held_until_ps = until.picoseconds();
    tags_[r.value].hold_owner = owner;
    NoteUse(tags_[r.value], cls);
  }
}

void FlowModel::Track() {
  if (tracking_) return;
  PODSIM_CHECK(flows_.empty()) << "owners, holds and shared resources come before any flow";
  tracking_ = true;
}

void FlowModel::SetOwner(uint32_t owner, uint32_t group, uint32_t cls) {
  PODSIM_CHECK(owner > 0 && group > 0) << "owners and groups are > 0";
  Track();
  if (owner >= owners_.size()) owners_.resize(owner + 1);
  owners_[owner] = OwnerInfo{group, cls};
  if (group >= group_contended_.size()) group_contended_.resize(group + 1, 0);
}

void FlowModel::MarkShared(ResourceId resource) {
  PODSIM_CHECK(resource.value < resources_.size()) << "unknown resource " << resource.value;
  Track();
  tags_[resource.value].shared = true;
}

bool FlowModel::UsedOnlyBy(std::span<const ResourceId> resources, uint32_t cls) const {
  for (ResourceId r : resources) {
    PODSIM_CHECK(r.value < resources_.size()) << "unknown resource " << r.value;
    const Tags& tags = tags_[r.value];
    if (tags.shared || tags.mixed_use || (tags.used_by != 0 && tags.used_by != cls + 1)) {
      return false;
    }
  }
  return true;
}

StatusOr<FlowId> FlowModel::StartFlow(const FlowSpec& spec, FlowCallback&& on_done) {
  if (!(std::isfinite(spec.bytes) && spec.bytes >= 0)) {
    return Status::InvalidArgument("flow size must be finite and >= 0 bytes (got " +
                                   Describe(spec.bytes) + ")");
  }
  if (spec.latency < Time::Zero()) {
    return Status::InvalidArgument("flow latency must be >= 0 (got " + spec.latency.ToString() +
                                   ")");
  }
  if (!(spec.max_rate_bytes_per_s > 0)) {
    return Status::InvalidArgument("flow rate bound must be > 0 bytes/s (got " +
                                   Describe(spec.max_rate_bytes_per_s) + ")");
  }
  if (spec.route.empty() && std::isinf(spec.max_rate_bytes_per_s) && spec.bytes > 0) {
    return Status::InvalidArgument(
        "a flow with an empty route needs a finite rate bound, or it would move its bytes in no "
        "time");
  }
  if (!spec.weights.empty()) {
    if (spec.weights.size() != spec.route.size()) {
      return Status::InvalidArgument("flow has " + std::to_string(spec.weights.size()) +
                                     " weights for a route of " +
                                     std::to_string(spec.route.size()) + " resources");
    }
    for (double weight : spec.weights) {
      if (!(std::isfinite(weight) && weight > 0)) {
        return Status::InvalidArgument("flow weight must be finite and > 0 (got " +
                                       Describe(weight) + ")");
      }
    }
  }
  // A repeated resource: pairwise on short routes, which then read no per-resource state.
  constexpr size_t kPairwiseRoute = 8;
  if (spec.route.size() > kPairwiseRoute) ++solve_stamp_;
  for (size_t i = 0; i < spec.route.size(); ++i) {
    const uint32_t r = spec.route[i].value;
    PODSIM_CHECK(r < resources_.size()) << "route names unknown resource " << r;
    if (spec.route.size() <= kPairwiseRoute) {
      for (size_t j = 0; j < i; ++j) {
        PODSIM_CHECK(spec.route[j].value != r) << "route crosses resource " << r << " twice";
      }
      continue;
    }
    PODSIM_CHECK(resource_solving_[r] != solve_stamp_)
        << "route crosses resource " << r << " twice";
    resource_solving_[r] = solve_stamp_;
  }

  uint32_t slot;
  if (!free_flows_.empty()) {
    slot = free_flows_.back();
    free_flows_.pop_back();
  } else {
    slot = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
    callbacks_.emplace_back();
    flow_in_set_.push_back(0);
    flow_checked_.push_back(0);
    flow_fixed_.push_back(0);
    flow_previous_rate_.push_back(0);
    solve_bound_.push_back(0);
  }
  Flow& flow = flows_[slot];
  flow.live = true;
  flow.active = false;
  flow.sharing = false;
  flow.waiting = tracking_ && spec.latency != Time::Zero();
  flow.owner = owner_;
  flow.remaining_bytes = spec.bytes;
  flow.rate = 0;
  flow.bound = spec.max_rate_bytes_per_s;
  flow.last_update_ps = Now().picoseconds();
  flow.hops.clear();
  for (size_t i = 0; i < spec.route.size(); ++i) {
    flow.hops.push_back(Hop{spec.route[i].value, 0, spec.weights.empty() ? 1.0 : spec.weights[i]});
  }
  flow.completion = EventId{};
  if (flow.waiting) {
    for (ResourceId r : spec.route) ++tags_[r.value].waiting;
  }
  callbacks_[slot] = std::move(on_done);
  ++live_flows_;

  FlowId id = IdOf(slot);
  for (FlowObserver* observer : observers_) {
    observer->OnFlowStarted(Now(), id, spec.bytes, spec.route, spec.weights);
  }
  if (spec.latency == Time::Zero()) {
    Activate(slot);
  } else {
    ScheduleActivation(Now() + spec.latency, slot);
  }
  return id;
}

void FlowModel::ScheduleActivation(Time at, uint32_t slot) {
  flows_[slot].next_activation = kNoFlow;
  // Once the open chain's event has run, `at` (after now) differs from its time.
  if (at == open_at_ && engine_->scheduled_events() == open_scheduled_) {
    flows_[open_tail_].next_activation = slot;
    open_tail_ = slot;
    return;
  }
  open_at_ = at;
  open_tail_ = slot;
  engine_->ScheduleAt(at, [this, slot] {
    for (uint32_t f = slot; f != kNoFlow;) {
      const uint32_t next = flows_[f].next_activation;
      Activate(f);
      f = next;
    }
  });
  open_scheduled_ = engine_->scheduled_events();
}

void FlowModel::Activate(uint32_t slot) {
  Flow& flow = flows_[slot];
  flow.active = true;
  flow.last_update_ps = Now().picoseconds();
  if (flow.waiting) {
    flow.waiting = false;
    for (const Hop& hop : flow.hops) --tags_[hop.resource].waiting;
  }
  if (flow.remaining_bytes == 0) {
    // Completion is always an event, never a call from inside StartFlow.
    flow.completion = engine_->Schedule(Time::Zero(), [this, slot] { Complete(slot); });
    return;
  }
  if (flow.hops.empty()) {
    flow.rate = flow.bound;
    for (FlowObserver* observer : observers_)
      observer->OnFlowRateChanged(Now(), IdOf(slot), flow.rate);
    ScheduleCompletion(slot);
    return;
  }
  flow.sharing = true;
  const uint32_t cls = InfoOf(flow.owner).cls;
  bool crosses_shared = false;
  for (uint32_t h = 0; h < flow.hops.size(); ++h) {
    Hop& hop = flow.hops[h];
    Resource& resource = resources_[hop.resource];
    // Not dirty: an arriving flow has rate 0 until its set is solved, which leaves usage and the
    // largest rate as they were, and its resources are the solve's, refreshed after it.
    hop.position = static_cast<uint32_t>(resource.flows.size());
    if (!tracking_) {
      resource.flows.push_back(FlowRef{slot, h, hop.weight});
      continue;
    }
    Tags& tags = tags_[hop.resource];
    if (tags.held_until_ps > flow.last_update_ps && on_intrusion_) on_intrusion_(tags.hold_owner);
    if (tags.shared) {
      // Held only by replays its owners' past does not decide (collective_network.h, "Expected
      // users"): who uses it does not matter, only that this flow does.
      crosses_shared = true;
    } else if (resource.flows.empty()) {
      NoteUse(tags, cls);
      tags.owner = flow.owner;
      tags.owner_flows = 1;
    } else {
      NoteUse(tags, cls);
      if (tags.owner != flow.owner || flow.owner == 0) {
        Contend(flow.owner);
        Contend(tags.owner);
      }
      if (tags.owner == flow.owner) ++tags.owner_flows;
    }
    resource.flows.push_back(FlowRef{slot, h, hop.weight});
  }
  if (crosses_shared) Contend(flow.owner);
  AddToSolveSet(slot);
  RequestReallocation();
}

void FlowModel::Complete(uint32_t slot) {
  Flow& flow = flows_[slot];
  PODSIM_CHECK(flow.live && flow.active)
      << "completion of flow slot " << slot << " that is not active";
  if (flow.sharing) {
    for (const Hop& hop : flow.hops) {
      Resource& resource = resources_[hop.resource];
      FlowRef moved = resource.flows.back();
      resource.flows[hop.position] = moved;
      flows_[moved.flow].hops[moved.hop].position = hop.position;
      resource.flows.pop_back();
      MarkDirty(hop.resource);
      if (!tracking_) continue;
      Tags& tags = tags_[hop.resource];
      if (!tags.shared && flow.owner == tags.owner && --tags.owner_flows == 0 &&
          !resource.flows.empty()) {
        // The others' owners were reported when they came; count the first one's flows.
        tags.owner = flows_[resource.flows.front().flow].owner;
        for (const FlowRef& ref : resource.flows) {
          tags.owner_flows += flows_[ref.flow].owner == tags.owner ? 1 : 0;
        }
      }
    }
    RequestReallocation();
  }
  FlowId id = IdOf(slot);
  flow.live = false;
  flow.active = false;
  flow.sharing = false;
  flow.rate = 0;
  flow.remaining_bytes = 0;
  flow.completion = EventId{};
  if (++flow.generation == 0) flow.generation = 1;
  --live_flows_;
  ++completed_flows_;
  for (FlowObserver* observer : observers_) observer->OnFlowCompleted(Now(), id);
  // The callback runs in place and the slot is freed after it, so flows it starts take other
  // slots and cannot overwrite the running callback.
  FlowCallback& callback = callbacks_[slot];  // Stays put while the callback grows the deque.
  if (callback) {
    const uint32_t outer = owner_;
    owner_ = flow.owner;  // The flows the callback starts are its owner's.
    callback();
    owner_ = outer;
  }
  callback = nullptr;
  free_flows_.push_back(slot);
}

void FlowModel::RequestReallocation() {
  if (reallocation_pending_) return;
  reallocation_pending_ = true;
  // Runs after every event already due now, so simultaneous arrivals and departures share it.
  engine_->Schedule(Time::Zero(), [this] { Reallocate(); });
}

void FlowModel::MarkDirty(uint32_t resource) {
  if (resource_dirty_[resource] == epoch_) return;
  resource_dirty_[resource] = epoch_;
  dirty_.push_back(resource);
}

void FlowModel::AddToSolveSet(uint32_t flow) {
  flow_in_set_[flow] = epoch_;
  flow_previous_rate_[flow] = flows_[flow].rate;
  solve_set_.push_back(flow);
  ++resolved_flows_;
}

bool FlowModel::RefreshResource(uint32_t r) {
  Resource& resource = resources_[r];
  double usage = 0;
  double max_rate = 0;
  for (const FlowRef& ref : resource.flows) {
    const Flow& flow = flows_[ref.flow];
    usage += flow.rate * ref.weight;
    max_rate = std::max(max_rate, flow.rate);
  }
  PODSIM_CHECK(usage <= resource.capacity * (1 + kFeasibilitySlack))
      << "resource " << r << " over capacity: " << usage << " > " << resource.capacity;
  // A fixed flow's max-min condition can only break where usage fell (a resource may no longer be
  // saturated) or the largest rate rose (the flow may no longer be the largest).
  bool changed = usage < resource.usage || max_rate > resource.max_rate;
  resource.usage = usage;
  resource.max_rate = max_rate;
  return changed;
}

bool FlowModel::MeetsMaxMin(uint32_t f) {
  Flow& flow = flows_[f];
  if (flow.rate >= flow.bound * (1 - kRelativeEpsilon)) return true;
  if (flow.hops.empty()) return false;
  const auto bottleneck = [&](const Hop& hop) {
    const Resource& resource = resources_[hop.resource];
    return resource.usage >= resource.capacity * (1 - kRelativeEpsilon) &&
           flow.rate >= resource.max_rate * (1 - kRelativeEpsilon);
  };
  const size_t hint = flow.bottleneck_hop < flow.hops.size() ? flow.bottleneck_hop : 0;
  if (bottleneck(flow.hops[hint])) return true;
  for (size_t h = 0; h < flow.hops.size(); ++h) {
    if (h != hint && bottleneck(flow.hops[h])) {
      flow.bottleneck_hop = static_cast<uint8_t>(std::min<size_t>(h, UINT8_MAX));
      return true;
    }
  }
  return false;
}

void FlowModel::Reallocate() {
  reallocation_pending_ = false;
  ++reallocations_;
  // The resources flows left (only departures make a resource dirty before the solve).
  for (uint32_t r : dirty_) {
    RefreshResource(r);
    changed_.push_back(r);
  }
  bool solve = !solve_set_.empty();
  while (true) {
    if (solve) {
      SolveSubset();
      for (uint32_t r : solving_resources_) {
        MarkDirty(r);
        if (RefreshResource(r)) changed_.push_back(r);
      }
    }
    if (!ExpandSubset()) break;
    solve = true;
  }
  Commit();
  solve_set_.clear();
  dirty_.clear();
  ++epoch_;
}

bool FlowModel::ExpandSubset() {
  ++check_stamp_;
  bool added = false;
  // A re-solved flow that fails the condition is out-rated by a flow held fixed on the resource
  // that bottlenecked it in the solve, which is saturated: the faster flows of its saturated
  // resources must give way, so they join. (An unsaturated resource holds it back from nothing.)
  // The test is the negation of MeetsMaxMin's, so the fastest flow there always joins.
  size_t solved = solve_set_.size();
  for (size_t i = 0; i < solved; ++i) {
    uint32_t f = solve_set_[i];
    flow_checked_[f] = check_stamp_;
    if (MeetsMaxMin(f)) continue;
    double rate = flows_[f].rate;
    for (const Hop& hop : flows_[f].hops) {
      const Resource& resource = resources_[hop.resource];
      if (resource.usage < resource.capacity * (1 - kRelativeEpsilon)) continue;
      for (const FlowRef& other : resource.flows) {
        uint32_t g = other.flow;
        if (flow_in_set_[g] != epoch_ && rate < flows_[g].rate * (1 - kRelativeEpsilon)) {
          AddToSolveSet(g);
          flow_checked_[g] = check_stamp_;
          added = true;
        }
      }
    }
  }
  // A fixed flow can only fail where the usage or the largest rate of one of its resources
  // changed, so only the flows on those resources are checked.
  for (uint32_t r : changed_) {
    for (const FlowRef& ref : resources_[r].flows) {
      uint32_t f = ref.flow;
      if (flow_checked_[f] == check_stamp_) continue;
      flow_checked_[f] = check_stamp_;
      if (!MeetsMaxMin(f)) {
        AddToSolveSet(f);
        added = true;
      }
    }
  }
  changed_.clear();
  return added;
}

void FlowModel::SolveSubset() {
  ++subset_solves_;
  ++solve_stamp_;
  solving_resources_.clear();
  for (uint32_t f : solve_set_) {
    for (const Hop& hop : flows_[f].hops) {
      uint32_t r = hop.resource;
      if (resource_solving_[r] != solve_stamp_) {
        resource_solving_[r] = solve_stamp_;
        // usage is current for every resource (refreshed whenever a rate on it changes), so
        // the capacity left by the fixed flows is capacity - usage + the set's own rates.
        residual_[r] = resources_[r].capacity - resources_[r].usage;
        unfixed_[r] = 0;
        unfixed_weight_[r] = 0;
        solving_resources_.push_back(r);
      }
      residual_[r] += flows_[f].rate * hop.weight;
      ++unfixed_[r];
      unfixed_weight_[r] += hop.weight;
    }
  }

  // A flow that shares none of its resources with another flow of the set gets the smallest
  // residual over its weight on its route (or its bound) whatever the others get: fix it without
  // the heap. Ring steps, where each link carries one flow, are all of this kind.
  // An unbounded flow with as many flows of the set on each of its resources may be one of a
  // bundle (FixBundle), checked once the lone flows are fixed (which share no resource with it).
  // A resource that carries one flow of the set bounds that flow alone (its residual over the
  // flow's weight there, whatever the others get): it joins the flow's bound (solve_bound_)
  // rather than the share heap below, which then holds only the resources the set's flows share.
  size_t unfixed_flows = solve_set_.size();
  bundle_candidates_.clear();
  bounded_.clear();
  for (uint32_t f : solve_set_) {
    const Flow& flow = flows_[f];
    double rate = flow.bound;
    double bound = flow.bound;
    const uint32_t count = unfixed_[flow.hops[0].resource];
    bool alone = true, even = true;
    for (const Hop& hop : flow.hops) {
      const double own = std::max(residual_[hop.resource], 0.0) / hop.weight;
      alone = alone && unfixed_[hop.resource] == 1;
      even = even && unfixed_[hop.resource] == count;
      rate = std::min(rate, own);
      if (unfixed_[hop.resource] == 1) bound = std::min(bound, own);
    }
    if (alone) {
      Fix(f, rate);
      --unfixed_flows;
      continue;
    }
    solve_bound_[f] = bound;
    if (std::isfinite(bound)) bounded_.push_back(f);
    if (even && !std::isfinite(flow.bound)) bundle_candidates_.push_back(f);
  }
  if (unfixed_flows == 0) return;
  // Unbounded flows that share their whole route with one another and with no other flow of the
  // set (the pieces of a pipeline on one path) get the smallest fair share on it, as the heap
  // below would give them, and without it.
  for (uint32_t f : bundle_candidates_) {
    if (flow_fixed_[f] != solve_stamp_) unfixed_flows -= FixBundle(f);
  }
  if (unfixed_flows == 0) return;

  // The fair shares (residual / unfixed flows' weights) of the resources that two or more
  // unfixed flows of the set share, as a list the scan below reads and then as a min-heap; the
  // other resources bound their flow (solve_bound_, above), and bounded_ holds those flows by
  // bound. Shares only grow as flows get fixed at the current lowest level (in exact arithmetic:
  // a rounding may lower one by an ulp), so an entry's recorded share is a lower bound of the
  // true one: an entry found stale at the heap's top is re-keyed, and Fix() never touches it.
  share_heap_.clear();
  for (uint32_t r : solving_resources_) {
    if (unfixed_[r] < 2) continue;  // Drained, or folded into its flow's bound.
    share_heap_.push_back(ShareEntry{FairShare(r), r});
  }
  // Each level's bottleneck is found by a scan of the current shares, within a budget of about
  // what the heap's sifts would cost, then by the heap (below).
  size_t scan_budget = kScanBudgetPerSift * share_heap_.size() *
                       static_cast<size_t>(std::bit_width(share_heap_.size()));
  bool scan = true;

  std::sort(bounded_.begin(), bounded_.end(), [this](uint32_t a, uint32_t b) {
    return solve_bound_[a] != solve_bound_[b] ? solve_bound_[a] < solve_bound_[b] : a < b;
  });

  size_t next_bounded = 0;
  while (unfixed_flows > 0) {
    while (next_bounded < bounded_.size() && flow_fixed_[bounded_[next_bounded]] == solve_stamp_) {
      ++next_bounded;
    }
    double share = std::numeric_limits<double>::infinity();
    if (scan && share_heap_.size() > scan_budget) {
      // The recorded shares are lower bounds still (shares only grow): the heap takes them.
      scan = false;
      std::make_heap(share_heap_.begin(), share_heap_.end(), ShareEntryAfter());
    }
    if (scan) {
      scan_budget -= share_heap_.size();
      // The lowest current share, then the lowest id (the heap's top, but for shares a rounding
      // lowered below their recorded value: the scan takes the lower one; an entry's
      // place does not matter); drained resources leave the list.
      size_t best = 0;
      for (size_t i = 0; i < share_heap_.size();) {
        const uint32_t r = share_heap_[i].resource;
        if (unfixed_[r] == 0) {
          share_heap_[i] = share_heap_.back();
          share_heap_.pop_back();
          continue;
        }
        const double current = FairShare(r);
        if (current < share || (current == share && r < share_heap_[best].resource)) {
          share = current;
          best = i;
        }
        ++i;
      }
      if (!share_heap_.empty()) std::swap(share_heap_.front(), share_heap_[best]);
    }
    while (!scan && !share_heap_.empty()) {
      ShareEntry& top = share_heap_.front();
      uint32_t r = top.resource;
      double current = unfixed_[r] == 0 ? -1 : FairShare(r);
      if (current >= 0 && current <= top.share) {
        share = current;
        break;
      }
      std::pop_heap(share_heap_.begin(), share_heap_.end(), ShareEntryAfter());
      if (current < 0) {
        share_heap_.pop_back();  // Drained: every flow on it is fixed.
      } else {
        share_heap_.back().share = current;
        std::push_heap(share_heap_.begin(), share_heap_.end(), ShareEntryAfter());
      }
    }
    if (next_bounded < bounded_.size() && solve_bound_[bounded_[next_bounded]] <= share) {
      Fix(bounded_[next_bounded], solve_bound_[bounded_[next_bounded]]);
      --unfixed_flows;
      continue;
    }
    PODSIM_CHECK(!share_heap_.empty()) << unfixed_flows << " flows left without a constraint";
    uint32_t bottleneck = share_heap_.front().resource;
    for (const FlowRef& ref : resources_[bottleneck].flows) {
      if (flow_in_set_[ref.flow] == epoch_ && flow_fixed_[ref.flow] != solve_stamp_) {
        Fix(ref.flow, share);
        --unfixed_flows;
      }
    }
  }
}

size_t FlowModel::FixBundle(uint32_t f) {
  const Flow& flow = flows_[f];
  const uint32_t first = flow.hops[0].resource;
  const uint32_t count = unfixed_[first];
  // Every unfixed flow of the set on the first resource must be unbounded and take f's route
  // with its weights; then, as f meets `count` of them on each resource, they are all there is.
  // (Bounded flows are left to the loop over bounded_, which fixes them one by one at the bound
  // and may round the next one's share a unit in the last place below it.)
  bundle_.clear();
  for (const FlowRef& ref : resources_[first].flows) {
    const uint32_t g = ref.flow;
    if (flow_in_set_[g] != epoch_ || flow_fixed_[g] == solve_stamp_) continue;
    const Flow& other = flows_[g];
    if (std::isfinite(other.bound) || other.hops.size() != flow.hops.size()) return 0;
    for (uint32_t h = 0; h < flow.hops.size(); ++h) {
      if (other.hops[h].resource != flow.hops[h].resource ||
          other.hops[h].weight != flow.hops[h].weight) {
        return 0;
      }
    }
    bundle_.push_back(g);
  }
  PODSIM_CHECK(bundle_.size() == count) << "resource " << first << " counts " << count
                                        << " unfixed flows of the set, holds " << bundle_.size();
  double rate = std::numeric_limits<double>::infinity();
  for (const Hop& hop : flow.hops) rate = std::min(rate, FairShare(hop.resource));
  for (uint32_t g : bundle_) Fix(g, rate);
  return bundle_.size();
}

void FlowModel::Fix(uint32_t f, double rate) {
  flow_fixed_[f] = solve_stamp_;
  flows_[f].rate = rate;
  for (const Hop& hop : flows_[f].hops) {
    residual_[hop.resource] -= rate * hop.weight;
    --unfixed_[hop.resource];
    unfixed_weight_[hop.resource] -= hop.weight;
  }
}

void FlowModel::Commit() {
  int64_t now_ps = Now().picoseconds();
  bool restored = false;
  for (uint32_t f : solve_set_) {
    Flow& flow = flows_[f];
    double previous = flow_previous_rate_[f];
    bool first_allocation = !flow.completion.valid();
    if (!first_allocation && std::fabs(flow.rate - previous) <= kRateChangeEpsilon * previous) {
      flow.rate = previous;
      restored = true;
      continue;
    }
    flow.remaining_bytes -= previous * static_cast<double>(now_ps - flow.last_update_ps) * 1e-12;
    flow.remaining_bytes = std::max(flow.remaining_bytes, 0.0);
    flow.last_update_ps = now_ps;
    engine_->Cancel(flow.completion);
    ScheduleCompletion(f);
    for (FlowObserver* observer : observers_)
      observer->OnFlowRateChanged(Now(), IdOf(f), flow.rate);
  }
  // Usage must match the committed rates whether or not anyone observes it.
  if (restored) {
    for (uint32_t r : dirty_) RefreshResource(r);
  }
  if (!usage_observers_.empty()) {
    for (uint32_t r : dirty_) {
      for (FlowObserver* observer : usage_observers_) {
        observer->OnResourceUsageChanged(Now(), ResourceId{r}, resources_[r].usage);
      }
    }
  }
}

void FlowModel::ScheduleCompletion(uint32_t f) {
  Flow& flow = flows_[f];
  PODSIM_CHECK(flow.rate > 0) << "flow slot " << f << " allocated a zero rate";
  Time duration = Time::FromSecondsCeil(flow.remaining_bytes / flow.rate);
  flow.completion = engine_->Schedule(duration, [this, f] { Complete(f); });
}

}  // namespace podsim::sim
