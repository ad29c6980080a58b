#include "cli/train_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cli/byte_size.h"
#include "cli/chakra_files.h"
#include "cli/fit_check.h"
#include "cli/logging.h"
#include "cli/report_file.h"
#include "cli/report_format.h"
#include "cli/run_command.h"
#include "cli/schedule_file.h"
#include "cli/step_fidelity.h"
#include "cli/step_trace.h"
#include "cli/training_flags.h"
#include "cli/training_options_json.h"
#include "cli/validation_line.h"
#include "scenario/output_files.h"
#include "scenario/scenario_build.h"
#include "sim/atomic_file.h"
#include "topology/names.h"
#include "topology/system.h"
#include "workloads/layout_search.h"
#include "workloads/precision.h"
#include "workloads/recompute_layers.h"
#include "workloads/remat_policy.h"
#include "workloads/training.h"
#include "workloads/training_schedule.h"

namespace podsim::cli {

namespace {

struct TrainFlags {
  std::string system;
  std::string model;
  std::string layout;
  std::string batch_tokens;
  std::string seq;
  std::string recompute = "none";
  std::string recompute_layers = "all";
  std::string attention = "flash";
  TrainingFlags training;
  std::string flops_convention = "causal";
  std::string write_schedule;
  std::string write_chakra;
  std::string trace;
  std::string trace_chips;
  std::string report;
  bool every_chip = false;
  bool flows = false;
  bool exact = false;
  bool json = false;
  bool require_fit = false;
  bool layer_times = false;
  bool dump_scenario = false;
};

struct ReplayFlags {
  std::string file;
  ChakraReplayFlags chakra;
  std::string write_chakra;
  std::string trace;
  std::string trace_chips;
  bool every_chip = false;
  bool flows = false;
  bool exact = false;
  bool json = false;
};

// What each category of the breakdown counts (workloads/step_simulator.h, time accounting); they
// add up to the step time.
constexpr const char* kBreakdownHelp =
    "Breakdown, mean seconds per chip, adding up to the step time:\n"
    "  compute         the compute stream busy (matmuls, attention, elementwise ops)\n"
    "  interference    compute slowed by the chip's concurrent communication (GPUs: its\n"
    "                  kernels take SMs and HBM bandwidth; 18.9%, calibration.md G5.4)\n"
    "  exposed_<axis>  compute waiting on that group's communication (tp, fsdp, dp, pp, cp,\n"
    "                  ep, etp, expert-fsdp, expert-dp)\n"
    "  bubble          compute waiting for a pipeline receive (activations from the previous\n"
    "                  stage, gradients from the next)\n"
    "  idle            waiting with nothing to wait on: a stage done before the step ends\n"
    "  With pp > 1, bubble + idle is the pipeline bubble (the \"pipeline\" line).\n";

workloads::StepOptions StepOptionsOf(bool every_chip, bool flows, bool exact, const CommandIo& io) {
  workloads::StepOptions options;
  options.max_transfers = io.max_transfers;
  if (every_chip) options.chips = workloads::SimulatedChips::kEveryChip;
  if (flows) options.network = collectives::NetworkMode::kFlows;
  if (exact) options.chips = workloads::SimulatedChips::kOrbits;
  return options;
}

// "causal" or "full": how the step's MFU counts attention (--flops-convention).
std::string_view ConventionName(const workloads::OpOptions& options) {
  return options.model_flops_count == workloads::AttentionCount::kCausal ? "causal" : "full";
}

nlohmann::ordered_json StepJson(const workloads::StepResult& step) {
  nlohmann::ordered_json programs = nlohmann::ordered_json::array();
  for (const workloads::ProgramResult& p : step.programs) {
    nlohmann::ordered_json exposed = nlohmann::ordered_json::object();
    for (const auto& [stream, t] : p.time.exposed) exposed[stream] = t.ToSeconds();
    programs.push_back({{"name", p.name},
                        {"chips", p.chips},
                        {"simulated_chip", p.chip},
                        {"end_s", p.end.ToSeconds()},
                        {"compute_s", p.time.compute.ToSeconds()},
                        {"interference_s", p.time.interference.ToSeconds()},
                        {"exposed_s", exposed},
                        {"bubble_s", p.time.bubble.ToSeconds()},
                        {"idle_s", p.time.idle.ToSeconds()}});
  }
  return {{"exact", step.exact},
          {"method", step.method},
          {"programs", programs},
          {"simulated_chips", step.simulated_chips},
          {"ops", step.ops_executed},
          {"collectives", step.collectives},
          {"overlapped_collectives", step.overlapped_collectives},
          {"rehearsals", step.rehearsals},
          {"replayed_collectives", step.replayed_collectives},
          {"discarded_runs", step.discarded_runs},
          {"events", step.events + step.rehearsal_events}};
}

// --attention's values, in workloads::AttentionKernel's order and scenario::Train::Attention's
// after its default (checked below, so that a kernel added to one is added to all).
const std::vector<std::string_view>& AttentionFlagValues() {
  static const std::vector<std::string_view> kValues = {"flash", "materialized", "fa2", "cudnn"};
  return kValues;
}
template <workloads::AttentionKernel kernel, scenario::Train::Attention field>
constexpr bool AttentionValueAt(size_t index) {
  return static_cast<size_t>(kernel) == index && static_cast<size_t>(field) == index + 1;
}
static_assert(
    AttentionValueAt<workloads::AttentionKernel::kFlash, scenario::Train::FLASH>(0) &&
    AttentionValueAt<workloads::AttentionKernel::kMaterialized, scenario::Train::MATERIALIZED>(1) &&
    AttentionValueAt<workloads::AttentionKernel::kFlash2, scenario::Train::FA2>(2) &&
    AttentionValueAt<workloads::AttentionKernel::kCudnn, scenario::Train::CUDNN>(3) &&
    scenario::Train::Attention_ARRAYSIZE == 5);

// The scenario of the flags; errors name the flag that does not parse.
sim::StatusOr<scenario::Scenario> ScenarioOf(const TrainFlags& flags) {
  PODSIM_ASSIGN_OR_RETURN(BatchTokens batch, ParseBatchTokens(flags.batch_tokens, flags.seq));
  // save:OP,OP,...: keep those forward ops' outputs, recompute the rest; maxtext:POLICY: the ops
  // a MaxText remat policy keeps and offloads.
  constexpr std::string_view kSave = "save:", kMaxText = "maxtext:";
  const bool maxtext = flags.recompute.starts_with(kMaxText);
  const bool save_named = flags.recompute.starts_with(kSave) || maxtext;
  std::vector<std::string> saved_ops, offloaded_ops;
  size_t recompute = 0;
  if (maxtext) {
    const std::string name = flags.recompute.substr(kMaxText.size());
    sim::StatusOr<workloads::RematPolicy> policy = workloads::MaxTextRematPolicy(name);
    if (!policy.ok()) {
      std::vector<std::string> names = workloads::MaxTextRematPolicyNames();
      for (std::string& known : names) known = std::string(kMaxText) + known;
      return ChooseFlagValue("--recompute", flags.recompute,
                             std::vector<std::string_view>(names.begin(), names.end()))
          .status();
    }
    saved_ops = policy->saved;
    offloaded_ops = policy->offloaded;
  } else if (save_named) {
    std::string_view rest = std::string_view(flags.recompute).substr(kSave.size());
    // Empty names (",,", a trailing comma) are refused with the rest.
    bool empty = rest.empty() || rest.ends_with(',');
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      saved_ops.emplace_back(rest.substr(0, comma));
      empty = empty || saved_ops.back().empty();
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    }
    if (empty) {
      return sim::Status::InvalidArgument(
          "--recompute: save: needs the forward ops to keep, like save:attn.qkv,attn.core (got '" +
          flags.recompute + "')");
    }
  } else {
    sim::StatusOr<size_t> chosen =
        ChooseFlagValue("--recompute", flags.recompute, {"none", "selective", "full"});
    if (!chosen.ok()) {
      return sim::Status::InvalidArgument(chosen.status().message() +
                                          ", or save:OP,OP,... (the forward ops to keep), or "
                                          "maxtext:POLICY");
    }
    recompute = *chosen;
  }
  PODSIM_ASSIGN_OR_RETURN(size_t attention,
                          ChooseFlagValue("--attention", flags.attention, AttentionFlagValues()));
  PODSIM_ASSIGN_OR_RETURN(
      size_t convention,
      ChooseFlagValue("--flops-convention", flags.flops_convention, {"causal", "full"}));
  PODSIM_RETURN_IF_ERROR(CheckTrainingFlags(flags.training));
  scenario::Scenario s;
  s.mutable_system()->set_preset(flags.system);
  scenario::Train* train = s.mutable_train();
  SetTrainingFields(flags.training, train);
  train->mutable_model()->set_preset(flags.model);
  train->mutable_layout()->set_text(flags.layout);
  train->set_batch_tokens(batch.tokens);
  train->set_seq(batch.seq);
  constexpr scenario::Train::Recompute kRecompute[] = {
      scenario::Train::NONE, scenario::Train::SELECTIVE, scenario::Train::FULL};
  if (recompute != 0) train->set_recompute(kRecompute[recompute]);
  if (save_named) {
    train->set_recompute(scenario::Train::SAVE_NAMED);
    for (const std::string& op : saved_ops) train->add_saved_ops(op);
    for (const std::string& op : offloaded_ops) train->add_offloaded_ops(op);
  }
  if (flags.recompute_layers != "all") train->set_recompute_layers(flags.recompute_layers);
  // The field's values follow the flag's after its default (AttentionValueAt).
  if (attention != 0) train->set_attention(static_cast<scenario::Train::Attention>(attention + 1));
  if (convention != 0) train->set_flops_convention(scenario::Train::ALL_PAIRS);
  if (flags.every_chip) train->set_every_chip(true);
  if (flags.flows) train->set_flows(true);
  if (flags.exact) train->set_exact(true);
  if (flags.json) s.mutable_outputs()->set_json(true);
  if (flags.require_fit) s.mutable_outputs()->set_require_fit(true);
  if (flags.layer_times) s.mutable_outputs()->set_layer_times(true);
  if (!flags.write_schedule.empty()) s.mutable_outputs()->set_write_schedule(flags.write_schedule);
  if (!flags.write_chakra.empty()) s.mutable_outputs()->set_write_chakra(flags.write_chakra);
  if (!flags.trace.empty()) s.mutable_outputs()->set_trace(flags.trace);
  if (!flags.trace_chips.empty()) s.mutable_outputs()->set_trace_chips(flags.trace_chips);
  if (!flags.report.empty()) s.mutable_outputs()->set_report(flags.report);
  return s;
}

// Where each field of ScenarioOf comes from.
scenario::SourceMap TrainFlagSources() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "--system");
  flags.AddFlag("train.model", "--model");
  flags.AddFlag("train.layout", "--layout");
  flags.AddFlag("train.batch_tokens", "--batch-tokens");
  flags.AddFlag("train.seq", "--seq");
  for (const char* path :
       {"train.microbatches", "train.micro_batch_size", "train.schedule", "train.virtual_stages"}) {
    flags.AddFlag(path, "--layout");  // Part of the --layout text.
  }
  flags.AddFlag("train.recompute", "--recompute");
  flags.AddFlag("train.saved_ops", "--recompute");
  flags.AddFlag("train.offloaded_ops", "--recompute");
  flags.AddFlag("train.recompute_layers", "--recompute-layers");
  flags.AddFlag("train.attention", "--attention");
  AddTrainingFlagSources("train", &flags);
  flags.AddFlag("train.flops_convention", "--flops-convention");
  flags.AddFlag("train.every_chip", "--every-chip");
  flags.AddFlag("train.flows", "--flows");
  flags.AddFlag("train.exact", "--exact");
  flags.AddFlag("outputs.json", "--json");
  flags.AddFlag("outputs.require_fit", "--require-fit");
  flags.AddFlag("outputs.layer_times", "--layer-times");
  flags.AddFlag("outputs.trace", "--trace");
  flags.AddFlag("outputs.trace_chips", "--trace-chips");
  flags.AddFlag("outputs.write_schedule", "--write-schedule");
  flags.AddFlag("outputs.write_chakra", "--write-chakra");
  flags.AddFlag("outputs.report", "--report");
  return flags;
}

sim::Status RunTrain(const scenario::Scenario& s, const scenario::SourceMap& source,
                     topology::System system, CommandIo& io) {
  const scenario::Train& train = s.train();
  const scenario::Outputs& outputs = s.outputs();
  LogCalibration(system.chip);
  PODSIM_ASSIGN_OR_RETURN(workloads::ModelSpec model,
                          scenario::BuildModel(train.model(), "train.model", source));
  PODSIM_ASSIGN_OR_RETURN(workloads::Layout layout, scenario::BuildTrainLayout(train, source));
  if (train.seq() < 1 || train.batch_tokens() < 1 || train.batch_tokens() % train.seq() != 0) {
    return source.Annotate(
        sim::Status::InvalidArgument("batch_tokens must be a positive multiple of seq (got " +
                                     std::to_string(train.batch_tokens()) + " and " +
                                     std::to_string(train.seq()) + ")"),
        "train.batch_tokens");
  }
  const workloads::OpOptions options = scenario::OpOptionsOf(train);
  const workloads::BatchSpec batch{train.batch_tokens() / train.seq(), train.seq()};
  if (train.exact() && (train.every_chip() || train.flows())) {
    return source.Annotate(
        sim::Status::InvalidArgument("exact simulates one chip per orbit with every transfer; it "
                                     "excludes every_chip and flows"),
        "train.exact");
  }
  workloads::StepOptions step_options =
      StepOptionsOf(train.every_chip(), train.flows(), train.exact(), io);
  step_options.time_layers = outputs.layer_times();
  // Every file written after the run is checked now, so that one that cannot be written does not
  // fail the command after others were (the trace's is created below, before the run).
  if (outputs.has_write_schedule()) {
    PODSIM_RETURN_IF_ERROR(
        FieldError(sim::CheckCreatable(outputs.write_schedule()).WithContext("--write-schedule"),
                   source, "--write-schedule", "outputs.write_schedule"));
  }
  if (outputs.has_write_chakra()) {
    PODSIM_RETURN_IF_ERROR(FieldError(CheckWriteChakra(outputs.write_chakra()), source,
                                      "--write-chakra", "outputs.write_chakra"));
  }
  if (outputs.has_report()) PODSIM_RETURN_IF_ERROR(CheckReportFlag(outputs.report(), source));
  std::unique_ptr<StepTraceFile> trace;
  if (outputs.has_trace()) {
    // The trace needs the schedule before the run; SimulateTraining builds the same one.
    PODSIM_RETURN_IF_ERROR(
        workloads::ValidateLayout(layout, model, system.fabric.chip_count(), batch));
    PODSIM_ASSIGN_OR_RETURN(
        trace,
        StepTraceFile::Open(outputs.trace(), outputs.trace_chips(), system,
                            workloads::TrainingSchedule(system, model, layout, batch, options),
                            train.every_chip()));
    step_options.observer = trace->observer();
    step_options.flow_observer = trace->flow_observer();
  }
  std::unique_ptr<StepReportFile> report;
  if (outputs.has_report()) {
    report = std::make_unique<StepReportFile>(&system);
    report->Attach(&step_options);
  }
  PODSIM_ASSIGN_OR_RETURN(
      workloads::TrainingResult result,
      workloads::SimulateTraining(system, model, layout, batch, options, step_options));
  PODSIM_RETURN_IF_ERROR(CheckFit(result.memory.fits, result.memory.total_bytes,
                                  result.memory.hbm_bytes, "layout " + layout.ToString(),
                                  outputs.require_fit(), source, io));
  // Offloaded activations' copies are assumed hidden: say where they cannot be (each way longer
  // than a third of the compute, about the forward's).
  const double offload_copy_s =
      system.chip.pcie_bytes_per_s > 0
          ? result.memory.host_offload_traffic_bytes / system.chip.pcie_bytes_per_s
          : 0;
  double compute_s = 0;
  for (const auto& [name, seconds] : result.breakdown) compute_s += name == "compute" ? seconds : 0;
  if (offload_copy_s > compute_s / 3) {
    io.err << "podsim: warning: the offloaded activations' host copies take "
           << FormatSeconds(offload_copy_s) << " each way, more than a third of the compute ("
           << FormatSeconds(compute_s)
           << ", about its forward): they cannot all hide, and the step time is optimistic\n";
  }
  if (trace) PODSIM_RETURN_IF_ERROR(trace->Close(result.step.step_time));
  if (outputs.has_write_schedule()) {
    PODSIM_RETURN_IF_ERROR(FieldError(WriteScheduleFile(outputs.write_schedule(), result.schedule)
                                          .WithContext("--write-schedule"),
                                      source, "--write-schedule", "outputs.write_schedule"));
  }
  std::string chakra;
  if (outputs.has_write_chakra()) {
    sim::StatusOr<std::string> written =
        WriteChakraFiles(outputs.write_chakra(), system, result.schedule);
    PODSIM_RETURN_IF_ERROR(
        FieldError(written.status(), source, "--write-chakra", "outputs.write_chakra"));
    chakra = *written;
  }

  const workloads::MemoryBreakdown& memory = result.memory;
  if (report) {
    reports::StepReportInput input;
    input.title = "podsim train: " + model.name + " on " + system.name + ", " + layout.ToString();
    input.command = io.command_line;
    input.step_s = result.step_time_s;
    input.every_chip_flag = "--every-chip";
    char mfu[96];
    std::snprintf(mfu, sizeof mfu, "%s (HFU %s)", FormatPercent(result.mfu).c_str(),
                  FormatPercent(result.hfu).c_str());
    input.facts = {
        {"system", system.name + " (" + std::to_string(system.fabric.chip_count()) + " chips of " +
                       system.chip.name + ")"},
        {"model", model.name},
        {"layout", layout.ToString()},
        {"batch", std::to_string(batch.sequences) + " x " + std::to_string(batch.seq) + " tokens"},
        {"step time", FormatSeconds(result.step_time_s)},
        {"MFU", mfu},
        {"memory per chip", FormatByteSize(memory.total_bytes) + " of " +
                                FormatByteSize(memory.hbm_bytes) +
                                (memory.fits ? ", fits" : ", does NOT fit")},
        {"accuracy", StepFidelity(result.step)},
        {"validation",
         ValidationLine(system.chip, "training", workloads::FrameworkName(options.framework))}};
    for (const auto& [name, seconds] : result.breakdown) input.breakdown.push_back({name, seconds});
    input.breakdown_caption =
        "Mean per chip over the step; the parts add up to the step time. compute: the compute "
        "stream busy at the ops' nominal times; interference: compute slowed by the chip's "
        "concurrent communication; exposed_<axis>: compute waiting on that mesh axis's "
        "communication; "
        "bubble: waiting for a pipeline receive; idle: waiting with nothing to wait on (with "
        "pp > 1, bubble + idle is the pipeline bubble).";
    input.memory = {
        {"params", memory.param_bytes},
        {"grads", memory.grad_bytes},
        {"optimizer", memory.optimizer_bytes},
        {"activations", memory.activation_bytes},
        {"buffers", memory.buffer_bytes},
        {"fp8 weight cache", memory.fp8_weight_cache_bytes},
        {"loss peak", memory.loss_peak_bytes},
        {"recompute peak", memory.recompute_peak_bytes},
        // The part of the step's transient beyond the activations' peak, so that
        // the parts add up to the peak.
        {"optimizer step", memory.total_bytes - memory.StaticBytes() - memory.activation_bytes -
                               memory.loss_peak_bytes - memory.recompute_peak_bytes}};
    input.memory_caption = "Per chip (stage " + std::to_string(memory.stage) + ", precision ";
    input.memory_caption += workloads::PrecisionLabel(options.precision);
    input.memory_caption += ") against the chip's HBM.";
    PODSIM_RETURN_IF_ERROR(WriteReportFile(
        outputs.report(), report->Build(input, result.schedule, result.step), source));
  }
  // The options as the step ran them (the framework's choices under this layout).
  const workloads::OpOptions laid_out = workloads::WithLayoutDefaults(options, layout);
  if (outputs.json()) {
    nlohmann::ordered_json breakdown = nlohmann::ordered_json::object();
    for (const auto& [name, seconds] : result.breakdown) breakdown[name] = seconds;
    nlohmann::ordered_json layer_times = nlohmann::ordered_json::array();
    for (const workloads::LayerTime& t : result.layer_times) {
      layer_times.push_back(
          {{"layer", t.layer}, {"forward_s", t.forward_s}, {"backward_s", t.backward_s}});
    }
    const nlohmann::ordered_json validation =
        ValidationJson(system.chip, "training", workloads::FrameworkName(options.framework));
    nlohmann::ordered_json j{
        {"system", system.name},
        {"model", model.name},
        {"layout", layout.ToString()},
        {"batch_tokens", batch.tokens()},
        {"seq", batch.seq},
        {"step_time_s", result.step_time_s},
        {"tokens_per_s", result.tokens_per_s},
        {"mfu", result.mfu},
        {"hfu", result.hfu},
        {"flops_convention", ConventionName(options)},
        {"recompute", workloads::RecomputeName(options.recompute)},
        {"saved_ops", options.saved_ops},
        {"offloaded_ops", options.offloaded_ops},
        {"recompute_layers", workloads::RecomputeLayersName(options.recompute_layers)},
        {"attention", AttentionFlagValues()[static_cast<size_t>(options.attention)]}};
    j.update(TrainingOptionsJson(options));
    j.update(LayoutOptionsJson(laid_out, layout));
    j.update(
        nlohmann::ordered_json{{"breakdown", breakdown},
                               {"memory_per_chip_bytes", memory.total_bytes},
                               {"memory",
                                {{"stage", memory.stage},
                                 {"params_bytes", memory.param_bytes},
                                 {"grads_bytes", memory.grad_bytes},
                                 {"optimizer_bytes", memory.optimizer_bytes},
                                 {"activations_bytes", memory.activation_bytes},
                                 {"buffers_bytes", memory.buffer_bytes},
                                 {"host_offload_bytes", memory.host_offload_bytes},
                                 {"host_offload_traffic_bytes", memory.host_offload_traffic_bytes},
                                 {"fp8_weight_cache_bytes", memory.fp8_weight_cache_bytes},
                                 {"loss_peak_bytes", memory.loss_peak_bytes},
                                 {"recompute_peak_bytes", memory.recompute_peak_bytes},
                                 {"optimizer_step_bytes", memory.optimizer_step_bytes},
                                 {"hbm_bytes", memory.hbm_bytes},
                                 {"headroom_bytes", memory.headroom_bytes}}},
                               {"fits", memory.fits},
                               {"validation", validation},
                               {"simulation", StepJson(result.step)}});
    if (outputs.layer_times()) j["layer_times"] = layer_times;
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  io.out << "system      " << system.name << " (" << system.fabric.chip_count() << " chips of "
         << system.chip.name << ")\n";
  io.out << "model       " << model.name << "\n";
  io.out << "layout      " << layout.ToString() << "\n";
  io.out << "batch       " << batch.sequences << " x " << batch.seq << " tokens\n";
  const std::string layers = workloads::RecomputeLayersName(options.recompute_layers);
  auto joined = [](const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
    return text;
  };
  io.out << "recompute   " << workloads::RecomputeName(options.recompute)
         << (options.recompute == workloads::RecomputePolicy::kSaveNamed
                 ? ": keeps " + joined(options.saved_ops) +
                       (options.offloaded_ops.empty()
                            ? std::string()
                            : ", offloads " + joined(options.offloaded_ops))
                 : std::string())
         << (options.recompute == workloads::RecomputePolicy::kNone || layers == "all"
                 ? ""
                 : " (layers " + layers + ")")
         << "; attention kernel " << AttentionFlagValues()[static_cast<size_t>(options.attention)]
         << "\n";
  if (options.framework != workloads::Framework::kBook) {
    io.out << "framework   " << workloads::FrameworkName(options.framework)
           << ": its defaults, backward order and tp re-gathers (workloads/framework.h)\n";
    if (laid_out.fsdp_sync_last_microbatch) {
      io.out << "            with pp, FSDP2 as pipelining runs it: weights gathered once a step "
                "and kept, gradients accumulated unsharded in fp32 and reduce-scattered after "
                "the last microbatch's backward\n";
    }
  }
  const bool data_parallel = layout.grad_dp() > 1 || layout.expert_grad_dp() > 1;
  const bool exposed_gathers = laid_out.distributed_optimizer && !laid_out.overlap_param_gather;
  if (data_parallel && (!laid_out.overlap_grad_reduce || exposed_gathers)) {
    io.out << "dp          "
           << (laid_out.overlap_grad_reduce
                   ? "gradient reductions overlapped"
                   : "gradient reductions after the backward, one bucket a chunk, exposed")
           << (!laid_out.distributed_optimizer ? ""
               : exposed_gathers ? "; parameter gathers after the optimizer step, exposed"
                                 : "; parameter gathers overlapped")
           << " (--overlap-grad-reduce"
           << (laid_out.distributed_optimizer ? " and --overlap-param-gather overlap them)\n"
                                              : " overlaps them)\n");
  }
  if (options.kernels == workloads::KernelLibrary::kEager) {
    io.out << "kernels     eager: norms, rotary and SwiGLU as PyTorch eager's separate "
              "kernels (Hugging Face transformers)\n";
  }
  if (options.loss != workloads::LossKernel::kVocabParallel) {
    io.out << "loss        " << workloads::LossKernelName(options.loss) << ": "
           << workloads::LossKernelDescription(options.loss) << "\n";
  }
  io.out << "step time   " << FormatSeconds(result.step_time_s) << "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%.4g", result.tokens_per_s);
  io.out << "tokens/s    " << line << "\n";
  const bool all_pairs = options.model_flops_count == workloads::AttentionCount::kFull;
  io.out << "MFU         " << FormatPercent(result.mfu) << " (HFU " << FormatPercent(result.hfu)
         << "; MFU counts attention over "
         << (all_pairs ? "all T^2 query-key pairs, which a causal kernel halves, so it can exceed "
                         "HFU"
                       : "the causal T(T+1)/2 query-key pairs")
         << "; HFU counts the matmul and attention work executed, recomputation included"
         << (options.fp8 ? "; both against the bf16 peak, though the linear layers run in fp8" : "")
         << ")\n";
  io.out << "breakdown   (mean per chip)\n";
  double waiting_on_stages = 0;
  for (const auto& [name, seconds] : result.breakdown) {
    std::snprintf(line, sizeof line, "  %-16s %12s  %6s\n", name.c_str(),
                  FormatSeconds(seconds).c_str(),
                  FormatPercent(seconds / result.step_time_s).c_str());
    io.out << line;
    if (name == "bubble" || name == "idle") waiting_on_stages += seconds;
  }
  if (layout.pp > 1) {
    io.out << "pipeline    bubble + idle = " << FormatSeconds(waiting_on_stages) << ", "
           << FormatPercent(waiting_on_stages / result.step_time_s)
           << " of the step: the pipeline bubble, waiting on other stages\n";
  }
  if (!result.layer_times.empty()) {
    double forward = 0, backward = 0;
    for (const workloads::LayerTime& t : result.layer_times) {
      forward += t.forward_s;
      backward += t.backward_s;
    }
    const double n = static_cast<double>(result.layer_times.size());
    io.out << "layers      " << FormatSeconds(forward / n) << " forward, "
           << FormatSeconds(backward / n) << " backward, the mean of stage 0's "
           << result.layer_times.size()
           << " layers on its first simulated chip, microbatch 0 (--json: each)\n";
  }
  io.out << "memory      " << FormatByteSize(memory.total_bytes) << " per chip (stage "
         << memory.stage << ", precision " << workloads::PrecisionLabel(options.precision)
         << (options.distributed_optimizer && layout.grad_dp() > 1
                 ? std::string(", optimizer sharded over ") +
                       (layout.cp > 1 ? "dp x cp = " : "dp=") + std::to_string(layout.grad_dp())
                 : std::string())
         << "): params " << FormatByteSize(memory.param_bytes) << ", grads "
         << FormatByteSize(memory.grad_bytes) << ", optimizer "
         << FormatByteSize(memory.optimizer_bytes) << ", activations "
         << FormatByteSize(memory.activation_bytes) << ", buffers "
         << FormatByteSize(memory.buffer_bytes)
         << (memory.fp8_weight_cache_bytes > 0
                 ? ", fp8 weight cache " + FormatByteSize(memory.fp8_weight_cache_bytes)
                 : std::string())
         << ", loss peak " << FormatByteSize(memory.loss_peak_bytes)
         << (memory.recompute_peak_bytes > 0
                 ? ", recompute peak " + FormatByteSize(memory.recompute_peak_bytes)
                 : std::string())
         << (memory.optimizer_step_bytes > 0
                 ? ", optimizer step " + FormatByteSize(memory.optimizer_step_bytes) +
                       " (after the activations are freed)"
                 : std::string())
         << "\n";
  if (memory.host_offload_bytes > 0) {
    const double pcie = system.chip.pcie_bytes_per_s;
    io.out << "offloaded   " << FormatByteSize(memory.host_offload_bytes)
           << " of activations per chip in host memory, not in HBM; a step copies "
           << FormatByteSize(memory.host_offload_traffic_bytes)
           << " out and back over the host link"
           << (pcie > 0 ? " (" + FormatSeconds(offload_copy_s) + " each way at " +
                              FormatByteSize(pcie) + "/s)"
                        : std::string())
           << ", which are not simulated (assumed hidden behind compute)\n";
  }
  io.out << "fits        "
         << (memory.fits ? "yes, " + FormatByteSize(memory.headroom_bytes) + " to spare"
                         : "NO: " + FormatByteSize(-memory.headroom_bytes) + " over the " +
                               FormatByteSize(memory.hbm_bytes) + " of HBM")
         << "\n";
  io.out << "accuracy    " << StepFidelity(result.step) << "\n";
  io.out << "validation  "
         << ValidationLine(system.chip, "training", workloads::FrameworkName(options.framework))
         << "\n";
  io.out << "simulated   " << SimulationSummary(result.step) << "\n";
  if (outputs.has_write_schedule()) io.out << "schedule    " << outputs.write_schedule() << "\n";
  if (!chakra.empty()) io.out << "chakra      " << chakra << "\n";
  if (trace) io.out << "trace       " << outputs.trace() << " (" << trace->Summary() << ")\n";
  if (report) io.out << "report      " << outputs.report() << "\n";
  return sim::Status::Ok();
}

sim::Status RunReplay(const ReplayFlags& flags, CommandIo& io) {
  if (flags.file.empty() == flags.chakra.prefix.empty()) {
    return sim::Status::InvalidArgument(
        "replay: give a schedule FILE or --chakra PREFIX (a Chakra trace), not both");
  }
  schedule::Schedule schedule;
  std::optional<topology::System> chakra_system;
  std::string source = flags.file;
  if (!flags.chakra.prefix.empty()) {
    PODSIM_ASSIGN_OR_RETURN(ChakraInput input, ReadChakraInput(flags.chakra));
    schedule = std::move(input.imported.schedule);
    chakra_system.emplace(std::move(input.system));
    source = std::move(input.description);
  } else {
    PODSIM_ASSIGN_OR_RETURN(schedule, ReadScheduleFile(flags.file));
    source += " (" + schedule.description() + ")";
  }
  if (!chakra_system) {
    PODSIM_ASSIGN_OR_RETURN(topology::System parsed, topology::ParseSystem(schedule.system()));
    chakra_system.emplace(std::move(parsed));
  }
  const topology::System& system = *chakra_system;
  workloads::StepOptions step_options =
      StepOptionsOf(flags.every_chip, flags.flows, flags.exact, io);
  if (!flags.write_chakra.empty()) {
    PODSIM_RETURN_IF_ERROR(CheckWriteChakra(flags.write_chakra));
    // As the scenario check refuses it for train and infer (scenario/output_files.h).
    if (!flags.trace.empty() && scenario::IsChakraOutput(flags.write_chakra, flags.trace)) {
      return sim::Status::InvalidArgument(
          "--trace: " + scenario::ChakraOutputCollision(flags.write_chakra, flags.trace));
    }
  }
  std::unique_ptr<StepTraceFile> trace;
  if (!flags.trace.empty()) {
    PODSIM_ASSIGN_OR_RETURN(trace, StepTraceFile::Open(flags.trace, flags.trace_chips, system,
                                                       schedule, flags.every_chip));
    step_options.observer = trace->observer();
    step_options.flow_observer = trace->flow_observer();
  }
  PODSIM_ASSIGN_OR_RETURN(workloads::StepResult step,
                          workloads::SimulateStep(system, schedule, step_options));
  if (trace) PODSIM_RETURN_IF_ERROR(trace->Close(step.step_time));
  std::string chakra;
  if (!flags.write_chakra.empty()) {
    PODSIM_ASSIGN_OR_RETURN(chakra, WriteChakraFiles(flags.write_chakra, system, schedule));
  }
  const double seconds = step.step_time.ToSeconds();
  const double peak =
      static_cast<double>(system.fabric.chip_count()) * system.chip.bf16_flops_per_s * seconds;
  // A step with nothing to do takes no time: no utilisation to speak of.
  const double mfu = peak > 0 ? step.total_model_flops / peak : 0;
  const double hfu = peak > 0 ? step.total_hfu_flops / peak : 0;
  const std::map<std::string, double> breakdown = workloads::MeanBreakdown(step);
  const double tokens_per_s = schedule.tokens_per_step() > 0
                                  ? static_cast<double>(schedule.tokens_per_step()) / seconds
                                  : 0;
  if (flags.json) {
    nlohmann::ordered_json j{{"system", system.name},
                             {"description", schedule.description()},
                             {"step_time_s", seconds},
                             {"tokens_per_s", tokens_per_s},
                             {"mfu", mfu},
                             {"hfu", hfu},
                             {"breakdown", breakdown},
                             {"simulation", StepJson(step)}};
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  io.out << "schedule    " << source << "\n";
  io.out << "system      " << system.name << "\n";
  io.out << "step time   " << FormatSeconds(seconds) << "\n";
  io.out << "MFU         " << FormatPercent(mfu) << " (HFU " << FormatPercent(hfu) << ")";
  if (mfu > 1) {
    // Two causes: ops that count more model (or hardware) FLOPs than they execute, or executed
    // FLOPs in stated times that the peak cannot do.
    const double executed = peak > 0 ? step.total_flops / peak : 0;
    if (executed <= 1) {
      io.out << "; over 100%: ops count more model_flops (or hfu_flops) than the flops they "
                "execute, which take "
             << FormatPercent(executed) << " of the peak";
    } else {
      io.out << "; over 100%: ops that state their time (duration_s, a trace's recorded "
                "durations) do more FLOPs in it than "
             << system.chip.name << "'s peak allows";
    }
  }
  io.out << "\n";
  for (const auto& [name, s] : breakdown) {
    io.out << "  " << name << " " << FormatSeconds(s) << "\n";
  }
  io.out << "accuracy    " << StepFidelity(step) << "\n";
  if (!chakra.empty()) io.out << "chakra      " << chakra << "\n";
  if (trace) io.out << "trace       " << flags.trace << " (" << trace->Summary() << ")\n";
  return sim::Status::Ok();
}

void AddTraceFlags(CLI::App* sub, std::string* trace, std::string* trace_chips) {
  sub->add_option("--trace", *trace,
                  "Write a trace of the step: FILE.pftrace (Perfetto) or FILE.json (Chrome JSON)");
  sub->add_option("--trace-chips", *trace_chips,
                  "Chips to trace: 'all' or ids and ranges like 0-15,32 (default: every simulated "
                  "chip; chips 0-63 with --every-chip)");
}

void AddSimulationFlags(CLI::App* sub, bool* every_chip, bool* flows, bool* exact) {
  CLI::Option* every = sub->add_flag(
      "--every-chip", *every_chip,
      "Simulate every chip, not one per program (slower; with --flows, the reference)");
  CLI::Option* all = sub->add_flag(
      "--flows", *flows,
      "Run every transfer of every collective as flows, not whole collectives after one "
      "rehearsal each (slower; exact contention inside overlapping collectives)");
  sub->add_flag("--exact", *exact,
                "Simulate one chip per orbit of the step's symmetry (torus translations, GPU slot "
                "rotations and node translations), every transfer as a flow class: exactly "
                "--every-chip --flows, at a fraction of its cost where they map the step onto "
                "itself. The default does this when at most 64 orbits are left, and says when "
                "it approximates instead")
      ->excludes(every)
      ->excludes(all);
}

}  // namespace

Command AddTrainCommand(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* sub = app.add_subcommand(
      "train", "Simulate one training step: step time, MFU, breakdown, memory per chip");
  sub->add_option("--system", flags->system, "SYSTEM, e.g. tpu-v5p:16x20x28, h100:1024")
      ->required();
  sub->add_option("--model", flags->model, kTrainingModelHelp)->required();
  sub->add_option(
         "--layout", flags->layout,
         "dp=..,fsdp=..,tp=..,pp=..[,cp=..][,ep=..][,etp=1|tp][,seq_shards=..][,sp=1]"
         "[,microbatches=N|mbs=N][,schedule=gpipe|1f1b|interleaved][,virtual_stages=..]"
         "[,order=..]; pp>1 needs microbatches= or mbs= (sequences per microbatch per data "
         "shard); cp splits each sequence over chips; with fewer sequences than dp*fsdp, each "
         "is split over seq_shards of the data chips (automatic: what the batch needs); ep "
         "(experts split over chips) folds into cp first, then dp or fsdp, and with etp=1 into tp "
         "too")
      ->required();
  AddBatchFlags(sub, &flags->batch_tokens, &flags->seq);
  sub->add_option("--recompute", flags->recompute,
                  "none (default), selective, full, or save:OP,OP,... (keep the outputs of those "
                  "forward ops of each layer, like attn.qkv and attn.core; recompute the rest). "
                  "Name 'input' too for the layer's input, which PyTorch's checkpoint and JAX's "
                  "scan keep (without it, the book's accounting: op outputs only, one [tokens, "
                  "d_model] tensor a layer fewer), or maxtext:POLICY, a MaxText remat policy by "
                  "name (full, minimal, save_dot_except_mlpwi, save_dot_except_mlp, "
                  "save_qkv_proj, save_out_proj, qkv_proj_offloaded, minimal_offloaded; the "
                  "offloaded ones keep those outputs in host memory, whose copies are not "
                  "simulated; workloads/remat_policy.h)");
  sub->add_option("--recompute-layers", flags->recompute_layers,
                  "The layers that run --recompute, the others keeping every activation: all "
                  "(default), every:N (the N-th, 2N-th, ... layer a chip holds: torchtitan's "
                  "selective layer checkpointing, selective_ac_option N) or first:N (the first N "
                  "layers of each model chunk: Megatron-LM's --recompute-method block "
                  "--recompute-num-layers N)");
  sub->add_option("--attention", flags->attention,
                  "flash (default: the chip family's calibrated flash kernel, FA3 on Hopper, FA4 "
                  "on Blackwell), fa2 (FlashAttention-2, PyTorch SDPA's flash backend; hopper), "
                  "cudnn (cuDNN fused attention: Transformer Engine, SDPA's cuDNN backend; "
                  "hopper) or materialized (Megatron's separate kernels)");
  sub->add_option("--flops-convention", flags->flops_convention,
                  "How MFU counts attention: causal (default; the T(T+1)/2 pairs a causal "
                  "kernel executes, as MaxText) or full (all T^2 pairs, as PaLM, Megatron-LM and "
                  "torchtitan); HFU counts the work executed");
  AddTrainingFlags(sub, &flags->training);
  sub->add_option("--write-schedule", flags->write_schedule,
                  "Write the step's schedule: FILE.pb (binary) or FILE.textproto");
  AddWriteChakraFlag(sub, &flags->write_chakra);
  AddRequireFitFlag(sub, &flags->require_fit);
  sub->add_flag("--layer-times", flags->layer_times,
                "Each layer's forward and backward time on the first stage's first simulated "
                "chip, microbatch 0, as Korthikanti et al. time a layer (its compute and blocking "
                "tp collectives): their mean in the text, each in the JSON (layer_times); in the "
                "default mode observing the step runs its quotient twice");
  AddSimulationFlags(sub, &flags->every_chip, &flags->flows, &flags->exact);
  AddTraceFlags(sub, &flags->trace, &flags->trace_chips);
  AddReportFlag(sub, &flags->report);
  sub->footer(kBreakdownHelp);
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags](CommandIo& io) {
                   return DumpOrRun(ScenarioOf(*flags), TrainFlagSources(), flags->dump_scenario,
                                    io);
                 }};
}

Command AddReplayCommand(CLI::App& app) {
  auto flags = std::make_shared<ReplayFlags>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Simulate one step of a schedule file (workloads/schedule.proto, docs/schedule.md) or of "
      "a Chakra execution trace (--chakra, docs/chakra.md)");
  sub->add_option("file", flags->file, "FILE.pb (binary) or FILE.textproto");
  AddChakraReplayFlags(sub, &flags->chakra);
  AddWriteChakraFlag(sub, &flags->write_chakra);
  AddSimulationFlags(sub, &flags->every_chip, &flags->flows, &flags->exact);
  AddTraceFlags(sub, &flags->trace, &flags->trace_chips);
  sub->add_flag("--json", flags->json, "Print one JSON object");
  return Command{sub, [flags](CommandIo& io) { return RunReplay(*flags, io); }};
}

sim::Status RunDefaultScenario(CommandIo& io) {
  TrainFlags flags;
  flags.system = "tpu-v5e:16x16";
  flags.model = "llama3-8b";
  flags.layout = "fsdp=256";
  flags.batch_tokens = "1Mi";
  flags.seq = "4096";
  flags.recompute = "full";
  io.out << "podsim: no command given; running the default scenario:\n"
         << "  podsim train --system " << flags.system << " --model " << flags.model << " --layout "
         << flags.layout << " --batch-tokens " << flags.batch_tokens << " --seq " << flags.seq
         << " --recompute " << flags.recompute << "\n"
         << "(podsim --help lists the commands)\n\n";
  return DumpOrRun(ScenarioOf(flags), TrainFlagSources(), /*dump=*/false, io);
}

sim::Status RunTrainScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                             topology::System system, CommandIo& io) {
  return RunTrain(scenario, source, std::move(system), io);
}

}  // namespace podsim::cli
