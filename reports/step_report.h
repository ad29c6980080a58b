// The report of one simulated step (`podsim train|replay|infer --report FILE.html`): the
// timeline of the simulated chips' ops per stream, where the time went, memory per chip against
// HBM, a roofline of the compute ops, and link utilisation.

#ifndef PODSIM_REPORTS_STEP_REPORT_H_
#define PODSIM_REPORTS_STEP_REPORT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectives/link_load.h"
#include "reports/charts.h"
#include "reports/report.h"
#include "schedule.pb.h"
#include "topology/system.h"
#include "workloads/step_simulator.h"

namespace podsim::reports {

// The timeline draws the ops of at most this many chips: the first chip of every program, then
// the first others to finish an op up to this count. Of those it keeps at most kMaxTimelineSpans
// ops (the first to finish), which bounds the report's size (about 150 bytes an op); the
// caption says when ops were left out.
inline constexpr size_t kMaxTimelineChips = 8;
inline constexpr size_t kMaxTimelineSpans = 20000;

// Records the ops of the chips the timeline draws (a StepObserver; only reads).
class StepRecorder : public workloads::StepObserver {
 public:
  struct Run {
    uint32_t chip = 0;
    int program = 0;
    int op = 0;
    double start_s = 0;
    double end_s = 0;
  };

  void OnOpStart(sim::Time now, uint32_t chip, int program, int op) override;
  void OnOpEnd(sim::Time now, uint32_t chip, int program, int op) override;

  // The drawn chips' finished ops in the order they finished (at most kMaxTimelineSpans); how
  // many ops of any chip finished; the chips drawn.
  const std::vector<Run>& runs() const { return runs_; }
  uint64_t finished() const { return finished_; }
  const std::set<uint32_t>& chips() const { return chips_; }
  uint64_t dropped() const { return dropped_; }  // Drawn chips' ops beyond kMaxTimelineSpans.

 private:
  bool Draws(uint32_t chip, int program);

  std::map<std::tuple<uint32_t, int, int>, double> started_;
  std::set<uint32_t> chips_;
  std::set<int> programs_;
  std::vector<Run> runs_;
  uint64_t finished_ = 0;
  uint64_t dropped_ = 0;
};

struct StepReportInput {
  std::string title;
  std::string command;  // The podsim command line.
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<std::string> notes;
  std::vector<Part> breakdown;  // Mean per chip; adds up to step_s.
  std::string breakdown_caption;
  std::vector<MemoryPart> memory;  // Per chip; empty: no memory chart.
  std::string memory_caption;
  double step_s = 0;
  // The flag that simulates every chip ("--every-chip"), for the note that says why a step
  // that did not has no link heat map; empty where the command has none.
  std::string every_chip_flag;
};

// `links`: the step's link meter, or null when the step ran without one. Where the step did not
// simulate every chip the heat map is left out and a note says why.
Report StepReport(const StepReportInput& input, const topology::System& system,
                  const schedule::Schedule& schedule, const workloads::StepResult& step,
                  const StepRecorder& recorder, const collectives::LinkLoadMeter* links);

// Tees of observers, so a report and a trace can watch the same step. Null entries are skipped.
class StepObserverTee : public workloads::StepObserver {
 public:
  explicit StepObserverTee(std::vector<workloads::StepObserver*> observers);
  void OnOpStart(sim::Time now, uint32_t chip, int program, int op) override;
  void OnOpEnd(sim::Time now, uint32_t chip, int program, int op) override;
  void OnCollectiveAlgorithm(uint32_t chip, int program, int op,
                             std::string_view algorithm) override;

 private:
  std::vector<workloads::StepObserver*> observers_;
};

}  // namespace podsim::reports

#endif  // PODSIM_REPORTS_STEP_REPORT_H_
