// Building blocks of the per-chip op lists of layer_ops.h and moe_ops.h: the common sizes of a
// layer on one chip, an OpList builder that tracks the activation path, and the ops every piece
// of a layer shares (tp collectives, norms, matmul and elementwise backward, gradient
// reductions, weight gathers). Internal to workloads/.

#ifndef PODSIM_WORKLOADS_LAYER_BUILD_H_
#define PODSIM_WORKLOADS_LAYER_BUILD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/hbm_kernel.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"
#include "workloads/op.h"

namespace podsim::workloads::layer_build {

// FLOPs per element of the elementwise ops (layer_ops.h header comment gives the counts).
inline constexpr double kRmsNormFlops = 4;
inline constexpr double kLayerNormFlops = 7;
inline constexpr double kAddFlops = 1;
inline constexpr double kDropoutFlops = 2;
inline constexpr double kRotaryFlops = 3;
inline constexpr double kSiluGateFlops = 5;
inline constexpr double kGeluFlops = 8;
inline constexpr double kSoftmaxFlops = 5;
// Dropout masks are one byte per element (Korthikanti et al. 2022, sec. 4.1).
inline constexpr double kMaskBytes = 1;
// Softmax statistics a flash kernel keeps per query row and head (log-sum-exp), fp32.
inline constexpr double kFlashStatBytes = 4;

inline double D(int64_t v) { return static_cast<double>(v); }

// Common sizes of one layer on one chip.
struct Dims {
  double e;        // Activation bytes per element.
  double tok;      // Tokens through the tp-sharded ops.
  double sp_tok;   // Tokens through norms / residuals (tok / tp with sp).
  double seqs;     // Sequences per microbatch (b).
  double cp;       // Chips splitting a sequence (cp or seq_shards): tok holds T/cp of each.
  double T;        // Sequence length.
  double d;        // d_model.
  double q;        // Query width on this chip: heads/tp * qk_head.
  double kv;       // Key width on this chip: kv heads on it * qk_head.
  double v;        // Value width on this chip: kv heads on it * v_head.
  double o;        // Attention output width on this chip: heads/tp * v_head.
  double qk_head;  // Per head: the dims the scores contract over (head_dim, + rope_dim in MLA).
  double v_head;   // Per head: the value dims.
  double f;        // ffn / tp.
  double heads;    // Heads on this chip.
  double norm_flops;
  double norm_params;
  // The norms' kernel class (hbm_kernel.h): PyTorch's LayerNorm under eager kernels, else "".
  std::string_view norm_kernel;
  bool tp;    // tp > 1.
  bool sp;    // Sequence parallel collectives (sp and tp > 1).
  bool ring;  // Ring attention over the cp chips (Layout::ring_attention() and cp > 1).
  // Bytes per element of the tokens the expert dispatch sends and of the output gradients the
  // backward's combine sends: fp8 with its scales under OpOptions::fp8_dispatch, else e.
  double dispatch_e;
  // How the framework runs the backward of column-parallel matmuls (framework.h).
  TpBackward tp_backward;
  // Tokens of a column-parallel matmul's [tokens, D] input kept for its weight gradient: sp_tok,
  // or tok where the framework keeps the input gathered over tp.
  double kept_input_tok;
};

Dims DimsOf(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
            const OpOptions& options);

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
    op.elements = elements;
    return op;
  }

  Op Collective(std::string name, collectives::CollectiveOp collective, std::string axis,
                double bytes, bool blocking, Phase phase) const {
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

// The groups a piece of the parameters is sharded (fsdp) and replicated (dp) over, by the
// group names of Layout::GroupAxes, with their sizes: the dense parameters' (fsdp, dp) or the
// routed experts' (expert-fsdp, expert-dp).
struct DataGroups {
  std::string fsdp;
  int fsdp_size = 1;
  std::string dp;
  int dp_size = 1;
};
DataGroups DenseGroups(const Layout& layout);
DataGroups ExpertGroups(const Layout& layout);

// TP activation collective after a row-parallel matmul (forward) or a column-parallel
// input-gradient (backward): all-reduce, or reduce-scatter with sp. It waits for b.last() and
// `extra_deps`.
void TpReduce(Builder& b, const Dims& d, const std::string& name, Phase phase,
              std::vector<int> extra_deps = {});

// With sp, the [tokens, D] activation is gathered before a column-parallel matmul (forward) or
// a row-parallel input-gradient (backward).
void SpGather(Builder& b, const Dims& d, const std::string& name, Phase phase);

Op Norm(const Builder& b, const std::string& name, const Dims& d);

// Dropout on the [tokens, D] activation (after the embedding, the attention and the MLP): the
// output and a one-byte mask written, the mask kept for the backward.
Op HiddenDropout(const Builder& b, const std::string& name, const Dims& d);

double GradWireBytes(const Layout& layout, const OpOptions& options);

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
// Amp()'s cast of `params` fp32 weights to the working precision before the forward (or the
// recomputation, `phase`) that reads them, on the compute stream (precision.h): reads
// master_bytes, writes param_bytes a parameter. Norm gains, which autocast leaves in fp32,
// are counted with the rest (under 0.1% of a layer's parameters).
void AppendWeightCast(Builder& b, double params, const OpOptions& options, const std::string& what,
                      Phase phase);

void AppendGradientReduction(Builder& b, const Layout& layout, double params, std::vector<int> dws,
                             const OpOptions& options, const std::string& what,
                             const DataGroups& groups);

// The all-gathers that bring parameters (per tp shard) to the chip before their use: `params`
// over groups.fsdp (every forward and backward), and, in the forward with the distributed
// optimizer, first `updated` over groups.dp -- the parameters whose gradients the op list's
// reduction reduce-scatters, so that what is gathered is what was updated (kept by the schedule for
// the first microbatch only). Under a recipe that casts weights (PrecisionRecipe::Amp), the
// forward's casts of `params` too, first on the compute stream (AppendWeightCast), but for the
// embedding's, whose lookup autocast does not cast. Returns the last gather (-1: none).
int WeightGather(Builder& b, double params, double updated, const OpOptions& options,
                 const std::string& what, Phase phase, const DataGroups& groups);

// `groups` GEMMs of [rows/groups, k] x [k, n] as one op (a grouped GEMM, as MoE experts run):
// 2 rows k n FLOPs, every group's weights read; groups <= 1: one plain GEMM.
Op GroupedMatmul(const Builder& b, std::string name, double rows, double k, double n, double groups,
                 double e, Phase phase);

// An MLP on one chip: `prefix`.gate (gated only), .up, .act, .down over `rows` tokens of width
// `f`, as `groups` grouped GEMMs; `saved_rows` of its input are kept for the backward (fewer
// than `rows` when sequence parallelism shards them).
struct MlpPart {
  std::string prefix;
  double rows = 0;
  double saved_rows = 0;
  double f = 0;
  double groups = 1;
  bool gated = true;
};
// The dense MLP of a layer: "mlp", the tp-sharded ffn over the layer's tokens.
MlpPart DenseMlp(const ModelSpec& model, const Dims& d);
// The MLP's forward ops from b.last() on; its first GEMMs also wait for `gather` (-1: none).
void AppendMlpCore(Builder& b, const Dims& d, const MlpPart& part, Phase phase, int gather);
// Their backward from b.last() (the gradient of .down's output) on; weight gradients to `dws`.
// The first GEMMs' backward is AppendColumnParallelBackward's on the prefix: with its tp reduction
// (`tp_reduced`: the dense MLP, the shared experts), or without one in the book's order (routed
// experts, whose reduction over etp the caller adds).
void AppendMlpCoreBackward(Builder& b, const OpList& fwd, const Dims& d, const MlpPart& part,
                           std::vector<int>* dws, bool tp_reduced = false);

// The backward of the column-parallel matmuls `gemms` (forward op names in `fwd`) that read one
// [rows, D] input gathered over tp, from b.last() (the gradient of their outputs) on: their input
// gradients, summed into "`what`.sum.dx" when there are several (or, where the framework fuses
// them into one GEMM, each accumulating into the one before); the tp reduction of that
// gradient (TpReduce "`what`.dx"); their weight gradients (to `dws`); and, where the framework
// gathers the sp input again, that all-gather ("tp.all-gather.`what`.dw", not blocking, before
// the input gradients, which it overlaps; the weight gradients wait for it). Their order is
// d.tp_backward's (framework.h). b.last() ends at the reduction. Without `tp_reduced` there is
// neither reduction nor re-gather, and the order is the book's; b.last() ends at the input
// gradient.
void AppendColumnParallelBackward(Builder& b, const OpList& fwd, const Dims& d,
                                  const std::vector<std::string>& gemms, const std::string& what,
                                  double rows, std::vector<int>* dws, bool tp_reduced = true);

// "`what`.sum.dx": the input gradients `dxs` of [rows, D] summed into one.
void AppendInputGradientSum(Builder& b, const Dims& d, const std::string& what, double rows,
                            const std::vector<int>& dxs);

// Input- and weight-gradient ops of a forward matmul (grouped ones too); returns the dw index.
int MatmulBackward(Builder& b, const Op& fwd, const Dims& d, std::vector<int>* dws,
                   bool with_dx = true);
// The input gradient of a forward matmul, on the activation path; returns its index.
int MatmulInputGradient(Builder& b, const Op& fwd, const Dims& d);
// The weight gradient of a forward matmul from the output gradient `dy` (-1: none), to `dws`;
// returns its index.
int MatmulWeightGradient(Builder& b, const Op& fwd, const Dims& d, int dy, std::vector<int>* dws);

// Backward of an elementwise/norm op: reads its saved input(s) and the output gradient, writes
// the input gradient; about twice the forward FLOPs. A norm's backward is two kernels that each
// read the input and the output gradient: the input gradient, and the reduction over tokens for
// the gain (and bias) gradients (PyTorch layer_norm_backward: layer_norm_grad_input_kernel and
// GammaBetaBackward; apex FusedLayerNorm: cuComputeGradInput and cuComputePartGradGammaBeta).
Op ElementwiseBackward(const Builder& b, const Op& fwd);

const Op& Find(const OpList& ops, std::string_view name);

}  // namespace podsim::workloads::layer_build

#endif  // PODSIM_WORKLOADS_LAYER_BUILD_H_
