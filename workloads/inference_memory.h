// Memory per chip of an inference step -- weights, KV cache, activations and collective
// buffers -- and whether it fits in the chip's HBM; plus the book's pooled counts (Ch7, Ch8).
//
// Model (inference_ops.h gives the sharding):
//   * Weights: the chip's shard of every layer (QKV, O and MLP matrices over tp, and over tp2 in
//     2D; kv projections replicated when tp > kv_heads; norm gains over tp2 only), of the
//     embedding table ([V/tp, D/tp2], padded vocabulary), the final norm and the unembedding
//     (none when tied: it is the embedding's shard). Every parameter at options.weights bytes.
//   * KV cache: layers x sequences x positions x 2 x kv heads x head_dim x options.kv_cache
//     bytes, with the sequences (kv_shard=batch) or kv heads (kv_shard=heads) this chip keeps;
//     positions = context for prefill, context + 1 for decode (the step appends one).
//   * Activations: the residual stream of the step's tokens plus the largest working set of one
//     block (attention: norm output, QKV output, attention output; MLP: norm output and the
//     gate / up / activation outputs; head: the logits, gathered and as fp32 probabilities).
//     Inference keeps nothing for a backward pass, so one layer's worth suffices.
//   * Buffers: one receive buffer of the step's largest collective.

#ifndef PODSIM_WORKLOADS_INFERENCE_MEMORY_H_
#define PODSIM_WORKLOADS_INFERENCE_MEMORY_H_

#include <cstdint>

#include "topology/chip_spec.h"
#include "workloads/inference_ops.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {

// Parameters of one layer held by one chip, a dense one or, with `moe`, one with experts (every
// expert's tp shard; inference_ops.h). REQUIRES: the layout validates for the model.
double InferenceLayerParamsPerChip(const ModelSpec& model, const InferenceLayout& layout,
                                   bool moe = false);
// Parameters held by one chip: all layers, the embedding shard, final norm and unembedding
// shard. `layer_params` (optional) receives the layers' part.
double InferenceParamsPerChip(const ModelSpec& model, const InferenceLayout& layout,
                              double* layer_params = nullptr);

// Bytes of the K and V of `sequences` x `tokens` positions, all layers, unsharded:
// sequences x tokens x 2 x L x K x H x bytes (formulas.md 2.4, Ch7).
double KvCacheBytes(const ModelSpec& model, int64_t sequences, int64_t tokens, DType dtype);

struct InferenceMemoryBreakdown {
  double params = 0;  // Parameter count on the chip (not bytes).
  double weight_bytes = 0;
  double kv_cache_bytes = 0;
  double activation_bytes = 0;
  double residual_bytes = 0;  // The residual stream's part of activation_bytes.
  double buffer_bytes = 0;
  double total_bytes = 0;
  double hbm_bytes = 0;
  bool fits = false;
  double headroom_bytes = 0;  // hbm_bytes - total_bytes: negative is the shortfall.
};

// Memory of one chip (REQUIRES: ValidateInferenceLayout(layout, model, ..., options) ok).
InferenceMemoryBreakdown InferenceMemory(const ModelSpec& model, const InferenceLayout& layout,
                                         const InferenceOptions& options,
                                         const topology::ChipSpec& chip);

// The largest batch whose InferenceMemory fits, with the other options as given: a multiple of
// dp (of dp*tp with kv_shard=batch), at most kMaxInferenceBatch; 0 when not even the smallest
// does. REQUIRES: the layout validates for the model with batch = that smallest multiple.
int64_t MaxBatchThatFits(const ModelSpec& model, const InferenceLayout& layout,
                         const InferenceOptions& options, const topology::ChipSpec& chip);

// The book's pooled count (Ch7 Q2, Ch8 "smallest topology"): all weights (TotalParams at
// options.weights bytes) plus the KV cache of options.batch sequences of options.context tokens,
// over one chip's HBM. Fractional (round up for whole chips); ignores activations, replication
// and how evenly the cache splits, which InferenceMemory counts per chip.
double PooledChipsNeeded(const ModelSpec& model, const InferenceOptions& options,
                         const topology::ChipSpec& chip);
// The book's pooled batch limit: floor((chips x HBM - weights) / KV of one sequence of
// options.context tokens), at most kMaxInferenceBatch; 0 when the weights alone do not fit.
int64_t PooledMaxBatch(const ModelSpec& model, const InferenceOptions& options, int64_t chips,
                       const topology::ChipSpec& chip);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_INFERENCE_MEMORY_H_
