#include "cli/step_trace.h"

#include <algorithm>
#include <cctype>
#include <tuple>
#include <utility>

#include "cli/collective_trace.h"
#include "cli/report_format.h"
#include "sim/check.h"
#include "traces/trace_file.h"

namespace podsim::cli {

namespace {

// Category of every op slice: flows must join slices of one category (trace_sink.h rule 5), and
// an op's flows cross kinds (a collective feeds a matmul).
constexpr std::string_view kOpCategory = "op";

// Track order within a chip: compute first, then the communication streams of training_schedule.h
// from the innermost mesh axis out, then the pipeline.
constexpr std::string_view kStreamOrder[] = {"compute",     "tp",          "etp",
                                             "cp",          "ep",          "fsdp",
                                             "fsdp.reduce", "expert-fsdp", "expert-fsdp.reduce",
                                             "dp",          "expert-dp",   "pp",
                                             "pp.recv"};

// "ALL_GATHER" -> "all-gather".
std::string EnumName(const std::string& name) {
  std::string out = name;
  for (char& c : out) c = c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return out;
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ",") + part;
  return out;
}

}  // namespace

StepTraceObserver::StepTraceObserver(const schedule::Schedule* schedule,
                                     const workloads::MeshGrid* grid,
                                     const topology::Fabric* fabric, traces::TraceSink* sink,
                                     std::vector<bool> traced, std::string role)
    : schedule_(schedule),
      grid_(grid),
      sink_(sink),
      traced_(std::move(traced)),
      role_(std::move(role)),
      link_counters_(
          fabric, sink,
          [this](topology::VertexId chip) -> std::optional<traces::ProcessId> {
            auto it = chips_.find(chip);
            if (it == chips_.end()) return std::nullopt;
            return it->second.process;
          },
          kLinkWindow) {
  PODSIM_CHECK(schedule_ != nullptr && grid_ != nullptr && sink_ != nullptr)
      << "StepTraceObserver needs a schedule, a grid and a sink";
  step_track_ = sink_->AddTrack(sink_->AddProcess("system", 0), "step");
}

const StepTraceObserver::ProgramInfo& StepTraceObserver::Info(int program) {
  auto it = programs_.find(program);
  if (it != programs_.end()) return it->second;
  const schedule::Program& spec = schedule_->programs(program);
  ProgramInfo info;
  // Streams in kStreamOrder first, then the others as they first appear.
  std::vector<std::string> seen;
  for (const schedule::Op& op : spec.ops()) {
    if (std::find(seen.begin(), seen.end(), op.stream()) == seen.end()) seen.push_back(op.stream());
  }
  for (std::string_view name : kStreamOrder) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) info.streams.emplace_back(name);
  }
  for (const std::string& name : seen) {
    if (std::find(info.streams.begin(), info.streams.end(), name) == info.streams.end()) {
      info.streams.push_back(name);
    }
  }
  const int n = spec.ops_size();
  info.track_of_op.resize(n);
  info.cross_dependents.resize(n);
  for (int i = 0; i < n; ++i) {
    const std::string& stream = spec.ops(i).stream();
    info.track_of_op[i] = static_cast<int>(
        std::find(info.streams.begin(), info.streams.end(), stream) - info.streams.begin());
  }
  info.has_hbm = spec.static_hbm_bytes() > 0;
  for (const schedule::Op& op : spec.ops()) {
    info.has_hbm = info.has_hbm || op.hbm_alloc_bytes() > 0 || op.hbm_free_bytes() > 0;
  }
  for (int i = 0; i < n; ++i) {
    for (uint32_t dep : spec.ops(i).deps()) {
      if (info.track_of_op[dep] != info.track_of_op[i]) info.cross_dependents[dep].push_back(i);
    }
  }
  return programs_.emplace(program, std::move(info)).first->second;
}

StepTraceObserver::Chip* StepTraceObserver::ChipOf(uint32_t chip, int program, sim::Time now) {
  auto it = chips_.find(chip);
  if (it != chips_.end()) return &it->second;
  const ProgramInfo& info = Info(program);
  Chip c;
  c.program = program;
  c.process = sink_->AddProcess(ProcessName(chip, program), ProcessSortIndex(chip, program));
  for (const std::string& stream : info.streams)
    c.tracks.push_back(sink_->AddTrack(c.process, stream));
  c.running_since.assign(info.streams.size(), sim::Time::Zero());
  if (info.has_hbm) {
    c.hbm = sink_->AddCounterTrack(c.process, "HBM", traces::CounterUnit::kBytes);
    c.hbm_bytes = schedule_->programs(program).static_hbm_bytes();
    sink_->SetCounter(*c.hbm, now, c.hbm_bytes);
  }
  return &chips_.emplace(chip, std::move(c)).first->second;
}

std::string StepTraceObserver::ProcessName(uint32_t chip, int program) const {
  const schedule::Program& spec = schedule_->programs(program);
  std::string name =
      (role_.empty() ? "" : role_ + " ") + spec.name() + " (chip " + std::to_string(chip);
  const char* separator = ": ";
  for (size_t axis = 0; axis < grid_->axes().size(); ++axis) {
    const topology::MeshAxis& mesh_axis = grid_->axes()[axis];
    if (mesh_axis.size <= 1 || spec.where().contains(mesh_axis.name)) continue;
    name += separator + mesh_axis.name + " " +
            std::to_string(grid_->Coord(chip, static_cast<int>(axis)));
    separator = ", ";
  }
  return name + ")";
}

int32_t StepTraceObserver::ProcessSortIndex(uint32_t chip, int program) const {
  int64_t rank = program;
  for (size_t axis = 0; axis < grid_->axes().size(); ++axis) {
    rank = rank * grid_->axes()[axis].size + grid_->Coord(chip, static_cast<int>(axis));
  }
  PODSIM_CHECK(rank < INT32_MAX) << "process sort index overflows: " << rank;
  return static_cast<int32_t>(rank + 1);
}

uint32_t StepTraceObserver::PeerOf(uint32_t chip, const schedule::Op& op) const {
  const int axis = grid_->AxisIndex(op.peer_axis());
  return grid_->ChipWith(chip, axis, grid_->Coord(chip, axis) + op.peer_offset());
}

void StepTraceObserver::OnOpStart(sim::Time now, uint32_t chip, int program, int op) {
  simulated_.insert(chip);
  if (!Traced(chip)) return;
  Chip* c = ChipOf(chip, program, now);
  c->running_since[Info(program).track_of_op[op]] = now;
}

void StepTraceObserver::OnOpEnd(sim::Time now, uint32_t chip, int program, int op) {
  if (!Traced(chip)) return;
  Chip* c = ChipOf(chip, program, now);
  const ProgramInfo& info = Info(program);
  const schedule::Op& spec = schedule_->programs(program).ops(op);
  const int track = info.track_of_op[op];

  // Flows this op starts: one per consumer on another stream, and one to the Recv of a Send.
  std::vector<uint64_t> out;
  for (int consumer : info.cross_dependents[op]) {
    out.push_back(next_flow_);
    pending_deps_[{chip, consumer}].push_back(next_flow_++);
  }
  if (spec.kind() == schedule::SEND) {
    const uint32_t peer = PeerOf(chip, spec);
    if (Traced(peer)) {
      out.push_back(next_flow_);
      pending_sends_[{peer, chip, spec.tag()}] = next_flow_++;
    }
  }
  // Flows it ends: from its producers on other streams, and from the Send of a Recv.
  std::vector<uint64_t> in;
  if (auto it = pending_deps_.find({chip, op}); it != pending_deps_.end()) {
    in = std::move(it->second);
    pending_deps_.erase(it);
  }
  if (spec.kind() == schedule::RECV) {
    auto it = pending_sends_.find({chip, PeerOf(chip, spec), spec.tag()});
    if (it != pending_sends_.end()) {
      in.push_back(it->second);
      pending_sends_.erase(it);
    }
  }
  flows_ += out.size();

  // Arguments: only those that apply to the op's kind (they dominate the trace's size).
  const std::string kind = EnumName(schedule::OpKind_Name(spec.kind()));
  std::string shape, collective, axes, algorithm;
  std::vector<traces::Arg> args;
  args.push_back(traces::Arg::String("kind", kind));
  if (spec.flops() > 0) args.push_back(traces::Arg::Double("flops", spec.flops()));
  if (spec.model_flops() > 0 && spec.model_flops() != spec.flops()) {
    args.push_back(traces::Arg::Double("model_flops", spec.model_flops()));
  }
  if (spec.hbm_bytes() > 0) args.push_back(traces::Arg::Double("hbm_bytes", spec.hbm_bytes()));
  if (spec.has_shape() && spec.shape().m() > 0) {
    const schedule::MatmulShape& s = spec.shape();
    shape = (s.batch() > 1 ? std::to_string(s.batch()) + " x " : std::string()) +
            std::to_string(s.m()) + "x" + std::to_string(s.k()) + " @ " + std::to_string(s.k()) +
            "x" + std::to_string(s.n());
    args.push_back(traces::Arg::String("shape", shape));
  }
  if (spec.kind() == schedule::COLLECTIVE) {
    collective = EnumName(schedule::CollectiveKind_Name(spec.collective()));
    axes = spec.group().empty() ? Join(spec.axes()) : "group " + spec.group();
    args.push_back(traces::Arg::String("collective", collective));
    args.push_back(traces::Arg::String(spec.group().empty() ? "mesh_axes" : "group", axes));
    if (auto it = algorithms_.find({chip, op}); it != algorithms_.end()) {
      algorithm = std::move(it->second);
      algorithms_.erase(it);
      args.push_back(traces::Arg::String("algorithm", algorithm));
    }
  }
  if (spec.kind() == schedule::SEND || spec.kind() == schedule::RECV) {
    args.push_back(traces::Arg::String("mesh_axes", spec.peer_axis()));
    args.push_back(traces::Arg::Uint(spec.kind() == schedule::SEND ? "to_chip" : "from_chip",
                                     PeerOf(chip, spec)));
  }
  if (spec.bytes() > 0) args.push_back(traces::Arg::Double("bytes", spec.bytes()));
  if (!spec.phase().empty()) args.push_back(traces::Arg::String("phase", spec.phase()));
  args.push_back(traces::Arg::Int("microbatch", spec.microbatch()));
  if (!spec.phase().empty() && spec.layer() >= 0) {
    args.push_back(traces::Arg::Int("layer", spec.layer()));
  }
  args.push_back(traces::Arg::Int("op", op));

  const traces::EventSpec event{.name = spec.name().empty() ? kind : spec.name(),
                                .category = kOpCategory,
                                .args = args,
                                .flows_out = out,
                                .flows_in = in};
  sink_->BeginSlice(c->tracks[track], c->running_since[track], event);
  sink_->EndSlice(c->tracks[track], now);
  ++slices_;
  if (c->hbm && (spec.hbm_alloc_bytes() > 0 || spec.hbm_free_bytes() > 0)) {
    c->hbm_bytes += spec.hbm_alloc_bytes() - spec.hbm_free_bytes();
    sink_->SetCounter(*c->hbm, now, c->hbm_bytes);
  }
}

void StepTraceObserver::OnCollectiveAlgorithm(uint32_t chip, int program, int op,
                                              std::string_view algorithm) {
  (void)program;
  if (Traced(chip)) algorithms_[{chip, op}] = std::string(algorithm);
}

void StepTraceObserver::FinishStep(sim::Time step_time) {
  const traces::Arg args[] = {
      traces::Arg::String("schedule", schedule_->description()),
      traces::Arg::Uint("traced_chips", chips_.size()),
      traces::Arg::Uint("op_slices", slices_),
      traces::Arg::Uint("link_counter_tracks", link_counters_.tracks()),
  };
  sink_->BeginSlice(step_track_, sim::Time::Zero(),
                    {.name = "step", .category = "step", .args = args});
  sink_->EndSlice(step_track_, step_time);
  link_counters_.Finish(step_time);
}

sim::StatusOr<std::unique_ptr<StepTraceFile>> StepTraceFile::Open(
    const std::string& path, std::string_view chips, const topology::System& system,
    schedule::Schedule schedule, bool every_chip, std::string role) {
  std::unique_ptr<StepTraceFile> file(new StepTraceFile());
  PODSIM_RETURN_IF_ERROR(traces::TraceFormatFromPath(path).status().WithContext("--trace"));
  PODSIM_ASSIGN_OR_RETURN(std::vector<bool> traced,
                          StepTraceChips(chips, system.fabric.chip_count(), every_chip));
  if (!chips.empty() && chips != "all") {
    for (uint32_t c = 0; c < traced.size(); ++c) {
      if (traced[c]) file->named_chips_.push_back(c);
    }
  }
  file->schedule_ = std::move(schedule);
  PODSIM_ASSIGN_OR_RETURN(workloads::CheckedSchedule checked,
                          workloads::CheckSchedule(system, file->schedule_));
  file->checked_ = std::make_unique<workloads::CheckedSchedule>(std::move(checked));
  sim::StatusOr<std::unique_ptr<traces::TraceSink>> sink = traces::OpenTraceFile(path);
  if (!sink.ok()) return sink.status().WithContext("--trace");
  file->sink_ = std::move(*sink);
  file->observer_ =
      std::make_unique<StepTraceObserver>(&file->schedule_, &file->checked_->grid, &system.fabric,
                                          file->sink_.get(), std::move(traced), std::move(role));
  return file;
}

std::string StepTraceFile::Summary() const {
  return CountOf(observer_->traced_chips(), "chip") + ", " + std::to_string(observer_->slices()) +
         " op slices, " + std::to_string(observer_->flows()) + " flows, " +
         std::to_string(observer_->link_tracks()) + " link counters";
}

sim::Status StepTraceFile::Close(sim::Time step_time) {
  const std::set<uint32_t>& simulated = observer_->simulated_chips();
  for (uint32_t chip : named_chips_) {
    if (simulated.contains(chip)) continue;
    return sim::Status::InvalidArgument(
        "--trace-chips: chip " + std::to_string(chip) +
        " is not simulated in this mode (simulated: " + ChipRanges(simulated) +
        "); --every-chip simulates every chip, or name simulated chips; no trace written");
  }
  observer_->FinishStep(step_time);
  return sink_->Close().WithContext("--trace");
}

std::string ChipRanges(const std::set<uint32_t>& chips) {
  std::string text;
  for (auto it = chips.begin(); it != chips.end();) {
    const uint32_t first = *it;
    uint32_t last = first;
    while (++it != chips.end() && *it == last + 1) ++last;
    if (!text.empty()) text += ",";
    text += std::to_string(first);
    if (last > first) {
      text += '-';
      text += std::to_string(last);
    }
  }
  return text.empty() ? "none" : text;
}

sim::StatusOr<std::vector<bool>> StepTraceChips(std::string_view text, uint32_t chip_count,
                                                bool every_chip) {
  if (text.empty() && !every_chip) return std::vector<bool>(chip_count, true);
  return ParseTraceChips(text, chip_count);
}

}  // namespace podsim::cli
