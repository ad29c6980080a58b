// CollectiveNetwork: a fabric's links as resources of a flow model on an engine the caller runs,
// and collectives launched on it at any simulated time. Collectives running at once share the
// links their routes have in common max-min fairly, so a step simulation (workloads/) gets
// contention between its communication streams from the flow model, not from a formula.
//
// Reuse of idle-fabric results. A training step repeats the same collective (same op, bytes,
// ranks) thousands of times, mostly on links nothing else uses at that moment. Each distinct
// request is simulated once on a private, idle copy of the network, which gives its duration and
// its footprint (every link its flows crossed). A launch whose footprint touches no link of a
// collective still running is then replayed from that record: the same duration, because an
// idle fabric gives the same max-min rates at any start time. Any other launch runs as flows on
// the shared model. A record holds its links until it completes, so a later launch that shares
// them runs as flows; that launch cannot slow the record down (its bytes are not flows), which
// is the one approximation, counted in `approximate_overlaps()`. `replay_idle = false` turns
// replays off, making every launch flows: the exact reference the tests compare with.

#ifndef PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_
#define PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/collective_runner.h"
#include "collectives/efficiency_model.h"
#include "sim/engine.h"
#include "sim/event_handler.h"
#include "sim/flow_model.h"
#include "sim/status.h"
#include "topology/fabric.h"

namespace podsim::collectives {

class Collective;
class TransferExecutor;

class CollectiveNetwork {
 public:
  // Adds the fabric's links to `model` (which must have no resources yet) at the bandwidth
  // `efficiency` leaves of their line rate. All pointers must outlive the network.
  CollectiveNetwork(const topology::Fabric* fabric, sim::Engine* engine, sim::FlowModel* model,
                    FabricEfficiency efficiency, bool replay_idle = true);
  ~CollectiveNetwork();
  CollectiveNetwork(const CollectiveNetwork&) = delete;
  CollectiveNetwork& operator=(const CollectiveNetwork&) = delete;

  // Validates `request` as SimulateCollective does (its efficiency fields and observers are
  // ignored: the network's model applies) and starts it now: the launch latency, then its
  // transfers. `on_done` runs when every rank has finished.
  sim::Status Launch(const CollectiveRequest& request, sim::EventHandler on_done);

  // What the collective would take alone on the idle network (launch latency included).
  sim::StatusOr<sim::Time> IdleDuration(const CollectiveRequest& request);

  const FabricEfficiency& efficiency() const { return efficiency_; }
  uint64_t launched() const { return launched_; }
  uint64_t replayed() const { return replayed_; }
  uint64_t approximate_overlaps() const { return approximate_overlaps_; }
  uint64_t transfers() const;

 private:
  struct Record {
    sim::Time duration;
    std::vector<uint32_t> links;  // Link indices the flows crossed, ascending.
  };
  struct Running;

  sim::StatusOr<const Record*> RecordOf(const CollectiveRequest& request);
  void Hold(const Record& record, bool replay);
  void Release(const Record& record, bool replay);

  const topology::Fabric* fabric_;
  sim::Engine* engine_;
  sim::FlowModel* model_;
  FabricEfficiency efficiency_;
  bool replay_idle_;
  std::unique_ptr<TransferExecutor> executor_;
  std::map<std::string, Record> records_;
  std::vector<uint32_t> holders_;    // Per link: collectives running over it.
  std::vector<uint32_t> replaying_;  // Per link: replayed records among them.
  // Collectives running as flows; finished ones are freed by a later launch.
  std::vector<std::unique_ptr<Running>> running_;
  size_t compacted_size_ = 0;
  uint64_t launched_ = 0;
  uint64_t replayed_ = 0;
  uint64_t approximate_overlaps_ = 0;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_COLLECTIVE_NETWORK_H_
