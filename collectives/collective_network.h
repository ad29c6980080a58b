// CollectiveNetwork: a fabric's links as resources of a flow model on an engine the caller runs,
// and collectives launched on it at any simulated time. Collectives running at once share the
// links their routes have in common max-min fairly, so a step simulation (workloads/) gets
// contention between its communication streams from the flow model, not from a formula.
//
// Two ways to run a launched collective (NetworkMode):
//   * kFlows: its transfers, as flows on the shared model. Exact, and as costly as the
//     collective's transfers: a 2240-rank FSDP all-gather is millions of events.
//   * kWholeCollective (default): one flow for the whole collective. Each distinct request is
//     first simulated once with kFlows on a private, idle copy of the network, which records its
//     duration D and the bytes it moved over every link. On the shared model it then runs as one
//     flow over its bottleneck links (those whose bytes / bandwidth is within 10% of the largest,
//     T, and those carrying within 10% of the most bytes), paying D - T as latency and then
//     moving T times the slowest of those links' bandwidth. Alone it takes exactly
//     D (to the picosecond rounding); when collectives overlap, they share their bottleneck links
//     max-min like any flows, as whole collectives. What this misses is the shape of the overlap
//     inside a collective (a ring's steps are not uniform in time); step_simulator_test.cc and
//     training_schedule_test.cc measure it against kFlows. Where a translation maps the fabric
//     and its routes onto themselves (fabric_symmetry.h: wrapped tori, GPU fat trees by whole
//     pods), a request is rehearsed once in its canonical place and its record moved to each
//     translate. Where shifts of the fabric map the request's own ranks onto themselves
//     (SymmetryOfRanks: a 1,024-GPU FSDP group's rings turn under slot rotations and shifts of
//     whole SUs), the rehearsal simulates one rank per orbit of them on the link orbits, which
//     gives the same duration and the same bytes on every link as every rank would, at a
//     fraction of the transfers.
//
// Symmetric quotient (`orbits`, kFlows only): the flow model holds one resource per link orbit
// of a translation group (link_orbits.h), and a launched collective's flows, one per orbit of
// transfers (CollectiveRequest::rank_reps), stand for their images under the group
// (transfer_executor.h): the network then carries exactly the load of the full simulation of every
// image (workloads/ step_simulator.h, SimulatedChips::kOrbits).
//
// Replays (kFlows, after EnableReplays): a collective's flows share max-min only with flows on
// their resources, so a collective that starts on resources no flow uses or waits for, and during
// which no other flow becomes active on them, takes exactly the time it takes alone on an idle
// network, and changes nothing for any other flow. Every launch is an owner of the flow model
// (sim/flow_model.h, "Owners"), which tells which launches' flows met another's. From its second
// launch on, a request none of whose launches met another is rehearsed once on a private idle
// copy of the network (with the same link orbits, so the same arithmetic), which gives its
// duration and the resources its flows cross; a launch that finds those unused then runs as that
// delay, holding the resources until its rehearsal's last event (sim/flow_model.h, "Holds"),
// instead of as its transfers; the work bound is charged the rehearsal's transfers once and one
// transfer per replay (plus, observed, one per change of link usage it echoes). From its past
// alone, a request is replayed only on links between a chip and a switch (NVLink to an
// NVSwitch, a chip's link to its NIC; a launch crossing any other link counts as contended), and
// only on those no other channel (Launch) has used yet: elsewhere other traffic comes too often
// (what the caller knows of the future may allow more: "Expected users"). A flow that becomes
// active on a
// held resource before the hold ends means the premise failed: intruded() names the request and
// the intrusion handler runs; the caller discards the run and runs again without replaying that
// request (step_simulator.cc). Flow observers see a replay's links' usage change as its
// rehearsal changed it, at the same times (usage only: no flow of a replay starts or ends). A
// tensor-parallel all-reduce in a node, launched hundreds of times a step on links nothing else
// crosses, is then one rehearsal and hundreds of delays instead of hundreds of thousands of
// transfers.
//
// Expected users (ExpectUse): a caller that knows which operations are still to finish can say,
// per channel, which resources their flows may cross (a footprint: the routes between the
// ranks an algorithm pairs). A launch may then also be replayed on any links, switches' included,
// and after contended launches of its request, when no unfinished operation but the launch's own
// expects to use any of the resources its rehearsal crossed (the links the replay holds),
// whatever its channel: nothing else is left to come there. (Its own count is taken off on its
// footprint, LaunchExpectation.) On this way a contended request is rehearsed at its second
// launch whether or not it then replays. Where some are still
// expected, the caller's lookahead (SetLookahead) may show that none of them can start before
// the replay's hold ends (each still waits for compute that takes longer, or for the launch's own
// end), which allows the replay as well. The footprint is the caller's prediction, not the
// premise: a flow that comes anyway is an intrusion like any other (above), so a footprint that
// misses a link costs a discarded run, never a different answer. A long data-parallel all-reduce
// at the end of a pipeline stage, whose launches may meet the stage's last send on the pod's NIC
// and leaf links, then replays where that send is done or cannot come in time.
// Rehearsals of replays are shared by translates (TranslateReplay): a pipeline's stages, one
// pod each, rehearse their data-parallel all-reduce once. What the argument leaves out, as for
// any replay, is the order of events due at one picosecond (docs/architecture.md, "Replays").

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/collective_builder.h"
#include "collectives/collective_runner.h"
#include "collectives/efficiency_model.h"
#include "collectives/fabric_symmetry.h"
#include "collectives/link_orbits.h"
#include "collectives/rehearsal_cache.h"
#include "sim/engine.h"
#include "sim/event_handler.h"
#include "sim/flow_model.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

class Collective;
class TransferExecutor;

enum class NetworkMode { kFlows, kWholeCollective };

// A link's usage from a time on, relative to a collective's launch (a replay's rehearsal).
struct LinkUsageChange {
  sim::Time offset;
  sim::ResourceId resource;
  double used_bytes_per_s = 0;
};

// Where a launch's flows may go, with expected users (CollectiveNetwork, header comment).
struct LaunchExpectation {
  std::span<const sim::ResourceId> footprint;  // Resources, ascending.
  uint32_t own = 0;  // The launch's operations that ExpectUse counts on each of them.
};

class CollectiveNetwork {
 public:
  // Adds the fabric's links to `model` (which must have no resources yet) at the bandwidth
  // `efficiency` leaves of their line rate. All pointers must outlive the network. With a
  // `shared` cache (rehearsal_cache.h), rehearsals are looked up there first and stored there;
  // it must be of the same fabric and efficiency (checked).
  // With `orbits` (which must outlive the network), the mode must be kFlows.
  CollectiveNetwork(const topology::Fabric* fabric, sim::Engine* engine, sim::FlowModel* model,
                    FabricEfficiency efficiency, NetworkMode mode = NetworkMode::kWholeCollective,
                    RehearsalCache* shared = nullptr, const LinkOrbits* orbits = nullptr);
  ~CollectiveNetwork();
  CollectiveNetwork(const CollectiveNetwork&) = delete;
  CollectiveNetwork& operator=(const CollectiveNetwork&) = delete;

  // Validates `request` as SimulateCollective does (its efficiency fields and observers are
  // ignored: the network's model applies) and starts it now: the launch latency, then its
  // transfers. `on_done` runs when every rank has finished, never within this call. `algorithm`,
  // when not null, receives the algorithm the collective runs (AlgorithmNames()), for traces;
  // asking changes nothing.
  // `channel` (> 0 with replays) names what launches it, such that two launches of one channel
  // never run at once on a chip (a stream of one axes set): from its past alone, a request is
  // replayed only on links its channel alone has used so far (header comment, "Replays").
  // With expected users (header comment), `expected` says where the launch's flows may go.
  sim::Status Launch(const CollectiveRequest& request, sim::EventHandler on_done,
                     std::string* algorithm = nullptr, uint32_t channel = 0,
                     const LaunchExpectation& expected = {});

  // What the collective takes alone on the idle network (launch latency included).
  sim::StatusOr<sim::Time> IdleDuration(const CollectiveRequest& request);

  const FabricEfficiency& efficiency() const { return efficiency_; }
  uint64_t launched() const { return launched_; }
  // kWholeCollective launches, and those among them that started while another shared one of
  // their bottleneck links.
  uint64_t whole() const { return whole_; }
  uint64_t overlapped() const { return overlapped_; }
  uint64_t transfers() const;
  // transfers() plus those of the rehearsals: the work the network has done so far.
  uint64_t all_transfers() const;
  // Distinct requests simulated on the idle copy, and the events that took (records found in
  // the shared cache count as rehearsals, without events).
  uint64_t rehearsals() const { return records_.size() - translated_ + alone_rehearsals_; }
  uint64_t rehearsal_events() const;

  // Replays (header comment; kFlows only): launches of requests other than `excluded` (their
  // ReplayKeys) may run as the delay they take alone. `on_intrusion` runs when a replay's premise
  // fails (intruded() then names its request); the run must then be discarded. On a torus of one
  // slice no collective crosses a link a replay may hold: nothing is enabled.
  void EnableReplays(std::set<std::string> excluded, std::function<void()> on_intrusion);
  // What identifies a request for replays (its transfers, ranks and their representatives).
  static std::string ReplayKey(const CollectiveRequest& request);
  const std::optional<std::string>& intruded() const { return intruded_; }
  uint64_t replayed() const { return replayed_; }
  // Whether EnableReplays enabled them (it does not on a torus of one slice).
  bool replays() const { return replays_; }
  // The flow-model resource that carries `link`'s load (its orbit's, with link orbits).
  sim::ResourceId ResourceOf(topology::LinkIndex link) const {
    return sim::ResourceId{orbits_ != nullptr ? orbits_->canonical[link] : link};
  }
  // Expected users (header comment): `delta` unfinished operations of `channel` may cross
  // each of `footprint` (distinct resources). The counts never go below zero (checked).
  void ExpectUse(std::span<const sim::ResourceId> footprint, uint32_t channel, int delta);
  // Whether no unfinished operation that expects to cross any of `resources`, other than those
  // of the launch being decided, can start before `until`, given that the launch's own end at
  // `ends`; found with at most about `work` steps (false past them: the lookahead is not worth
  // more than the transfers a replay saves).
  using Lookahead = std::function<bool(std::span<const sim::ResourceId> resources, sim::Time until,
                                       sim::Time ends, uint64_t work)>;
  void SetLookahead(Lookahead lookahead) { lookahead_ = std::move(lookahead); }
  // For tests: each rehearsal moved from a translate (TranslateReplay) is checked against the
  // request's own rehearsal, which is run too; a difference aborts.
  void VerifyTranslates() { verify_translates_ = true; }
  // Events that only tell observers of a replay's link usage (no part of the simulation).
  uint64_t echo_events() const { return echo_events_; }

 private:
  using Record = RehearsalRecord;
  struct Running;
  struct Rehearsal;
  // A request's replay state (header comment, "Replays").
  struct Replay {
    uint32_t group = 0;  // Its launches' group in the flow model (1 + its index in groups_).
    uint32_t launches = 0;
    bool rehearsed = false;
    sim::Time duration;  // Alone, launch latency included.
    sim::Time hold;      // From the launch to its rehearsal's last event (>= duration).
    std::vector<sim::ResourceId> resources;  // Link resources its flows cross, ascending.
    std::string algorithm;
    bool replayable = false;  // Every resource a link between a chip and a switch.
    uint64_t transfers = 0;   // Of the rehearsal: what a replay saves.
    // When the network is observed: the rehearsal's changes of its links' usage, in order, for
    // the observers to see a replay's links loaded as the transfers would have loaded them.
    std::vector<LinkUsageChange> usage;
  };

  // The record of `request`: rehearsed, or moved from the record of its canonical translate.
  sim::StatusOr<const Record*> RecordOf(const CollectiveRequest& request);
  sim::StatusOr<const Record*> Rehearse(const CollectiveRequest& request);
  // The idle copy on which requests with the symmetry `group` are rehearsed one rank per orbit
  // (SymmetryOfRanks), made on first use.
  struct QuotientRehearsal;
  QuotientRehearsal& QuotientFor(const TranslationGroup& group);
  // Fills `replay` from a rehearsal of `request` alone on a copy of this network (its orbits).
  sim::Status RehearseAlone(const CollectiveRequest& request, Replay* replay);
  // Fills `replay` from the rehearsal of `request`'s canonical translate (FabricSymmetry::
  // ToCanonical, as RecordOf), its resources moved back, after rehearsing that first if
  // `rehearse`; whether it did (not where `request`, whose ReplayKey is `key`, is its own
  // canonical translate, or a link does not move).
  sim::StatusOr<bool> TranslateReplay(const CollectiveRequest& request, const std::string& key,
                                      Replay* replay, bool rehearse);
  // Runs `request` as its replay when it may (header comment); whether it did. Otherwise
  // `*owner` is the flow-model owner its transfers take.
  sim::StatusOr<bool> TryReplay(const CollectiveRequest& request, uint32_t channel,
                                const LaunchExpectation& expected, sim::EventHandler* on_done,
                                std::string* algorithm, uint32_t* owner);
  // Whether no unfinished operation but the launch's own (`expected`, of `channel`) expects to
  // cross any of `resources` (ExpectUse).
  bool ExpectedOnlyHere(std::span<const sim::ResourceId> resources, uint32_t channel,
                        const LaunchExpectation& expected) const;

  const topology::Fabric* fabric_;
  sim::Engine* engine_;
  sim::FlowModel* model_;
  FabricEfficiency efficiency_;
  NetworkMode mode_;
  FabricSymmetry symmetry_;
  RehearsalCache* shared_;
  const LinkOrbits* orbits_;
  CollectiveCache cache_;  // Of every collective built here and in the rehearsals.
  uint64_t translated_ = 0;
  uint64_t cached_transfers_ = 0;  // Of the records found in the shared cache.
  std::unique_ptr<TransferExecutor> executor_;
  std::map<std::string, Record> records_;
  std::unique_ptr<Rehearsal> rehearsal_;
  // By the group's steps and digits (QuotientFor).
  std::map<std::string, std::unique_ptr<QuotientRehearsal>> quotients_;
  std::vector<uint32_t> busy_;  // Per link: whole collectives running with it as a bottleneck.
  // Collectives running as flows; finished ones are freed by a later launch.
  std::vector<std::unique_ptr<Running>> running_;
  size_t compacted_size_ = 0;
  uint64_t launched_ = 0;
  uint64_t whole_ = 0;
  uint64_t overlapped_ = 0;

  bool replays_ = false;
  std::set<std::string> excluded_;
  std::map<std::string, Replay> replay_of_;  // By ReplayKey.
  // Per flow-model owner - 1: the launch's request.
  std::vector<std::map<std::string, Replay>::iterator> owners_;
  uint32_t groups_ = 0;
  std::unique_ptr<Rehearsal> alone_;  // The idle copy with this network's orbits.
  uint64_t alone_rehearsals_ = 0;
  uint64_t replayed_ = 0;
  bool verify_translates_ = false;
  // Per resource (empty until ExpectUse): (channel, unfinished operations expecting to cross it).
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> expected_;
  Lookahead lookahead_;
  uint64_t echo_events_ = 0;
  uint64_t echoed_changes_ = 0;  // Link usage changes the echo events made (all_transfers).
  std::optional<std::string> intruded_;
  std::function<void()> on_intrusion_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_
