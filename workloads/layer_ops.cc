#include "workloads/layer_ops.h"

#include <algorithm>
#include <map>

namespace podsim::workloads {
namespace {

using collectives::CollectiveOp;

// FLOPs per element of the elementwise ops (layer_ops.h header comment gives the counts).
constexpr double kRmsNormFlops = 4;
constexpr double kLayerNormFlops = 7;
constexpr double kAddFlops = 1;
constexpr double kDropoutFlops = 2;
constexpr double kRotaryFlops = 3;
constexpr double kSiluGateFlops = 5;
constexpr double kGeluFlops = 8;
constexpr double kSoftmaxFlops = 5;
constexpr double kAdamFlopsPerParam = 14;
// Softmax statistics a flash kernel keeps per query row and head (log-sum-exp), fp32.
constexpr double kFlashStatBytes = 4;
// Dropout masks are one byte per element (Korthikanti et al. 2022, sec. 4.1).
constexpr double kMaskBytes = 1;
// Logits are upcast to fp32 for the cross-entropy (Korthikanti et al. 2022, sec. 4.3: 4sbv/t).
constexpr double kLogitBytes = 4;

double D(int64_t v) { return static_cast<double>(v); }

// Common sizes of one layer on one chip.
struct Dims {
  double e;       // Activation bytes per element.
  double tok;     // Tokens through the tp-sharded ops.
  double sp_tok;  // Tokens through norms / residuals (tok / tp with sp).
  double seqs;    // Sequences per microbatch (b).
  double T;       // Sequence length.
  double d;       // d_model.
  double q;       // Query width on this chip: heads/tp * head_dim.
  double kv;      // Key (or value) width on this chip.
  double f;       // ffn / tp.
  double heads;   // Heads on this chip.
  double norm_flops;
  double norm_params;
  bool tp;  // tp > 1.
  bool sp;  // Sequence parallel collectives (sp and tp > 1).
};

Dims DimsOf(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
            const OpOptions& options) {
  Dims d;
  d.e = options.precision.activation_bytes;
  d.tok = D(shape.tokens);
  d.sp_tok = D(shape.sp_tokens);
  d.seqs = D(shape.microbatch_sequences);
  d.T = D(shape.seq);
  d.d = D(model.d_model);
  d.q = D(shape.heads * model.head_dim);
  d.kv = D(shape.kv_heads * model.head_dim);
  d.f = D(shape.ffn);
  d.heads = D(shape.heads);
  const bool layer_norm = model.norm == NormKind::kLayer;
  d.norm_flops = layer_norm ? kLayerNormFlops : kRmsNormFlops;
  d.norm_params = layer_norm ? 2 * d.d : d.d;
  d.tp = layout.tp > 1;
  d.sp = layout.sp && layout.tp > 1;
  return d;
}

// Builds an OpList; `last` is the op the next op on the activation path depends on.
class Builder {
 public:
  explicit Builder(Phase phase) : phase_(phase) {}

  int Add(Op op, std::vector<int> extra_deps = {}) {
    if (op.deps.empty() && last_ >= 0) op.deps.push_back(last_);
    for (int dep : extra_deps) {
      if (dep >= 0) op.deps.push_back(dep);
    }
    ops_.push_back(std::move(op));
    last_ = static_cast<int>(ops_.size()) - 1;
    return last_;
  }

  // Adds an op that does not advance the activation path (weight gradients, prefetches,
  // gradient reductions); its deps are given explicitly.
  int AddSide(Op op) {
    ops_.push_back(std::move(op));
    return static_cast<int>(ops_.size()) - 1;
  }

  Op Base(std::string name, OpKind kind, Phase phase) const {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.phase = phase;
    return op;
  }
  Op Base(std::string name, OpKind kind) const { return Base(std::move(name), kind, phase_); }

  // Y[m,n] = X[m,k] W[k,n].
  Op Matmul(std::string name, double m, double k, double n, double e, Phase phase) const {
    Op op = Base(std::move(name), OpKind::kMatmul, phase);
    op.shape = {static_cast<int64_t>(m), static_cast<int64_t>(k), static_cast<int64_t>(n), 1};
    op.flops = 2 * m * k * n;
    op.hfu_flops = op.flops;
    op.model_flops = phase == Phase::kRecompute ? 0 : op.flops;
    op.hbm_read_bytes = e * (m * k + k * n);
    op.hbm_write_bytes = e * m * n;
    op.output_bytes = e * m * n;
    return op;
  }

  Op Elementwise(std::string name, OpKind kind, double elements, double flops_per_element,
                 double reads, double writes, double e) const {
    Op op = Base(std::move(name), kind);
    op.flops = elements * flops_per_element;
    op.model_flops = 0;  // Model FLOPs count matmuls and attention only (PaLM, Megatron).
    op.hbm_read_bytes = e * reads * elements;
    op.hbm_write_bytes = e * writes * elements;
    op.output_bytes = e * elements;
    return op;
  }

  Op Collective(std::string name, CollectiveOp collective, std::string axis, double bytes,
                bool blocking, Phase phase) const {
    Op op = Base(std::move(name), OpKind::kCollective, phase);
    op.collective = collective;
    op.axis = std::move(axis);
    op.comm_bytes = bytes;
    op.blocking = blocking;
    return op;
  }

  int last() const { return last_; }
  void set_last(int last) { last_ = last; }
  OpList Take() { return std::move(ops_); }
  const OpList& ops() const { return ops_; }
  OpList& mutable_ops() { return ops_; }

 private:
  Phase phase_;
  OpList ops_;
  int last_ = -1;
};

// Per-pair attention FLOPs (one multiply-add pass over H for one head and one pair, x2 FLOPs).
double Pairs(const Dims& d, bool causal) {
  return causal ? d.seqs * d.T * (d.T + 1) / 2 : d.seqs * d.T * d.T;
}

// TP activation collective after a row-parallel matmul (forward) or a column-parallel
// input-gradient (backward): all-reduce, or reduce-scatter with sp.
void TpReduce(Builder& b, const Dims& d, const std::string& name, Phase phase) {
  if (!d.tp) return;
  const CollectiveOp op = d.sp ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
  b.Add(b.Collective(std::string("tp.") + (d.sp ? "reduce-scatter." : "all-reduce.") + name, op,
                     "tp", d.e * d.tok * d.d, /*blocking=*/true, phase));
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
  return op;
}

// Batched matmul of attention on one chip: `batch` = sequences x heads products of [m,k] x [k,n].
Op AttentionMatmul(const Builder& b, std::string name, const Dims& d, double m, double k, double n,
                   Phase phase) {
  Op op = b.Base(std::move(name), OpKind::kMatmul, phase);
  const double batch = d.seqs * d.heads;
  op.shape = {static_cast<int64_t>(m), static_cast<int64_t>(k), static_cast<int64_t>(n),
              static_cast<int64_t>(batch)};
  op.flops = 2 * batch * m * k * n;
  op.hfu_flops = op.flops;
  return op;
}

// The shape a flash kernel carries (op.h): queries and keys per sequence, head dimension, and
// the independent (sequence, head) problems.
MatmulShape FlashShape(const Dims& d) {
  return {static_cast<int64_t>(d.T), static_cast<int64_t>(d.q / d.heads), static_cast<int64_t>(d.T),
          static_cast<int64_t>(d.seqs * d.heads)};
}

// The materialized attention core as the kernels Megatron-LM runs it (CoreAttention in
// megatron/model/transformer.py, as measured by Korthikanti et al. 2022): a batched GEMM for the
// scores QK^T (baddbmm), the fused scale-mask-softmax kernel, dropout on the probabilities, and a
// batched GEMM for PV (bmm). Separate kernels, so their times add: the T x T tensors are written
// and read back through HBM between them. All T^2 pairs are computed (the mask is applied to the
// full scores). Activations kept (Korthikanti Table 2, 5as^2b with dropout): the softmax output
// (2 bytes per element), the dropout mask (1) and the dropped probabilities (2); Q, K and V
// (their sbh terms) are counted on the scores op.
void AppendMaterializedCore(Builder& b, const ModelSpec& model, const Dims& d, Phase phase,
                            double model_pairs) {
  const double probs = d.seqs * d.heads * d.T * d.T;  // Elements of one T x T tensor set.
  const double model_flops = phase == Phase::kRecompute ? 0 : 2 * d.q * model_pairs;
  Op scores = AttentionMatmul(b, "attn.core.scores", d, d.T, d.q / d.heads, d.T, phase);
  scores.model_flops = model_flops;
  scores.hbm_read_bytes = d.e * d.tok * (d.q + d.kv);  // Q and K.
  scores.hbm_write_bytes = d.e * probs;
  scores.output_bytes = d.e * probs;
  scores.saved_bytes = d.e * d.tok * (d.q + 2 * d.kv);  // Q, K, V.
  b.Add(scores);
  Op softmax =
      b.Elementwise("attn.core.softmax", OpKind::kElementwise, probs, kSoftmaxFlops, 1, 1, d.e);
  softmax.phase = phase;
  softmax.quadratic_saved_bytes = d.e * probs;
  b.Add(softmax);
  if (model.dropout) {
    Op drop =
        b.Elementwise("attn.core.dropout", OpKind::kElementwise, probs, kDropoutFlops, 1, 1, d.e);
    drop.phase = phase;
    drop.hbm_write_bytes += kMaskBytes * probs;
    drop.quadratic_saved_bytes = (kMaskBytes + d.e) * probs;
    b.Add(drop);
  }
  Op pv = AttentionMatmul(b, "attn.core", d, d.T, d.T, d.q / d.heads, phase);
  pv.model_flops = model_flops;
  pv.hbm_read_bytes = d.e * probs + d.e * d.tok * d.kv;  // Probabilities and V.
  pv.hbm_write_bytes = d.e * d.tok * d.q;
  pv.output_bytes = d.e * d.tok * d.q;
  b.Add(pv);
}

// Forward ops of one layer, phase kForward or kRecompute. `fsdp_gather` is the index of the
// weight all-gather the first matmul waits for (-1: none).
void AppendLayerForward(Builder& b, const ModelSpec& model, const Dims& d, const OpOptions& options,
                        Phase phase, int fsdp_gather) {
  const bool materialized = options.attention == AttentionKernel::kMaterialized;

  b.Add(Norm(b, "attn.norm", d));
  SpGather(b, d, "attn", phase);
  Op qkv = b.Matmul("attn.qkv", d.tok, d.d, d.q + 2 * d.kv, d.e, phase);
  qkv.saved_bytes = d.e * d.sp_tok * d.d;  // Its input, sharded again under sp.
  b.Add(qkv, {fsdp_gather});
  if (model.learned_positions == 0) {
    b.Add(b.Elementwise("attn.rotary", OpKind::kElementwise, d.tok * (d.q + d.kv), kRotaryFlops, 1,
                        1, d.e));
  }
  // kCausal counts the pairs the mask leaves: all of them without one.
  const double model_pairs =
      Pairs(d, options.causal && options.model_flops_count == AttentionCount::kCausal);
  if (materialized) {
    AppendMaterializedCore(b, model, d, phase, model_pairs);
  } else {
    Op core = b.Base("attn.core", OpKind::kAttention);
    const double qkv_bytes = d.e * d.tok * (d.q + 2 * d.kv);
    core.hbm_read_bytes = qkv_bytes;
    core.hbm_write_bytes = d.e * d.tok * d.q;
    core.output_bytes = d.e * d.tok * d.q;
    core.saved_bytes = qkv_bytes;  // Q, K, V (Korthikanti: 4sbh + 2sbh for MHA).
    core.shape = FlashShape(d);
    core.causal = options.causal;
    core.model_flops = phase == Phase::kRecompute ? 0 : 4 * d.q * model_pairs;
    core.flops = 4 * d.q * Pairs(d, options.causal);
    core.hfu_flops = core.flops;
    core.hbm_write_bytes += kFlashStatBytes * d.seqs * d.heads * d.T;
    core.saved_bytes += kFlashStatBytes * d.seqs * d.heads * d.T;
    b.Add(core);
  }
  Op out = b.Matmul("attn.out", d.tok, d.q, d.d, d.e, phase);
  out.saved_bytes = d.e * d.tok * d.q;
  b.Add(out);
  TpReduce(b, d, "attn", phase);
  if (model.dropout) {
    Op drop = b.Elementwise("attn.dropout", OpKind::kElementwise, d.sp_tok * d.d, kDropoutFlops, 1,
                            1, d.e);
    drop.hbm_write_bytes += kMaskBytes * d.sp_tok * d.d;
    drop.saved_bytes = kMaskBytes * d.sp_tok * d.d;
    b.Add(drop);
  }
  b.Add(b.Elementwise("attn.residual", OpKind::kElementwise, d.sp_tok * d.d, kAddFlops, 2, 1, d.e));

  b.Add(Norm(b, "mlp.norm", d));
  SpGather(b, d, "mlp", phase);
  const int mlp_input = b.last();
  if (model.gated_mlp) {
    Op gate = b.Matmul("mlp.gate", d.tok, d.d, d.f, d.e, phase);
    gate.saved_bytes = d.e * d.sp_tok * d.d;  // The shared input, kept once.
    const int g = b.Add(gate);
    b.set_last(mlp_input);
    const int u = b.Add(b.Matmul("mlp.up", d.tok, d.d, d.f, d.e, phase));
    Op act = b.Elementwise("mlp.act", OpKind::kElementwise, d.tok * d.f, kSiluGateFlops, 2, 1, d.e);
    act.saved_bytes = 2 * d.e * d.tok * d.f;  // Gate and up outputs.
    act.deps = {g, u};
    b.Add(act);
  } else {
    Op up = b.Matmul("mlp.up", d.tok, d.d, d.f, d.e, phase);
    up.saved_bytes = d.e * d.sp_tok * d.d;
    b.Add(up);
    Op act = b.Elementwise("mlp.act", OpKind::kElementwise, d.tok * d.f, kGeluFlops, 1, 1, d.e);
    act.saved_bytes = d.e * d.tok * d.f;  // GeLU input (Korthikanti: 8sbh at F = 4h).
    b.Add(act);
  }
  Op down = b.Matmul("mlp.down", d.tok, d.f, d.d, d.e, phase);
  down.saved_bytes = d.e * d.tok * d.f;  // Its input: the activation's output.
  b.Add(down);
  TpReduce(b, d, "mlp", phase);
  if (model.dropout) {
    Op drop = b.Elementwise("mlp.dropout", OpKind::kElementwise, d.sp_tok * d.d, kDropoutFlops, 1,
                            1, d.e);
    drop.hbm_write_bytes += kMaskBytes * d.sp_tok * d.d;
    drop.saved_bytes = kMaskBytes * d.sp_tok * d.d;
    b.Add(drop);
  }
  b.Add(b.Elementwise("mlp.residual", OpKind::kElementwise, d.sp_tok * d.d, kAddFlops, 2, 1, d.e));
}

double GradWireBytes(const Layout& layout, const OpOptions& options) {
  // Gradients travel in their accumulation precision (fp32 main grads in Megatron, the fp32
  // buffer of Mixed() under accumulation), or as the working precision when the recipe keeps
  // none.
  const double buffer = options.precision.GradBufferBytes(layout.microbatch_count());
  return buffer > 0 ? buffer : options.precision.param_bytes;
}

// Gradient reductions of `params` parameters (per tp shard) after the weight-gradient ops `dws`.
// With a gradient buffer in the recipe (precision.h grad_bytes > 0) and no fsdp, every
// microbatch's weight gradients are first accumulated into it, and the reductions send the buffer:
// fused, the weight-gradient matmuls read and write the buffer in their epilogue instead of
// writing a gradient (Megatron-LM gradient_accumulation_fusion); otherwise one pass reads the
// gradients in the working precision and the buffer and writes the buffer (Megatron-LM 2021
// DistributedDataParallel's hook `param.main_grad.add_(param.grad.data)`,
// megatron/model/distributed.py), which also covers any weight gradient that is not a matmul's.
// (With fsdp the reduced shard is what accumulates; not modelled.)
void AppendGradientReduction(Builder& b, const Layout& layout, double params, std::vector<int> dws,
                             const OpOptions& options, const std::string& what) {
  const double bytes = GradWireBytes(layout, options) * params;
  const double buffer = options.precision.GradBufferBytes(layout.microbatch_count());
  // One microbatch whose gradients stay in the working precision accumulates nothing: the
  // weight-gradient ops write the gradients the reductions send.
  const bool accumulates =
      layout.microbatch_count() > 1 || options.precision.grad_bytes > options.precision.param_bytes;
  if (buffer > 0 && layout.fsdp == 1 && accumulates) {
    double unfused = params;
    if (options.precision.fused_grad_accumulation) {
      for (int dw : dws) {
        Op& op = b.mutable_ops()[dw];
        if (op.kind != OpKind::kMatmul) continue;
        const double elements = D(op.shape.m) * D(op.shape.n);
        op.hbm_write_bytes = buffer * elements;
        op.hbm_read_bytes += buffer * elements;
        unfused -= elements;
      }
    }
    if (unfused > 0.5) {
      Op add = b.Base("grad.accumulate." + what, OpKind::kElementwise, Phase::kBackwardWeight);
      add.flops = kAddFlops * unfused;
      add.hbm_read_bytes = (options.precision.activation_bytes + buffer) * unfused;
      add.hbm_write_bytes = buffer * unfused;
      add.deps = dws;
      dws = {b.AddSide(add)};
    }
  }
  int after = -1;
  if (layout.fsdp > 1) {
    Op rs = b.Collective("fsdp.reduce-scatter." + what, CollectiveOp::kReduceScatter, "fsdp", bytes,
                         /*blocking=*/false, Phase::kBackwardWeight);
    rs.deps = dws;
    after = b.AddSide(rs);
  }
  if (layout.dp > 1) {
    // The distributed optimizer keeps only this rank's shard of the reduced gradients.
    const bool shard = options.distributed_optimizer;
    Op reduce = b.Collective(std::string(shard ? "dp.reduce-scatter." : "dp.all-reduce.") + what,
                             shard ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce, "dp",
                             bytes / layout.fsdp, /*blocking=*/false, Phase::kBackwardWeight);
    reduce.deps = after >= 0 ? std::vector<int>{after} : dws;
    b.AddSide(reduce);
  }
}

// The all-gathers that bring parameters (per tp shard) to the chip before their use: `params`
// over fsdp (every forward and backward), and, in the forward with the distributed optimizer,
// first `updated` over dp -- the parameters whose gradients the op list's reduction
// reduce-scatters, so that what is gathered is what was updated (kept by the schedule for the
// first microbatch only). Returns the last gather (-1: none).
int WeightGather(Builder& b, const Layout& layout, double params, double updated,
                 const OpOptions& options, const std::string& what, Phase phase) {
  int gather = -1;
  if (options.distributed_optimizer && layout.dp > 1 && phase == Phase::kForward && updated > 0) {
    gather = b.AddSide(b.Collective("dp.all-gather." + what, CollectiveOp::kAllGather, "dp",
                                    options.precision.param_bytes * updated / layout.fsdp,
                                    /*blocking=*/false, phase));
  }
  if (layout.fsdp <= 1) return gather;
  Op fsdp = b.Collective("fsdp.all-gather." + what, CollectiveOp::kAllGather, "fsdp",
                         options.precision.param_bytes * params, /*blocking=*/false, phase);
  if (gather >= 0) fsdp.deps = {gather};
  return b.AddSide(fsdp);
}

// Input- and weight-gradient ops of a forward matmul; returns the dw index.
int MatmulBackward(Builder& b, const Op& fwd, const Dims& d, std::vector<int>* dws,
                   bool with_dx = true) {
  const double m = D(fwd.shape.m), k = D(fwd.shape.k), n = D(fwd.shape.n);
  const int dy = b.last();
  if (with_dx) b.Add(b.Matmul(fwd.name + ".dx", m, n, k, d.e, Phase::kBackwardInput));
  Op dw = b.Matmul(fwd.name + ".dw", k, m, n, d.e, Phase::kBackwardWeight);
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
  if (fwd.kind == OpKind::kNorm) op.hbm_read_bytes += 2 * fwd.hbm_write_bytes;
  return op;
}

const Op& Find(const OpList& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  PODSIM_CHECK(false) << "no forward op " << name;
  return ops.front();
}

// Backward of AppendMaterializedCore, kernel by kernel in reverse (Megatron-LM's autograd of
// CoreAttention): PV's two gradients dP = dO V^T and dV = P^T dO, the dropout and softmax
// backward kernels on the T x T tensors (reading the saved mask and softmax output), and the
// scores' dQ = dS K and dK = dS^T Q. Model FLOPs twice the forward's.
void AppendMaterializedCoreBackward(Builder& b, const OpList& fwd, const Dims& d) {
  const double probs = d.seqs * d.heads * d.T * d.T;
  const double h = d.q / d.heads;
  const double model_flops = Find(fwd, "attn.core").model_flops;
  Op dp = AttentionMatmul(b, "attn.core.dx", d, d.T, h, d.T, Phase::kBackwardInput);
  dp.model_flops = model_flops;
  dp.hbm_read_bytes = d.e * d.tok * (d.q + d.kv);  // dO, V.
  dp.hbm_write_bytes = d.e * probs;
  b.Add(dp);
  Op dv = AttentionMatmul(b, "attn.core.dv", d, d.T, d.T, h, Phase::kBackwardInput);
  dv.model_flops = model_flops;
  dv.hbm_read_bytes = d.e * probs + d.e * d.tok * d.q;  // P (dropped), dO.
  dv.hbm_write_bytes = d.e * d.tok * d.kv;
  b.Add(dv);
  for (const char* name : {"attn.core.dropout", "attn.core.softmax"}) {
    auto it = std::find_if(fwd.begin(), fwd.end(), [&](const Op& op) { return op.name == name; });
    if (it == fwd.end()) continue;
    Op op = b.Base(std::string(name) + ".dx", OpKind::kElementwise, Phase::kBackwardInput);
    op.flops = 2 * it->flops;
    // Dropout: dY and the mask in, dX out. Softmax: dY and the saved output in, dX out.
    const double saved =
        it->quadratic_saved_bytes - (op.name == "attn.core.dropout.dx" ? d.e : 0) * probs;
    op.hbm_read_bytes = d.e * probs + saved;
    op.hbm_write_bytes = d.e * probs;
    b.Add(op);
  }
  Op dq = AttentionMatmul(b, "attn.core.scores.dx", d, d.T, d.T, h, Phase::kBackwardInput);
  dq.model_flops = model_flops;
  dq.hbm_read_bytes = d.e * probs + d.e * d.tok * d.kv;  // dS, K.
  dq.hbm_write_bytes = d.e * d.tok * d.q;
  b.Add(dq);
  Op dk = AttentionMatmul(b, "attn.core.scores.dk", d, d.T, d.T, h, Phase::kBackwardInput);
  dk.model_flops = model_flops;
  dk.hbm_read_bytes = d.e * probs + d.e * d.tok * d.q;  // dS, Q.
  dk.hbm_write_bytes = d.e * d.tok * d.kv;
  b.Add(dk);
}

bool Saved(const OpOptions& options, const std::string& name) {
  return std::find(options.saved_ops.begin(), options.saved_ops.end(), name) !=
         options.saved_ops.end();
}

}  // namespace

double LayerParamsPerTpShard(const ModelSpec& model, const Layout& layout) {
  const double tp = layout.tp;
  const double norms = 2.0 * (model.norm == NormKind::kLayer ? 2 : 1) * D(model.d_model);
  const double sharded = D(model.ParamsPerLayer()) - norms;
  return sharded / tp + norms;
}

OpList LayerForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                       const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kForward);
  const double params = LayerParamsPerTpShard(model, layout);
  const int gather = WeightGather(b, layout, params, params, options, "layer", Phase::kForward);
  AppendLayerForward(b, model, d, options, Phase::kForward, gather);
  return b.Take();
}

OpList LayerBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                        const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  const OpList fwd = LayerForwardOps(model, layout, shape, options);
  Builder b(Phase::kBackwardInput);
  const double layer_params = LayerParamsPerTpShard(model, layout);
  const int gather =
      WeightGather(b, layout, layer_params, layer_params, options, "layer", Phase::kBackwardInput);

  // Recomputation first: its ops feed the backward pass.
  switch (options.recompute) {
    case RecomputePolicy::kNone:
      break;
    case RecomputePolicy::kSelective:
      if (options.attention == AttentionKernel::kMaterialized) {
        // The core's kernels from the scores to PV (AppendMaterializedCore), again.
        for (const Op& op : fwd) {
          if (!op.name.starts_with("attn.core")) continue;
          Op re = op;
          re.name += ".recompute";
          re.phase = Phase::kRecompute;
          re.model_flops = 0;
          re.deps.clear();
          b.Add(re);
        }
      }
      break;
    case RecomputePolicy::kFull:
    case RecomputePolicy::kSaveNamed: {
      Builder re(Phase::kRecompute);
      AppendLayerForward(re, model, d, options, Phase::kRecompute, -1);
      const int offset = static_cast<int>(b.ops().size());
      for (Op op : re.Take()) {
        if (options.recompute == RecomputePolicy::kSaveNamed && Saved(options, op.name)) {
          // Kept: nothing to recompute. Keep the list's indices valid with a zero-cost marker.
          op.flops = op.model_flops = op.hfu_flops = op.hbm_read_bytes = op.hbm_write_bytes = 0;
        }
        op.name += ".recompute";
        op.phase = Phase::kRecompute;
        op.model_flops = 0;
        for (int& dep : op.deps) dep += offset;
        b.AddSide(op);  // Matmuls get the gather dependency with the backward's below.
      }
      b.set_last(static_cast<int>(b.ops().size()) - 1);
      break;
    }
  }

  // Backward, last forward op first.
  std::vector<int> dws;
  auto elementwise_bwd = [&](std::string_view name) {
    b.Add(ElementwiseBackward(b, Find(fwd, name)));
  };
  elementwise_bwd("mlp.residual");
  if (model.dropout) elementwise_bwd("mlp.dropout");
  SpGather(b, d, "mlp.dx", Phase::kBackwardInput);
  MatmulBackward(b, Find(fwd, "mlp.down"), d, &dws);
  elementwise_bwd("mlp.act");
  if (model.gated_mlp) {
    const int act = b.last();
    MatmulBackward(b, Find(fwd, "mlp.gate"), d, &dws);
    const int dgate = b.last();
    b.set_last(act);
    MatmulBackward(b, Find(fwd, "mlp.up"), d, &dws);
    // The two input gradients are summed into the one the norm receives.
    Op sum = b.Elementwise("mlp.sum.dx", OpKind::kElementwise, d.tok * d.d, kAddFlops, 2, 1, d.e);
    sum.phase = Phase::kBackwardInput;
    sum.deps = {dgate, b.last()};
    b.Add(sum);
  } else {
    MatmulBackward(b, Find(fwd, "mlp.up"), d, &dws);
  }
  TpReduce(b, d, "mlp.dx", Phase::kBackwardInput);
  elementwise_bwd("mlp.norm");
  elementwise_bwd("attn.residual");
  if (model.dropout) elementwise_bwd("attn.dropout");
  SpGather(b, d, "attn.dx", Phase::kBackwardInput);
  MatmulBackward(b, Find(fwd, "attn.out"), d, &dws);
  if (options.attention == AttentionKernel::kMaterialized) {
    AppendMaterializedCoreBackward(b, fwd, d);
  } else {
    // Recompute S = QK^T, then the four gradient matmuls (Dao et al. 2022, Alg. 4).
    const Op& core = Find(fwd, "attn.core");
    Op bwd = b.Base("attn.core.dx", OpKind::kAttention, Phase::kBackwardInput);
    bwd.shape = core.shape;
    bwd.causal = core.causal;
    const double qkv_bytes = d.e * d.tok * (d.q + 2 * d.kv);
    bwd.model_flops = 2 * core.model_flops;

    bwd.hbm_read_bytes = qkv_bytes + 2 * d.e * d.tok * d.q;  // Q, K, V, O, dO.
    bwd.hbm_write_bytes = qkv_bytes;                         // dQ, dK, dV.
    bwd.flops = 10 * d.q * Pairs(d, options.causal);
    bwd.hfu_flops = bwd.flops;  // The recomputed scores and the four gradient matmuls.
    bwd.hbm_read_bytes += kFlashStatBytes * d.seqs * d.heads * d.T;
    b.Add(bwd);
  }
  if (model.learned_positions == 0) elementwise_bwd("attn.rotary");
  MatmulBackward(b, Find(fwd, "attn.qkv"), d, &dws);
  TpReduce(b, d, "attn.dx", Phase::kBackwardInput);
  elementwise_bwd("attn.norm");
  // Every backward matmul needs the re-gathered weights.
  if (gather >= 0) {
    for (Op& op : b.mutable_ops()) {
      if (op.kind == OpKind::kMatmul) op.deps.push_back(gather);
    }
  }
  AppendGradientReduction(b, layout, layer_params, dws, options, "layer");
  return b.Take();
}

namespace {

// Parameters (per tp shard) whose gradients the embedding's reduction reduces: the vocabulary
// shard and the learned positions.
double EmbeddingReducedParams(const ModelSpec& model, const Layout& layout,
                              const ShardShape& shape) {
  return D(shape.vocab) * D(model.d_model) + D(model.learned_positions * model.d_model) / layout.tp;
}

// The head's: the final norm, and the unembedding unless it is tied to the embedding (whose
// gradient then carries it: reduced, and gathered, with the embedding's).
double HeadReducedParams(const ModelSpec& model, const ShardShape& shape, const Dims& d) {
  return model.tied_embeddings ? d.norm_params : D(shape.vocab) * d.d + d.norm_params;
}

}  // namespace

OpList EmbeddingForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                           const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kForward);
  const double params = D(shape.vocab) * d.d;
  const int gather = WeightGather(b, layout, params, EmbeddingReducedParams(model, layout, shape),
                                  options, "embedding", Phase::kForward);
  // Vocab-parallel lookup: each tp rank gathers the rows of its vocabulary shard (others zero),
  // then the partial embeddings are summed over tp.
  Op lookup = b.Base("embed.lookup", OpKind::kEmbedding);
  lookup.hbm_read_bytes = d.e * d.tok * d.d + 4 * d.tok;  // Rows and int32 token ids.
  lookup.hbm_write_bytes = d.e * d.tok * d.d;
  lookup.output_bytes = lookup.hbm_write_bytes;
  b.Add(lookup, {gather});
  TpReduce(b, d, "embed", Phase::kForward);
  if (model.learned_positions > 0) {
    b.Add(b.Elementwise("embed.positions", OpKind::kElementwise, d.sp_tok * d.d, kAddFlops, 2, 1,
                        d.e));
  }
  if (model.dropout) {
    Op drop = b.Elementwise("embed.dropout", OpKind::kElementwise, d.sp_tok * d.d, kDropoutFlops, 1,
                            1, d.e);
    drop.hbm_write_bytes += kMaskBytes * d.sp_tok * d.d;
    drop.saved_bytes = kMaskBytes * d.sp_tok * d.d;
    b.Add(drop);
  }
  return b.Take();
}

OpList EmbeddingBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                            const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kBackwardWeight);
  SpGather(b, d, "embed.dx", Phase::kBackwardInput);
  // Scatter-add of the output gradient into the rows of the embedding gradient.
  Op scatter = b.Base("embed.lookup.dw", OpKind::kEmbedding, Phase::kBackwardWeight);
  scatter.flops = d.tok * d.d;
  scatter.model_flops = 0;  // A lookup's gradient is not a matmul (model FLOPs count matmuls).
  scatter.hbm_read_bytes = 2 * d.e * d.tok * d.d;
  scatter.hbm_write_bytes = d.e * d.tok * d.d;
  const int dw = b.Add(scatter);
  AppendGradientReduction(b, layout, EmbeddingReducedParams(model, layout, shape), {dw}, options,
                          "embedding");
  return b.Take();
}

OpList HeadForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                      const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kForward);
  const double v = D(shape.vocab);
  const int gather =
      WeightGather(b, layout, v * d.d + d.norm_params, HeadReducedParams(model, shape, d), options,
                   "head", Phase::kForward);
  b.Add(Norm(b, "head.norm", d));
  SpGather(b, d, "head", Phase::kForward);
  Op unembed = b.Matmul("head.unembed", d.tok, d.d, v, d.e, Phase::kForward);
  unembed.saved_bytes = d.e * d.sp_tok * d.d;
  b.Add(unembed, {gather});
  Op loss = b.Base("head.loss", OpKind::kLoss);
  loss.flops = kSoftmaxFlops * d.tok * v;
  loss.model_flops = 0;  // Model FLOPs count matmuls only (Megatron eq. 3, PaLM).
  loss.hbm_read_bytes = d.e * d.tok * v;
  loss.hbm_write_bytes = kLogitBytes * d.tok * v;
  loss.saved_bytes = kLogitBytes * d.tok * v;  // fp32 softmax for the gradient (4sbv/t).
  b.Add(loss);
  if (d.tp) {
    // Vocab-parallel cross-entropy (Megatron): all-reduce of the row max, the sum of exponentials
    // and the target logit, one fp32 per token each.
    b.Add(b.Collective("tp.all-reduce.loss", CollectiveOp::kAllReduce, "tp", 3 * 4 * d.tok,
                       /*blocking=*/true, Phase::kForward));
  }
  return b.Take();
}

OpList HeadBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                       const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  const OpList fwd = HeadForwardOps(model, layout, shape, options);
  Builder b(Phase::kBackwardInput);
  const double v = D(shape.vocab);
  const int gather =
      WeightGather(b, layout, v * d.d + d.norm_params, 0, options, "head", Phase::kBackwardInput);
  Op dloss = b.Base("head.loss.dx", OpKind::kLoss, Phase::kBackwardInput);
  dloss.flops = 2 * d.tok * v;  // softmax - one_hot, scaled.
  dloss.hbm_read_bytes = kLogitBytes * d.tok * v;
  dloss.hbm_write_bytes = d.e * d.tok * v;
  b.Add(dloss);
  std::vector<int> dws;
  MatmulBackward(b, Find(fwd, "head.unembed"), d, &dws);
  if (gather >= 0) {
    for (Op& op : b.mutable_ops()) {
      if (op.kind == OpKind::kMatmul) op.deps.push_back(gather);
    }
  }
  TpReduce(b, d, "head.dx", Phase::kBackwardInput);
  b.Add(ElementwiseBackward(b, Find(fwd, "head.norm")));
  AppendGradientReduction(b, layout, HeadReducedParams(model, shape, d), dws, options, "head");
  return b.Take();
}

sim::Status ValidateOpOptions(const OpOptions& options, const Layout& layout) {
  if (options.tp_comm_overlap && layout.tp > 1 && !layout.sp) {
    return sim::Status::InvalidArgument(
        "tp communication overlap needs sequence parallelism with tp=" + std::to_string(layout.tp) +
        " (add sp=1 to the layout), as Megatron-LM requires");
  }
  return sim::Status::Ok();
}

OpList OptimizerOps(double params_on_chip, const Layout& layout, const OpOptions& options) {
  const PrecisionRecipe& p = options.precision;
  // The parameters this chip updates: its dp shard under the distributed optimizer.
  const double updated =
      options.distributed_optimizer ? params_on_chip / layout.dp : params_on_chip;
  Op adam;
  adam.name = "optimizer.adam";
  adam.kind = OpKind::kOptimizer;
  adam.phase = Phase::kOptimizer;
  adam.flops = kAdamFlopsPerParam * updated;
  adam.model_flops = 0;  // Not part of the 6N model FLOPs.
  const double grad = GradWireBytes(layout, options);
  adam.hbm_read_bytes = updated * (p.param_bytes + grad + p.master_bytes + p.optimizer_bytes);
  adam.hbm_write_bytes = updated * (p.param_bytes + p.master_bytes + p.optimizer_bytes);
  const double buffer = p.GradBufferBytes(layout.microbatch_count());
  if (buffer > 0) {
    // A gradient buffer is also read for the global-norm clipping (the updated shard's) and
    // zeroed, whole, for the next step (Megatron-LM optimizer.py: clip_grad_norm_fp32, zero_grad
    // of the main-grad buffers).
    adam.hbm_read_bytes += updated * buffer;
    adam.hbm_write_bytes += params_on_chip * buffer;
  }
  return {adam};
}

double LayerActivationBytes(const OpList& forward, const OpOptions& options) {
  double bytes = 0;
  switch (options.recompute) {
    case RecomputePolicy::kNone:
      for (const Op& op : forward) bytes += op.saved_bytes + op.quadratic_saved_bytes;
      break;
    case RecomputePolicy::kSelective:
      for (const Op& op : forward) bytes += op.saved_bytes;
      break;
    case RecomputePolicy::kFull:
      // The layer's input: what the first norm keeps (Korthikanti Table 2: 2sbh; /t with sp).
      bytes = Find(forward, "attn.norm").saved_bytes;
      break;
    case RecomputePolicy::kSaveNamed:
      for (const Op& op : forward) {
        if (Saved(options, op.name)) bytes += op.output_bytes;
      }
      break;
  }
  return bytes;
}

}  // namespace podsim::workloads
