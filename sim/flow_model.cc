#include "sim/flow_model.h"

#include <algorithm>
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
// The sweep's order within a tie: levels that rounding may have split (a departed flow's rate and
// the rates of the flows it shared a bottleneck with) must follow a resource from the tie before
// any of its flows is frozen at its old rate there. Departures are followed from their rate less
// kRelativeEpsilon, and flows reach their old rate at it plus kTieOrder, which puts that event
// after every level within kRelativeEpsilon below it.
constexpr double kTieOrder = 4 * kRelativeEpsilon;
// Feasibility slack for the invariant check on resource usage.
constexpr double kFeasibilitySlack = 1e-6;
// A resource no flow is held by is watched instead of followed (header comment, "Watched
// resources") only with at least this share of its capacity spare: the flows a change speeds
// up would often fill a resource with less, and the sweep would run again. A speed choice, not
// an accuracy one (the rates are the same); on BM_SharedTorus, two runs each: 0: 14.5-14.6 k
// completions/s, 0.01: 16.1-16.3 k, 0.02: 15.7-16.1 k, 0.05: 14.9-15.4 k, 0.1: 13.8 k.
constexpr double kWatchSpare = 0.02;
// Sweeps of one reallocation that may watch resources: the first, and one more that follows the
// resources the first found over capacity; the next follows every resource the change reaches.
// On BM_SharedTorus 15.7-16.1 k completions/s, against 14.7-15.4 k with one and 15.7-16.3 k
// with three or four.
constexpr int kWatchingSweeps = 2;
// WatchedFit sums a watched resource's flows where its usage, as a sum of changes, comes within
// this share of its capacity: far above that sum's rounding (a few 1e-16 of the capacity for each
// term, kMaxEstimatedCommits commits at most), far below any share a change moves.
constexpr double kEstimateMargin = 1e-6;
constexpr uint32_t kMaxEstimatedCommits = 1024;

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
  resources_.push_back(Resource{capacity_bytes_per_s, 0, {}, 0});
  tags_.emplace_back();
  resource_dirty_.push_back(0);
  watched_slot_.push_back(0);
  held_.push_back(0);
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
  return SummedUsage(resource.value);
}

double FlowModel::kept_usage(ResourceId resource) const {
  PODSIM_CHECK(resource.value < resources_.size()) << "unknown resource " << resource.value;
  return resources_[resource.value].usage;
}

double FlowModel::SummedUsage(uint32_t r) const {
  double usage = 0;
  for (const FlowRef& ref : resources_[r].flows) usage += flows_[ref.flow].rate * ref.weight;
  return usage;
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
    flow_changed_.push_back(0);
    flow_fixed_.push_back(0);
    flow_previous_rate_.push_back(0);
    flow_previous_bottleneck_.push_back(kNoBottleneck);
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
  flow.bottleneck = kNoBottleneck;
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
  arrivals_.push_back(slot);
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
      departures_.push_back(Departure{hop.resource, flow.rate, hop.weight});
      if (flow.bottleneck == hop.resource) --held_[hop.resource];
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

void FlowModel::Join(uint32_t flow, uint32_t scanned) {
  Flow& joining = flows_[flow];
  flow_in_set_[flow] = epoch_;
  flow_previous_rate_[flow] = joining.rate;
  flow_previous_bottleneck_[flow] = joining.bottleneck;
  region_.push_back(flow);
  ++resolved_flows_;
  if (std::isfinite(joining.bound)) PushEvent(joining.bound, EventKind::kBound, flow);
  // A resource followed already counted the flow at its rate, as slower than the level it was
  // followed from: the level a tie's rounding puts a little above the one the flow joins at now
  // (a flow's old-rate event runs after its level). It now counts the flow as unfrozen. No
  // resource did unless one was followed from a level above the flow's rate.
  if (!(joining.rate < highest_followed_level_ * (1 - kRelativeEpsilon))) return;
  for (const Hop& hop : joining.hops) {
    const uint32_t r = hop.resource;
    if (r == scanned || resource_dirty_[r] != epoch_) continue;
    residual_[r] += joining.rate * hop.weight;
    ++unfixed_[r];
    unfixed_weight_[r] += hop.weight;
    PushEvent(FairShare(r), EventKind::kSaturation, r);
  }
}

bool FlowModel::MakeDirty(uint32_t r, double level, bool schedule) {
  if (resource_dirty_[r] == epoch_) return false;
  resource_dirty_[r] = epoch_;
  dirty_.push_back(r);
  highest_followed_level_ = std::max(highest_followed_level_, level);
  const Resource& resource = resources_[r];
  double residual = resource.capacity;
  uint32_t unfrozen = 0;
  double weight = 0;
  for (const FlowRef& ref : resource.flows) {
    const uint32_t g = ref.flow;
    const Flow& flow = flows_[g];
    if (flow_in_set_[g] == epoch_) {
      if (flow_fixed_[g] == epoch_) {
        residual -= flow.rate * ref.weight;  // Frozen in this sweep at its new rate.
      } else {
        ++unfrozen;
        weight += ref.weight;
      }
    } else if (flow.rate < level * (1 - kRelativeEpsilon)) {
      // Below the level the change reached: its rate cannot change (header comment).
      residual -= flow.rate * ref.weight;
    } else {
      Join(g, r);
      ++unfrozen;
      weight += ref.weight;
      PushEvent(flow.rate * (1 + kTieOrder), EventKind::kOldRate, g);
    }
  }
  residual_[r] = residual;
  unfixed_[r] = unfrozen;
  unfixed_weight_[r] = weight;
  if (schedule && unfrozen > 0) PushEvent(FairShare(r), EventKind::kSaturation, r);
  return true;
}

void FlowModel::MarkChanged(uint32_t flow, double level, double change) {
  if (flow_changed_[flow] == epoch_) return;
  flow_changed_[flow] = epoch_;
  for (const Hop& hop : flows_[flow].hops) {
    if (resource_dirty_[hop.resource] == epoch_) continue;  // Followed already.
    if (Watch(hop.resource)) {
      watched_[watched_slot_[hop.resource]].usage += change * hop.weight;
    } else {
      MakeDirty(hop.resource, level);
    }
  }
}

void FlowModel::AddChange(uint32_t flow, double change) {
  const uint64_t watched = epoch_ | kWatchedMark;
  for (const Hop& hop : flows_[flow].hops) {
    if (resource_dirty_[hop.resource] == watched) {
      watched_[watched_slot_[hop.resource]].usage += change * hop.weight;
    }
  }
}

bool FlowModel::Watch(uint32_t r) {
  const uint64_t watched = epoch_ | kWatchedMark;
  if (resource_dirty_[r] == watched) return true;
  const Resource& resource = resources_[r];
  if (!watching_ || held_[r] != 0 || resource_dirty_[r] == epoch_ ||
      resource.usage > resource.capacity * (1 - kWatchSpare) ||
      std::find(to_follow_.begin(), to_follow_.end(), r) != to_follow_.end()) {
    return false;
  }
  resource_dirty_[r] = watched;
  watched_slot_[r] = static_cast<uint32_t>(watched_.size());
  const bool must_sum = resource.estimated_commits >= kMaxEstimatedCommits;
  watched_.push_back(Watched{r, false, resource.usage,
                             must_sum ? -std::numeric_limits<double>::infinity()
                                      : resource.capacity * (1 - kEstimateMargin)});
  return true;
}

void FlowModel::Freeze(uint32_t f, double rate, uint32_t bottleneck) {
  Flow& flow = flows_[f];
  flow_fixed_[f] = epoch_;
  flow.rate = rate;
  flow.bottleneck = bottleneck;
  for (const Hop& hop : flow.hops) {
    if (resource_dirty_[hop.resource] != epoch_) continue;
    residual_[hop.resource] -= rate * hop.weight;
    --unfixed_[hop.resource];
    unfixed_weight_[hop.resource] -= hop.weight;
  }
  const double previous = flow_previous_rate_[f];
  if (std::fabs(rate - previous) > kRateChangeEpsilon * previous || previous == 0) {
    if (flow_changed_[f] != epoch_) {
      MarkChanged(f, rate, rate - previous);
    } else if (previous > 0) {  // An arriving flow (rate 0 before) crosses no watched resource.
      AddChange(f, rate - previous);
    }
  }
}

void FlowModel::FreezeIsolated(uint32_t f) {
  const Flow& flow = flows_[f];
  const uint32_t count = unfixed_[flow.hops[0].resource];
  for (const Hop& hop : flow.hops) {
    if (resource_dirty_[hop.resource] != epoch_ || unfixed_[hop.resource] != count) return;
  }
  // The unfrozen flows on its first resource must take its route with its weights and bound;
  // then, as it meets as many on each resource, they are all there is.
  bundle_.clear();
  for (const FlowRef& ref : resources_[flow.hops[0].resource].flows) {
    const uint32_t g = ref.flow;
    if (flow_in_set_[g] != epoch_ || flow_fixed_[g] == epoch_) continue;
    const Flow& other = flows_[g];
    if (other.bound != flow.bound || other.hops.size() != flow.hops.size()) return;
    for (uint32_t h = 0; h < flow.hops.size(); ++h) {
      if (other.hops[h].resource != flow.hops[h].resource ||
          other.hops[h].weight != flow.hops[h].weight) {
        return;
      }
    }
    bundle_.push_back(g);
  }
  PODSIM_CHECK(bundle_.size() == count) << "resource " << flow.hops[0].resource << " counts "
                                        << count << " unfrozen flows, holds " << bundle_.size();
  double rate = flow.bound;
  uint32_t bottleneck = kBoundBottleneck;
  for (const Hop& hop : flow.hops) {
    const double share = FairShare(hop.resource);
    if (share < rate) {
      rate = share;
      bottleneck = hop.resource;
    }
  }
  for (uint32_t g : bundle_) Freeze(g, rate, bottleneck);
}

void FlowModel::Reallocate() {
  reallocation_pending_ = false;
  ++reallocations_;
  watching_ = true;
  Sweep();
  for (int sweeps = 1; !WatchedFit(); ++sweeps) {
    // A watched resource would carry more than its capacity: sweep again from the old rates,
    // following it (and, after kWatchingSweeps, every resource the change reaches).
    ++repeated_sweeps_;
    watching_ = sweeps < kWatchingSweeps;
    for (uint32_t f : region_) {
      flows_[f].rate = flow_previous_rate_[f];
      flows_[f].bottleneck = flow_previous_bottleneck_[f];
    }
    EndSweep();
    Sweep();
  }
  Commit();
  EndSweep();
  to_follow_.clear();
  arrivals_.clear();
  departures_.clear();
}

void FlowModel::EndSweep() {
  highest_followed_level_ = 0;
  region_.clear();
  dirty_.clear();
  watched_.clear();
  ++epoch_;
}

bool FlowModel::WatchedFit() {
  bool fit = true;
  for (Watched& w : watched_) {
    w.summed = w.usage > w.sum_above;
    if (!w.summed) continue;
    const Resource& resource = resources_[w.resource];
    w.usage = 0;
    double fastest = 0;  // The fastest flow's rate there, times its weight.
    double fastest_rate = 0;
    for (const FlowRef& ref : resource.flows) {
      const uint32_t g = ref.flow;
      const double rate =
          flow_in_set_[g] == epoch_ && KeepsOldRate(g) ? flow_previous_rate_[g] : flows_[g].rate;
      w.usage += rate * ref.weight;
      if (rate > fastest_rate || (rate == fastest_rate && rate * ref.weight > fastest)) {
        fastest_rate = rate;
        fastest = rate * ref.weight;
      }
    }
    // Over by more than rounding: following it would take the excess from its fastest flows,
    // so no more than kRelativeEpsilon of what the fastest takes there is let pass (a margin
    // relative to the capacity let a flow's rate be off by 1e-5 of itself).
    if (w.usage > resource.capacity + kRelativeEpsilon * fastest) {
      fit = false;
      to_follow_.push_back(w.resource);
    }
  }
  return fit;
}

void FlowModel::Sweep() {
  // Seeds (header comment, "Recomputation"): an arriving flow is changed from level 0, which
  // comes before any other level, so its resources are followed at once; a departed flow's
  // resources from its rate.
  for (uint32_t f : arrivals_) {
    Join(f, kNoBottleneck);
    flow_changed_[f] = epoch_;
  }
  for (uint32_t f : arrivals_) {
    for (const Hop& hop : flows_[f].hops) {
      if (MakeDirty(hop.resource, 0, /*schedule=*/false)) seeded_.push_back(hop.resource);
    }
  }
  // Arriving flows alone on every resource they cross but for flows on their very route (every
  // other flow there joined at level 0) get the smallest share there, or their bound, whatever
  // else happens: a ring step's flows, each alone on its link, and the pieces of a pipeline on
  // one path need no event.
  for (uint32_t f : arrivals_) {
    if (flow_fixed_[f] != epoch_) FreezeIsolated(f);
  }
  for (uint32_t r : seeded_) {
    if (unfixed_[r] > 0) PushEvent(FairShare(r), EventKind::kSaturation, r);
  }
  seeded_.clear();
  for (const Departure& departure : departures_) {
    const uint32_t r = departure.resource;
    const double level = departure.rate;
    if (resource_dirty_[r] == epoch_) continue;
    if (resources_[r].flows.empty()) {
      // Nothing left to change: followed only for its usage (Commit).
      resource_dirty_[r] = epoch_;
      dirty_.push_back(r);
      unfixed_[r] = 0;
      continue;
    }
    if (Watch(r)) {
      watched_[watched_slot_[r]].usage -= level * departure.weight;
    } else {
      PushEvent(level * (1 - kRelativeEpsilon), EventKind::kDirty, r);
    }
  }
  while (!events_.empty()) {
    const SweepEvent event = events_.Pop();
    const uint32_t id = event.id;
    switch (static_cast<EventKind>(event.kind)) {
      case EventKind::kDirty:
        MakeDirty(id, event.level);
        break;
      case EventKind::kSaturation: {
        if (unfixed_[id] == 0) break;
        const double share = FairShare(id);
        if (share > event.level) {  // Stale: shares only grow as flows freeze.
          PushEvent(share, EventKind::kSaturation, id);
          break;
        }
        // The flows a freeze marks changed make other resources dirty; none joins this
        // resource's list, which is read in place.
        for (const FlowRef& ref : resources_[id].flows) {
          const uint32_t g = ref.flow;
          if (flow_in_set_[g] != epoch_ || flow_fixed_[g] == epoch_) continue;
          // A flow whose old bottleneck the change has not reached stops at its old rate there:
          // this share can pass that rate only by the tie order's delay of its old-rate event.
          const uint32_t b = flows_[g].bottleneck;
          const double previous = flow_previous_rate_[g];
          if (previous > 0 && share > previous && b < resources_.size() &&
              resource_dirty_[b] != epoch_) {
            Freeze(g, previous, b);
          } else {
            Freeze(g, share, id);
          }
        }
        break;
      }
      case EventKind::kOldRate: {
        if (flow_fixed_[id] == epoch_) break;
        // The level reached the flow's old rate. Its old bottleneck, if untouched by the
        // change, saturates here as before; otherwise the flow's rate changes, and every
        // resource it crosses is followed from now on.
        const uint32_t b = flows_[id].bottleneck;
        const double old_rate = flow_previous_rate_[id];
        if (b == kBoundBottleneck || (b != kNoBottleneck && resource_dirty_[b] != epoch_)) {
          Freeze(id, old_rate, b);
        } else {
          MarkChanged(id, old_rate, 0);  // Its change counts once it freezes (Freeze).
        }
        break;
      }
      case EventKind::kBound:
        if (flow_fixed_[id] != epoch_) Freeze(id, event.level, kBoundBottleneck);
        break;
    }
  }
}

void FlowModel::RefreshResource(uint32_t r) {
  Resource& resource = resources_[r];
  const double usage = SummedUsage(r);
  PODSIM_CHECK(usage <= resource.capacity * (1 + kFeasibilitySlack))
      << "resource " << r << " over capacity: " << usage << " > " << resource.capacity;
  resource.usage = usage;
  resource.estimated_commits = 0;
}

void FlowModel::Commit() {
  int64_t now_ps = Now().picoseconds();
  for (uint32_t f : region_) {
    Flow& flow = flows_[f];
    PODSIM_CHECK(flow_fixed_[f] == epoch_) << "flow slot " << f << " left unfrozen";
    const uint32_t was = flow_previous_bottleneck_[f];
    if (was != flow.bottleneck) {
      if (was < resources_.size()) --held_[was];
      if (flow.bottleneck < resources_.size()) ++held_[flow.bottleneck];
    }
    const double previous = flow_previous_rate_[f];
    if (KeepsOldRate(f)) {
      flow.rate = previous;
      continue;
    }
    flow.remaining_bytes -= previous * static_cast<double>(now_ps - flow.last_update_ps) * 1e-12;
    flow.remaining_bytes = std::max(flow.remaining_bytes, 0.0);
    flow.last_update_ps = now_ps;
    ScheduleCompletion(f);
    for (FlowObserver* observer : observers_)
      observer->OnFlowRateChanged(Now(), IdOf(f), flow.rate);
  }
  // Usage must match the committed rates whether or not anyone observes it: every changed
  // flow's resources are followed (summed here) or watched (a sum of changes, to rounding).
  for (uint32_t r : dirty_) RefreshResource(r);
  for (const Watched& w : watched_) {
    Resource& resource = resources_[w.resource];
    resource.usage = w.usage;  // WatchedFit's, at the same rates.
    resource.estimated_commits = w.summed ? 0 : resource.estimated_commits + 1;
  }
  if (!usage_observers_.empty()) {
    // Observers get the sum over each resource's flows, whichever way its usage was kept.
    auto report = [this](uint32_t r, double usage) {
      for (FlowObserver* observer : usage_observers_) {
        observer->OnResourceUsageChanged(Now(), ResourceId{r}, usage);
      }
    };
    for (uint32_t r : dirty_) report(r, resources_[r].usage);
    for (const Watched& w : watched_) report(w.resource, SummedUsage(w.resource));
  }
}

void FlowModel::ScheduleCompletion(uint32_t f) {
  Flow& flow = flows_[f];
  PODSIM_CHECK(flow.rate > 0) << "flow slot " << f << " allocated a zero rate";
  Time duration = Time::FromSecondsCeil(flow.remaining_bytes / flow.rate);
  // A rate change moves the pending completion, whose handler stays (Engine::Reschedule).
  flow.completion = engine_->IsPending(flow.completion)
                        ? engine_->Reschedule(flow.completion, duration)
                        : engine_->Schedule(duration, [this, f] { Complete(f); });
}

}  // namespace podsim::sim
