#include "collectives/collective_network.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "collectives/collective.h"
#include "collectives/collective_builder.h"
#include "collectives/fabric_symmetry.h"
#include "collectives/transfer_executor.h"
#include "sim/check.h"
#include "sim/flow_observer.h"

namespace podsim::collectives {

namespace {

// Adds up the bytes every flow moves over each link (resources below `link_count`), times its
// weight there: on a symmetric quotient a flow with weight w on a link orbit's canonical link
// stands for w flows on each of its links (link_orbits.h), so the figure is each link's.
class LinkBytesRecorder : public sim::FlowObserver {
 public:
  explicit LinkBytesRecorder(size_t link_count) : bytes_(link_count, 0.0) {}
  void OnFlowStarted(sim::Time, sim::FlowId, double bytes, std::span<const sim::ResourceId> route,
                     std::span<const double> weights) override {
    for (size_t i = 0; i < route.size(); ++i) {
      const uint32_t resource = route[i].value;
      if (resource >= bytes_.size()) continue;
      if (bytes_[resource] == 0) touched_.push_back(resource);
      bytes_[resource] += sim::CarriedBytes(bytes, weights, i);
    }
  }
  const std::vector<double>& bytes() const { return bytes_; }
  // Links with bytes, in the order first used.
  const std::vector<uint32_t>& touched() const { return touched_; }
  bool WantsFlowUsage() const override { return false; }
  void Clear() {
    for (uint32_t link : touched_) bytes_[link] = 0;
    touched_.clear();
  }

 private:
  std::vector<double> bytes_;
  std::vector<uint32_t> touched_;
};

// Records a rehearsal's changes of link usage (resources below `link_count`), relative to the
// start given to Begin, while it has somewhere to put them.
class UsageRecorder : public sim::FlowObserver {
 public:
  explicit UsageRecorder(size_t link_count) : link_count_(link_count) {}
  void Begin(sim::Time start, std::vector<LinkUsageChange>* changes) {
    start_ = start;
    changes_ = changes;
  }
  void End() { changes_ = nullptr; }
  void OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                              double used_bytes_per_s) override {
    if (changes_ != nullptr && resource.value < link_count_) {
      changes_->push_back({now - start_, resource, used_bytes_per_s});
    }
  }

 private:
  size_t link_count_;
  sim::Time start_;
  std::vector<LinkUsageChange>* changes_ = nullptr;
};

// A collective's bottleneck links: those within this fraction of the largest bytes / bandwidth,
// and those carrying within this fraction of the largest bytes (a chip's PCIe link may be the
// slowest alone while the host NIC it feeds, with the same bytes, is what its neighbours share).
constexpr double kBottleneckShare = 0.9;

// Appends `value` and a separator to `key`: integers in decimal, doubles in their shortest
// round-trip form, so that equal keys mean equal values. std::to_chars, not a stream: a launch
// builds its keys from every rank of its group (thousands on a pod), and the key stays text, as
// MPI sweeps send rehearsals' keys in JSON (cli/sweep_command.cc ShareRehearsals).
template <typename T>
void AppendKey(std::string& key, T value, char separator) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  PODSIM_CHECK(error == std::errc()) << "a collective's key does not fit its buffer";
  key.append(buffer, end);
  key += separator;
}

// Everything that decides what a request simulates.
std::string KeyOf(const CollectiveRequest& request) {
  std::string key;
  key.reserve(64 + 8 * (request.ranks.size() + request.rank_reps.size()));
  AppendKey(key, static_cast<int>(request.op), '|');
  AppendKey(key, request.bytes, '|');
  key += request.algorithm;
  key += '|';
  AppendKey(key, request.src, '|');
  AppendKey(key, request.dst, '|');
  for (const std::string& axis : request.axes) {
    key += axis;
    key += ',';
  }
  key += '|';
  for (topology::VertexId rank : request.ranks) AppendKey(key, rank, ',');
  key += '|';
  for (int length : request.rank_shape) AppendKey(key, length, ',');
  key += '|';
  key += request.launched ? '1' : '0';
  return key;
}

// What a replay echoes to observers (a trace's link counters) of its rehearsal's usage changes
// (in time order): each link at its mean usage from its first change to its last, where it went
// back to 0, so that the bytes each link carries over that interval are the rehearsal's. Two
// changes a link where the rehearsal had one per flow start and end (a 256-chunk all-reduce: 4
// per chunk), which kept a traced step's echoes within its work bound.
std::vector<LinkUsageChange> MeanUsage(std::vector<LinkUsageChange> changes) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const LinkUsageChange& a, const LinkUsageChange& b) {
                     return a.resource.value < b.resource.value;
                   });
  std::vector<LinkUsageChange> mean;
  for (size_t first = 0; first < changes.size();) {
    size_t last = first;
    double bytes = 0;
    while (last + 1 < changes.size() && changes[last + 1].resource == changes[first].resource) {
      bytes += changes[last].used_bytes_per_s *
               (changes[last + 1].offset - changes[last].offset).ToSeconds();
      ++last;
    }
    const sim::Time begin = changes[first].offset, end = changes[last].offset;
    if (end > begin && bytes > 0) {
      mean.push_back({begin, changes[first].resource, bytes / (end - begin).ToSeconds()});
      mean.push_back({end, changes[first].resource, changes[last].used_bytes_per_s});
    }
    first = last + 1;
  }
  std::stable_sort(
      mean.begin(), mean.end(),
      [](const LinkUsageChange& a, const LinkUsageChange& b) { return a.offset < b.offset; });
  return mean;
}

}  // namespace

// The private, idle copy of the network on which each distinct request is first simulated.
struct CollectiveNetwork::Rehearsal {
  Rehearsal(const topology::Fabric* fabric, const FabricEfficiency& efficiency,
            const LinkOrbits* orbits = nullptr)
      : model(&engine), recorder(fabric->links().size()), usage(fabric->links().size()) {
    InstallEfficientLinks(*fabric, efficiency, &model);
    model.AddObserver(&recorder);
    executor = std::make_unique<TransferExecutor>(fabric, &engine, &model,
                                                  efficiency.per_message_overhead, orbits);
  }
  sim::Engine engine;
  sim::FlowModel model;
  LinkBytesRecorder recorder;
  // Records where a replay's observers need it; observes the model (a call per resource each
  // reallocation touches) from the first Run asked for usage changes on.
  UsageRecorder usage;
  bool records_usage = false;
  std::unique_ptr<TransferExecutor> executor;

  // What running a request alone gave.
  struct Alone {
    sim::Time duration;    // From the launch (its latency included) to the collective's end.
    sim::Time last_event;  // From the launch to the last event it caused (>= duration).
    uint64_t transfers = 0;
    AlgorithmChoice choice;
  };
  // Runs `request` alone from now: its launch latency, then its transfers, as Launch does, so
  // that the arithmetic is a launch's (the clock runs on from one request to the next; times are
  // differences). `recorder` then holds the bytes it moved; its links' usage changes go to
  // `changes` when not null.
  sim::StatusOr<Alone> Run(const topology::Fabric& fabric, const CollectiveRequest& request,
                           const FabricEfficiency& efficiency, CollectiveCache* cache,
                           std::vector<LinkUsageChange>* changes) {
    CollectiveRequest alone = request;
    alone.efficiency = efficiency;
    Alone out;
    PODSIM_ASSIGN_OR_RETURN(
        std::unique_ptr<Collective> collective,
        BuildCollective(fabric, alone, efficiency, executor.get(), &out.choice, cache));
    const sim::Time start = engine.now();
    const uint64_t transfers_before = executor->transfers();
    sim::Time end = sim::Time::Max();
    recorder.Clear();
    if (changes != nullptr) {
      if (!records_usage) model.AddObserver(&usage);
      records_usage = true;
      usage.Begin(start, changes);
    }
    engine.Schedule(LaunchLatency(efficiency, request.launched),
                    [&] { collective->Start([&] { end = engine.now(); }); });
    engine.Run();
    usage.End();
    if (engine.passed_horizon()) {
      return sim::PassedHorizonError("the " + std::string(CollectiveOpName(request.op)));
    }
    PODSIM_CHECK(end != sim::Time::Max()) << "a collective never completed in rehearsal";
    out.duration = end - start;
    out.last_event = engine.now() - start;
    out.transfers = executor->transfers() - transfers_before;
    return out;
  }
};

// The idle copy with the link orbits of a request's own symmetry (SymmetryOfRanks).
struct CollectiveNetwork::QuotientRehearsal {
  QuotientRehearsal(const topology::Fabric* fabric, const FabricEfficiency& efficiency,
                    const TranslationGroup& group)
      : orbits(group.Orbits()), rehearsal(fabric, efficiency, &orbits) {}
  LinkOrbits orbits;
  Rehearsal rehearsal;
};

struct CollectiveNetwork::Running {
  std::unique_ptr<Collective> collective;
  bool done = false;
};

CollectiveNetwork::CollectiveNetwork(const topology::Fabric* fabric, sim::Engine* engine,
                                     sim::FlowModel* model, FabricEfficiency efficiency,
                                     NetworkMode mode, RehearsalCache* shared,
                                     const LinkOrbits* orbits)
    : fabric_(fabric),
      engine_(engine),
      model_(model),
      efficiency_(std::move(efficiency)),
      mode_(mode),
      symmetry_(fabric),
      shared_(shared),
      orbits_(orbits),
      busy_(fabric->links().size(), 0) {
  PODSIM_CHECK(orbits_ == nullptr || mode_ == NetworkMode::kFlows)
      << "a symmetric quotient runs every transfer";
  PODSIM_CHECK(shared_ == nullptr ||
               (shared_->fabric() == fabric_ && shared_->efficiency() == efficiency_))
      << "a shared rehearsal cache of another fabric or efficiency model";
  InstallEfficientLinks(*fabric_, efficiency_, model_);
  executor_ = std::make_unique<TransferExecutor>(fabric_, engine_, model_,
                                                 efficiency_.per_message_overhead, orbits_);
}

CollectiveNetwork::~CollectiveNetwork() = default;

uint64_t CollectiveNetwork::transfers() const { return executor_->transfers(); }

uint64_t CollectiveNetwork::all_transfers() const {
  // The work done: transfers run, rehearsed (for replays too) or found rehearsed in the shared
  // cache (charged, and checked, as if rehearsed: a sweep's steps decide alike whatever thread
  // rehearsed first), one per replay, which is one event where its launch would
  // have run its transfers, and, observed, one per change of link usage a replay echoes to the
  // observers (a trace's link counters), which an unobserved run does not make.
  uint64_t quotients = 0;
  for (const auto& [key, quotient] : quotients_) {
    quotients += quotient->rehearsal.executor->transfers();
  }
  return transfers() + cached_transfers_ + quotients +
         (rehearsal_ == nullptr ? 0 : rehearsal_->executor->transfers()) +
         (alone_ == nullptr ? 0 : alone_->executor->transfers()) + replayed_ + echoed_changes_;
}

uint64_t CollectiveNetwork::rehearsal_events() const {
  uint64_t quotients = 0;
  for (const auto& [key, quotient] : quotients_) {
    quotients += quotient->rehearsal.engine.executed_events();
  }
  return quotients + (rehearsal_ == nullptr ? 0 : rehearsal_->engine.executed_events()) +
         (alone_ == nullptr ? 0 : alone_->engine.executed_events());
}

CollectiveNetwork::QuotientRehearsal& CollectiveNetwork::QuotientFor(
    const TranslationGroup& group) {
  std::string key;
  for (const std::vector<int>* digits :
       {&group.steps(), &group.symmetry().slot_radix(), &group.symmetry().node_radix()}) {
    for (int digit : *digits) key += std::to_string(digit) + ',';
    key += '|';
  }
  std::unique_ptr<QuotientRehearsal>& quotient = quotients_[key];
  if (quotient == nullptr) {
    quotient = std::make_unique<QuotientRehearsal>(fabric_, efficiency_, group);
  }
  return *quotient;
}

void CollectiveNetwork::EnableReplays(std::set<std::string> excluded,
                                      std::function<void()> on_intrusion) {
  PODSIM_CHECK(mode_ == NetworkMode::kFlows) << "replays stand for transfers";
  // Only links between a chip and a switch or host can be held (below). On a torus of one slice
  // (no DCN) the routes between chips are all ICI links between chips, so nothing could ever be
  // replayed: its launches skip the keys and bookkeeping of replays. (Replays never change a
  // result, only its cost, so this decides speed alone.)
  if (fabric_->torus() != nullptr &&
      fabric_->CountVertices(topology::VertexKind::kDcnSwitch) == 0) {
    return;
  }
  replays_ = true;
  excluded_ = std::move(excluded);
  on_intrusion_ = std::move(on_intrusion);
  model_->SetIntrusionHandler([this](uint32_t owner) {
    PODSIM_CHECK(owner >= 1 && owner <= owners_.size()) << "a hold of no launch";
    if (!intruded_) intruded_ = owners_[owner - 1]->first;
    if (on_intrusion_) on_intrusion_();
  });
  // Links a replay may not hold as alone (RehearseAlone) make every launch that crosses them
  // contended, so its request is replayed only with expected users.
  const uint32_t chips = fabric_->chip_count();
  for (topology::LinkIndex l = 0; l < fabric_->link_count(); ++l) {
    const topology::Link& link = fabric_->link(l);
    if ((link.src < chips) == (link.dst < chips)) model_->MarkShared(sim::ResourceId{l});
  }
}

std::string CollectiveNetwork::ReplayKey(const CollectiveRequest& request) {
  std::string key = KeyOf(request) + '|';
  for (topology::VertexId rep : request.rank_reps) AppendKey(key, rep, ',');
  return key;
}

sim::Status CollectiveNetwork::RehearseAlone(const CollectiveRequest& request, Replay* replay) {
  if (alone_ == nullptr) alone_ = std::make_unique<Rehearsal>(fabric_, efficiency_, orbits_);
  Rehearsal& r = *alone_;
  PODSIM_ASSIGN_OR_RETURN(Rehearsal::Alone alone,
                          r.Run(*fabric_, request, efficiency_, &cache_,
                                model_->observed() ? &replay->usage : nullptr));
  replay->rehearsed = true;
  replay->duration = alone.duration;
  // Until the last event (a flow may outlive the collective's end), not only until its end.
  replay->hold = alone.last_event;
  replay->transfers = alone.transfers;
  replay->algorithm = std::move(alone.choice.algorithm);
  replay->usage = MeanUsage(std::move(replay->usage));
  for (uint32_t link : r.recorder.touched()) replay->resources.push_back(sim::ResourceId{link});
  std::sort(replay->resources.begin(), replay->resources.end());
  // A zero-byte flow leaves its links at 0 bytes, so the recorder may list them twice.
  replay->resources.erase(std::unique(replay->resources.begin(), replay->resources.end()),
                          replay->resources.end());
  // From their past alone, only collectives on links between a chip and a switch (NVLink to
  // NVSwitches, a chip's link to its NIC) are replayed. Links between switches (a fat tree's
  // leaves and spines) carry other chips' traffic, and a torus's links between chips every
  // axis's collectives: a replay there is intruded upon too often to pay, each intrusion costing
  // a discarded run, unless the caller's expected users say nothing else will come.
  const uint32_t chips = fabric_->chip_count();
  replay->replayable =
      std::all_of(replay->resources.begin(), replay->resources.end(), [&](sim::ResourceId r) {
        const topology::Link& link = fabric_->link(r.value);
        return (link.src < chips) != (link.dst < chips);
      });
  ++alone_rehearsals_;
  return sim::Status::Ok();
}

sim::StatusOr<bool> CollectiveNetwork::TranslateReplay(const CollectiveRequest& request,
                                                       const std::string& key, Replay* replay,
                                                       bool rehearse) {
  const bool rooted =
      request.op == CollectiveOp::kPointToPoint || request.op == CollectiveOp::kBroadcast;
  std::vector<topology::VertexId> chips = request.ranks;
  if (rooted) chips.insert(chips.begin(), {request.src, request.dst});
  if (!request.axes.empty() || chips.empty()) return false;
  const std::optional<FabricSymmetry::Shift> shift = symmetry_.ToCanonical(chips);
  if (!shift) return false;
  // Only a symmetry of the whole fabric moves every link of an orbit (ToCanonical's shifts may
  // be valid only for the chips they were made for).
  for (size_t axis = 0; axis < shift->delta.size(); ++axis) {
    const int length = symmetry_.axis_lengths()[axis];
    const int step = std::gcd(((shift->delta[axis] % length) + length) % length, length);
    if (step != length && !symmetry_.AllowsStep(axis, step)) return false;
  }
  CollectiveRequest origin = request;
  for (topology::VertexId& rank : origin.ranks) rank = symmetry_.ApplyToVertex(rank, *shift);
  for (topology::VertexId& rep : origin.rank_reps) rep = symmetry_.ApplyToVertex(rep, *shift);
  if (rooted) {
    origin.src = symmetry_.ApplyToVertex(origin.src, *shift);
    origin.dst = symmetry_.ApplyToVertex(origin.dst, *shift);
  }
  std::string origin_key = ReplayKey(origin);
  if (origin_key == key) return false;
  Replay& base = replay_of_.try_emplace(std::move(origin_key)).first->second;
  if (!base.rehearsed) {
    if (!rehearse) return false;
    PODSIM_RETURN_IF_ERROR(RehearseAlone(origin, &base));
  }
  // The translate's link orbits are the images of the origin's: the translations commute, so a
  // shift maps each orbit of the step's group onto one (link_orbits.h).
  const FabricSymmetry::Shift back = symmetry_.Inverse(*shift);
  auto moved = [&](sim::ResourceId r) -> std::optional<sim::ResourceId> {
    const topology::LinkIndex link = symmetry_.ApplyToLink(r.value, back);
    if (link == topology::kNoLink) return std::nullopt;
    return ResourceOf(link);
  };
  std::vector<sim::ResourceId> resources;
  for (sim::ResourceId r : base.resources) {
    const std::optional<sim::ResourceId> to = moved(r);
    if (!to) return false;
    resources.push_back(*to);
  }
  std::vector<LinkUsageChange> usage = base.usage;
  for (LinkUsageChange& change : usage) {
    const std::optional<sim::ResourceId> to = moved(change.resource);
    if (!to) return false;
    change.resource = *to;
  }
  std::sort(resources.begin(), resources.end());
  resources.erase(std::unique(resources.begin(), resources.end()), resources.end());
  replay->rehearsed = true;
  replay->duration = base.duration;
  replay->hold = base.hold;
  replay->resources = std::move(resources);
  replay->algorithm = base.algorithm;
  replay->replayable = base.replayable;
  replay->transfers = base.transfers;
  replay->usage = std::move(usage);
  if (verify_translates_) {
    Replay own;
    PODSIM_RETURN_IF_ERROR(RehearseAlone(request, &own));
    PODSIM_CHECK(own.duration == replay->duration && own.hold == replay->hold &&
                 own.resources == replay->resources && own.transfers == replay->transfers)
        << "the rehearsal moved from a translate differs from the request's own: " << key;
  }
  return true;
}

void CollectiveNetwork::ExpectUse(std::span<const sim::ResourceId> footprint, uint32_t channel,
                                  int delta) {
  if (expected_.empty()) expected_.resize(fabric_->link_count());
  for (sim::ResourceId r : footprint) {
    PODSIM_CHECK(r.value < expected_.size()) << "unknown resource " << r.value;
    std::vector<std::pair<uint32_t, uint32_t>>& users = expected_[r.value];
    auto it = std::find_if(users.begin(), users.end(),
                           [&](const auto& user) { return user.first == channel; });
    if (it == users.end()) it = users.insert(users.end(), {channel, 0});
    PODSIM_CHECK(delta >= 0 || it->second >= static_cast<uint32_t>(-delta))
        << "more operations of channel " << channel << " finished on resource " << r.value
        << " than were expected there";
    it->second = static_cast<uint32_t>(static_cast<int64_t>(it->second) + delta);
  }
}

bool CollectiveNetwork::ExpectedOnlyHere(std::span<const sim::ResourceId> resources,
                                         uint32_t channel,
                                         const LaunchExpectation& expected) const {
  for (sim::ResourceId r : resources) {
    const bool own = std::binary_search(expected.footprint.begin(), expected.footprint.end(), r);
    for (const auto& [user, count] : expected_[r.value]) {
      if (count > (own && user == channel ? expected.own : 0)) return false;
    }
  }
  return true;
}

sim::StatusOr<bool> CollectiveNetwork::TryReplay(const CollectiveRequest& request, uint32_t channel,
                                                 const LaunchExpectation& expected,
                                                 sim::EventHandler* on_done, std::string* algorithm,
                                                 uint32_t* owner) {
  auto it = replay_of_.try_emplace(ReplayKey(request)).first;
  Replay& replay = it->second;
  if (replay.group == 0) replay.group = ++groups_;
  owners_.push_back(it);
  *owner = static_cast<uint32_t>(owners_.size());
  model_->SetOwner(*owner, replay.group, channel);
  // A request launched once costs its transfers; a rehearsal pays off from the second launch:
  // where the launches so far had their links to themselves ("Replays"), or where the caller
  // expects nothing else there before the hold would end ("Expected users"). A rehearsal of a
  // translate (TranslateReplay) is there already: the first launch may use it, the second way.
  if (excluded_.contains(it->first)) return false;
  if (++replay.launches == 1 && !replay.rehearsed) {
    PODSIM_ASSIGN_OR_RETURN(bool moved,
                            TranslateReplay(request, it->first, &replay, /*rehearse=*/false));
    if (!moved) return false;
  }
  const bool alone_so_far = replay.launches >= 2 && !model_->GroupContended(replay.group);
  const bool expecting = !expected_.empty() && !expected.footprint.empty();
  if (!alone_so_far && !expecting) return false;
  auto none_before = [&](std::span<const sim::ResourceId> resources, sim::Time until,
                         sim::Time ends, uint64_t work) {
    return lookahead_ != nullptr && lookahead_(resources, until, ends, work);
  };
  // On the second way a contended request is rehearsed at its second launch whether or not it
  // then replays: at most one rehearsal of each distinct request (or of its canonical
  // translate), charged to the work bound like any. (A filter on the launch's footprint before
  // it, nothing expected there able to start at once, declined data-parallel all-reduces of a
  // two-stage pipeline that the rehearsal's own links then allowed: training_schedule_test.cc.)
  // A replay costs one transfer of the work bound (all_transfers), and one per change of its
  // links' usage echoed to observers; with none left the launch runs as transfers, which the bound
  // refuses. A rehearsal its estimate puts past what is left is refused as the launch would be.
  if (request.max_transfers < 1) return false;
  const uint64_t before = all_transfers();
  if (!replay.rehearsed) {
    PODSIM_ASSIGN_OR_RETURN(bool moved,
                            TranslateReplay(request, it->first, &replay, /*rehearse=*/true));
    if (!moved) PODSIM_RETURN_IF_ERROR(RehearseAlone(request, &replay));
  }
  if (!model_->Unused(replay.resources)) return false;
  const bool as_alone =
      alone_so_far && replay.replayable && model_->UsedOnlyBy(replay.resources, channel);
  // The premise is about the links the replay holds: its rehearsal's.
  if (!as_alone &&
      !(expecting && (ExpectedOnlyHere(replay.resources, channel, expected) ||
                      none_before(replay.resources, engine_->now() + replay.hold,
                                  engine_->now() + replay.duration, replay.transfers)))) {
    return false;
  }
  const uint64_t left =
      request.max_transfers - std::min(request.max_transfers, all_transfers() - before);
  if (left < 1 + replay.usage.size()) {
    if (replay.usage.empty()) return false;
    return sim::Status::OutOfRange(
        "tracing the links of a replayed " + std::string(CollectiveOpName(request.op)) + " takes " +
        std::to_string(replay.usage.size()) + " changes of link usage, over the " +
        std::to_string(left) +
        " left of the run's work bound, which a traced step spends on them too (--max-transfers, "
        "default 5e6, raises it)");
  }
  if (!replay.resources.empty() && replay.hold > sim::Time::Zero()) {
    model_->Hold(replay.resources, engine_->now() + replay.hold, *owner);
  }
  engine_->Schedule(replay.duration, std::move(*on_done));
  ++replayed_;
  // Observers see the links loaded: one event per instant the rehearsal changed a link's usage.
  const std::vector<LinkUsageChange>& changes = replay.usage;
  for (size_t first = 0; first < changes.size();) {
    size_t last = first;
    while (last < changes.size() && changes[last].offset == changes[first].offset) ++last;
    engine_->Schedule(changes[first].offset, [this, &changes, first, last] {
      for (size_t i = first; i < last; ++i) {
        model_->EchoUsage(changes[i].resource, changes[i].used_bytes_per_s);
      }
    });
    ++echo_events_;
    echoed_changes_ += last - first;
    first = last;
  }
  if (algorithm != nullptr) *algorithm = replay.algorithm;
  return true;
}

sim::StatusOr<const CollectiveNetwork::Record*> CollectiveNetwork::RecordOf(
    const CollectiveRequest& request) {
  std::string key = KeyOf(request);
  auto it = records_.find(key);
  if (it != records_.end()) return &it->second;
  const bool explicit_chips = !request.ranks.empty() || request.op == CollectiveOp::kPointToPoint;
  const bool rooted =
      request.op == CollectiveOp::kPointToPoint || request.op == CollectiveOp::kBroadcast;
  std::vector<topology::VertexId> chips = request.ranks;
  if (rooted) chips.insert(chips.begin(), {request.src, request.dst});
  std::optional<FabricSymmetry::Shift> shift;
  if (explicit_chips && request.axes.empty()) shift = symmetry_.ToCanonical(chips);
  if (shift) {
    // Rehearse the canonical translate, and move its record here.
    CollectiveRequest origin = request;
    for (topology::VertexId& rank : origin.ranks) rank = symmetry_.ApplyToVertex(rank, *shift);
    if (rooted) {
      origin.src = symmetry_.ApplyToVertex(origin.src, *shift);
      origin.dst = symmetry_.ApplyToVertex(origin.dst, *shift);
    }
    if (KeyOf(origin) != key) {
      PODSIM_ASSIGN_OR_RETURN(const Record* base, Rehearse(origin));
      Record moved = *base;
      const FabricSymmetry::Shift back = symmetry_.Inverse(*shift);
      bool ok = true;
      for (sim::ResourceId& link : moved.bottleneck) {
        const topology::LinkIndex to = symmetry_.ApplyToLink(link.value, back);
        ok = ok && to != topology::kNoLink;
        link = sim::ResourceId{to};
      }
      if (ok) {
        std::sort(moved.bottleneck.begin(), moved.bottleneck.end());
        ++translated_;
        return &records_.emplace(std::move(key), std::move(moved)).first->second;
      }
    }
  }
  return Rehearse(request);
}

sim::StatusOr<const CollectiveNetwork::Record*> CollectiveNetwork::Rehearse(
    const CollectiveRequest& request) {
  std::string key = KeyOf(request);
  auto it = records_.find(key);
  if (it != records_.end()) return &it->second;
  if (shared_ != nullptr) {
    if (std::optional<Record> found = shared_->Find(key)) {
      if (found->estimated_transfers > static_cast<double>(request.max_transfers)) {
        return TooManyTransfers(
            "the " + std::string(CollectiveOpName(request.op)) + " (" + found->algorithm + ")",
            found->estimated_transfers, request.max_transfers);
      }
      cached_transfers_ += found->transfers;
      return &records_.emplace(std::move(key), std::move(*found)).first->second;
    }
  }
  // The links the request crossed, ascending, with the bytes each carried.
  std::vector<std::pair<uint32_t, double>> carried;
  Rehearsal::Alone alone;
  PODSIM_ASSIGN_OR_RETURN(std::optional<RankSymmetry> symmetry, SymmetryOfRanks(*fabric_, request));
  if (symmetry) {
    QuotientRehearsal& q = QuotientFor(symmetry->group);
    CollectiveRequest reps = request;
    reps.rank_reps = std::move(symmetry->rank_reps);
    PODSIM_ASSIGN_OR_RETURN(alone, q.rehearsal.Run(*fabric_, reps, efficiency_, &cache_, nullptr));
    // Each link carries what its orbit's canonical link (or a copy's twin's) carried.
    const std::vector<double>& bytes = q.rehearsal.recorder.bytes();
    for (uint32_t link = 0; link < bytes.size(); ++link) {
      if (q.orbits.multiplicity[link] > 0 && bytes[q.orbits.canonical[link]] > 0) {
        carried.emplace_back(link, bytes[q.orbits.canonical[link]]);
      }
    }
  } else {
    if (rehearsal_ == nullptr) rehearsal_ = std::make_unique<Rehearsal>(fabric_, efficiency_);
    Rehearsal& r = *rehearsal_;
    PODSIM_ASSIGN_OR_RETURN(alone, r.Run(*fabric_, request, efficiency_, &cache_, nullptr));
    for (uint32_t link : r.recorder.touched()) carried.emplace_back(link, r.recorder.bytes()[link]);
    std::sort(carried.begin(), carried.end());
  }
  Record record;
  record.transfers = alone.transfers;
  record.estimated_transfers = alone.choice.estimated_transfers;
  record.duration = alone.duration;
  record.algorithm = std::move(alone.choice.algorithm);
  double slowest = 0;  // Largest bytes / bandwidth over the links.
  double most = 0;     // Largest bytes.
  for (const auto& [link, bytes] : carried) {
    slowest = std::max(slowest, bytes / model_->capacity(sim::ResourceId{link}));
    most = std::max(most, bytes);
  }
  if (slowest > 0) {
    record.rate = std::numeric_limits<double>::infinity();
    for (const auto& [link, bytes] : carried) {
      const sim::ResourceId resource{link};
      if (bytes / model_->capacity(resource) >= kBottleneckShare * slowest ||
          bytes >= kBottleneckShare * most) {
        record.bottleneck.push_back(resource);
        record.rate = std::min(record.rate, model_->capacity(resource));
      }
    }
    record.bytes = slowest * record.rate;
    const sim::Time transfer = sim::Time::FromSecondsCeil(slowest);
    record.latency = transfer < record.duration ? record.duration - transfer : sim::Time::Zero();
  } else {
    record.latency = record.duration;
  }
  if (shared_ != nullptr) shared_->Insert(key, record);
  return &records_.emplace(std::move(key), std::move(record)).first->second;
}

sim::StatusOr<sim::Time> CollectiveNetwork::IdleDuration(const CollectiveRequest& request) {
  PODSIM_ASSIGN_OR_RETURN(const Record* record, RecordOf(request));
  return record->duration;
}

sim::Status CollectiveNetwork::Launch(const CollectiveRequest& request, sim::EventHandler on_done,
                                      std::string* algorithm, uint32_t channel,
                                      const LaunchExpectation& expected) {
  if (request.per_message_overhead != sim::Time::Zero()) {
    return sim::Status::InvalidArgument(
        "a collective network applies its own per-message overhead; the request's must be 0");
  }
  if (running_.size() >= 2 * compacted_size_ + 64) {
    std::erase_if(running_, [](const std::unique_ptr<Running>& r) { return r->done; });
    compacted_size_ = running_.size();
  }
  ++launched_;
  if (mode_ == NetworkMode::kWholeCollective) {
    PODSIM_ASSIGN_OR_RETURN(const Record* record, RecordOf(request));
    if (algorithm != nullptr) *algorithm = record->algorithm;
    ++whole_;
    if (record->bottleneck.empty()) {
      engine_->Schedule(record->duration, std::move(on_done));
      return sim::Status::Ok();
    }
    bool shared = false;
    for (sim::ResourceId link : record->bottleneck) shared = shared || busy_[link.value]++ > 0;
    if (shared) ++overlapped_;
    sim::FlowSpec flow;
    flow.bytes = record->bytes;
    flow.route = record->bottleneck;
    flow.latency = record->latency;
    sim::StatusOr<sim::FlowId> started =
        model_->StartFlow(flow, [this, record, done = std::move(on_done)]() mutable {
          for (sim::ResourceId link : record->bottleneck) --busy_[link.value];
          done();
        });
    PODSIM_CHECK(started.ok()) << started.status();
    return sim::Status::Ok();
  }
  uint32_t owner = 0;
  const uint64_t work_at_launch = all_transfers();
  if (replays_) {
    PODSIM_ASSIGN_OR_RETURN(bool replayed,
                            TryReplay(request, channel, expected, &on_done, algorithm, &owner));
    if (replayed) return sim::Status::Ok();
  }
  CollectiveRequest shared = request;
  shared.efficiency = efficiency_;
  // A rehearsal for a replay that was then declined spent part of what was left.
  const uint64_t spent = all_transfers() - work_at_launch;
  shared.max_transfers -= std::min(shared.max_transfers, spent);
  AlgorithmChoice choice;
  PODSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<Collective> collective,
      BuildCollective(*fabric_, shared, efficiency_, executor_.get(), &choice, &cache_));
  if (algorithm != nullptr) *algorithm = std::move(choice.algorithm);
  running_.push_back(std::make_unique<Running>());
  Running* running = running_.back().get();
  running->collective = std::move(collective);
  engine_->Schedule(LaunchLatency(efficiency_, request.launched),
                    [this, running, owner, done = std::move(on_done)]() mutable {
                      const uint32_t outer = model_->owner();
                      model_->set_owner(owner);
                      running->collective->Start([running, done = std::move(done)]() mutable {
                        done();
                        // Freed by a later Launch, after this callback has returned.
                        running->done = true;
                      });
                      model_->set_owner(outer);
                    });
  return sim::Status::Ok();
}

}  // namespace podsim::collectives
