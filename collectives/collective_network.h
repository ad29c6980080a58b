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
//     translate.
//
// Symmetric quotient (`orbits`, kFlows only): the flow model holds one resource per link orbit
// of a translation group (link_orbits.h), and a launched collective's flows, one per orbit of
// transfers (CollectiveRequest::rank_reps), stand for their images under the group
// (transfer_executor.h): the network then carries exactly the load of the full simulation of every
// image (workloads/ step_simulator.h, SimulatedChips::kOrbits).

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
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
  sim::Status Launch(const CollectiveRequest& request, sim::EventHandler on_done,
                     std::string* algorithm = nullptr);

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
  uint64_t rehearsals() const { return records_.size() - translated_; }
  uint64_t rehearsal_events() const;

 private:
  using Record = RehearsalRecord;
  struct Running;
  struct Rehearsal;

  // The record of `request`: rehearsed, or moved from the record of its canonical translate.
  sim::StatusOr<const Record*> RecordOf(const CollectiveRequest& request);
  sim::StatusOr<const Record*> Rehearse(const CollectiveRequest& request);

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
  std::vector<uint32_t> busy_;  // Per link: whole collectives running with it as a bottleneck.
  // Collectives running as flows; finished ones are freed by a later launch.
  std::vector<std::unique_ptr<Running>> running_;
  size_t compacted_size_ = 0;
  uint64_t launched_ = 0;
  uint64_t whole_ = 0;
  uint64_t overlapped_ = 0;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_
