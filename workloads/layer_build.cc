#include "workloads/layer_build.h"

#include <algorithm>
#include <cmath>

#include "sim/check.h"

namespace podsim::workloads::layer_build {

using collectives::CollectiveOp;

Dims DimsOf(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
            const OpOptions& options) {
  Dims d;
  d.e = options.precision.activation_bytes;
  d.tok = D(shape.tokens);
  d.sp_tok = D(shape.sp_tokens);
  d.seqs = D(shape.microbatch_sequences);
  d.cp = layout.context_shards();
  d.T = D(shape.seq);
  d.d = D(model.d_model);
  d.qk_head = D(model.qk_head_dim());
  d.v_head = D(model.value_head_dim());
  d.q = D(shape.heads) * d.qk_head;
  d.kv = D(shape.kv_heads) * d.qk_head;
  d.v = D(shape.kv_heads) * d.v_head;
  d.o = D(shape.heads) * d.v_head;
  d.f = D(shape.ffn);
  d.heads = D(shape.heads);
  const bool layer_norm = model.norm == NormKind::kLayer;
  d.norm_flops = layer_norm ? kLayerNormFlops : kRmsNormFlops;
  d.norm_params = layer_norm ? 2 * d.d : d.d;
  // PyTorch's own LayerNorm kernels, which the class was fitted on, run under eager kernels;
  // Transformer Engine's, apex's and compiled ones are other implementations of the reduction
  // (hbm_kernel.h), which stream at the family's hbm_fraction.
  d.norm_kernel = layer_norm && options.kernels == KernelLibrary::kEager ? kLayerNormKernel
                                                                         : std::string_view();
  d.tp = layout.tp > 1;
  d.sp = layout.sp && layout.tp > 1;
  d.ring = layout.ring_attention() && d.cp > 1;
  d.dispatch_e = options.fp8_dispatch ? kFp8DispatchBytesPerElement : d.e;
  d.tp_backward = TpBackwardOf(options.framework);
  d.kept_input_tok = d.sp && d.tp_backward.keep_gathered_input ? d.tok : d.sp_tok;
  return d;
}

DataGroups DenseGroups(const Layout& layout) {
  return {"fsdp", layout.fsdp, "dp", layout.grad_dp()};
}

DataGroups ExpertGroups(const Layout& layout) {
  return {"expert-fsdp", layout.expert_fsdp(), "expert-dp", layout.expert_grad_dp()};
}

// TP activation collective after a row-parallel matmul (forward) or a column-parallel
// input-gradient (backward): all-reduce, or reduce-scatter with sp.
void TpReduce(Builder& b, const Dims& d, const std::string& name, Phase phase,
              std::vector<int> extra_deps) {
  if (!d.tp) return;
  const CollectiveOp op = d.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
  b.Add(b.Collective(std::string("tp.") + (d.sp ? "reduce-scatter." : "all-reduce.") + name, op,
                     "tp", d.e * d.tok * d.d, /*blocking=*/true, phase),
        std::move(extra_deps));
}

// With sp, the [tokens, D] activation is gathered before a column-parallel matmul (forward) or
// a row-parallel input-gradient (backward).
void SpGather(Builder& b, const Dims& d, const std::string& name, Phase phase) {
  if (!d.sp) return;
  b.Add(b.Collective("tp.all-gather." + name, CollectiveOp::kAllGather, "tp", d.e * d.tok * d.d,
                     /*blocking=*/true, phase));
}

Op Norm(const Builder& b, const std::string& name, const Dims& d) {
  Op op = b.Elementwise(name, OpKind::kNorm, d.sp_tok * d.d, d.norm_flops, 1, 1, d.e);
  op.hbm_read_bytes += d.e * d.norm_params;
  op.saved_bytes = d.e * d.sp_tok * d.d;  // The input (Korthikanti: 2sbh per LayerNorm).
  op.kernel = d.norm_kernel;
  return op;
}

Op HiddenDropout(const Builder& b, const std::string& name, const Dims& d) {
  Op drop = b.Elementwise(name, OpKind::kElementwise, d.sp_tok * d.d, kDropoutFlops, 1, 1, d.e);
  drop.kernel = kDropoutKernel;
  drop.hbm_write_bytes += kMaskBytes * d.sp_tok * d.d;
  drop.saved_bytes = kMaskBytes * d.sp_tok * d.d;
  return drop;
}

double GradWireBytes(const Layout& layout, const OpOptions& options) {
  // Mixed()'s fp32, Megatron's fp32 main grads, or the working precision (precision.h).
  return options.precision.GradWireBytes(layout.microbatch_count());
}

// Gradient reductions of `params` parameters (per tp shard) after the weight-gradient ops `dws`,
// over `groups`.
// With a gradient buffer in the recipe (precision.h grad_bytes > 0) and no fsdp, every
// microbatch's weight gradients are first accumulated into it, and the reductions send the buffer:
// fused, the weight-gradient matmuls read and write the buffer in their epilogue instead of
// writing a gradient (Megatron-LM gradient_accumulation_fusion); otherwise one pass reads the
// gradients in the working precision and the buffer and writes the buffer (Megatron-LM 2021
// DistributedDataParallel's hook `param.main_grad.add_(param.grad.data)`,
// megatron/model/distributed.py), which also covers any weight gradient that is not a matmul's.
// With fsdp the reduced shard is what accumulates (not modelled), but under
// OpOptions::fsdp_sync_last_microbatch the unsharded gradients accumulate, by the same pass
// (FSDP2's accumulate_unsharded_grad_if_needed; its first microbatch casts instead of adding,
// which reads 4 bytes a parameter fewer than the pass counts).
void AppendGradientReduction(Builder& b, const Layout& layout, double params, std::vector<int> dws,
                             const OpOptions& options, const std::string& what,
                             const DataGroups& groups) {
  const double bytes = GradWireBytes(layout, options) * params;
  const double buffer = options.precision.GradBufferBytes(layout.microbatch_count());
  // One microbatch whose gradients stay in the working precision accumulates nothing: the
  // weight-gradient ops write the gradients the reductions send.
  bool accumulates =
      layout.microbatch_count() > 1 || options.precision.grad_bytes > options.precision.param_bytes;
  // Bytes an element of the gradient added into the buffer.
  double incoming = options.precision.activation_bytes;
  if (options.precision.casts_weights) {
    // Amp(): autograd casts each 16-bit weight gradient a matmul writes to fp32 (an embedding's
    // lookup runs in fp32: nothing to cast) and, in a step of several microbatches, adds that
    // into .grad (precision.h); with one, the cast is .grad.
    double cast_elements = 0;
    for (int dw : dws) {
      const Op& op = b.ops()[dw];
      if (op.kind == OpKind::kMatmul) {
        cast_elements += D(op.shape.m) * D(op.shape.n) * D(op.shape.batch);
      }
    }
    if (cast_elements > 0) {
      Op cast = b.Base("grad.cast." + what, OpKind::kElementwise, Phase::kBackwardWeight);
      cast.hbm_read_bytes = incoming * cast_elements;
      cast.hbm_write_bytes = buffer * cast_elements;
      cast.deps = dws;
      dws = {b.AddSide(cast)};
    }
    incoming = buffer;
    accumulates = layout.microbatch_count() > 1;
  }
  const bool unsharded = groups.fsdp_size == 1 || options.fsdp_sync_last_microbatch;
  if (buffer > 0 && unsharded && accumulates) {
    double unfused = params;
    if (options.precision.fused_grad_accumulation) {
      for (int dw : dws) {
        Op& op = b.mutable_ops()[dw];
        if (op.kind != OpKind::kMatmul) continue;
        const double elements = D(op.shape.m) * D(op.shape.n) * D(op.shape.batch);
        op.hbm_write_bytes = buffer * elements;
        op.hbm_read_bytes += buffer * elements;
        unfused -= elements;
      }
    }
    if (unfused > 0.5) {
      Op add = b.Base("grad.accumulate." + what, OpKind::kElementwise, Phase::kBackwardWeight);
      add.flops = kAddFlops * unfused;
      add.hbm_read_bytes = (incoming + buffer) * unfused;
      add.hbm_write_bytes = buffer * unfused;
      add.deps = dws;
      dws = {b.AddSide(add)};
    }
  }
  int after = -1;
  if (groups.fsdp_size > 1) {
    Op rs = b.Collective(groups.fsdp + ".reduce-scatter." + what, CollectiveOp::kReduceScatter,
                         groups.fsdp, bytes, /*blocking=*/false, Phase::kBackwardWeight);
    rs.deps = dws;
    after = b.AddSide(rs);
  }
  if (groups.dp_size > 1) {
    // The distributed optimizer keeps only this rank's shard of the reduced gradients.
    const bool shard = options.distributed_optimizer;
    Op reduce =
        b.Collective(groups.dp + (shard ? ".reduce-scatter." : ".all-reduce.") + what,
                     shard ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, groups.dp,
                     bytes / groups.fsdp_size, /*blocking=*/false, Phase::kBackwardWeight);
    reduce.deps = after >= 0 ? std::vector<int>{after} : dws;
    b.AddSide(reduce);
  }
}

// The all-gathers that bring parameters (per tp shard) to the chip before their use: `params`
// over groups.fsdp (every forward and backward), and, in the forward with the distributed
// optimizer, first `updated` over groups.dp -- the parameters whose gradients the op list's
// reduction reduce-scatters, so that what is gathered is what was updated (kept by the schedule for
// the first microbatch only). Returns the last gather (-1: none).
void AppendWeightCast(Builder& b, double params, const OpOptions& options, const std::string& what,
                      Phase phase) {
  Op cast = b.Base("weights.cast." + what, OpKind::kElementwise, phase);
  cast.hbm_read_bytes = options.precision.master_bytes * params;
  cast.hbm_write_bytes = options.precision.param_bytes * params;
  b.Add(cast);
}

int WeightGather(Builder& b, double params, double updated, const OpOptions& options,
                 const std::string& what, Phase phase, const DataGroups& groups) {
  if (options.precision.casts_weights && phase == Phase::kForward && what != "embedding") {
    AppendWeightCast(b, params, options, what, phase);
  }
  // The transformer layers' weights (not the embedding's or the head's) in fp8 where asked: over
  // fsdp and over the distributed optimizer's dp alike (torchao's fp8 all-gather, Megatron-Core's
  // fp8_param_gather).
  constexpr double kFp8Bytes = 1;
  const bool fp8 = options.fp8_all_gather && (what == "layer" || what == "experts");
  // Under autocast (Amp) the parameters themselves are fp32: what ZeroRedundancyOptimizer sends
  // after its step.
  const double gathered_bytes = fp8                               ? kFp8Bytes
                                : options.precision.casts_weights ? options.precision.master_bytes
                                                                  : options.precision.param_bytes;
  int gather = -1;
  if (options.distributed_optimizer && groups.dp_size > 1 && phase == Phase::kForward &&
      updated > 0) {
    gather = b.AddSide(b.Collective(groups.dp + ".all-gather." + what, CollectiveOp::kAllGather,
                                    groups.dp, gathered_bytes * updated / groups.fsdp_size,
                                    /*blocking=*/false, phase));
  }
  // Without resharding, the backward (and its recomputation) uses the forward's gathered weights.
  if (groups.fsdp_size <= 1 || (phase != Phase::kForward && !options.fsdp_reshard_after_forward)) {
    return gather;
  }
  Op fsdp = b.Collective(groups.fsdp + ".all-gather." + what, CollectiveOp::kAllGather, groups.fsdp,
                         gathered_bytes * params, /*blocking=*/false, phase);
  if (gather >= 0) fsdp.deps = {gather};
  return b.AddSide(fsdp);
}

Op GroupedMatmul(const Builder& b, std::string name, double rows, double k, double n, double groups,
                 double e, Phase phase) {
  Op op = b.Matmul(std::move(name), rows, k, n, e, phase);
  if (groups <= 1) return op;
  // Each group's rows, at least one: a group with fewer rows than one still runs a kernel.
  const int64_t m = std::max<int64_t>(1, std::llround(rows / groups));
  op.shape = {m, static_cast<int64_t>(k), static_cast<int64_t>(n), static_cast<int64_t>(groups)};
  op.hbm_read_bytes = e * (rows * k + groups * k * n);
  return op;
}

MlpPart DenseMlp(const ModelSpec& model, const Dims& d) {
  return {"mlp", d.tok, d.kept_input_tok, d.f, 1, model.gated_mlp};
}

void AppendMlpCore(Builder& b, const Dims& d, const MlpPart& part, Phase phase, int gather) {
  const std::string& p = part.prefix;
  const double rows = part.rows, f = part.f, g = part.groups;
  const int input = b.last();
  if (part.gated) {
    Op gate = GroupedMatmul(b, p + ".gate", rows, d.d, f, g, d.e, phase);
    gate.saved_bytes = d.e * part.saved_rows * d.d;  // The shared input, kept once.
    const int gi = b.Add(gate, {gather});
    b.set_last(input);
    const int ui = b.Add(GroupedMatmul(b, p + ".up", rows, d.d, f, g, d.e, phase), {gather});
    Op act = b.Elementwise(p + ".act", OpKind::kElementwise, rows * f, kSiluGateFlops, 2, 1, d.e);
    act.saved_bytes = 2 * d.e * rows * f;  // Gate and up outputs.
    act.deps = {gi, ui};
    b.Add(act);
  } else {
    Op up = GroupedMatmul(b, p + ".up", rows, d.d, f, g, d.e, phase);
    up.saved_bytes = d.e * part.saved_rows * d.d;
    b.Add(up, {gather});
    Op act = b.Elementwise(p + ".act", OpKind::kElementwise, rows * f, kGeluFlops, 1, 1, d.e);
    act.saved_bytes = d.e * rows * f;  // GeLU input (Korthikanti: 8sbh at F = 4h).
    act.kernel = kGeluKernel;
    b.Add(act);
  }
  Op down = GroupedMatmul(b, p + ".down", rows, f, d.d, g, d.e, phase);
  down.saved_bytes = d.e * rows * f;  // Its input: the activation's output.
  b.Add(down);
}

void AppendMlpCoreBackward(Builder& b, const OpList& fwd, const Dims& d, const MlpPart& part,
                           std::vector<int>* dws, bool tp_reduced) {
  const std::string& p = part.prefix;
  MatmulBackward(b, Find(fwd, p + ".down"), d, dws);
  b.Add(ElementwiseBackward(b, Find(fwd, p + ".act")));
  std::vector<std::string> gemms;
  if (part.gated) gemms.push_back(p + ".gate");
  gemms.push_back(p + ".up");
  AppendColumnParallelBackward(b, fwd, d, gemms, p, part.rows, dws, tp_reduced);
}

void AppendInputGradientSum(Builder& b, const Dims& d, const std::string& what, double rows,
                            const std::vector<int>& dxs) {
  const double terms = D(static_cast<int64_t>(dxs.size()));
  Op sum =
      b.Elementwise(what + ".sum.dx", OpKind::kElementwise, rows * d.d, kAddFlops, terms, 1, d.e);
  sum.phase = Phase::kBackwardInput;
  sum.deps = dxs;
  b.Add(sum);
}

void AppendColumnParallelBackward(Builder& b, const OpList& fwd, const Dims& d,
                                  const std::vector<std::string>& gemms, const std::string& what,
                                  double rows, std::vector<int>* dws, bool tp_reduced) {
  // Without a tp reduction of its own the input is not gathered over tp: the book's order.
  const TpBackward order = tp_reduced ? d.tp_backward : TpBackward{};
  const int dy = b.last();
  int gather = -1;
  if (d.sp && order.regather_sp_input) {
    Op regather = b.Collective("tp.all-gather." + what + ".dw", CollectiveOp::kAllGather, "tp",
                               d.e * d.tok * d.d, /*blocking=*/false, Phase::kBackwardWeight);
    if (dy >= 0) regather.deps = {dy};
    gather = b.AddSide(std::move(regather));
  }
  std::vector<int> dxs, own_dws;
  auto weight_gradient = [&](const std::string& gemm) {
    const int dw = MatmulWeightGradient(b, Find(fwd, gemm), d, dy, dws);
    if (gather >= 0) b.mutable_ops()[dw].deps.push_back(gather);
    own_dws.push_back(dw);
  };
  for (const std::string& gemm : gemms) {
    b.set_last(dy);
    const int dx = MatmulInputGradient(b, Find(fwd, gemm), d);
    if (order.fused_input_gradient && !dxs.empty()) {
      // One GEMM over the matmuls' stacked weights: this part accumulates into the input
      // gradient the ones before it wrote (a GEMM epilogue reading C), with no separate sum.
      Op& op = b.mutable_ops()[dx];
      op.deps.push_back(dxs.back());
      op.hbm_read_bytes += d.e * rows * d.d;
      dxs = {dx};
    } else {
      dxs.push_back(dx);
    }
    if (!order.input_gradients_first) weight_gradient(gemm);
  }
  if (dxs.size() > 1) AppendInputGradientSum(b, d, what, rows, dxs);
  if (order.input_gradients_first) {
    for (const std::string& gemm : gemms) weight_gradient(gemm);
  }
  if (!tp_reduced) return;
  TpReduce(b, d, what + ".dx", Phase::kBackwardInput,
           order.reduction_after_weight_gradients ? own_dws : std::vector<int>{});
}

namespace {

// The rows of a forward matmul: grouped, m x groups, from the FLOPs (the groups' rows need not
// be equal).
double MatmulRows(const Op& fwd) {
  const double groups = D(fwd.shape.batch);
  return groups > 1 ? fwd.flops / (2 * D(fwd.shape.k) * D(fwd.shape.n)) : D(fwd.shape.m);
}

}  // namespace

int MatmulInputGradient(Builder& b, const Op& fwd, const Dims& d) {
  return b.Add(GroupedMatmul(b, fwd.name + ".dx", MatmulRows(fwd), D(fwd.shape.n), D(fwd.shape.k),
                             D(fwd.shape.batch), d.e, Phase::kBackwardInput));
}

// Input- and weight-gradient ops of a forward matmul; returns the dw index.
int MatmulBackward(Builder& b, const Op& fwd, const Dims& d, std::vector<int>* dws, bool with_dx) {
  const int dy = b.last();
  if (with_dx) MatmulInputGradient(b, fwd, d);
  return MatmulWeightGradient(b, fwd, d, dy, dws);
}

int MatmulWeightGradient(Builder& b, const Op& fwd, const Dims& d, int dy, std::vector<int>* dws) {
  const double groups = D(fwd.shape.batch);
  const double k = D(fwd.shape.k), n = D(fwd.shape.n);
  const double rows = MatmulRows(fwd);
  Op dw = b.Matmul(fwd.name + ".dw", k, rows, n, d.e, Phase::kBackwardWeight);
  if (groups > 1) {
    // One [k, n] weight gradient per group, each over that group's rows.
    dw.shape = {fwd.shape.k, fwd.shape.m, fwd.shape.n, fwd.shape.batch};
    dw.hbm_write_bytes = d.e * groups * k * n;
    dw.output_bytes = dw.hbm_write_bytes;
  }
  if (dy >= 0) dw.deps = {dy};
  const int index = b.AddSide(dw);
  dws->push_back(index);
  return index;
}

// Backward of an elementwise/norm op: reads its saved input(s) and the output gradient, writes
// the input gradient; about twice the forward FLOPs. A norm's backward is two kernels that each
// read the input and the output gradient: the input gradient, and the reduction over tokens for
// the gain (and bias) gradients (PyTorch layer_norm_backward: layer_norm_grad_input_kernel and
// GammaBetaBackward; apex FusedLayerNorm: cuComputeGradInput and cuComputePartGradGammaBeta).
Op ElementwiseBackward(const Builder& b, const Op& fwd) {
  Op op = b.Base(fwd.name + ".dx", fwd.kind, Phase::kBackwardInput);
  op.flops = 2 * fwd.flops;
  op.model_flops = 0;
  op.hbm_read_bytes = fwd.hbm_read_bytes + fwd.hbm_write_bytes;
  op.hbm_write_bytes = fwd.hbm_read_bytes;
  op.elements = fwd.elements;
  op.kernel = BackwardKernel(fwd.kernel);
  if (fwd.kind == OpKind::kNorm) op.hbm_read_bytes += 2 * fwd.hbm_write_bytes;
  if (fwd.kernel == kDropoutKernel) {
    // dX = dY x mask / keep: dY and the saved mask in, dX out (PyTorch's masked_scale).
    op.hbm_read_bytes = fwd.output_bytes + fwd.saved_bytes;
    op.hbm_write_bytes = fwd.output_bytes;
  }
  return op;
}

const Op& Find(const OpList& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  PODSIM_CHECK(false) << "no forward op " << name;
  return ops.front();
}

}  // namespace podsim::workloads::layer_build
