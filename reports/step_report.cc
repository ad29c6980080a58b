#include "reports/step_report.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "reports/link_cells.h"

namespace podsim::reports {
namespace {

bool IsCompute(schedule::OpKind kind) {
  return kind != schedule::COLLECTIVE && kind != schedule::SEND && kind != schedule::RECV;
}

std::string Lower(std::string text) {
  for (char& c : text) c = c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return text;
}

std::string KindOf(const schedule::Op& op) {
  if (op.kind() == schedule::COLLECTIVE)
    return Lower(schedule::CollectiveKind_Name(op.collective()));
  return Lower(schedule::OpKind_Name(op.kind()));
}

// Ops that differ only in their numbers (layer, microbatch) share a roofline point.
std::string ShapeName(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += c;
    }
  }
  return out;
}

std::string ChipLabel(uint32_t chip, const schedule::Schedule& schedule, int program) {
  std::string label = "chip " + std::to_string(chip);
  if (schedule.programs_size() > 1) label += " (" + schedule.programs(program).name() + ")";
  return label;
}

}  // namespace

bool StepRecorder::Draws(uint32_t chip, int program) {
  if (chips_.count(chip) > 0) return true;
  if (programs_.insert(program).second || chips_.size() < kMaxTimelineChips) {
    chips_.insert(chip);
    return true;
  }
  return false;
}

void StepRecorder::OnOpStart(sim::Time now, uint32_t chip, int program, int op) {
  if (Draws(chip, program)) started_[{chip, program, op}] = now.ToSeconds();
}

void StepRecorder::OnOpEnd(sim::Time now, uint32_t chip, int program, int op) {
  ++finished_;
  const auto it = started_.find({chip, program, op});
  if (it == started_.end()) return;  // A chip the timeline does not draw.
  const double start = it->second;
  started_.erase(it);
  if (runs_.size() < kMaxTimelineSpans) {
    runs_.push_back({chip, program, op, start, now.ToSeconds()});
  } else {
    ++dropped_;
  }
}

Report StepReport(const StepReportInput& input, const topology::System& system,
                  const schedule::Schedule& schedule, const workloads::StepResult& step,
                  const StepRecorder& recorder, const collectives::LinkLoadMeter* links) {
  Report report(input.title, input.command);
  for (const auto& [name, value] : input.facts) report.AddFact(name, value);
  for (const std::string& note : input.notes) report.AddNote(note);

  // Timeline: lanes by chip, then the program's streams in the order its ops name them.
  std::vector<std::tuple<uint32_t, int, int, std::string>> lane_keys;
  std::set<std::pair<uint32_t, std::string>> seen;
  std::vector<Span> spans;
  for (const StepRecorder::Run& run : recorder.runs()) {
    const schedule::Op& op = schedule.programs(run.program).ops(run.op);
    const std::string lane = ChipLabel(run.chip, schedule, run.program) + " " + op.stream();
    if (seen.insert({run.chip, op.stream()}).second) {
      // The stream's rank within its program: compute first, then by first use.
      int rank = 0;
      if (op.stream() != "compute") {
        std::vector<std::string> order;
        for (const schedule::Op& other : schedule.programs(run.program).ops()) {
          if (other.stream() == "compute") continue;
          if (std::find(order.begin(), order.end(), other.stream()) == order.end()) {
            order.push_back(other.stream());
          }
          if (other.stream() == op.stream()) break;
        }
        rank = static_cast<int>(order.size());
      }
      lane_keys.emplace_back(run.chip, run.program, rank, lane);
    }
    spans.push_back({lane, op.name(), KindOf(op), run.start_s, run.end_s});
  }
  std::sort(lane_keys.begin(), lane_keys.end());
  std::vector<std::string> lanes;
  for (const auto& key : lane_keys) lanes.push_back(std::get<3>(key));
  std::string timeline_caption =
      "Every op of " + std::to_string(recorder.chips().size()) + " of the " +
      std::to_string(step.simulated_chips) + " simulated chips (the system has " +
      std::to_string(system.fabric.chip_count()) + "; " + step.method +
      ") on its stream, coloured by kind: compute on the compute stream, collectives and sends "
      "on their mesh axis's stream. The chips drawn are the first of each program and others up "
      "to " +
      std::to_string(kMaxTimelineChips) + ".";
  if (recorder.dropped() > 0) {
    timeline_caption += " Only their first " + std::to_string(kMaxTimelineSpans) +
                        " ops to finish are drawn (the report's bound).";
  }
  report.AddChart(TimelineChart(spans, lanes, timeline_caption));

  report.AddChart(BreakdownChart(input.breakdown, input.step_s, input.breakdown_caption));
  if (!input.memory.empty()) {
    report.AddChart(MemoryChart(input.memory, system.chip.hbm_bytes, input.memory_caption));
  }

  // Roofline: every compute op's mean time over its runs, merged by shape name per program.
  std::map<std::pair<int, int>, std::pair<double, int>> time_of;  // (program, op) -> sum, runs
  for (const StepRecorder::Run& run : recorder.runs()) {
    auto& [seconds, runs] = time_of[{run.program, run.op}];
    seconds += run.end_s - run.start_s;
    ++runs;
  }
  std::map<std::pair<int, std::string>, RooflinePoint> merged;
  for (const auto& [key, sum] : time_of) {
    const schedule::Op& op = schedule.programs(key.first).ops(key.second);
    if (!IsCompute(op.kind())) continue;
    RooflinePoint& point = merged[{key.first, ShapeName(op.name())}];
    if (point.name.empty()) {
      point.name = ShapeName(op.name());
      if (schedule.programs_size() > 1)
        point.name += " (" + schedule.programs(key.first).name() + ")";
      point.count = 0;
    }
    point.flops += op.flops();
    point.hbm_bytes += op.hbm_bytes();
    point.seconds += sum.first / sum.second;
    ++point.count;
  }
  std::vector<RooflinePoint> points;
  for (auto& [key, point] : merged) points.push_back(std::move(point));
  if (system.chip.bf16_flops_per_s > 0 && system.chip.hbm_bytes_per_s > 0) {
    report.AddChart(RooflineChart(
        points, system.chip.bf16_flops_per_s, system.chip.hbm_bytes_per_s,
        "Each point the compute ops that differ only in their numbers (layers, microbatches), "
        "at their executed FLOPs over their HBM bytes and their simulated time; the roofs are the "
        "chip's bf16 peak (" +
            system.chip.name +
            ") and HBM bandwidth. Ops below the roofs run "
            "at the compute model's efficiency (workloads/compute_model.h)."));
  }

  if (links != nullptr) {
    if (step.simulated_chips == system.fabric.chip_count()) {
      const LinkCells cells =
          LinkCellsOf(system.fabric, links->Utilisation(step.step_time, nullptr));
      if (!cells.cells.empty()) {
        report.AddChart(LinkHeatMap(
            cells.cells, cells.column_title, cells.row_title,
            "Mean utilisation of each link's line rate over the step: " + cells.layout + "."));
      } else {
        report.AddNote("The link heat map is left out: more than " + std::to_string(kMaxLinkCells) +
                       " links.");
      }
    } else {
      std::string note = "The link heat map needs every chip simulated";
      if (!input.every_chip_flag.empty()) {
        note += " (";
        note += input.every_chip_flag;
        note += ")";
      }
      note += ": this step simulated ";
      note += std::to_string(step.simulated_chips);
      note += " of ";
      note += std::to_string(system.fabric.chip_count());
      note += " chips, so links would carry only their traffic.";
      report.AddNote(note);
    }
  }
  return report;
}

StepObserverTee::StepObserverTee(std::vector<workloads::StepObserver*> observers) {
  for (workloads::StepObserver* observer : observers) {
    if (observer != nullptr) observers_.push_back(observer);
  }
}
void StepObserverTee::OnOpStart(sim::Time now, uint32_t chip, int program, int op) {
  for (workloads::StepObserver* o : observers_) o->OnOpStart(now, chip, program, op);
}
void StepObserverTee::OnOpEnd(sim::Time now, uint32_t chip, int program, int op) {
  for (workloads::StepObserver* o : observers_) o->OnOpEnd(now, chip, program, op);
}
void StepObserverTee::OnCollectiveAlgorithm(uint32_t chip, int program, int op,
                                            std::string_view algorithm) {
  for (workloads::StepObserver* o : observers_)
    o->OnCollectiveAlgorithm(chip, program, op, algorithm);
}

}  // namespace podsim::reports
