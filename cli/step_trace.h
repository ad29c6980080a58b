// StepTraceObserver: writes a simulated step (workloads/step_simulator.h) into a trace
// (traces/trace_sink.h), for `podsim train|replay|infer --trace`.
//
// Layout of the trace:
//  - a "system" process with one "step" slice from 0 to the end of the step;
//  - per traced chip, one process named after its program, chip and mesh coordinates on the axes
//    of size > 1 that the program's `where` leaves free ("stage 3 (chip 1234: dp 5, tp 2)"),
//    prefixed by the role of the step when the caller gives one ("decode replica (chip 0: tp 0)"),
//    with one slice track per stream of that program in a fixed order (compute, tp, fsdp,
//    fsdp.reduce, dp, pp, pp.recv, then any other stream in schedule order);
//  - processes sorted (TraceSink::AddProcess's sort_index) "system" first, then by program (the
//    pipeline stage: training schedules list stages in order), then by mesh coordinates, the
//    grid's axes in order, whatever the order chips first run an op in;
//  - one slice per op (a Recv's slice spans its wait), category "op", with the op's kind, FLOPs,
//    HBM bytes, matmul shape, collective, mesh axes, the collective's algorithm (as the network
//    ran it: collectives/collective_runner.h), bytes, phase, microbatch and layer as args (only
//    those that apply);
//  - flows from each Send to its Recv when both chips are traced, and from a producer op to each
//    consumer op on another stream of the same chip (dependencies inside a stream are implied by
//    the order of its slices, so they get no arrow). At most one flow per dependency edge: the
//    count is bounded by the schedule's size;
//  - per traced chip whose program gives HBM figures (schedule.proto: static_hbm_bytes,
//    hbm_alloc_bytes, hbm_free_bytes; training schedules do), an "HBM" counter in bytes: the
//    program's static bytes from its first op on, then what each op holds or releases as it ends;
//  - per traced chip, one counter track per link direction leaving it that carries traffic, with
//    its utilisation in windows of kLinkWindow (link_counters.h: the mean over each window,
//    written when it changes). What a link carries depends on the network mode
//    (collectives/collective_network.h): with --flows, every transfer of every collective and
//    send crossing it, at its max-min rate; by default, whole collectives, each as one flow over
//    its bottleneck links moving the bottleneck's bytes after the collective's latency, so a
//    counter shows the link busy with the collectives it bottlenecks (their mean rate over the
//    transfer part of the collective, sharing with overlapping ones) and idle during their
//    latency and under collectives it is not a bottleneck of. In both modes the links of
//    representatives carry the traffic of the shadow collectives of step_simulator.h too. A
//    chip's links are counted from its first op on (every program starts at time 0).
//
// Streaming: a slice is written when its op ends (begin and end together), so the observer holds
// only the start time of each stream's running op and the ids of flows not yet terminated; an op
// runs after its producers end, so a flow's source is always written before its destination.
// Slices of one track never overlap (a stream runs one op at a time), so per-track time never
// decreases; across tracks the file is not in time order, which both formats allow.
//
// Only reads: the simulation's results are the same with or without it (cli tests check this).

#ifndef PODSIM_CLI_STEP_TRACE_H_
#define PODSIM_CLI_STEP_TRACE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/link_counters.h"
#include "schedule.pb.h"
#include "sim/status.h"
#include "sim/time.h"
#include "topology/system.h"
#include "traces/trace_sink.h"
#include "workloads/mesh_grid.h"
#include "workloads/schedule_check.h"
#include "workloads/step_simulator.h"

namespace podsim::cli {

class StepTraceObserver : public workloads::StepObserver {
 public:
  // `traced[c]` selects chip c (a chip that is not simulated is simply absent from the trace);
  // `grid` places the schedule's mesh on the system (it resolves the peers of sends). `schedule`,
  // `grid`, `fabric` and `sink` must outlive the observer. `role` ("" or e.g. "decode") prefixes
  // process names. Declares the "system" process at once.
  StepTraceObserver(const schedule::Schedule* schedule, const workloads::MeshGrid* grid,
                    const topology::Fabric* fabric, traces::TraceSink* sink,
                    std::vector<bool> traced, std::string role = "");

  // The window of link utilisation counters: one value per microsecond per link at most, however
  // often --flows changes a link's rate (whole collectives change it far less often).
  static constexpr sim::Time kLinkWindow = sim::Time::Microseconds(1);

  void OnOpStart(sim::Time now, uint32_t chip, int program, int op) override;
  void OnOpEnd(sim::Time now, uint32_t chip, int program, int op) override;
  void OnCollectiveAlgorithm(uint32_t chip, int program, int op,
                             std::string_view algorithm) override;

  // Writes the "step" slice, [0, step_time], and the last link counter values. Call once, after
  // the simulation succeeded and before the sink's Close().
  void FinishStep(sim::Time step_time);

  // For StepOptions::flow_observer.
  sim::FlowObserver* link_observer() { return &link_counters_; }

  // Slices and flows written so far (for reports and tests).
  uint64_t slices() const { return slices_; }
  uint64_t flows() const { return flows_; }
  uint32_t traced_chips() const { return static_cast<uint32_t>(chips_.size()); }
  uint64_t link_tracks() const { return link_counters_.tracks(); }
  // Every chip that ran an op, traced or not, ascending.
  const std::set<uint32_t>& simulated_chips() const { return simulated_; }

 private:
  // What the observer needs of one program, computed on first use.
  struct ProgramInfo {
    std::vector<std::string> streams;  // Track order.
    std::vector<int> track_of_op;      // Index into streams.
    // Per op: the later ops of another stream that depend on it.
    std::vector<std::vector<int>> cross_dependents;
    bool has_hbm = false;  // Any HBM figure in the program.
  };
  struct Chip {
    int program = 0;
    traces::ProcessId process;
    std::vector<traces::TrackId> tracks;   // Per ProgramInfo::streams.
    std::vector<sim::Time> running_since;  // Per track: start of the op running there.
    std::optional<traces::TrackId> hbm;    // When the program gives HBM figures.
    double hbm_bytes = 0;                  // In use now.
  };

  const ProgramInfo& Info(int program);
  // The traced chip's state, its process and tracks declared at `now` on first use.
  Chip* ChipOf(uint32_t chip, int program, sim::Time now);
  // The chip a Send or Recv op of `chip` exchanges with.
  uint32_t PeerOf(uint32_t chip, const schedule::Op& op) const;
  bool Traced(uint32_t chip) const { return chip < traced_.size() && traced_[chip]; }
  std::string ProcessName(uint32_t chip, int program) const;
  // 1 + the rank of (program, the chip's coordinates on the grid's axes in order).
  int32_t ProcessSortIndex(uint32_t chip, int program) const;

  const schedule::Schedule* schedule_;
  const workloads::MeshGrid* grid_;
  traces::TraceSink* sink_;
  std::vector<bool> traced_;
  std::string role_;
  traces::TrackId step_track_;
  std::map<int, ProgramInfo> programs_;
  std::map<uint32_t, Chip> chips_;  // Traced chips seen so far.
  std::set<uint32_t> simulated_;
  // Flows whose source slice is written: (chip, consumer op) -> ids, and (receiving chip,
  // sending chip, tag) -> id.
  std::map<std::pair<uint32_t, int>, std::vector<uint64_t>> pending_deps_;
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint64_t> pending_sends_;
  // Algorithms of collectives launched and not yet ended: (chip, op) -> algorithm.
  std::map<std::pair<uint32_t, int>, std::string> algorithms_;
  LinkCounters link_counters_;
  uint64_t next_flow_ = 1;
  uint64_t slices_ = 0;
  uint64_t flows_ = 0;
};

// A trace file of one step: the sink (traces/trace_file.h) and the observer writing into it, for
// `podsim train|replay|infer --trace`. Owns a copy of the schedule it traces.
class StepTraceFile {
 public:
  // Opens `path` (the format from its extension) to trace `schedule` as simulated on `system`
  // (which must outlive the file); `chips` as --trace-chips takes it (StepTraceChips); `role` as
  // StepTraceObserver takes it.
  // Fails with InvalidArgument for a bad extension, schedule or chip list and IoError when the
  // file cannot be created; nothing is left on disk then.
  static sim::StatusOr<std::unique_ptr<StepTraceFile>> Open(const std::string& path,
                                                            std::string_view chips,
                                                            const topology::System& system,
                                                            schedule::Schedule schedule,
                                                            bool every_chip, std::string role = "");

  // For StepOptions::observer and StepOptions::flow_observer; valid until Close().
  workloads::StepObserver* observer() { return observer_.get(); }
  sim::FlowObserver* flow_observer() { return observer_->link_observer(); }
  const StepTraceObserver& stats() const { return *observer_; }
  // "N chips, N op slices, N flows, N link counters", for reports.
  std::string Summary() const;

  // Writes the step slice and closes the file (renaming it into place). Call once, after the
  // simulation succeeded; a trace that is never closed is removed. Fails with InvalidArgument,
  // writing nothing, when --trace-chips named a chip the step did not simulate (the error lists
  // the simulated chips and points to --every-chip).
  sim::Status Close(sim::Time step_time);

 private:
  StepTraceFile() = default;

  schedule::Schedule schedule_;
  std::unique_ptr<workloads::CheckedSchedule> checked_;
  std::unique_ptr<traces::TraceSink> sink_;
  std::unique_ptr<StepTraceObserver> observer_;
  // The chips --trace-chips named one by one or by ranges (empty for "all" or no flag).
  std::vector<uint32_t> named_chips_;
};

// The chips `podsim train|replay|infer --trace` traces: `text` as --trace-chips takes it ("all", or
// chip ids and ranges like 0-15,32); empty means every simulated chip when one chip per program
// is simulated, and chips 0-63 with --every-chip (a full pod would not be viewable).
sim::StatusOr<std::vector<bool>> StepTraceChips(std::string_view text, uint32_t chip_count,
                                                bool every_chip);

// "0-3,8,12-15": ascending chips as --trace-chips writes them ("none" when empty).
std::string ChipRanges(const std::set<uint32_t>& chips);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_STEP_TRACE_H_
