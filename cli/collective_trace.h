// CollectiveTraceObserver: writes a simulated collective into a trace (traces/trace_sink.h).
//
// Per traced chip (a process): every transfer it sends or receives as a slice on a "send N" or
// "recv N" lane (a lane carries one transfer at a time, so slices always nest; a chip sending to
// two neighbours at once uses two lanes), a flow from each send to its receive when both chips are
// traced, and for each link direction leaving the chip a counter of its utilisation (carried rate
// over line rate) at every change of its rate (link_counters.h). Only reads what it observes:
// results are the same with or without it.

#ifndef PODSIM_CLI_COLLECTIVE_TRACE_H_
#define PODSIM_CLI_COLLECTIVE_TRACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli/link_counters.h"
#include "collectives/transfer_observer.h"
#include "sim/flow_observer.h"
#include "topology/fabric.h"
#include "traces/trace_sink.h"

namespace podsim::cli {

class CollectiveTraceObserver : public collectives::TransferObserver, public sim::FlowObserver {
 public:
  // `traced[c]` selects chip c. `fabric` and `sink` must outlive the observer.
  CollectiveTraceObserver(const topology::Fabric* fabric, traces::TraceSink* sink,
                          const std::vector<bool>& traced, std::string algorithm);

  void OnTransferStarted(sim::Time now, uint64_t id, topology::VertexId src, topology::VertexId dst,
                         double bytes) override;
  void OnTransferCompleted(sim::Time now, uint64_t id) override;
  void OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                              double used_bytes_per_s) override;

 private:
  struct Lanes {
    std::vector<traces::TrackId> tracks;
    std::vector<bool> busy;
  };
  struct Chip {
    traces::ProcessId process;
    Lanes send, recv;
  };
  struct Open {  // A transfer in flight: the lanes it occupies (-1: that end is not traced).
    topology::VertexId src, dst;
    int send_lane = -1, recv_lane = -1;
  };

  bool Traced(topology::VertexId v) const { return v < traced_.size() && traced_[v]; }
  int TakeLane(topology::VertexId chip, bool send);

  const topology::Fabric* fabric_;
  traces::TraceSink* sink_;
  std::vector<bool> traced_;
  std::string algorithm_;
  std::map<topology::VertexId, Chip> chips_;
  std::map<uint64_t, Open> open_;  // By transfer id; only transfers in flight.
  LinkCounters link_counters_;
};

// Parses --trace-chips: "all", or chip indices and ranges like "0-15,32". Default (empty): every
// chip up to 64, else chips 0-63, so a full-pod trace stays viewable.
sim::StatusOr<std::vector<bool>> ParseTraceChips(std::string_view text, uint32_t chip_count);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_COLLECTIVE_TRACE_H_
