#include "workloads/layer_ops.h"

#include <algorithm>
#include <map>

#include "workloads/latent_attention_ops.h"
#include "workloads/layer_build.h"
#include "workloads/moe_ops.h"
#include "workloads/ring_attention_ops.h"

namespace podsim::workloads {
namespace {

using collectives::CollectiveOp;
using layer_build::AppendColumnParallelBackward;
using layer_build::AppendGradientReduction;
using layer_build::AppendLatentProjections;
using layer_build::AppendLatentProjectionsBackward;
using layer_build::AppendMlpCore;
using layer_build::AppendMlpCoreBackward;
using layer_build::AppendMoeBackward;
using layer_build::AppendMoeForward;
using layer_build::AppendRingAttention;
using layer_build::AppendRingAttentionBackward;
using layer_build::Builder;
using layer_build::D;
using layer_build::DenseGroups;
using layer_build::DenseMlp;
using layer_build::Dims;
using layer_build::DimsOf;
using layer_build::ElementwiseBackward;
using layer_build::ExpertGroups;
using layer_build::Find;
using layer_build::GradWireBytes;
using layer_build::HiddenDropout;
using layer_build::IsRoutedExpertOp;
using layer_build::kAddFlops;
using layer_build::kDropoutFlops;
using layer_build::kFlashStatBytes;
using layer_build::kGeluFlops;
using layer_build::kMaskBytes;
using layer_build::kRotaryFlops;
using layer_build::kSiluGateFlops;
using layer_build::kSoftmaxFlops;
using layer_build::MatmulBackward;
using layer_build::Norm;
using layer_build::SpGather;
using layer_build::TpReduce;
using layer_build::WeightGather;

constexpr double kAdamFlopsPerParam = 14;
// Logits are upcast to fp32 for the cross-entropy (Korthikanti et al. 2022, sec. 4.3: 4sbv/t).
constexpr double kLogitBytes = 4;

// Query-key pairs of the chip's queries: a sequence's T^2 (causal T(T+1)/2), of which cp
// splits an equal share to each chip (load-balanced chunks, layout.h).
double Pairs(const Dims& d, bool causal) {
  return (causal ? d.seqs * d.T * (d.T + 1) / 2 : d.seqs * d.T * d.T) / d.cp;
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
  return {static_cast<int64_t>(d.T / d.cp), static_cast<int64_t>(d.qk_head),
          static_cast<int64_t>(d.T), static_cast<int64_t>(d.seqs * d.heads)};
}

// With cp > 1, the all-gather of the sequence's keys and values over cp before the flash core
// (forward, and again before its backward): V = the whole sequence's K and V.
void CpGatherKeysAndValues(Builder& b, const Dims& d, const std::string& name, Phase phase) {
  if (d.cp <= 1) return;
  b.Add(b.Collective("cp.all-gather." + name, CollectiveOp::kAllGather, "cp",
                     d.e * d.tok * d.cp * (d.kv + d.v), /*blocking=*/true, phase));
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
  const bool recompute = phase == Phase::kRecompute;
  Op scores = AttentionMatmul(b, "attn.core.scores", d, d.T, d.qk_head, d.T, phase);
  scores.model_flops = recompute ? 0 : 2 * d.q * model_pairs;
  scores.hbm_read_bytes = d.e * d.tok * (d.q + d.kv);  // Q and K.
  scores.hbm_write_bytes = d.e * probs;
  scores.output_bytes = d.e * probs;
  scores.saved_bytes = d.e * d.tok * (d.q + d.kv + d.v);  // Q, K, V.
  b.Add(scores);
  Op softmax =
      b.Elementwise("attn.core.softmax", OpKind::kElementwise, probs, kSoftmaxFlops, 1, 1, d.e);
  softmax.phase = phase;
  softmax.quadratic_saved_bytes = d.e * probs;
  softmax.kernel = kSoftmaxKernel;
  b.Add(softmax);
  if (model.dropout) {
    Op drop =
        b.Elementwise("attn.core.dropout", OpKind::kElementwise, probs, kDropoutFlops, 1, 1, d.e);
    drop.phase = phase;
    drop.kernel = kDropoutKernel;
    drop.hbm_write_bytes += kMaskBytes * probs;
    drop.quadratic_saved_bytes = (kMaskBytes + d.e) * probs;
    b.Add(drop);
  }
  Op pv = AttentionMatmul(b, "attn.core", d, d.T, d.T, d.v_head, phase);
  pv.model_flops = recompute ? 0 : 2 * d.o * model_pairs;
  pv.hbm_read_bytes = d.e * probs + d.e * d.tok * d.v;  // Probabilities and V.
  pv.hbm_write_bytes = d.e * d.tok * d.o;
  pv.output_bytes = d.e * d.tok * d.o;
  b.Add(pv);
}

// Forward ops of one layer, phase kForward or kRecompute, with a mixture of experts for its MLP
// when `moe`. `dense_gather` and `expert_gather` are the indices of the weight all-gathers the
// dense matmuls and the routed experts' wait for (-1: none).
void AppendLayerForward(Builder& b, const ModelSpec& model, const Layout& layout, const Dims& d,
                        const OpOptions& options, Phase phase, bool moe, int dense_gather,
                        int expert_gather) {
  const bool materialized = options.attention == AttentionKernel::kMaterialized;

  b.Add(Norm(b, "attn.norm", d));
  if (model.mla()) {
    AppendLatentProjections(b, model, d, phase, dense_gather);
  } else {
    SpGather(b, d, "attn", phase);
    Op qkv = b.Matmul("attn.qkv", d.tok, d.d, d.q + d.kv + d.v, d.e, phase);
    qkv.saved_bytes = d.e * d.kept_input_tok * d.d;  // Its input (layer_build.h Dims).
    b.Add(qkv, {dense_gather});
    if (model.learned_positions == 0) {
      b.Add(b.Elementwise("attn.rotary", OpKind::kElementwise, d.tok * (d.q + d.kv), kRotaryFlops,
                          1, 1, d.e));
    }
  }
  // kCausal counts the pairs the mask leaves: all of them without one.
  const double model_pairs =
      Pairs(d, options.causal && options.model_flops_count == AttentionCount::kCausal);
  if (materialized) {
    AppendMaterializedCore(b, model, d, phase, model_pairs);
  } else {
    if (!d.ring) CpGatherKeysAndValues(b, d, "kv", phase);
    Op core = b.Base("attn.core", OpKind::kAttention);
    core.kernel = AttentionKernelName(options.attention);
    const double qkv_bytes = d.e * d.tok * (d.q + d.cp * (d.kv + d.v));
    core.hbm_read_bytes = qkv_bytes;
    core.hbm_write_bytes = d.e * d.tok * d.o;
    core.output_bytes = d.e * d.tok * d.o;
    core.saved_bytes = d.e * d.tok * (d.q + d.kv + d.v);  // Q, K, V (Korthikanti: 4sbh + 2sbh).
    core.shape = FlashShape(d);
    core.causal = options.causal;
    // Scores over the query/key dims, values over the value dims: 2 (q + o) per pair.
    core.model_flops = phase == Phase::kRecompute ? 0 : 2 * (d.q + d.o) * model_pairs;
    core.flops = 2 * (d.q + d.o) * Pairs(d, options.causal);
    core.hfu_flops = core.flops;
    core.hbm_write_bytes += kFlashStatBytes * d.tok * d.heads;
    core.saved_bytes += kFlashStatBytes * d.tok * d.heads;
    if (d.ring) {
      AppendRingAttention(b, d, core, phase);
    } else {
      b.Add(core);
    }
  }
  Op out = b.Matmul("attn.out", d.tok, d.o, d.d, d.e, phase);
  out.saved_bytes = d.e * d.tok * d.o;
  b.Add(out);
  TpReduce(b, d, "attn", phase);
  if (model.dropout) {
    b.Add(HiddenDropout(b, "attn.dropout", d));
  }
  b.Add(b.Elementwise("attn.residual", OpKind::kElementwise, d.sp_tok * d.d, kAddFlops, 2, 1, d.e));

  b.Add(Norm(b, "mlp.norm", d));
  if (moe) {
    AppendMoeForward(b, model, layout, d, phase, dense_gather, expert_gather);
  } else {
    SpGather(b, d, "mlp", phase);
    AppendMlpCore(b, d, DenseMlp(model, d), phase, -1);
    TpReduce(b, d, "mlp", phase);
  }
  if (model.dropout) {
    b.Add(HiddenDropout(b, "mlp.dropout", d));
  }
  b.Add(b.Elementwise("mlp.residual", OpKind::kElementwise, d.sp_tok * d.d, kAddFlops, 2, 1, d.e));
}

// Backward of AppendMaterializedCore, kernel by kernel in reverse (Megatron-LM's autograd of
// CoreAttention): PV's two gradients dP = dO V^T and dV = P^T dO, the dropout and softmax
// backward kernels on the T x T tensors (reading the saved mask and softmax output), and the
// scores' dQ = dS K and dK = dS^T Q. Model FLOPs twice the forward's.
void AppendMaterializedCoreBackward(Builder& b, const OpList& fwd, const Dims& d) {
  const double probs = d.seqs * d.heads * d.T * d.T;
  const double pv_flops = Find(fwd, "attn.core").model_flops;
  const double scores_flops = Find(fwd, "attn.core.scores").model_flops;
  Op dp = AttentionMatmul(b, "attn.core.dx", d, d.T, d.v_head, d.T, Phase::kBackwardInput);
  dp.model_flops = pv_flops;
  dp.hbm_read_bytes = d.e * d.tok * (d.o + d.v);  // dO, V.
  dp.hbm_write_bytes = d.e * probs;
  b.Add(dp);
  Op dv = AttentionMatmul(b, "attn.core.dv", d, d.T, d.T, d.v_head, Phase::kBackwardInput);
  dv.model_flops = pv_flops;
  dv.hbm_read_bytes = d.e * probs + d.e * d.tok * d.o;  // P (dropped), dO.
  dv.hbm_write_bytes = d.e * d.tok * d.v;
  b.Add(dv);
  for (const char* name : {"attn.core.dropout", "attn.core.softmax"}) {
    auto it = std::find_if(fwd.begin(), fwd.end(), [&](const Op& op) { return op.name == name; });
    if (it == fwd.end()) continue;
    Op op = b.Base(std::string(name) + ".dx", OpKind::kElementwise, Phase::kBackwardInput);
    op.flops = 2 * it->flops;
    op.kernel = BackwardKernel(it->kernel);
    // Dropout: dY and the mask in, dX out. Softmax: dY and the saved output in, dX out.
    const double saved =
        it->quadratic_saved_bytes - (op.name == "attn.core.dropout.dx" ? d.e : 0) * probs;
    op.hbm_read_bytes = d.e * probs + saved;
    op.hbm_write_bytes = d.e * probs;
    b.Add(op);
  }
  Op dq = AttentionMatmul(b, "attn.core.scores.dx", d, d.T, d.T, d.qk_head, Phase::kBackwardInput);
  dq.model_flops = scores_flops;
  dq.hbm_read_bytes = d.e * probs + d.e * d.tok * d.kv;  // dS, K.
  dq.hbm_write_bytes = d.e * d.tok * d.q;
  b.Add(dq);
  Op dk = AttentionMatmul(b, "attn.core.scores.dk", d, d.T, d.T, d.qk_head, Phase::kBackwardInput);
  dk.model_flops = scores_flops;
  dk.hbm_read_bytes = d.e * probs + d.e * d.tok * d.q;  // dS, Q.
  dk.hbm_write_bytes = d.e * d.tok * d.kv;
  b.Add(dk);
}

bool Offloaded(const OpOptions& options, const std::string& name) {
  return std::find(options.offloaded_ops.begin(), options.offloaded_ops.end(), name) !=
         options.offloaded_ops.end();
}

// Kept for the backward, on the chip or offloaded: not recomputed.
bool Saved(const OpOptions& options, const std::string& name) {
  return std::find(options.saved_ops.begin(), options.saved_ops.end(), name) !=
             options.saved_ops.end() ||
         Offloaded(options, name);
}

}  // namespace

double LayerParamsPerTpShard(const ModelSpec& model, const Layout& layout, MlpKind mlp) {
  const double tp = layout.tp;
  const double replicated = D(model.TpReplicatedParamsPerLayer());
  if (mlp == MlpKind::kMoe) {
    // The router is replicated over tp too (Megatron-Core's TopKRouter weight).
    const double sharded = D(model.MoeParamsPerLayer() - model.experts * model.ExpertParams() -
                             model.RouterParamsPerLayer()) -
                           replicated;
    return sharded / tp + D(model.RouterParamsPerLayer()) + replicated;
  }
  const double sharded = D(model.ParamsPerLayer()) - replicated;
  return sharded / tp + replicated;
}

double ExpertParamsPerChip(const ModelSpec& model, const Layout& layout) {
  return D(model.experts / layout.ep) * D(model.ExpertParams()) / layout.expert_tp();
}

namespace {

// The weight gathers of a layer: the dense parameters' and the routed experts' (-1: none).
struct LayerGathers {
  int dense = -1;
  int expert = -1;
};

LayerGathers GatherLayerWeights(Builder& b, const ModelSpec& model, const Layout& layout,
                                const OpOptions& options, MlpKind mlp, Phase phase) {
  LayerGathers gathers;
  const double params = LayerParamsPerTpShard(model, layout, mlp);
  gathers.dense = WeightGather(b, params, params, options, "layer", phase, DenseGroups(layout));
  if (mlp == MlpKind::kMoe) {
    const double experts = ExpertParamsPerChip(model, layout);
    gathers.expert =
        WeightGather(b, experts, experts, options, "experts", phase, ExpertGroups(layout));
  }
  return gathers;
}

}  // namespace

OpList LayerForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                       const OpOptions& options, MlpKind mlp) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kForward);
  const LayerGathers gathers = GatherLayerWeights(b, model, layout, options, mlp, Phase::kForward);
  AppendLayerForward(b, model, layout, d, options, Phase::kForward, mlp == MlpKind::kMoe,
                     gathers.dense, gathers.expert);
  return b.Take();
}

OpList LayerBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                        const OpOptions& options, MlpKind mlp) {
  const Dims d = DimsOf(model, layout, shape, options);
  const OpList fwd = LayerForwardOps(model, layout, shape, options, mlp);
  const bool moe = mlp == MlpKind::kMoe;
  Builder b(Phase::kBackwardInput);
  const LayerGathers gathers =
      GatherLayerWeights(b, model, layout, options, mlp, Phase::kBackwardInput);

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
      AppendLayerForward(re, model, layout, d, options, Phase::kRecompute, moe, -1, -1);
      OpList recomputed = re.Take();
      if (options.precision.casts_weights) {
        // autocast casts again the weights of every linear layer of the recomputed forward, the
        // matmuls whose outputs a save list keeps too: their backwards need the casts, which
        // are not saved.
        double weights = 0;
        for (const Op& op : recomputed) {
          if (op.kind != OpKind::kMatmul || op.name.starts_with("attn.core")) continue;
          weights += D(op.shape.k) * D(op.shape.n) * D(op.shape.batch);
        }
        if (weights > 0) AppendWeightCast(b, weights, options, "layer", Phase::kRecompute);
      }
      const int offset = static_cast<int>(b.ops().size());
      for (Op op : recomputed) {
        if (options.recompute == RecomputePolicy::kSaveNamed && Saved(options, op.name)) {
          // Kept: nothing to recompute. Keep the list's indices valid with a zero-cost marker.
          op.flops = op.model_flops = op.hfu_flops = op.hbm_read_bytes = op.hbm_write_bytes = 0;
          op.elements = 0;  // Nor its eager kernels (eager_kernels.h).
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
  std::vector<int> dws, expert_dws;
  auto elementwise_bwd = [&](std::string_view name) {
    b.Add(ElementwiseBackward(b, Find(fwd, name)));
  };
  elementwise_bwd("mlp.residual");
  if (model.dropout) elementwise_bwd("mlp.dropout");
  if (moe) {
    AppendMoeBackward(b, fwd, model, layout, d, &dws, &expert_dws);
  } else {
    SpGather(b, d, "mlp.dx", Phase::kBackwardInput);
    AppendMlpCoreBackward(b, fwd, d, DenseMlp(model, d), &dws, /*tp_reduced=*/true);
  }
  elementwise_bwd("mlp.norm");
  elementwise_bwd("attn.residual");
  if (model.dropout) elementwise_bwd("attn.dropout");
  SpGather(b, d, "attn.dx", Phase::kBackwardInput);
  MatmulBackward(b, Find(fwd, "attn.out"), d, &dws);
  if (options.attention == AttentionKernel::kMaterialized) {
    AppendMaterializedCoreBackward(b, fwd, d);
  } else {
    // Recompute S = QK^T, then the four gradient matmuls (Dao et al. 2022, Alg. 4).
    // The forward core's model FLOPs: of its one kernel, or of every ring step's.
    double core_model_flops = 0;
    for (const Op& op : fwd) {
      if (op.name == "attn.core") core_model_flops += op.model_flops;
    }
    Op bwd = b.Base("attn.core.dx", OpKind::kAttention, Phase::kBackwardInput);
    bwd.kernel = AttentionKernelName(options.attention);
    bwd.shape = FlashShape(d);
    bwd.causal = options.causal;
    // With cp the sequence's keys and values are gathered again, and their gradients
    // reduce-scattered back to the chips that hold them (ring attention passes them instead).
    if (!d.ring) CpGatherKeysAndValues(b, d, "kv.dx", Phase::kBackwardInput);
    const double qkv_bytes = d.e * d.tok * (d.q + d.cp * (d.kv + d.v));
    bwd.model_flops = 2 * core_model_flops;

    bwd.hbm_read_bytes = qkv_bytes + 2 * d.e * d.tok * d.o;  // Q, K, V, O, dO.
    bwd.hbm_write_bytes = qkv_bytes;                         // dQ, dK, dV.
    // S = QK^T again, dQ and dK over the query/key dims; dP = dO V^T and dV over the value dims.
    bwd.flops = 2 * (3 * d.q + 2 * d.o) * Pairs(d, options.causal);
    bwd.hfu_flops = bwd.flops;  // The recomputed scores and the four gradient matmuls.
    bwd.hbm_read_bytes += kFlashStatBytes * d.tok * d.heads;
    if (d.ring) {
      AppendRingAttentionBackward(b, d, bwd);
    } else {
      b.Add(bwd);
    }
    if (d.cp > 1 && !d.ring) {
      b.Add(b.Collective("cp.reduce-scatter.dkv", CollectiveOp::kReduceScatter, "cp",
                         d.e * d.tok * d.cp * (d.kv + d.v), /*blocking=*/true,
                         Phase::kBackwardInput));
    }
  }
  if (model.mla()) {
    AppendLatentProjectionsBackward(b, fwd, model, d, &dws);
  } else {
    if (model.learned_positions == 0) elementwise_bwd("attn.rotary");
    AppendColumnParallelBackward(b, fwd, d, {"attn.qkv"}, "attn", d.tok, &dws);
  }
  elementwise_bwd("attn.norm");
  // Every backward matmul needs the re-gathered weights: the routed experts' theirs.
  for (Op& op : b.mutable_ops()) {
    if (op.kind != OpKind::kMatmul) continue;
    const int gather = IsRoutedExpertOp(op) ? gathers.expert : gathers.dense;
    if (gather >= 0) op.deps.push_back(gather);
  }
  AppendGradientReduction(b, layout, LayerParamsPerTpShard(model, layout, mlp), dws, options,
                          "layer", DenseGroups(layout));
  if (moe) {
    AppendGradientReduction(b, layout, ExpertParamsPerChip(model, layout), expert_dws, options,
                            "experts", ExpertGroups(layout));
  }
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
  const int gather = WeightGather(b, params, EmbeddingReducedParams(model, layout, shape), options,
                                  "embedding", Phase::kForward, DenseGroups(layout));
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
    b.Add(HiddenDropout(b, "embed.dropout", d));
  }
  return b.Take();
}

OpList EmbeddingBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                            const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kBackwardWeight);
  if (model.dropout) b.Add(ElementwiseBackward(b, HiddenDropout(b, "embed.dropout", d)));
  SpGather(b, d, "embed.dx", Phase::kBackwardInput);
  // Scatter-add of the output gradient into the rows of the embedding gradient.
  Op scatter = b.Base("embed.lookup.dw", OpKind::kEmbedding, Phase::kBackwardWeight);
  scatter.flops = d.tok * d.d;
  scatter.model_flops = 0;  // A lookup's gradient is not a matmul (model FLOPs count matmuls).
  scatter.hbm_read_bytes = 2 * d.e * d.tok * d.d;
  scatter.hbm_write_bytes = d.e * d.tok * d.d;
  const int dw = b.Add(scatter);
  AppendGradientReduction(b, layout, EmbeddingReducedParams(model, layout, shape), {dw}, options,
                          "embedding", DenseGroups(layout));
  return b.Take();
}

OpList HeadForwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                      const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  Builder b(Phase::kForward);
  const double v = D(shape.vocab);
  const int gather = WeightGather(b, v * d.d + d.norm_params, HeadReducedParams(model, shape, d),
                                  options, "head", Phase::kForward, DenseGroups(layout));
  b.Add(Norm(b, "head.norm", d));
  SpGather(b, d, "head", Phase::kForward);
  Op unembed = b.Matmul("head.unembed", d.tok, d.d, v, d.e, Phase::kForward);
  unembed.saved_bytes = d.e * d.kept_input_tok * d.d;
  b.Add(unembed, {gather});
  Op loss = b.Base("head.loss", OpKind::kLoss);
  loss.flops = kSoftmaxFlops * d.tok * v;
  loss.model_flops = 0;  // Model FLOPs count matmuls only (Megatron eq. 3, PaLM).
  const bool te = options.loss == LossKernel::kTransformerEngine;
  // Transformer Engine's kernel reads the logits twice (loss_kernel.h).
  loss.hbm_read_bytes = (te ? 2 : 1) * d.e * d.tok * v;
  // The fp32 softmax (vocab-parallel: 4sbv/t), the gradient over the logits (Transformer
  // Engine's), or nothing beyond a value per token (compiled); the eager losses' kernels replace
  // these bytes (eager_kernels.h).
  loss.hbm_write_bytes = options.loss == LossKernel::kCompiled ? 0
                         : te                                  ? d.e * d.tok * v
                                                               : kLogitBytes * d.tok * v;
  loss.saved_bytes = LossSavedBytesPerLogit(options.loss, d.e) * d.tok * v;
  loss.elements = d.tok * v;
  b.Add(loss);
  if (d.tp) {
    // Vocab-parallel cross-entropy: the row max, the target logit and the sum of exponentials,
    // one fp32 per token each, over tp (loss_kernel.h): all-reduced one at a time unfused, the
    // max then the other two fused, or all-gathered at once by Transformer Engine's kernel.
    auto all_reduce = [&](const char* name, double values) {
      b.Add(b.Collective(name, CollectiveOp::kAllReduce, "tp", values * kLogitBytes * d.tok,
                         /*blocking=*/true, Phase::kForward));
    };
    if (te) {
      b.Add(b.Collective("tp.all-gather.loss", CollectiveOp::kAllGather, "tp",
                         3 * kLogitBytes * d.tok * D(layout.tp), /*blocking=*/true,
                         Phase::kForward));
    } else if (options.loss == LossKernel::kVocabParallelEager) {
      all_reduce("tp.all-reduce.loss.max", 1);
      all_reduce("tp.all-reduce.loss.target", 1);
      all_reduce("tp.all-reduce.loss.sum", 1);
    } else {
      all_reduce("tp.all-reduce.loss.max", 1);
      all_reduce("tp.all-reduce.loss.sums", 2);
    }
  }
  return b.Take();
}

OpList HeadBackwardOps(const ModelSpec& model, const Layout& layout, const ShardShape& shape,
                       const OpOptions& options) {
  const Dims d = DimsOf(model, layout, shape, options);
  const OpList fwd = HeadForwardOps(model, layout, shape, options);
  Builder b(Phase::kBackwardInput);
  const double v = D(shape.vocab);
  const int gather = WeightGather(b, v * d.d + d.norm_params, 0, options, "head",
                                  Phase::kBackwardInput, DenseGroups(layout));
  Op dloss = b.Base("head.loss.dx", OpKind::kLoss, Phase::kBackwardInput);
  dloss.flops = 2 * d.tok * v;  // softmax - one_hot, scaled.
  dloss.hbm_read_bytes = LossSavedBytesPerLogit(options.loss, d.e) * d.tok * v;
  dloss.hbm_write_bytes = d.e * d.tok * v;
  dloss.elements = d.tok * v;
  b.Add(dloss);
  std::vector<int> dws;
  AppendColumnParallelBackward(b, fwd, d, {"head.unembed"}, "head", d.tok, &dws);
  if (gather >= 0) {
    for (Op& op : b.mutable_ops()) {
      if (op.kind == OpKind::kMatmul) op.deps.push_back(gather);
    }
  }
  b.Add(ElementwiseBackward(b, Find(fwd, "head.norm")));
  AppendGradientReduction(b, layout, HeadReducedParams(model, shape, d), dws, options, "head",
                          DenseGroups(layout));
  return b.Take();
}

std::string_view AttentionKernelName(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFlash2:
      return "fa2";
    case AttentionKernel::kCudnn:
      return "cudnn";
    case AttentionKernel::kFlash:
    case AttentionKernel::kMaterialized:
      break;
  }
  return "";
}

sim::Status ValidateAttentionKernel(const OpOptions& options, const ComputeEfficiency& efficiency) {
  const std::string_view name = AttentionKernelName(options.attention);
  if (name.empty() || efficiency.AttentionCurveOf(name) != nullptr) return sim::Status::Ok();
  return sim::Status::InvalidArgument("attention " + std::string(name) +
                                      " is calibrated for the hopper family (h100, h200) "
                                      "only, not for " +
                                      efficiency.family + " (flash, the family's own kernel, is)");
}

sim::Status ValidateAttentionOption(const OpOptions& options, const Layout& layout) {
  if (options.attention == AttentionKernel::kMaterialized && layout.context_shards() > 1) {
    return sim::Status::InvalidArgument(
        std::string("materialized attention is not modelled with ") +
        (layout.cp > 1 ? "cp=" : "seq_shards=") + std::to_string(layout.context_shards()) +
        " (flash attention, the default, is)");
  }
  return sim::Status::Ok();
}

sim::Status ValidateTpCommOverlap(const OpOptions& options, const Layout& layout) {
  if (options.tp_comm_overlap && layout.tp > 1 && !layout.sp) {
    return sim::Status::InvalidArgument(
        "tp communication overlap needs sequence parallelism with tp=" + std::to_string(layout.tp) +
        " (add sp=1 to the layout), as Megatron-LM requires");
  }
  return sim::Status::Ok();
}

OpOptions FrameworkOptions(Framework framework) {
  const FrameworkDefaults defaults = DefaultsOf(framework);
  OpOptions options;
  options.framework = framework;
  options.precision = defaults.precision;
  options.kernels = defaults.kernels;
  options.loss = defaults.loss;
  options.fp8_library = defaults.fp8_library;
  options.overlap_grad_reduce = defaults.overlap_grad_reduce;
  options.overlap_param_gather = defaults.overlap_param_gather;
  return options;
}

OpOptions WithLayoutDefaults(const OpOptions& options, const Layout& layout) {
  OpOptions out = options;
  if (layout.fsdp > 1 || layout.expert_fsdp() > 1) {
    // podsim's fsdp overlaps its reduce-scatters and gathers under every framework, and the dp
    // reductions of an fsdp layout wait for them (HSDP): they overlap too.
    out.overlap_grad_reduce = true;
    out.overlap_param_gather = true;
  }
  if (options.framework == Framework::kTorchtitan && layout.pp > 1 &&
      (layout.fsdp > 1 || layout.expert_fsdp() > 1)) {
    out.fsdp_reshard_after_forward = false;
    out.fsdp_sync_last_microbatch = true;
  }
  return out;
}

sim::Status ValidateFrameworkLayout(const OpOptions& options, const Layout& layout) {
  if (options.framework != Framework::kTorchtitan) return sim::Status::Ok();
  if (layout.tp > 1 && !layout.sp) {
    return sim::Status::InvalidArgument(
        "torchtitan runs tensor parallelism with sequence parallelism only (its plan shards the "
        "norms over tp): add sp=1 to the layout");
  }
  if ((layout.tp > 1 || layout.pp > 1) && layout.fsdp <= 1 && layout.cp <= 1) {
    return sim::Status::InvalidArgument(
        "torchtitan trains with tp or pp in bf16 only under fsdp or cp (maybe_enable_amp turns "
        "mixed precision off otherwise, and the step runs in fp32): give the layout fsdp > 1 "
        "or cp > 1");
  }
  return sim::Status::Ok();
}

sim::Status ValidateEpCommOverlap(const OpOptions& options, const Layout& layout) {
  if (!options.ep_comm_overlap) return sim::Status::Ok();
  if (layout.ep <= 1) {
    return sim::Status::InvalidArgument(
        "expert all-to-all overlap needs expert parallelism (ep > 1 in the layout)");
  }
  if (layout.schedule != PipelineSchedule::kOneFOneB || layout.virtual_stages > 1) {
    return sim::Status::InvalidArgument(
        "expert all-to-all overlap is modelled on the 1F1B schedule without virtual stages "
        "(got schedule=" +
        std::string(PipelineScheduleName(layout.schedule)) +
        ", virtual_stages=" + std::to_string(layout.virtual_stages) + ")");
  }
  return sim::Status::Ok();
}

sim::Status ValidatePrecision(const OpOptions& options, const Layout& layout) {
  if (!options.precision.casts_weights) return sim::Status::Ok();
  std::string with;
  if (layout.fsdp > 1 || layout.expert_fsdp() > 1) with = "fsdp";
  if (layout.pp > 1) with = "pp > 1";
  if (options.fp8) with = "--fp8";
  if (options.precision.bf16_gradients) with = "--grad-reduce-in-bf16";
  if (with.empty()) return sim::Status::Ok();
  return sim::Status::InvalidArgument(
      "precision amp (PyTorch autocast) is modelled with data, tensor, context and expert "
      "parallelism only, not with " +
      with +
      " (fp32 parameters gathered by fsdp, a forward's casts held per microbatch in flight, "
      "fp8 casts from fp32, and gradients that autocast keeps in fp32 are not)");
}

sim::Status ValidateOpOptions(const OpOptions& options, const Layout& layout) {
  PODSIM_RETURN_IF_ERROR(ValidateAttentionOption(options, layout));
  PODSIM_RETURN_IF_ERROR(ValidatePrecision(options, layout));
  if (options.fp8_dispatch && layout.ep <= 1) {
    return sim::Status::InvalidArgument(
        "an fp8 dispatch needs expert parallelism (ep > 1 in the layout)");
  }
  PODSIM_RETURN_IF_ERROR(ValidateEpCommOverlap(options, layout));
  if (options.ep_comm_overlap && options.recompute_layers.kind != RecomputeLayers::Kind::kAll) {
    // Its overlapped pairs free and hold layers interleaved, which memory.h's walk over whole
    // units does not follow.
    return sim::Status::InvalidArgument(
        "a selection of recomputing layers (--recompute-layers) is not modelled with the "
        "overlapped pairs of --ep-comm-overlap");
  }
  if (!options.offloaded_ops.empty() &&
      (options.recompute != RecomputePolicy::kSaveNamed ||
       options.recompute_layers.kind != RecomputeLayers::Kind::kAll)) {
    // memory.h counts the offloaded bytes of layers that all recompute alike.
    return sim::Status::InvalidArgument(
        "offloaded activations need a save-named recomputation in every layer (a MaxText "
        "policy, or recompute: SAVE_NAMED without --recompute-layers)");
  }
  return ValidateTpCommOverlap(options, layout);
}

OpList OptimizerOps(double params_on_chip, const Layout& layout, const OpOptions& options,
                    double expert_params) {
  const PrecisionRecipe& p = options.precision;
  // The parameters this chip updates: its dp shard under the distributed optimizer (the routed
  // experts' expert-dp shard).
  const double updated = options.distributed_optimizer
                             ? (params_on_chip - expert_params) / layout.grad_dp() +
                                   expert_params / layout.expert_grad_dp()
                             : params_on_chip;
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

bool Fp8ColumnwiseCopies(const OpOptions& options, const topology::ChipSpec& chip) {
  return options.fp8 && options.fp8_library == Fp8Library::kTransformerEngine &&
         (chip.fp8_gemm_tn_only || options.fp8_recipe == Fp8Recipe::kMxfp8);
}

bool Fp8WeightCache(const OpOptions& options, const Layout& layout) {
  return options.fp8 && options.fp8_library == Fp8Library::kTransformerEngine &&
         !options.fp8_all_gather && layout.fsdp == 1 && layout.expert_fsdp() == 1;
}

double LayerActivationBytes(const OpList& forward, const OpOptions& options) {
  // Transformer Engine keeps an fp8 linear layer's input in fp8 (fp8_training.h).
  const bool fp8_inputs = options.fp8 && options.fp8_library == Fp8Library::kTransformerEngine;
  const double fp8_bytes = Fp8ElementBytes(options.fp8_recipe);
  auto saved = [&](const Op& op) {
    return fp8_inputs && IsFp8LinearGemm(op)
               ? op.saved_bytes * fp8_bytes / options.precision.activation_bytes
               : op.saved_bytes;
  };
  double bytes = 0;
  switch (options.recompute) {
    case RecomputePolicy::kNone:
      for (const Op& op : forward) bytes += saved(op) + op.quadratic_saved_bytes;
      break;
    case RecomputePolicy::kSelective:
      for (const Op& op : forward) bytes += saved(op);
      break;
    case RecomputePolicy::kFull:
      // The layer's input: what the first norm keeps (Korthikanti Table 2: 2sbh; /t with sp).
      bytes = Find(forward, "attn.norm").saved_bytes;
      break;
    case RecomputePolicy::kSaveNamed:
      // The kept outputs, and the layer's input where it is named (kSavedInput).
      if (Saved(options, std::string(kSavedInput)) &&
          !Offloaded(options, std::string(kSavedInput))) {
        bytes = Find(forward, "attn.norm").saved_bytes;
      }
      for (const Op& op : forward) {
        if (Saved(options, op.name) && !Offloaded(options, op.name)) bytes += op.output_bytes;
      }
      break;
  }
  return bytes;
}

double LayerOffloadedBytes(const OpList& forward, const OpOptions& options) {
  if (options.recompute != RecomputePolicy::kSaveNamed) return 0;
  double bytes =
      Offloaded(options, std::string(kSavedInput)) ? Find(forward, "attn.norm").saved_bytes : 0;
  for (const Op& op : forward) {
    if (Offloaded(options, op.name)) bytes += op.output_bytes;
  }
  return bytes;
}

}  // namespace podsim::workloads
