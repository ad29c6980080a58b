#include "workloads/inference_memory.h"

#include <algorithm>
#include <cmath>

namespace podsim::workloads {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

constexpr double kActivationBytes = 2;   // bf16, as inference_ops.cc.
constexpr double kProbabilityBytes = 4;  // fp32 softmax of the sampled logits.

// Norm parameters per element of a row: a scale (RMS) or a scale and a shift (Layer).
double GainsPerWidth(const ModelSpec& model) { return model.norm == NormKind::kLayer ? 2 : 1; }

// The smallest batch a layout accepts.
int64_t BatchGranule(const InferenceLayout& layout) {
  return int64_t{layout.dp} * (layout.kv_shard == KvShard::kBatch ? layout.tp : 1);
}

}  // namespace

double InferenceLayerParamsPerChip(const ModelSpec& model, const InferenceLayout& layout,
                                   bool moe) {
  InferenceOptions any;  // The weight shards do not depend on batch or phase.
  any.batch = BatchGranule(layout);
  const InferenceShape s = InferenceShapeOf(layout, model, any);
  const double h = D(model.head_dim);
  const double q = D(s.heads) * h, kv = D(s.kv_heads) * h, d_in = D(s.d_in), f = D(s.ffn);
  double params = d_in * (q + 2 * kv) + q * d_in;  // QKV and O.
  if (model.mla()) {
    // Latent attention (inference_ops.h): the down projections and latent norms on every chip,
    // the up projections and the output split by heads.
    const double heads = D(s.heads), lora = D(model.kv_lora), rope = D(model.rope_dim);
    const double v = D(model.v_head_dim), nope = D(model.head_dim);
    params = d_in * (lora + rope) + lora + D(model.q_input_dim()) * heads * (nope + rope) +
             lora * heads * (nope + v) + heads * v * d_in;
    if (model.q_lora > 0) params += d_in * D(model.q_lora) + D(model.q_lora);
  }
  if (moe) {
    // The router on every chip; every routed expert's and the shared experts' tp shards, or with
    // ep the chip's E/ep experts and the shared experts whole.
    params += D(model.RouterParamsPerLayer());
    const double local = D(model.experts) / layout.ep;
    const double split = layout.ep > 1 ? 1 : layout.tp;
    params += (model.gated_mlp ? 3 : 2) * d_in *
              (local * D(model.expert_ffn) + D(model.shared_ffn)) / split;
    if (model.linear_biases) {
      params += local * ((model.gated_mlp ? 2 : 1) * D(model.expert_ffn) / split + d_in);
    }
  } else {
    params += (model.gated_mlp ? 3 : 2) * d_in * f;  // MLP.
  }
  params += 2 * GainsPerWidth(model) * d_in;  // Two norms, split over tp2.
  if (model.linear_biases) {
    params += (q + 2 * kv) + d_in;  // QKV and O; an MoE layer's experts above.
    if (!moe) params += (model.gated_mlp ? 2 : 1) * f + d_in;
  }
  return params;
}

double InferenceParamsPerChip(const ModelSpec& model, const InferenceLayout& layout,
                              double* layer_params) {
  InferenceOptions any;
  any.batch = BatchGranule(layout);
  const InferenceShape s = InferenceShapeOf(layout, model, any);
  const double layers =
      D(model.layers - model.MoeLayers()) * InferenceLayerParamsPerChip(model, layout) +
      D(model.MoeLayers()) * InferenceLayerParamsPerChip(model, layout, /*moe=*/true);
  const double table = D(s.vocab) * D(s.d_in);
  double other = table + D(model.learned_positions) * D(s.d_residual);
  other += GainsPerWidth(model) * D(s.d_in);  // Final norm.
  if (!model.tied_embeddings) other += table;
  if (layer_params != nullptr) *layer_params = layers;
  return layers + other;
}

double KvCacheBytes(const ModelSpec& model, int64_t sequences, int64_t tokens, DType dtype) {
  return D(sequences) * D(tokens) * model.KvCacheBytesPerToken(DTypeBytes(dtype));
}

InferenceMemoryBreakdown InferenceMemory(const ModelSpec& model, const InferenceLayout& layout,
                                         const InferenceOptions& options,
                                         const topology::ChipSpec& chip) {
  const InferenceShape s = InferenceShapeOf(layout, model, options);
  const double e = kActivationBytes, h = D(model.head_dim);
  InferenceMemoryBreakdown m;
  m.params = InferenceParamsPerChip(model, layout);
  m.weight_bytes = m.params * DTypeBytes(options.weights);
  // Latent attention caches kv_lora + rope_dim per token, whole on every chip (inference_ops.h).
  const double cached_per_token =
      model.mla() ? D(model.kv_lora + model.rope_dim) : 2 * D(s.attn_kv_heads) * h;
  m.kv_cache_bytes = D(model.layers) * D(s.attn_sequences) * D(s.cache_tokens) * cached_per_token *
                     DTypeBytes(options.kv_cache);

  const double tok = D(s.tokens), rows = D(s.sequences);
  const double tok_a = D(s.attn_sequences * s.query_tokens);
  const double d_in = D(s.d_in), f = D(s.ffn), vocab = D(s.vocab), full_vocab = vocab * layout.tp;
  m.residual_bytes = e * tok * D(s.d_residual);
  const double attention =
      e * tok * (d_in + D(s.heads + 2 * s.kv_heads) * h) + e * tok_a * D(s.attn_heads) * h;
  double mlp = e * tok * (d_in + (model.gated_mlp ? 3 : 2) * f);
  if (model.moe()) {
    // The routed copies: their input, gate/up outputs (or up) and expert outputs.
    // With ep a chip routes and runs its share of the tokens (inference_ops.h).
    const double fe = D(layout.ep > 1 ? model.expert_ffn : model.expert_ffn / layout.tp);
    const double share = layout.ep > 1 ? std::ceil(tok / layout.tp) : tok;
    const double routed = e * share * D(model.top_k) * (2 * d_in + (model.gated_mlp ? 2 : 1) * fe);
    mlp = std::max(mlp, routed + e * share * D(model.experts));
  }
  const double head =
      e * rows * (d_in + vocab + full_vocab) + kProbabilityBytes * rows * full_vocab;
  m.activation_bytes = m.residual_bytes + std::max({attention, mlp, head});

  double largest = 0;
  for (const OpList& ops :
       {InferenceEmbeddingOps(model, layout, options), InferenceLayerOps(model, layout, options),
        model.moe() ? InferenceMoeLayerOps(model, layout, options) : OpList{},
        InferenceHeadOps(model, layout, options)}) {
    for (const Op& op : ops) {
      // A collective's buffers hold its array; an ep all-to-all's only this chip's send and
      // receive shares of the group's.
      const bool exchange =
          op.collective == collectives::CollectiveOp::kAllToAll && op.axis == "ep";
      largest = std::max(largest, exchange ? 2 * op.comm_bytes / layout.ep : op.comm_bytes);
    }
  }
  m.buffer_bytes = largest;

  m.total_bytes = m.weight_bytes + m.kv_cache_bytes + m.activation_bytes + m.buffer_bytes;
  m.hbm_bytes = chip.hbm_bytes;
  m.headroom_bytes = m.hbm_bytes - m.total_bytes;
  m.fits = m.headroom_bytes >= 0;
  return m;
}

int64_t MaxBatchThatFits(const ModelSpec& model, const InferenceLayout& layout,
                         const InferenceOptions& options, const topology::ChipSpec& chip) {
  const int64_t granule = BatchGranule(layout);
  InferenceOptions o = options;
  auto total = [&](int64_t batch) {
    o.batch = batch;
    return InferenceMemory(model, layout, o, chip).total_bytes;
  };
  // Every term is affine in the batch: solve, then confirm against the rounding of doubles.
  const double one = total(granule);
  if (one > chip.hbm_bytes) return 0;
  const double per_granule = total(2 * granule) - one;
  const int64_t most = kMaxInferenceBatch / granule;
  int64_t n = per_granule <= 0
                  ? most
                  : 1 + static_cast<int64_t>(std::floor(std::min<double>(
                            (chip.hbm_bytes - one) / per_granule, static_cast<double>(most))));
  n = std::min(n, most);
  while (n > 1 && total(n * granule) > chip.hbm_bytes) --n;
  while (n < most && total((n + 1) * granule) <= chip.hbm_bytes) ++n;
  return n * granule;
}

double PooledChipsNeeded(const ModelSpec& model, const InferenceOptions& options,
                         const topology::ChipSpec& chip) {
  const double weights = D(model.TotalParams()) * DTypeBytes(options.weights);
  return (weights + KvCacheBytes(model, options.batch, options.context, options.kv_cache)) /
         chip.hbm_bytes;
}

int64_t PooledMaxBatch(const ModelSpec& model, const InferenceOptions& options, int64_t chips,
                       const topology::ChipSpec& chip) {
  const double weights = D(model.TotalParams()) * DTypeBytes(options.weights);
  const double free = D(chips) * chip.hbm_bytes - weights;
  const double per_sequence = KvCacheBytes(model, 1, options.context, options.kv_cache);
  if (free < 0) return 0;
  if (per_sequence <= 0) return kMaxInferenceBatch;
  return static_cast<int64_t>(
      std::floor(std::min(free / per_sequence, static_cast<double>(kMaxInferenceBatch))));
}

}  // namespace podsim::workloads
