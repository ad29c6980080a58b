#include "cli/infer_command.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/byte_size.h"
#include "cli/chakra_files.h"
#include "cli/fit_check.h"
#include "cli/logging.h"
#include "cli/report_file.h"
#include "cli/report_format.h"
#include "cli/run_command.h"
#include "cli/step_fidelity.h"
#include "cli/step_trace.h"
#include "cli/validation_line.h"
#include "collectives/collective_runner.h"
#include "scenario/scenario_build.h"
#include "topology/names.h"
#include "topology/system.h"
#include "workloads/inference_schedule.h"
#include "workloads/serving.h"

namespace podsim::cli {

namespace {

using workloads::InferenceOptions;
using workloads::InferencePhase;
using workloads::InferenceResult;

// Batch sizes one command simulates at most (each is a whole step).
constexpr size_t kMaxBatchPoints = 64;

struct InferFlags {
  std::string system;
  std::string model;
  std::string layout;
  std::string phase;
  std::string batch;
  std::string context;
  std::string weights = "bf16";
  std::string kv = "bf16";
  std::string prefill_len;
  std::string decode_len;
  std::string prefill_batch;
  std::string chip_hour_usd;
  std::string trace;
  std::string trace_chips;
  std::string write_chakra;
  std::string report;
  bool exact = false;
  bool json = false;
  bool require_fit = false;
  bool dump_scenario = false;
};

// Everything the flags or the scenario say, checked.
struct InferInput {
  topology::System system;
  workloads::ModelSpec model;
  workloads::InferenceLayout layout;
  InferenceOptions options;  // batch unset (the batches below).
  std::vector<int64_t> batches;
  bool disaggregated = false;
  int64_t prefill_len = 0;
  int64_t decode_len = 0;
  int64_t prefill_batch = 1;
  std::optional<double> usd_per_chip_hour;
  uint64_t max_transfers = collectives::kDefaultMaxTransfers;  // --max-transfers.
  bool exact = false;                                          // --exact.
};

sim::Status BadFlag(std::string_view flag, const std::string& what) {
  return sim::Status::InvalidArgument(std::string(flag) + ": " + what);
}

// A count with an optional suffix (K, M, G, T powers of 1000; Ki, Mi, Gi, Ti of 1024), as
// ParseTokenCount.
sim::StatusOr<int64_t> ParseInteger(std::string_view flag, const std::string& text, int64_t min,
                                    int64_t max, std::string_view unit) {
  std::optional<double> value = ParseSuffixedNumber(text, /*bytes=*/false);
  if (!value || *value != std::floor(*value) || *value < static_cast<double>(min) ||
      *value > static_cast<double>(max)) {
    return BadFlag(flag, "expected " + std::string(unit) + " from " + std::to_string(min) + " to " +
                             std::to_string(max) + " (got '" + text + "')");
  }
  return static_cast<int64_t>(*value);
}

sim::StatusOr<std::vector<int64_t>> ParseBatches(const std::string& text) {
  std::vector<int64_t> batches;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(',', start);
    const std::string item = text.substr(start, end - start);
    sim::StatusOr<int64_t> value =
        ParseInteger("--batch", item, 1, workloads::kMaxInferenceBatch, "sequences");
    if (!value.ok()) {
      return BadFlag("--batch", "expected sequences from 1 to " +
                                    std::to_string(workloads::kMaxInferenceBatch) +
                                    ", one number or a list like 1,8,16 (got '" + item + "')");
    }
    batches.push_back(*value);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (batches.size() > kMaxBatchPoints) {
    return BadFlag("--batch", "at most " + std::to_string(kMaxBatchPoints) +
                                  " batch sizes per command (got " +
                                  std::to_string(batches.size()) + ")");
  }
  return batches;
}

// The scenario of the flags; errors name the flag that does not parse.
sim::StatusOr<scenario::Scenario> ScenarioOf(const InferFlags& flags) {
  scenario::Scenario s;
  s.mutable_system()->set_preset(flags.system);
  scenario::Infer* infer = s.mutable_infer();
  infer->mutable_model()->set_preset(flags.model);
  infer->mutable_layout()->set_text(flags.layout);
  sim::StatusOr<workloads::DType> weights = workloads::ParseDType(flags.weights);
  if (!weights.ok()) return weights.status().WithContext("--weights");
  if (*weights == workloads::DType::kInt8) infer->set_weight_dtype(scenario::Infer::INT8);
  if (*weights == workloads::DType::kInt4) infer->set_weight_dtype(scenario::Infer::INT4);
  if (*weights == workloads::DType::kFp8) infer->set_weight_dtype(scenario::Infer::FP8);
  sim::StatusOr<workloads::DType> kv = workloads::ParseDType(flags.kv);
  if (!kv.ok()) return kv.status().WithContext("--kv");
  if (*kv == workloads::DType::kInt8) infer->set_kv_dtype(scenario::Infer::INT8);
  if (*kv == workloads::DType::kInt4) infer->set_kv_dtype(scenario::Infer::INT4);
  if (*kv == workloads::DType::kFp8) infer->set_kv_dtype(scenario::Infer::FP8);
  PODSIM_ASSIGN_OR_RETURN(std::vector<int64_t> batches, ParseBatches(flags.batch));
  for (int64_t batch : batches) infer->add_batch(batch);

  if (!flags.prefill_len.empty()) {
    const int64_t max = workloads::kMaxInferenceContext;
    PODSIM_ASSIGN_OR_RETURN(int64_t prefill_len,
                            ParseInteger("--prefill-len", flags.prefill_len, 1, max, "tokens"));
    PODSIM_ASSIGN_OR_RETURN(int64_t decode_len,
                            ParseInteger("--decode-len", flags.decode_len, 1, max, "tokens"));
    if (prefill_len + decode_len > max) {
      return BadFlag("--decode-len", "--prefill-len + --decode-len must be at most " +
                                         std::to_string(max) + " tokens (got " +
                                         std::to_string(prefill_len + decode_len) + ")");
    }
    if (batches.size() != 1) {
      return BadFlag("--batch", "give one decode batch with --prefill-len (got " +
                                    std::to_string(batches.size()) + ")");
    }
    infer->set_prefill_len(prefill_len);
    infer->set_decode_len(decode_len);
    if (!flags.prefill_batch.empty()) {
      PODSIM_ASSIGN_OR_RETURN(int64_t prefill_batch,
                              ParseInteger("--prefill-batch", flags.prefill_batch, 1,
                                           workloads::kMaxInferenceBatch, "prompts"));
      infer->set_prefill_batch(prefill_batch);
    }
  } else {
    sim::StatusOr<InferencePhase> phase = workloads::ParseInferencePhase(flags.phase);
    if (!phase.ok()) return phase.status().WithContext("--phase");
    const bool prefill = *phase == InferencePhase::kPrefill;
    PODSIM_ASSIGN_OR_RETURN(
        int64_t context,
        ParseInteger("--context", flags.context, prefill ? 1 : 0, workloads::kMaxInferenceContext,
                     prefill ? "prompt tokens" : "cached tokens"));
    infer->set_phase(prefill ? scenario::Infer::PREFILL : scenario::Infer::DECODE);
    infer->set_context(context);
  }
  if (!flags.chip_hour_usd.empty()) {
    std::optional<double> price = topology::ParseNumber(flags.chip_hour_usd);
    if (!price || !(*price > 0 && *price <= 1e6)) {
      return BadFlag("--chip-hour-usd",
                     "expected a price per chip-hour in dollars > 0 and <= 1e6, like 1.2 (got '" +
                         flags.chip_hour_usd + "')");
    }
    infer->set_chip_hour_usd(*price);
  }
  if (flags.exact) infer->set_exact(true);
  if (flags.json) s.mutable_outputs()->set_json(true);
  if (flags.require_fit) s.mutable_outputs()->set_require_fit(true);
  if (!flags.trace.empty()) s.mutable_outputs()->set_trace(flags.trace);
  if (!flags.trace_chips.empty()) s.mutable_outputs()->set_trace_chips(flags.trace_chips);
  if (!flags.write_chakra.empty()) s.mutable_outputs()->set_write_chakra(flags.write_chakra);
  if (!flags.report.empty()) s.mutable_outputs()->set_report(flags.report);
  return s;
}

// Where each field of ScenarioOf comes from.
scenario::SourceMap InferFlagSources() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "--system");
  for (const char* name : {"model", "layout", "phase", "batch", "context"}) {
    flags.AddFlag(std::string("infer.") + name, std::string("--") + name);
  }
  flags.AddFlag("infer.weight_dtype", "--weights");
  flags.AddFlag("infer.kv_dtype", "--kv");
  flags.AddFlag("infer.prefill_len", "--prefill-len");
  flags.AddFlag("infer.decode_len", "--decode-len");
  flags.AddFlag("infer.prefill_batch", "--prefill-batch");
  flags.AddFlag("infer.chip_hour_usd", "--chip-hour-usd");
  flags.AddFlag("infer.exact", "--exact");
  flags.AddFlag("outputs.json", "--json");
  flags.AddFlag("outputs.require_fit", "--require-fit");
  flags.AddFlag("outputs.trace", "--trace");
  flags.AddFlag("outputs.trace_chips", "--trace-chips");
  flags.AddFlag("outputs.write_chakra", "--write-chakra");
  flags.AddFlag("outputs.report", "--report");
  return flags;
}

workloads::DType DTypeOf(scenario::Infer::Dtype dtype) {
  return dtype == scenario::Infer::INT8   ? workloads::DType::kInt8
         : dtype == scenario::Infer::INT4 ? workloads::DType::kInt4
         : dtype == scenario::Infer::FP8  ? workloads::DType::kFp8
                                          : workloads::DType::kBf16;
}

// The scenario's step, with what ValidateScenario does not check: a system that can run a step
// (Simulate checks the layout against it).
sim::StatusOr<InferInput> InputOf(const scenario::Scenario& s, const scenario::SourceMap& source,
                                  topology::System system) {
  const scenario::Infer& infer = s.infer();
  InferInput in;
  in.system = std::move(system);
  if (in.system.chip.bf16_flops_per_s <= 0 || in.system.chip.hbm_bytes_per_s <= 0) {
    return source.Annotate(
        sim::Status::InvalidArgument("'" + in.system.name +
                                     "' has no compute or HBM figures to simulate a step on "
                                     "(generic fabrics are for collectives)"),
        "system");
  }
  PODSIM_ASSIGN_OR_RETURN(in.model, scenario::BuildModel(infer.model(), "infer.model", source));
  PODSIM_ASSIGN_OR_RETURN(in.layout, scenario::BuildInferLayout(infer.layout(), source));
  in.options.weights = DTypeOf(infer.weight_dtype());
  if (in.options.weights == workloads::DType::kFp8 && in.system.chip.fp8_flops_per_s <= 0) {
    return source.Annotate(
        sim::Status::InvalidArgument("FP8 weights multiply in fp8, and " + in.system.chip.name +
                                     " has no fp8 peak; use int8 for 1-byte weights read narrow"),
        "infer.weight_dtype");
  }
  in.options.kv_cache = DTypeOf(infer.kv_dtype());
  in.options.collective = DTypeOf(infer.collective_dtype());
  in.batches.assign(infer.batch().begin(), infer.batch().end());
  in.disaggregated = infer.has_prefill_len();
  if (in.disaggregated) {
    in.prefill_len = infer.prefill_len();
    in.decode_len = infer.decode_len();
    if (infer.has_prefill_batch()) in.prefill_batch = infer.prefill_batch();
  } else {
    in.options.phase = infer.phase() == scenario::Infer::PREFILL ? InferencePhase::kPrefill
                                                                 : InferencePhase::kDecode;
    in.options.context = infer.context();
  }
  if (infer.has_chip_hour_usd()) in.usd_per_chip_hour = infer.chip_hour_usd();
  in.exact = infer.exact();
  return in;
}

sim::Status CheckLayout(const InferInput& in, const workloads::InferenceLayout& layout,
                        const InferenceOptions& options) {
  return workloads::ValidateInferenceLayout(layout, in.model, in.system.fabric.chip_count(),
                                            options)
      .WithContext("--layout");
}

// Checks the layout for one step before simulating it, naming the flag.
sim::StatusOr<InferenceResult> Simulate(const InferInput& in,
                                        const workloads::InferenceLayout& layout,
                                        const InferenceOptions& options,
                                        workloads::StepOptions step_options = {}) {
  PODSIM_RETURN_IF_ERROR(CheckLayout(in, layout, options));
  step_options.max_transfers = in.max_transfers;
  if (in.exact) step_options.chips = workloads::SimulatedChips::kOrbits;
  return workloads::SimulateInference(in.system, in.model, layout, options, step_options);
}

double Chips(const InferInput& in) { return static_cast<double>(in.system.fabric.chip_count()); }

// "1 chip", "8 chips".
std::string ChipsText(int64_t n) { return std::to_string(n) + (n == 1 ? " chip" : " chips"); }

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

std::string Dollars(double usd) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.4g", usd);
  return text;
}

// Seconds per category, always the same keys (design.md: stable).
std::vector<std::pair<std::string, double>> Breakdown(const InferenceResult& r) {
  std::vector<std::pair<std::string, double>> parts = {
      {"compute_hbm", r.time.compute_hbm_s},
      {"compute_mxu", r.time.compute_mxu_s},
      {"compute_overhead", r.time.compute_overhead_s},
      {"interference", r.time.interference_s}};
  for (const char* axis : {"tp", "tp2", "ep"}) {
    auto it = r.time.exposed_s.find(axis);
    parts.emplace_back(std::string("exposed_") + axis,
                       it == r.time.exposed_s.end() ? 0.0 : it->second);
  }
  parts.emplace_back("idle", r.time.idle_s);
  return parts;
}

nlohmann::ordered_json BreakdownJson(const InferenceResult& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, seconds] : Breakdown(r)) j[name] = seconds;
  return j;
}

nlohmann::ordered_json BottleneckJson(const InferenceResult& r) {
  return {{"resource", r.bottleneck}, {"share", r.bottleneck_share}};
}

// The book's closed form of the step and the simulated step's excess over it
// (workloads/inference_roofline.h).
nlohmann::ordered_json RooflineJson(const workloads::InferenceRoofline& r) {
  return {{"step_s", r.step_s},
          {"chips", r.chips},
          {"weight_chips", r.weight_chips},
          {"sequences", r.sequences},
          {"cache_s", r.cache_s},
          {"weights_s", r.weights_s},
          {"flops_s", r.flops_s},
          {"excess",
           {{"chip_counts_s", r.chip_counts_s},
            {"other_work_s", r.other_work_s},
            {"efficiency_s", r.efficiency_s},
            {"communication_s", r.communication_s}}}};
}

std::string SignedSeconds(double seconds) {
  return (seconds < 0 ? "-" : "+") + FormatSeconds(std::abs(seconds));
}

// The closed form with its terms, `separator`, then the step against it, part by part.
std::string RooflineText(const workloads::InferenceRoofline& r, double step_s,
                         const std::string& separator) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2fx", r.step_s > 0 ? step_s / r.step_s : 0.0);
  const std::string weights_over =
      r.weight_chips != r.chips ? " over the " + std::to_string(r.weight_chips) + " chips of ep"
                                : "";
  return FormatSeconds(r.step_s) + ", the book's closed form (formulas.md 2.6) for a replica of " +
         ChipsText(r.chips) + " and " + std::to_string(r.sequences) +
         (r.sequences == 1 ? " sequence: " : " sequences: ") +
         (r.cache_s > 0 ? "KV cache " + FormatSeconds(r.cache_s) + " + " : std::string()) +
         "max(weights " + FormatSeconds(r.weights_s) + weights_over + ", FLOPs " +
         FormatSeconds(r.flops_s) +
         "), every byte at the full HBM bandwidth, every FLOP at the peak, no communication" +
         separator + "the step is " + ratio + " that: this chip's counts " +
         SignedSeconds(r.chip_counts_s) + ", other work (activations, attention scores" +
         (r.other_work_s < 0 ? ", less the weights the step does not read: experts no token "
                               "reaches, embedding rows) "
                             : ") ") +
         SignedSeconds(r.other_work_s) + ", kernel efficiency " + SignedSeconds(r.efficiency_s) +
         ", communication and interference " + SignedSeconds(r.communication_s);
}

nlohmann::ordered_json MemoryJson(const workloads::InferenceMemoryBreakdown& m) {
  return {{"weights_bytes", m.weight_bytes},
          {"kv_cache_bytes", m.kv_cache_bytes},
          {"activations_bytes", m.activation_bytes},
          {"buffers_bytes", m.buffer_bytes},
          {"hbm_bytes", m.hbm_bytes},
          {"headroom_bytes", m.headroom_bytes}};
}

nlohmann::ordered_json SimulationJson(const workloads::StepResult& step) {
  return {{"exact", step.exact},
          {"method", step.method},
          {"simulated_chips", step.simulated_chips},
          {"ops", step.ops_executed},
          {"collectives", step.collectives},
          {"rehearsals", step.rehearsals},
          {"replayed_collectives", step.replayed_collectives},
          {"discarded_runs", step.discarded_runs},
          {"events", step.events + step.rehearsal_events}};
}

std::string FitsText(const workloads::InferenceMemoryBreakdown& m) {
  return m.fits ? "yes, " + FormatByteSize(m.headroom_bytes) + " to spare"
                : "NO: " + FormatByteSize(-m.headroom_bytes) + " over the " +
                      FormatByteSize(m.hbm_bytes) + " of HBM";
}

// "h100:8 (8 chips of h100)".
std::string SystemText(const InferInput& in) {
  return in.system.name + " (" + ChipsText(in.system.fabric.chip_count()) + " of " +
         in.system.chip.name + ")";
}

void PrintHeader(const InferInput& in, CommandIo& io) {
  io.out << "system      " << SystemText(in) << "\n";
  io.out << "model       " << in.model.name << "\n";
  io.out << "layout      " << in.layout.ToString() << "\n";
}

std::string DtypesText(const InferenceOptions& o) {
  return "weights " + std::string(workloads::DTypeName(o.weights)) + ", KV cache " +
         std::string(workloads::DTypeName(o.kv_cache)) + ", collectives " +
         std::string(workloads::DTypeName(o.collective));
}

// `outputs.trace` of one step: the file, opened once the layout is known to be valid (so a bad
// layout leaves no file behind).
sim::StatusOr<std::unique_ptr<StepTraceFile>> OpenTrace(const InferInput& in,
                                                        const InferenceOptions& options,
                                                        const scenario::Outputs& outputs,
                                                        const scenario::SourceMap& source) {
  PODSIM_RETURN_IF_ERROR(CheckLayout(in, in.layout, options));
  sim::StatusOr<std::unique_ptr<StepTraceFile>> trace = StepTraceFile::Open(
      outputs.trace(), outputs.trace_chips(), in.system,
      workloads::InferenceSchedule(in.system.name, in.model, in.layout, options),
      /*every_chip=*/false, std::string(workloads::InferencePhaseName(options.phase)));
  if (trace.ok()) return trace;
  const bool chips = trace.status().message().starts_with("--trace-chips: ");
  return FieldError(trace.status(), source, chips ? "--trace-chips" : "--trace",
                    chips ? "outputs.trace_chips" : "outputs.trace");
}

sim::Status RunStep(const InferInput& in, const scenario::Outputs& outputs,
                    const scenario::SourceMap& source, CommandIo& io) {
  const bool json = outputs.json();
  InferenceOptions options = in.options;
  options.batch = in.batches.front();
  workloads::StepOptions step_options;
  // The files written after the run are checked now, so that one that cannot be written does not
  // fail the command after others were (the trace's is created below, before the run).
  if (outputs.has_write_chakra()) {
    PODSIM_RETURN_IF_ERROR(FieldError(CheckWriteChakra(outputs.write_chakra()), source,
                                      "--write-chakra", "outputs.write_chakra"));
  }
  if (outputs.has_report()) PODSIM_RETURN_IF_ERROR(CheckReportFlag(outputs.report(), source));
  std::unique_ptr<StepTraceFile> trace;
  if (outputs.has_trace()) {
    PODSIM_ASSIGN_OR_RETURN(trace, OpenTrace(in, options, outputs, source));
    step_options.observer = trace->observer();
    step_options.flow_observer = trace->flow_observer();
  }
  std::unique_ptr<StepReportFile> report;
  if (outputs.has_report()) {
    report = std::make_unique<StepReportFile>(&in.system);
    report->Attach(&step_options);
  }
  PODSIM_ASSIGN_OR_RETURN(InferenceResult r, Simulate(in, in.layout, options, step_options));
  PODSIM_RETURN_IF_ERROR(
      CheckFit(r.memory.fits, r.memory.total_bytes, r.memory.hbm_bytes,
               "batch " + std::to_string(options.batch) + " on layout " + in.layout.ToString(),
               outputs.require_fit(), source, io));
  if (trace) {
    PODSIM_RETURN_IF_ERROR(
        FieldError(trace->Close(r.step.step_time), source, "--trace", "outputs.trace"));
  }
  std::string chakra;
  if (outputs.has_write_chakra()) {
    sim::StatusOr<std::string> written =
        WriteChakraFiles(outputs.write_chakra(), in.system, r.schedule);
    PODSIM_RETURN_IF_ERROR(
        FieldError(written.status(), source, "--write-chakra", "outputs.write_chakra"));
    chakra = *written;
  }
  std::optional<double> cost;
  if (in.usd_per_chip_hour && r.tokens_per_s > 0) {
    cost = workloads::UsdPerMillionTokens(Chips(in), *in.usd_per_chip_hour, r.tokens_per_s);
  }
  if (report) {
    reports::StepReportInput input;
    input.title =
        "podsim infer: " + in.model.name + " on " + in.system.name + ", " + in.layout.ToString();
    input.command = io.command_line;
    input.step_s = r.step_time_s;
    std::string step(workloads::InferencePhaseName(options.phase));
    step += ", batch " + std::to_string(options.batch) + ", context " +
            std::to_string(options.context) + " tokens";
    input.facts = {
        {"system", SystemText(in)},
        {"model", in.model.name},
        {"layout", in.layout.ToString()},
        {"step", step},
        {"step time", FormatSeconds(r.step_time_s)},
        {"tokens/s",
         Number(r.tokens_per_s) + " (" + Number(r.tokens_per_s_per_chip) + " per chip)"},
        {"bottleneck", r.bottleneck + ", " + FormatPercent(r.bottleneck_share) + " of the step"},
        {"roofline", RooflineText(r.roofline, r.step_time_s, "; ")},
        {"memory per chip", FormatByteSize(r.memory.total_bytes) + ", fits " + FitsText(r.memory)},
        {"accuracy", StepFidelity(r.step)},
        {"validation", ValidationLine(in.system.chip, "inference")}};
    for (const auto& [name, seconds] : Breakdown(r)) input.breakdown.push_back({name, seconds});
    input.breakdown_caption =
        "The step's time on the simulated chip; the parts add up to the step time. compute_hbm: "
        "ops bounded by HBM bandwidth; compute_mxu: by the matrix units; compute_overhead: the "
        "per-op overhead; interference: compute slowed by concurrent communication; "
        "exposed_<axis>: waiting on that axis's communication; idle: nothing to run.";
    input.memory = {{"weights", r.memory.weight_bytes},
                    {"KV cache", r.memory.kv_cache_bytes},
                    {"activations", r.memory.activation_bytes},
                    {"buffers", r.memory.buffer_bytes}};
    input.memory_caption = "Per chip against the chip's HBM.";
    PODSIM_RETURN_IF_ERROR(
        WriteReportFile(outputs.report(), report->Build(input, r.schedule, r.step), source));
  }
  if (json) {
    nlohmann::ordered_json j{{"system", in.system.name},
                             {"model", in.model.name},
                             {"layout", in.layout.ToString()},
                             {"phase", workloads::InferencePhaseName(options.phase)},
                             {"batch", options.batch},
                             {"context", options.context},
                             {"weights", workloads::DTypeName(options.weights)},
                             {"kv", workloads::DTypeName(options.kv_cache)},
                             {"collective_dtype", workloads::DTypeName(options.collective)},
                             {"step_time_s", r.step_time_s},
                             {"tokens_per_step", r.tokens_per_step},
                             {"tokens_per_s", r.tokens_per_s},
                             {"tokens_per_s_per_chip", r.tokens_per_s_per_chip},
                             {"memory_per_chip_bytes", r.memory.total_bytes},
                             {"fits", r.memory.fits},
                             {"memory", MemoryJson(r.memory)},
                             {"breakdown", BreakdownJson(r)},
                             {"bottleneck", BottleneckJson(r)},
                             {"roofline", RooflineJson(r.roofline)}};
    if (cost) j["usd_per_million_tokens"] = *cost;
    j["validation"] = ValidationJson(in.system.chip, "inference");
    j["simulation"] = SimulationJson(r.step);
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  PrintHeader(in, io);
  io.out << "step        " << workloads::InferencePhaseName(options.phase) << ", batch "
         << options.batch << ", context " << options.context << " tokens; " << DtypesText(options)
         << "\n";
  io.out << "step time   " << FormatSeconds(r.step_time_s) << "\n";
  io.out << "tokens/s    " << Number(r.tokens_per_s) << " (" << Number(r.tokens_per_s_per_chip)
         << " per chip, " << r.tokens_per_step << " tokens per step)\n";
  io.out << "breakdown\n";
  char line[160];
  for (const auto& [name, seconds] : Breakdown(r)) {
    std::snprintf(line, sizeof line, "  %-18s %12s  %6s\n", name.c_str(),
                  FormatSeconds(seconds).c_str(),
                  FormatPercent(r.step_time_s > 0 ? seconds / r.step_time_s : 0).c_str());
    io.out << line;
  }
  io.out << "bottleneck  " << r.bottleneck << ", " << FormatPercent(r.bottleneck_share)
         << " of the step\n";
  io.out << "roofline    " << RooflineText(r.roofline, r.step_time_s, "\n            ") << "\n";
  io.out << "memory      " << FormatByteSize(r.memory.total_bytes) << " per chip: weights "
         << FormatByteSize(r.memory.weight_bytes) << ", KV cache "
         << FormatByteSize(r.memory.kv_cache_bytes) << ", activations "
         << FormatByteSize(r.memory.activation_bytes) << ", buffers "
         << FormatByteSize(r.memory.buffer_bytes) << "\n";
  io.out << "fits        " << FitsText(r.memory) << "\n";
  if (cost) {
    io.out << "cost        " << Dollars(*cost) << " per million tokens at "
           << Dollars(*in.usd_per_chip_hour) << " per chip-hour\n";
  }
  io.out << "accuracy    " << StepFidelity(r.step) << "\n";
  io.out << "validation  " << ValidationLine(in.system.chip, "inference") << "\n";
  io.out << "simulated   " << SimulationSummary(r.step) << "\n";
  if (!chakra.empty()) io.out << "chakra      " << chakra << "\n";
  if (trace) io.out << "trace       " << outputs.trace() << " (" << trace->Summary() << ")\n";
  if (report) io.out << "report      " << outputs.report() << "\n";
  return sim::Status::Ok();
}

sim::Status RunPareto(const InferInput& in, const scenario::Outputs& outputs,
                      const scenario::SourceMap& source, CommandIo& io) {
  const bool json = outputs.json();
  std::vector<InferenceResult> results;
  for (int64_t batch : in.batches) {
    InferenceOptions options = in.options;
    options.batch = batch;
    PODSIM_ASSIGN_OR_RETURN(InferenceResult r, Simulate(in, in.layout, options));
    PODSIM_RETURN_IF_ERROR(
        CheckFit(r.memory.fits, r.memory.total_bytes, r.memory.hbm_bytes,
                 "batch " + std::to_string(batch) + " on layout " + in.layout.ToString(),
                 outputs.require_fit(), source, io));
    results.push_back(std::move(r));
  }
  // Pareto-optimal among the points that fit: nothing else both as fast and as productive.
  std::vector<bool> optimal(results.size(), false);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].memory.fits) continue;
    bool dominated = false;
    for (size_t k = 0; k < results.size() && !dominated; ++k) {
      const InferenceResult& a = results[k];
      const InferenceResult& b = results[i];
      dominated = k != i && a.memory.fits && a.step_time_s <= b.step_time_s &&
                  a.tokens_per_s >= b.tokens_per_s &&
                  (a.step_time_s < b.step_time_s || a.tokens_per_s > b.tokens_per_s);
    }
    optimal[i] = !dominated;
  }
  auto cost = [&](const InferenceResult& r) -> std::optional<double> {
    if (!in.usd_per_chip_hour || r.tokens_per_s <= 0) return std::nullopt;
    return workloads::UsdPerMillionTokens(Chips(in), *in.usd_per_chip_hour, r.tokens_per_s);
  };
  if (json) {
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const InferenceResult& r = results[i];
      nlohmann::ordered_json p{{"batch", in.batches[i]},
                               {"step_time_s", r.step_time_s},
                               {"tokens_per_step", r.tokens_per_step},
                               {"tokens_per_s", r.tokens_per_s},
                               {"tokens_per_s_per_chip", r.tokens_per_s_per_chip},
                               {"memory_per_chip_bytes", r.memory.total_bytes},
                               {"fits", r.memory.fits},
                               {"breakdown", BreakdownJson(r)},
                               {"bottleneck", BottleneckJson(r)},
                               {"roofline", RooflineJson(r.roofline)},
                               {"pareto_optimal", static_cast<bool>(optimal[i])}};
      if (std::optional<double> usd = cost(r)) p["usd_per_million_tokens"] = *usd;
      points.push_back(std::move(p));
    }
    nlohmann::ordered_json j{{"system", in.system.name},
                             {"model", in.model.name},
                             {"layout", in.layout.ToString()},
                             {"phase", workloads::InferencePhaseName(in.options.phase)},
                             {"context", in.options.context},
                             {"weights", workloads::DTypeName(in.options.weights)},
                             {"kv", workloads::DTypeName(in.options.kv_cache)},
                             {"collective_dtype", workloads::DTypeName(in.options.collective)},
                             {"points", points},
                             {"validation", ValidationJson(in.system.chip, "inference")}};
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  PrintHeader(in, io);
  io.out << "step        " << workloads::InferencePhaseName(in.options.phase) << ", context "
         << in.options.context << " tokens; " << DtypesText(in.options) << "\n";
  char line[200];
  std::snprintf(line, sizeof line, "%8s %12s %12s %10s %12s %5s %-18s %10s %s\n", "batch",
                "step time", "tokens/s", "per chip", "memory/chip", "fits", "bottleneck",
                in.usd_per_chip_hour ? "$/Mtok" : "", "pareto");
  io.out << line;
  for (size_t i = 0; i < results.size(); ++i) {
    const InferenceResult& r = results[i];
    const std::string bottleneck = r.bottleneck + " " + FormatPercent(r.bottleneck_share);
    const std::optional<double> usd = cost(r);
    std::snprintf(line, sizeof line, "%8lld %12s %12s %10s %12s %5s %-18s %10s %s\n",
                  static_cast<long long>(in.batches[i]), FormatSeconds(r.step_time_s).c_str(),
                  Number(r.tokens_per_s).c_str(), Number(r.tokens_per_s_per_chip).c_str(),
                  FormatByteSize(r.memory.total_bytes).c_str(), r.memory.fits ? "yes" : "NO",
                  bottleneck.c_str(), usd ? Number(*usd).c_str() : "", optimal[i] ? "*" : "");
    io.out << line;
  }
  io.out << "validation  " << ValidationLine(in.system.chip, "inference") << "\n";
  return sim::Status::Ok();
}

sim::Status RunDisaggregated(const InferInput& in, const scenario::Outputs& outputs,
                             const scenario::SourceMap& source, CommandIo& io) {
  const bool json = outputs.json();
  const int64_t batch = in.batches.front();
  workloads::ServingOptions serving{.prompt_len = in.prefill_len,
                                    .generated_len = in.decode_len,
                                    .batch = batch,
                                    .prefill_batch = in.prefill_batch};
  workloads::StepOptions step_options;
  step_options.max_transfers = in.max_transfers;
  if (in.exact) step_options.chips = workloads::SimulatedChips::kOrbits;
  // The layout checked for both steps first, so that its errors name --layout.
  workloads::InferenceLayout prefill_layout = in.layout;
  prefill_layout.kv_shard = workloads::KvShard::kHeads;
  if (in.prefill_batch > workloads::kMaxInferenceBatch / in.layout.dp) {
    return BadFlag("--prefill-batch",
                   "prompts per prefill step times dp=" + std::to_string(in.layout.dp) +
                       " must be at most " + std::to_string(workloads::kMaxInferenceBatch) +
                       " (got " + std::to_string(in.prefill_batch) + ")");
  }
  InferenceOptions check = in.options;
  check.phase = InferencePhase::kPrefill;
  check.batch = in.prefill_batch * in.layout.dp;
  check.context = in.prefill_len;
  PODSIM_RETURN_IF_ERROR(CheckLayout(in, prefill_layout, check));
  check.phase = InferencePhase::kDecode;
  check.batch = batch;
  check.context = in.prefill_len + in.decode_len / 2;
  PODSIM_RETURN_IF_ERROR(CheckLayout(in, in.layout, check));
  PODSIM_ASSIGN_OR_RETURN(workloads::ServingResult s,
                          workloads::SimulateServing(in.system, in.model, in.layout, in.options,
                                                     serving, step_options));
  PODSIM_RETURN_IF_ERROR(CheckFit(s.prefill.memory.fits, s.prefill.memory.total_bytes,
                                  s.prefill.memory.hbm_bytes,
                                  "the prefill step on layout " + s.prefill_layout.ToString(),
                                  outputs.require_fit(), source, io));
  PODSIM_RETURN_IF_ERROR(CheckFit(s.decode_memory.fits, s.decode_memory.total_bytes,
                                  s.decode_memory.hbm_bytes,
                                  "batch " + std::to_string(batch) + " at " +
                                      std::to_string(in.prefill_len + in.decode_len - 1) +
                                      " cached tokens on layout " + in.layout.ToString(),
                                  outputs.require_fit(), source, io));
  const InferenceOptions& prefill = s.prefill_options;
  const InferenceOptions& decode = s.decode_options;
  const InferenceResult& p = s.prefill;
  const InferenceResult& d = s.decode;
  const workloads::InferenceMemoryBreakdown& decode_memory = s.decode_memory;
  const int64_t prompts = prefill.batch;
  const double ratio = s.prefill_chips_per_decode_chip;
  std::optional<double> cost;
  if (in.usd_per_chip_hour) {
    cost = workloads::UsdPerMillionTokens(Chips(in), *in.usd_per_chip_hour,
                                          s.generated_tokens_per_s_per_chip * Chips(in));
  }
  auto phase_json = [](const InferenceOptions& o, const InferenceResult& r,
                       const workloads::InferenceMemoryBreakdown& memory) {
    return nlohmann::ordered_json{{"batch", o.batch},
                                  {"context", o.context},
                                  {"step_time_s", r.step_time_s},
                                  {"tokens_per_s", r.tokens_per_s},
                                  {"tokens_per_s_per_chip", r.tokens_per_s_per_chip},
                                  {"memory_per_chip_bytes", memory.total_bytes},
                                  {"fits", memory.fits},
                                  {"breakdown", BreakdownJson(r)},
                                  {"bottleneck", BottleneckJson(r)},
                                  {"roofline", RooflineJson(r.roofline)}};
  };
  if (json) {
    nlohmann::ordered_json j{
        {"system", in.system.name},
        {"model", in.model.name},
        {"layout", in.layout.ToString()},
        {"weights", workloads::DTypeName(in.options.weights)},
        {"kv", workloads::DTypeName(in.options.kv_cache)},
        {"collective_dtype", workloads::DTypeName(in.options.collective)},
        {"prefill_len", in.prefill_len},
        {"prefill_layout", prefill_layout.ToString()},
        {"decode_len", in.decode_len},
        {"prefill", phase_json(prefill, p, p.memory)},
        {"decode", phase_json(decode, d, decode_memory)},
        {"prefill_chips_per_decode_chip", ratio},
        {"time_to_first_token_s", p.step_time_s},
        {"time_per_output_token_s", d.step_time_s},
        {"generated_tokens_per_s_per_chip", s.generated_tokens_per_s_per_chip},
        {"generated_tokens_per_s", s.generated_tokens_per_s_per_chip * Chips(in)}};
    if (cost) j["usd_per_million_tokens"] = *cost;
    j["validation"] = ValidationJson(in.system.chip, "inference");
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  PrintHeader(in, io);
  io.out << "requests    " << in.prefill_len << " prompt tokens, " << in.decode_len
         << " generated; " << DtypesText(in.options) << "\n";
  io.out << "prefill     " << prompts << (prompts == 1 ? " prompt" : " prompts") << " per step ("
         << prefill_layout.ToString() << "): " << FormatSeconds(p.step_time_s) << ", bottleneck "
         << p.bottleneck << " " << FormatPercent(p.bottleneck_share) << ", "
         << FormatByteSize(p.memory.total_bytes) << " per chip, fits " << FitsText(p.memory)
         << "\n";
  io.out << "decode      batch " << batch << " at " << decode.context
         << " cached tokens: " << FormatSeconds(d.step_time_s) << " per token, bottleneck "
         << d.bottleneck << " " << FormatPercent(d.bottleneck_share) << ", "
         << FormatByteSize(decode_memory.total_bytes) << " per chip at "
         << in.prefill_len + in.decode_len - 1 << " cached tokens, fits " << FitsText(decode_memory)
         << "\n";
  io.out << "ratio       " << Number(ratio)
         << " prefill chips per decode chip (the time prefill takes per decode time)\n";
  io.out << "throughput  " << Number(s.generated_tokens_per_s_per_chip)
         << " generated tokens/s per chip of the deployment ("
         << Number(s.generated_tokens_per_s_per_chip * Chips(in))
         << " on these chips, alternating prefill and decode)\n";
  if (cost) {
    io.out << "cost        " << Dollars(*cost) << " per million generated tokens at "
           << Dollars(*in.usd_per_chip_hour) << " per chip-hour\n";
  }
  io.out << "validation  " << ValidationLine(in.system.chip, "inference") << "\n";
  return sim::Status::Ok();
}

}  // namespace

sim::Status RunInferScenario(const scenario::Scenario& s, const scenario::SourceMap& source,
                             topology::System system, CommandIo& io) {
  PODSIM_ASSIGN_OR_RETURN(InferInput in, InputOf(s, source, std::move(system)));
  LogCalibration(in.system.chip);
  in.max_transfers = io.max_transfers;
  // A trace follows one simulated step; a batch list or a deployment is several.
  if ((s.outputs().has_trace() || s.outputs().has_write_chakra() || s.outputs().has_report()) &&
      (in.disaggregated || in.batches.size() > 1)) {
    return source.Annotate(
        sim::Status::InvalidArgument(
            in.disaggregated
                ? "a trace follows one step; trace the prefill or the decode step alone"
                : "a trace follows one step; give one batch size (got " +
                      std::to_string(in.batches.size()) + ")"),
        s.outputs().has_trace()          ? "outputs.trace"
        : s.outputs().has_write_chakra() ? "outputs.write_chakra"
                                         : "outputs.report");
  }
  sim::Status status = in.disaggregated        ? RunDisaggregated(in, s.outputs(), source, io)
                       : in.batches.size() > 1 ? RunPareto(in, s.outputs(), source, io)
                                               : RunStep(in, s.outputs(), source, io);
  // Simulate names --layout, the one thing left to check.
  if (status.message().starts_with("--layout: ")) {
    return FieldError(status, source, "--layout", "infer.layout");
  }
  return status;
}

Command AddInferCommand(CLI::App& app) {
  auto flags = std::make_shared<InferFlags>();
  CLI::App* sub = app.add_subcommand(
      "infer",
      "Simulate one inference step (prefill or decode): latency, tokens/s, memory, bottleneck");
  sub->add_option("--system", flags->system, "SYSTEM, e.g. tpu-v5e:4x4, h100:8")->required();
  sub->add_option("--model", flags->model, "llama3-70b, ..., or custom:layers=..,d_model=..")
      ->required();
  sub->add_option("--layout", flags->layout,
                  "tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..] (ep: expert parallelism "
                  "over the tp chips of ep/tp replicas, models with experts)")
      ->required();
  sub->add_option("--batch", flags->batch,
                  "Sequences per step, or a list like 1,8,16 for the latency-throughput view")
      ->required();
  CLI::Option_group* mode =
      sub->add_option_group("step",
                            "One step (--phase, --context) or a disaggregated "
                            "deployment (--prefill-len, --decode-len)");
  CLI::Option* phase = mode->add_option("--phase", flags->phase, "prefill or decode");
  CLI::Option* prefill_len = mode->add_option("--prefill-len", flags->prefill_len,
                                              "Prompt tokens per request (disaggregated serving)");
  mode->require_option(1);
  CLI::Option* context = sub->add_option("--context", flags->context,
                                         "Prefill: prompt tokens; decode: tokens already cached");
  CLI::Option* decode_len = sub->add_option("--decode-len", flags->decode_len,
                                            "Generated tokens per request (with --prefill-len)");
  phase->needs(context);
  context->needs(phase);
  CLI::Option* prefill_batch = sub->add_option(
      "--prefill-batch", flags->prefill_batch,
      "Prompts per prefill step per replica (with --prefill-len; default 1): a deployment's "
      "prefill batching, e.g. TensorRT-LLM's max_num_tokens / prompt length");
  prefill_len->needs(decode_len);
  decode_len->needs(prefill_len);
  prefill_batch->needs(prefill_len);
  sub->add_option("--weights", flags->weights,
                  "bf16 (default), int8 or int4 (read narrow, multiplied in bf16), or fp8 (fp8 "
                  "matmuls at the chip's fp8 peak)");
  sub->add_option("--kv", flags->kv, "KV cache: bf16 (default), int8, int4 or fp8");
  sub->add_option("--chip-hour-usd", flags->chip_hour_usd,
                  "Price of one chip-hour in dollars: adds the cost per million tokens");
  sub->add_option("--trace", flags->trace,
                  "Write a trace of the step (one batch size, not with --prefill-len): "
                  "FILE.pftrace (Perfetto) or FILE.json (Chrome JSON)");
  sub->add_option("--trace-chips", flags->trace_chips,
                  "Chips to trace: 'all' or ids and ranges like 0-15,32 (default: the simulated "
                  "chip)");
  AddWriteChakraFlag(sub, &flags->write_chakra);
  AddRequireFitFlag(sub, &flags->require_fit);
  AddReportFlag(sub, &flags->report);
  sub->add_flag("--exact", flags->exact,
                "Simulate one chip per orbit of the step's symmetry, every transfer as a flow "
                "class, however many orbits: the full simulation's answer (the default does this "
                "when at most 64 orbits are left, and otherwise approximates and says so)");
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags](CommandIo& io) {
                   return DumpOrRun(ScenarioOf(*flags), InferFlagSources(), flags->dump_scenario,
                                    io);
                 }};
}

}  // namespace podsim::cli
