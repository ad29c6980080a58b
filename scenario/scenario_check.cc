// ValidateScenario: the checks that follow parsing (scenario_file.h).

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "scenario/field_checks.h"
#include "scenario/output_files.h"
#include "scenario/scenario_build.h"
#include "scenario/scenario_file.h"
#include "topology/names.h"
#include "workloads/framework.h"
#include "workloads/layer_ops.h"
#include "workloads/precision.h"
#include "workloads/recompute_layers.h"
#include "workloads/training.h"

namespace podsim::scenario {

namespace {

using internal::CheckEnum;
using internal::CheckRange;
using internal::FormatNumber;
using internal::Invalid;

constexpr double kMaxCollectiveBytes = 1e15;
// Sizes of one collective sweep: nccl-tests' -b 8 -e 16G -f 2 is 32.
constexpr int kMaxSweepSizes = 128;
constexpr int64_t kMaxSeq = int64_t{1} << 24;
constexpr int64_t kMaxBatchTokens = int64_t{1} << 40;
constexpr int64_t kMaxBatch = int64_t{1} << 24;
constexpr int kMaxBatchPoints = 64;  // Batch sizes of one infer command (each a whole step).
// Threads of one sweep: more than any machine podsim runs on has cores.
constexpr int64_t kMaxJobs = 256;
constexpr int64_t kMaxTop = 1 << 20;

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// --src / --dst: a chip index, or coordinates on a torus (first slice), as the collective command
// reads them.
sim::Status CheckChip(std::string_view text, const topology::Fabric& fabric,
                      const SourceMap& source, const std::string& path) {
  const int64_t last = int64_t{fabric.chip_count()} - 1;
  const std::vector<std::string_view> parts = Split(text, ',');
  if (parts.size() == 1) {
    if (topology::ParseCount(text, last)) return sim::Status::Ok();
    return Invalid(source, path,
                   "expected a chip index from 0 to " + std::to_string(last) +
                       " or torus coordinates like \"1,0\" (got \"" + std::string(text) + "\")");
  }
  if (fabric.torus() == nullptr) {
    return Invalid(
        source, path,
        "coordinates need a torus system; give a chip index (got \"" + std::string(text) + "\")");
  }
  const std::vector<int>& shape = fabric.shape();
  if (parts.size() != shape.size()) {
    return Invalid(source, path,
                   "expected " + std::to_string(shape.size()) +
                       " coordinates for this torus (got \"" + std::string(text) + "\")");
  }
  for (size_t a = 0; a < parts.size(); ++a) {
    if (!topology::ParseCount(parts[a], shape[a] - 1)) {
      return Invalid(source, path,
                     "coordinate " + std::to_string(a) + " must be 0.." +
                         std::to_string(shape[a] - 1) + " (got \"" + std::string(text) + "\")");
    }
  }
  return sim::Status::Ok();
}

sim::Status CheckCollective(const Collective& c, const topology::System& system,
                            const SourceMap& source) {
  PODSIM_RETURN_IF_ERROR(
      CheckEnum(source, "collective.op", Collective::Op_descriptor(), c.op(), c.has_op(), true));
  const bool range = c.has_min_bytes() || c.has_max_bytes();
  if (c.sweep_bytes() + c.has_bytes() + range > 1) {
    return Invalid(source, c.has_bytes() ? "collective.bytes" : "collective.sweep_bytes",
                   "give one of bytes, sweep_bytes: true, or min_bytes and max_bytes");
  }
  if (!c.sweep_bytes() && !c.has_bytes() && !range) {
    return Invalid(source, "collective.bytes",
                   "missing; give the size of the whole array in bytes (like 1073741824 or "
                   "1e9), sweep_bytes: true, or min_bytes and max_bytes");
  }
  if (c.has_step_factor() && !range) {
    return Invalid(source, "collective.step_factor", "needs min_bytes and max_bytes");
  }
  if (range) {
    if (!c.has_min_bytes() || !c.has_max_bytes()) {
      return Invalid(source, c.has_min_bytes() ? "collective.max_bytes" : "collective.min_bytes",
                     "missing; a size sweep needs both min_bytes and max_bytes");
    }
    for (const auto& [field, value] : {std::pair{"collective.min_bytes", c.min_bytes()},
                                       std::pair{"collective.max_bytes", c.max_bytes()}}) {
      if (!(std::isfinite(value) && value >= 1 && value <= kMaxCollectiveBytes)) {
        return Invalid(source, field,
                       "must be >= 1 and at most 1e15 (got " + FormatNumber(value) + ")");
      }
    }
    if (c.min_bytes() > c.max_bytes()) {
      return Invalid(source, "collective.max_bytes",
                     "must be >= min_bytes (got " + FormatNumber(c.max_bytes()) + " < " +
                         FormatNumber(c.min_bytes()) + ")");
    }
    const double factor = c.has_step_factor() ? c.step_factor() : 2;
    if (!(std::isfinite(factor) && factor > 1 && factor <= 1e6)) {
      return Invalid(source, "collective.step_factor",
                     "must be > 1 and at most 1e6 (got " + FormatNumber(factor) + ")");
    }
    double sizes = 0;
    for (double size = c.min_bytes(); size <= c.max_bytes() && sizes <= kMaxSweepSizes;
         size *= factor) {
      ++sizes;
    }
    if (sizes > kMaxSweepSizes) {
      return Invalid(source, "collective.step_factor",
                     "the sweep would have more than " + std::to_string(kMaxSweepSizes) +
                         " sizes; raise the factor or narrow the range");
    }
  }
  if (c.has_bytes() &&
      !(std::isfinite(c.bytes()) && c.bytes() > 0 && c.bytes() <= kMaxCollectiveBytes)) {
    return Invalid(source, "collective.bytes",
                   "must be > 0 and at most 1e15 (got " + FormatNumber(c.bytes()) + ")");
  }
  const topology::Fabric& fabric = system.fabric;
  if (c.axes_size() > 0 && fabric.torus() == nullptr) {
    return Invalid(source, "collective.axes",
                   "this system has no torus axes; collectives on it span all chips");
  }
  if (c.axes_size() > 0) {
    const std::vector<std::string> names = fabric.AxisNames();
    const std::vector<std::string_view> candidates(names.begin(), names.end());
    std::string known;
    for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
    for (int i = 0; i < c.axes_size(); ++i) {
      const std::string path = "collective.axes[" + std::to_string(i) + "]";
      const std::string& axis = c.axes(i);
      if (std::find(names.begin(), names.end(), axis) == names.end()) {
        return Invalid(source, path,
                       "the system has no axis '" + axis + "'" +
                           topology::DidYouMean(axis, candidates) + "; its axes are " + known);
      }
      if (std::find(c.axes().begin(), c.axes().begin() + i, axis) != c.axes().begin() + i) {
        return Invalid(source, path, "axis '" + axis + "' given twice");
      }
    }
  }
  if (c.has_algorithm() && c.algorithm().empty()) {
    return Invalid(source, "collective.algorithm", "must not be empty (leave it out to select)");
  }
  if (c.has_src()) PODSIM_RETURN_IF_ERROR(CheckChip(c.src(), fabric, source, "collective.src"));
  if (c.has_dst()) PODSIM_RETURN_IF_ERROR(CheckChip(c.dst(), fabric, source, "collective.dst"));
  if (c.op() == Collective::P2P && (!c.has_src() || !c.has_dst())) {
    return Invalid(source, c.has_src() ? "collective.dst" : "collective.src",
                   "missing; op P2P needs src and dst");
  }
  return sim::Status::Ok();
}

// A sequence no longer than a model with learned positions has rows of its position embedding
// (GPT-3's 2048); rotary models (learned_positions 0) take any length.
sim::Status CheckPositions(const workloads::ModelSpec& model, int64_t tokens,
                           const std::string& path, const SourceMap& source) {
  if (model.learned_positions == 0 || tokens <= model.learned_positions) return sim::Status::Ok();
  return Invalid(source, path,
                 std::to_string(tokens) + " tokens exceed the " +
                     std::to_string(model.learned_positions) + " positions of model '" +
                     model.name + "' (its learned position embedding has a row per position)");
}

// batch_tokens and seq of train and sweep.
sim::Status CheckTokens(const std::string& command, bool has_batch_tokens, int64_t batch_tokens,
                        bool has_seq, int64_t seq, const SourceMap& source) {
  if (!has_batch_tokens) {
    return Invalid(source, command + ".batch_tokens", "missing; give the tokens per step");
  }
  if (!has_seq) return Invalid(source, command + ".seq", "missing; give the tokens per sequence");
  PODSIM_RETURN_IF_ERROR(CheckRange(source, command + ".seq", seq, 1, kMaxSeq));
  PODSIM_RETURN_IF_ERROR(
      CheckRange(source, command + ".batch_tokens", batch_tokens, 1, kMaxBatchTokens));
  if (batch_tokens % seq != 0) {
    return Invalid(source, command + ".batch_tokens",
                   "must be a multiple of seq=" + std::to_string(seq) + " (got " +
                       std::to_string(batch_tokens) + ")");
  }
  return sim::Status::Ok();
}

// The framework fields Train and Sweep share (named alike; scenario_build.cc's
// SetFrameworkOptions reads them): each named recipe, kernel library and loss known, and an fp8
// all-gather only with fp8 training. `prefix` is "train" or "sweep".
template <typename Message>
sim::Status CheckFrameworkFields(const Message& m, const std::string& prefix,
                                 const SourceMap& source) {
  if (m.has_framework()) {
    PODSIM_RETURN_IF_ERROR(
        source.Annotate(workloads::FrameworkNamed(m.framework()).status(), prefix + ".framework"));
  }
  if (m.has_precision()) {
    PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::PrecisionRecipeNamed(m.precision()).status(),
                                           prefix + ".precision"));
  }
  if (m.has_kernels()) {
    PODSIM_RETURN_IF_ERROR(
        source.Annotate(workloads::KernelLibraryNamed(m.kernels()).status(), prefix + ".kernels"));
  }
  if (m.has_loss()) {
    PODSIM_RETURN_IF_ERROR(
        source.Annotate(workloads::LossKernelNamed(m.loss()).status(), prefix + ".loss"));
  }
  if (m.fp8_all_gather() && !m.fp8()) {
    return Invalid(source, prefix + ".fp8_all_gather", "needs fp8 training (fp8: true, --fp8)");
  }
  if (m.has_overlap_param_gather() && m.overlap_param_gather()) {
    // Megatron-LM's arguments.py: --overlap-param-gather needs --use-distributed-optimizer and
    // --overlap-grad-reduce.
    if (!m.distributed_optimizer()) {
      return Invalid(source, prefix + ".overlap_param_gather",
                     "needs the distributed optimizer (distributed_optimizer: true, "
                     "--distributed-optimizer), whose parameter gathers it overlaps");
    }
    const workloads::Framework framework =
        m.has_framework() ? *workloads::FrameworkNamed(m.framework()) : workloads::Framework::kBook;
    if (!(m.has_overlap_grad_reduce() ? m.overlap_grad_reduce()
                                      : workloads::DefaultsOf(framework).overlap_grad_reduce)) {
      return Invalid(source, prefix + ".overlap_param_gather",
                     "needs the gradient reductions overlapped too (overlap_grad_reduce: true, "
                     "--overlap-grad-reduce), as Megatron-LM requires");
    }
  }
  if (m.has_fp8_library()) {
    PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::Fp8LibraryNamed(m.fp8_library()).status(),
                                           prefix + ".fp8_library"));
    if (!m.fp8()) {
      return Invalid(source, prefix + ".fp8_library", "needs fp8 training (fp8: true, --fp8)");
    }
  }
  if (m.fp8_dispatch() && !m.fp8()) {
    return Invalid(source, prefix + ".fp8_dispatch", "needs fp8 training (fp8: true, --fp8)");
  }
  if (m.has_fp8_recipe()) {
    PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::Fp8RecipeNamed(m.fp8_recipe()).status(),
                                           prefix + ".fp8_recipe"));
    if (!m.fp8()) {
      return Invalid(source, prefix + ".fp8_recipe", "needs fp8 training (fp8: true, --fp8)");
    }
  }
  return sim::Status::Ok();
}

sim::Status CheckTrain(const Train& t, const topology::System& system, const SourceMap& source) {
  PODSIM_ASSIGN_OR_RETURN(workloads::ModelSpec model, BuildModel(t.model(), "train.model", source));
  PODSIM_ASSIGN_OR_RETURN(workloads::Layout layout, BuildTrainLayout(t, source));
  PODSIM_RETURN_IF_ERROR(
      CheckTokens("train", t.has_batch_tokens(), t.batch_tokens(), t.has_seq(), t.seq(), source));
  PODSIM_RETURN_IF_ERROR(CheckPositions(model, t.seq(), "train.seq", source));
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, "train.recompute", Train::Recompute_descriptor(),
                                   t.recompute(), t.has_recompute(), false));
  if (t.has_recompute_layers()) {
    sim::StatusOr<workloads::RecomputeLayers> layers =
        workloads::RecomputeLayersNamed(t.recompute_layers());
    if (!layers.ok()) return Invalid(source, "train.recompute_layers", layers.status().message());
    if (layers->kind != workloads::RecomputeLayers::Kind::kAll &&
        (t.recompute() == Train::NONE || t.recompute() == Train::RECOMPUTE_UNSPECIFIED)) {
      return Invalid(source, "train.recompute_layers",
                     "selects the layers that recompute, so it needs a recompute policy "
                     "(selective, full or save:...)");
    }
  }
  if (t.recompute() == Train::SAVE_NAMED && t.saved_ops_size() + t.offloaded_ops_size() == 0) {
    return Invalid(source, "train.saved_ops",
                   "missing; recompute: SAVE_NAMED keeps the outputs of the forward ops named "
                   "here, like \"attn.qkv\"");
  }
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, "train.attention", Train::Attention_descriptor(),
                                   t.attention(), t.has_attention(), false));
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, "train.flops_convention",
                                   Train::FlopsConvention_descriptor(), t.flops_convention(),
                                   t.has_flops_convention(), false));
  PODSIM_RETURN_IF_ERROR(CheckFrameworkFields(t, "train", source));
  // The forward op names of the model's layers, each once (the same under any sharding): of its
  // dense layers and of its MoE layers, where it has them.
  std::vector<std::string> names = {std::string(workloads::kSavedInput)};
  if (t.saved_ops_size() + t.offloaded_ops_size() > 0) {
    const workloads::Layout one;
    const workloads::ShardShape shape = workloads::ShapeOf(one, model, {1, t.seq()});
    for (const bool moe : {false, true}) {
      if (moe ? model.MoeLayers() == 0 : model.MoeLayers() == model.layers) continue;
      for (const workloads::Op& op : workloads::LayerForwardOps(
               model, one, shape, OpOptionsOf(t),
               moe ? workloads::MlpKind::kMoe : workloads::MlpKind::kDense)) {
        if (op.kind != workloads::OpKind::kCollective &&
            std::find(names.begin(), names.end(), op.name) == names.end()) {
          names.push_back(op.name);
        }
      }
    }
  }
  for (const auto& [field, ops] :
       {std::pair{"saved_ops", &t.saved_ops()}, std::pair{"offloaded_ops", &t.offloaded_ops()}}) {
    for (int i = 0; i < ops->size(); ++i) {
      const std::string& op = ops->Get(i);
      const std::string path = "train." + std::string(field) + "[" + std::to_string(i) + "]";
      if (t.recompute() != Train::SAVE_NAMED) {
        return Invalid(source, path, "only with recompute: SAVE_NAMED");
      }
      if (op.empty()) return Invalid(source, path, "must not be empty");
      if (std::find(names.begin(), names.end(), op) == names.end()) {
        const std::vector<std::string_view> known(names.begin(), names.end());
        std::string list;
        for (std::string_view name : known) list += (list.empty() ? "" : ", ") + std::string(name);
        return Invalid(source, path,
                       "no forward op '" + op + "' in a layer of this model" +
                           topology::DidYouMean(op, known) + "; ops: " + list);
      }
    }
  }
  for (int i = 0; i < t.offloaded_ops_size(); ++i) {
    if (std::find(t.saved_ops().begin(), t.saved_ops().end(), t.offloaded_ops(i)) !=
        t.saved_ops().end()) {
      return Invalid(source, "train.offloaded_ops[" + std::to_string(i) + "]",
                     "'" + t.offloaded_ops(i) +
                         "' is in saved_ops too: an output is kept on the chip or offloaded");
    }
  }
  if (t.offloaded_ops_size() > 0 && t.has_recompute_layers() && t.recompute_layers() != "all") {
    return Invalid(source, "train.recompute_layers",
                   "offloaded activations (offloaded_ops) need every layer to recompute alike: "
                   "all");
  }
  const workloads::BatchSpec batch{t.batch_tokens() / t.seq(), t.seq()};
  PODSIM_RETURN_IF_ERROR(source.Annotate(
      workloads::ValidateLayout(layout, model, system.fabric.chip_count(), batch), "train.layout"));
  PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::ValidateAttentionOption(OpOptionsOf(t), layout),
                                         "train.attention"));
  if (t.fp8_all_gather() && layout.fsdp <= 1 &&
      !(t.distributed_optimizer() && (layout.grad_dp() > 1 || layout.expert_grad_dp() > 1))) {
    return Invalid(source, "train.fp8_all_gather",
                   "needs fsdp > 1, or the distributed optimizer over dp > 1: layout " +
                       layout.ToString() + " gathers no weights");
  }
  if (t.fp8_dispatch() && layout.ep <= 1) {
    return Invalid(source, "train.fp8_dispatch",
                   "needs ep > 1: layout " + layout.ToString() + " dispatches no tokens");
  }
  if (t.no_reshard_after_forward() && layout.fsdp <= 1) {
    return Invalid(source, "train.no_reshard_after_forward",
                   "needs fsdp > 1: layout " + layout.ToString() + " gathers no weights");
  }
  PODSIM_RETURN_IF_ERROR(
      source.Annotate(workloads::ValidateFp8(OpOptionsOf(t), system.chip), "train.fp8"));
  PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::ValidateFp8Recipe(OpOptionsOf(t), system.chip),
                                         "train.fp8_recipe"));
  PODSIM_RETURN_IF_ERROR(
      source.Annotate(workloads::ValidateAttentionKernel(
                          OpOptionsOf(t), workloads::DefaultComputeEfficiency(system.chip)),
                      "train.attention"));
  PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::ValidateFrameworkLayout(OpOptionsOf(t), layout),
                                         "train.framework"));
  PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::ValidateEpCommOverlap(OpOptionsOf(t), layout),
                                         "train.ep_comm_overlap"));
  return source.Annotate(workloads::ValidateTpCommOverlap(OpOptionsOf(t), layout),
                         "train.tp_comm_overlap");
}

sim::Status CheckInfer(const Infer& infer, const SourceMap& source) {
  PODSIM_ASSIGN_OR_RETURN(const workloads::ModelSpec model,
                          BuildModel(infer.model(), "infer.model", source));
  if (!infer.has_layout()) {
    return Invalid(source, "infer.layout",
                   "missing; give text: \"tp=..,tp2=..,dp=..\" or the axes as fields");
  }
  if (infer.layout().has_text() && infer.layout().text().empty()) {
    return Invalid(source, "infer.layout.text", "must not be empty (like \"tp=8\")");
  }
  // The grammar and ranges; the layout against the model and system is the run's to check (it
  // depends on the step: batch, phase, the prefill servers of a deployment).
  PODSIM_RETURN_IF_ERROR(BuildInferLayout(infer.layout(), source).status());
  // One step (phase and context), or a disaggregated deployment (prefill_len and decode_len).
  if (infer.has_prefill_len() != infer.has_decode_len()) {
    return Invalid(source, infer.has_prefill_len() ? "infer.decode_len" : "infer.prefill_len",
                   "missing; the serving estimate needs prefill_len and decode_len");
  }
  const bool serving = infer.has_prefill_len() || infer.has_decode_len();
  if (!serving) {
    PODSIM_RETURN_IF_ERROR(CheckEnum(source, "infer.phase", Infer::Phase_descriptor(),
                                     infer.phase(), infer.has_phase(), true));
  } else if (infer.has_phase() || infer.has_context()) {
    return Invalid(source, infer.has_phase() ? "infer.phase" : "infer.context",
                   "not with prefill_len and decode_len (the deployment runs both phases)");
  }
  if (infer.has_prefill_batch()) {
    if (!serving) {
      return Invalid(source, "infer.prefill_batch",
                     "needs prefill_len and decode_len (it sizes a deployment's prefill steps)");
    }
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "infer.prefill_batch", infer.prefill_batch(), 1, kMaxBatch));
  }
  if (infer.batch_size() == 0) {
    return Invalid(source, "infer.batch",
                   "missing; give the sequences per step (several for one row each)");
  }
  if (infer.batch_size() > kMaxBatchPoints) {
    return Invalid(source, "infer.batch",
                   "at most " + std::to_string(kMaxBatchPoints) + " batch sizes (got " +
                       std::to_string(infer.batch_size()) + ")");
  }
  if (serving && infer.batch_size() != 1) {
    return Invalid(
        source, "infer.batch",
        "give one decode batch with prefill_len (got " + std::to_string(infer.batch_size()) + ")");
  }
  for (int i = 0; i < infer.batch_size(); ++i) {
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "infer.batch[" + std::to_string(i) + "]", infer.batch(i), 1, kMaxBatch));
    for (int j = 0; j < i; ++j) {
      if (infer.batch(j) == infer.batch(i)) {
        return Invalid(source, "infer.batch[" + std::to_string(i) + "]",
                       "batch " + std::to_string(infer.batch(i)) + " is given twice");
      }
    }
  }
  if (!serving && !infer.has_context()) {
    return Invalid(source, "infer.context", "missing; give the tokens per sequence");
  }
  if (!serving) {
    // A decode step may start from an empty cache; a prefill needs a prompt.
    const int64_t min_context = infer.phase() == Infer::PREFILL ? 1 : 0;
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "infer.context", infer.context(), min_context, kMaxSeq));
    // A decode step feeds one token at position `context`, after the cached ones.
    PODSIM_RETURN_IF_ERROR(
        CheckPositions(model, infer.context() + (infer.phase() == Infer::PREFILL ? 0 : 1),
                       "infer.context", source));
  }
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, "infer.weight_dtype", Infer::Dtype_descriptor(),
                                   infer.weight_dtype(), infer.has_weight_dtype(), false));
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, "infer.kv_dtype", Infer::Dtype_descriptor(),
                                   infer.kv_dtype(), infer.has_kv_dtype(), false));
  PODSIM_RETURN_IF_ERROR(CheckEnum(source, "infer.collective_dtype", Infer::Dtype_descriptor(),
                                   infer.collective_dtype(), infer.has_collective_dtype(), false));
  if (infer.collective_dtype() == Infer::INT4 || infer.collective_dtype() == Infer::FP8) {
    return Invalid(source, "infer.collective_dtype",
                   "INT4 and FP8 are for weights and KV caches only; expected BF16 or INT8");
  }
  if (infer.has_prefill_len()) {
    PODSIM_RETURN_IF_ERROR(
        CheckRange(source, "infer.prefill_len", infer.prefill_len(), 1, kMaxSeq));
    PODSIM_RETURN_IF_ERROR(CheckRange(source, "infer.decode_len", infer.decode_len(), 1, kMaxSeq));
    if (infer.decode_len() == 1) {
      return Invalid(source, "infer.decode_len",
                     "1 generated token is the prefill's own and no decode step runs; give 2 or "
                     "more, or simulate the prefill alone (phase PREFILL, podsim infer --phase "
                     "prefill)");
    }
    if (infer.prefill_len() + infer.decode_len() > kMaxSeq) {
      return Invalid(source, "infer.decode_len",
                     "prefill_len + decode_len must be at most " + std::to_string(kMaxSeq) +
                         " tokens (got " +
                         std::to_string(infer.prefill_len() + infer.decode_len()) + ")");
    }
    // The last token fed through the model is the decode_len-1-th generated one.
    PODSIM_RETURN_IF_ERROR(CheckPositions(model, infer.prefill_len() + infer.decode_len() - 1,
                                          "infer.decode_len", source));
  }
  // No accelerator rents for a million dollars an hour; the bound keeps the cost finite.
  if (infer.has_chip_hour_usd() && !(infer.chip_hour_usd() > 0 && infer.chip_hour_usd() <= 1e6)) {
    return Invalid(
        source, "infer.chip_hour_usd",
        "must be a price > 0 and <= 1e6 dollars (got " + FormatNumber(infer.chip_hour_usd()) + ")");
  }
  return sim::Status::Ok();
}

sim::Status CheckSweep(const Sweep& sweep, const topology::System& system,
                       const SourceMap& source) {
  PODSIM_ASSIGN_OR_RETURN(const workloads::ModelSpec model,
                          BuildModel(sweep.model(), "sweep.model", source));
  // The expert options apply to the layouts with ep; a model without experts has none.
  for (const auto& [set, field] : {std::pair{sweep.ep_comm_overlap(), "sweep.ep_comm_overlap"},
                                   std::pair{sweep.fp8_dispatch(), "sweep.fp8_dispatch"}}) {
    if (set && !model.moe()) {
      return Invalid(
          source, field,
          "model '" + model.name + "' has no experts: no layout of the sweep has ep > 1");
    }
  }
  PODSIM_RETURN_IF_ERROR(CheckTokens("sweep", sweep.has_batch_tokens(), sweep.batch_tokens(),
                                     sweep.has_seq(), sweep.seq(), source));
  PODSIM_RETURN_IF_ERROR(CheckPositions(model, sweep.seq(), "sweep.seq", source));
  if (sweep.has_jobs()) {
    PODSIM_RETURN_IF_ERROR(CheckRange(source, "sweep.jobs", sweep.jobs(), 1, kMaxJobs));
  }
  if (sweep.has_top()) {
    PODSIM_RETURN_IF_ERROR(CheckRange(source, "sweep.top", sweep.top(), 1, kMaxTop));
  }
  PODSIM_RETURN_IF_ERROR(CheckFrameworkFields(sweep, "sweep", source));
  workloads::OpOptions fp8;
  fp8.fp8 = sweep.fp8();
  PODSIM_RETURN_IF_ERROR(source.Annotate(workloads::ValidateFp8(fp8, system.chip), "sweep.fp8"));
  return source.Annotate(workloads::ValidateFp8Recipe(OpOptionsOf(sweep), system.chip),
                         "sweep.fp8_recipe");
}

// "all", or chip indices and ranges like "0-15,32" below the chip count.
sim::Status CheckTraceChips(std::string_view text, uint32_t chip_count, const SourceMap& source) {
  if (text == "all") return sim::Status::Ok();
  for (std::string_view part : Split(text, ',')) {
    const size_t dash = part.find('-');
    const std::optional<int64_t> first =
        topology::ParseCount(part.substr(0, dash), int64_t{chip_count} - 1);
    const std::optional<int64_t> last =
        dash == std::string_view::npos
            ? first
            : topology::ParseCount(part.substr(dash + 1), int64_t{chip_count} - 1);
    if (!first || !last || *last < *first) {
      return Invalid(source, "outputs.trace_chips",
                     "expected \"all\" or chip indices and ranges from 0 to " +
                         std::to_string(chip_count - 1) + " like \"0-15,32\" (got \"" +
                         std::string(part) + "\")");
    }
  }
  return sim::Status::Ok();
}

sim::Status CheckOutputs(const Scenario& s, const topology::System& system,
                         const SourceMap& source) {
  const Outputs& out = s.outputs();
  if (out.csv()) {
    if (s.command_case() != Scenario::kSweep && s.command_case() != Scenario::kCollective) {
      return Invalid(source, "outputs.csv", "only sweep and collective print CSV");
    }
    if (out.json()) return Invalid(source, "outputs.csv", "give json or csv, not both");
  }
  if (out.has_trace()) {
    if (s.command_case() != Scenario::kCollective && s.command_case() != Scenario::kTrain &&
        s.command_case() != Scenario::kInfer) {
      return Invalid(source, "outputs.trace", "only collective, train and infer write traces");
    }
    if (out.trace().empty()) return Invalid(source, "outputs.trace", "must not be empty");
    if (s.command_case() == Scenario::kCollective &&
        (s.collective().sweep_bytes() || s.collective().has_min_bytes())) {
      return Invalid(source, "outputs.trace",
                     "a trace follows one size; give collective.bytes, not a sweep");
    }
    // A trace follows one step (cli/infer_command.cc says the same for the flags).
    if (s.command_case() == Scenario::kInfer && s.infer().has_prefill_len()) {
      return Invalid(source, "outputs.trace",
                     "a trace follows one step; trace the prefill or the decode step alone");
    }
    if (s.command_case() == Scenario::kInfer && s.infer().batch_size() > 1) {
      return Invalid(source, "outputs.trace",
                     "a trace follows one step; give one batch size (got " +
                         std::to_string(s.infer().batch_size()) + ")");
    }
  }
  if (out.has_write_schedule()) {
    if (s.command_case() != Scenario::kTrain) {
      return Invalid(source, "outputs.write_schedule", "only train writes a schedule");
    }
    if (out.write_schedule().empty()) {
      return Invalid(source, "outputs.write_schedule", "must not be empty");
    }
    if (out.has_trace() && SameOutputFile(out.trace(), out.write_schedule())) {
      return Invalid(source, "outputs.write_schedule",
                     "is also outputs.trace ('" + out.trace() + "'); write them to two files");
    }
  }
  if (out.has_write_chakra()) {
    if (s.command_case() != Scenario::kTrain && s.command_case() != Scenario::kInfer) {
      return Invalid(source, "outputs.write_chakra", "only train and infer write Chakra traces");
    }
    if (out.write_chakra().empty())
      return Invalid(source, "outputs.write_chakra", "must not be empty");
    if (s.command_case() == Scenario::kInfer &&
        (s.infer().has_prefill_len() || s.infer().batch_size() > 1)) {
      return Invalid(source, "outputs.write_chakra",
                     "a Chakra trace is one step; give one batch size and one phase");
    }
    for (const auto& [field, path] : {std::pair{"outputs.trace", &out.trace()},
                                      std::pair{"outputs.write_schedule", &out.write_schedule()},
                                      std::pair{"outputs.report", &out.report()}}) {
      if (!path->empty() && IsChakraOutput(out.write_chakra(), *path)) {
        return Invalid(source, field, ChakraOutputCollision(out.write_chakra(), *path));
      }
    }
  }
  if (out.has_report()) {
    if (s.command_case() != Scenario::kTrain && s.command_case() != Scenario::kInfer &&
        s.command_case() != Scenario::kCollective && s.command_case() != Scenario::kSweep) {
      return Invalid(source, "outputs.report",
                     "only train, infer, collective and sweep write reports");
    }
    if (out.report().empty()) return Invalid(source, "outputs.report", "must not be empty");
    if (s.command_case() == Scenario::kInfer &&
        (s.infer().has_prefill_len() || s.infer().batch_size() > 1)) {
      return Invalid(source, "outputs.report",
                     "a report follows one step; give one batch size and one phase");
    }
    for (const std::string* other : {&out.trace(), &out.write_schedule()}) {
      if (!other->empty() && SameOutputFile(*other, out.report())) {
        return Invalid(source, "outputs.report",
                       "is also another output ('" + out.report() + "'); write them to two files");
      }
    }
  }
  if (out.require_fit() && s.command_case() != Scenario::kTrain &&
      s.command_case() != Scenario::kInfer) {
    return Invalid(source, "outputs.require_fit", "only train and infer check that a step fits");
  }
  if (out.has_trace_chips()) {
    if (!out.has_trace()) {
      return Invalid(source, "outputs.trace_chips", "needs outputs.trace (the file to write)");
    }
    PODSIM_RETURN_IF_ERROR(CheckTraceChips(out.trace_chips(), system.fabric.chip_count(), source));
  }
  return sim::Status::Ok();
}

}  // namespace

sim::Status ValidateScenario(const Scenario& scenario, const SourceMap& source) {
  return CheckScenario(scenario, source).status();
}

sim::StatusOr<topology::System> CheckScenario(const Scenario& scenario, const SourceMap& source) {
  PODSIM_ASSIGN_OR_RETURN(topology::System system, BuildSystem(scenario.system(), source));
  return CheckScenario(scenario, source, std::move(system));
}

sim::StatusOr<topology::System> CheckScenario(const Scenario& scenario, const SourceMap& source,
                                              topology::System system) {
  switch (scenario.command_case()) {
    case Scenario::kTopology:
      break;
    case Scenario::kCollective:
      PODSIM_RETURN_IF_ERROR(CheckCollective(scenario.collective(), system, source));
      break;
    case Scenario::kTrain:
      PODSIM_RETURN_IF_ERROR(CheckTrain(scenario.train(), system, source));
      break;
    case Scenario::kInfer:
      PODSIM_RETURN_IF_ERROR(CheckInfer(scenario.infer(), source));
      break;
    case Scenario::kSweep:
      PODSIM_RETURN_IF_ERROR(CheckSweep(scenario.sweep(), system, source));
      break;
    default:
      return Invalid(source, "",
                     "no command; give one of topology, collective, train, infer, sweep");
  }
  PODSIM_RETURN_IF_ERROR(CheckOutputs(scenario, system, source));
  return system;
}

}  // namespace podsim::scenario
