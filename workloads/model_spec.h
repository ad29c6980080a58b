// ModelSpec: a dense decoder-only transformer, its presets, and the arithmetic every other part of
// workloads/ builds on (parameter counts, FLOPs per token, KV-cache bytes).
//
// Notation follows the book (reference/formulas.md 2.4): L layers, D = d_model, F = ffn, N query
// heads, K key/value heads, H head dim, V vocab, T sequence length. Counting conventions:
//   * Parameters count every weight: Q (DNH), K and V (2DKH), O (NHD), the MLP (3DF gated, 2DF
//     plain), norm scales (and shifts for LayerNorm), biases when the model has them, the input
//     embedding (VD), the unembedding (VD unless tied) and learned position embeddings.
//   * FLOPs are 2 per multiply-add ("2 x product of all dims", formulas.md 2.4). Matmul FLOPs per
//     token are 2 x the weights used in matmuls (the input embedding is a lookup: 0 FLOPs).
//   * Attention score FLOPs (QK^T and PV) are counted either in full (T^2 query-key pairs per
//     sequence: the book's 12BT^2NH, Megatron's eq. 3, PaLM's 12LHQT -- the "model FLOPs"
//     convention) or causally (T(T+1)/2 pairs: the work a causal flash kernel that skips masked
//     tiles does; MaxText after PR #1988 halves likewise). Callers say which.
// Norms, softmax and other elementwise FLOPs are O(BTD) and left out of the per-token figures (as
// the book and Megatron do); layer_ops.h counts them per op.

#ifndef PODSIM_WORKLOADS_MODEL_SPEC_H_
#define PODSIM_WORKLOADS_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace podsim::workloads {

enum class NormKind {
  kRms,    // RMSNorm: a scale vector (LLaMA).
  kLayer,  // LayerNorm: scale and shift (GPT-3, Megatron).
};

enum class AttentionCount {
  kFull,    // T^2 query-key pairs per sequence (model-FLOPs convention).
  kCausal,  // T(T+1)/2 pairs (what a causal, tile-skipping kernel computes).
};

struct ModelSpec {
  std::string name;  // Preset name, or the custom:... string as given.
  // Where a preset's dimensions come from (paper, table, reference row); empty for custom models.
  std::string source;
  int64_t layers = 0;
  int64_t d_model = 0;
  int64_t ffn = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab = 0;
  bool gated_mlp = true;         // 3 matrices (SwiGLU) vs 2 (GeLU).
  bool tied_embeddings = false;  // The unembedding reuses the input embedding.
  bool linear_biases = false;    // Biases on every linear layer (GPT-3 / Megatron).
  NormKind norm = NormKind::kRms;
  int64_t learned_positions = 0;  // Rows of a learned position embedding; 0 = rotary (no params).
  bool dropout = false;           // Dropout after attention and MLP (its masks cost activations).

  // Widths of the attention projections: N*H and K*H.
  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }

  // Weights of one layer's matmuls: Q, K, V, O and the MLP matrices (no biases, no norms).
  int64_t AttentionMatmulParamsPerLayer() const;  // 2D(N+K)H
  int64_t MlpMatmulParamsPerLayer() const;        // 3DF gated, 2DF plain
  // Norm scales/shifts and biases of one layer.
  int64_t SmallParamsPerLayer() const;
  int64_t ParamsPerLayer() const;
  // Input embedding (VD) plus learned positions; unembedding VD (0 when tied); final norm.
  int64_t EmbeddingParams() const;
  int64_t UnembeddingParams() const;
  int64_t FinalNormParams() const;
  int64_t TotalParams() const;
  // Weights that take part in a matmul per token: all layers' matrices plus the unembedding
  // (tied or not: the tied matrix is still multiplied). Excludes the embedding lookup.
  int64_t MatmulParams() const;

  // Forward FLOPs of one token in a sequence of length `seq`: 2 x MatmulParams() plus attention
  // scores 4*L*N*H*(pairs per token). Training (forward + backward, no recomputation) is 3x.
  double ForwardFlopsPerToken(int64_t seq, AttentionCount count) const;
  double TrainingFlopsPerToken(int64_t seq, AttentionCount count) const;
  // Attention-score FLOPs alone, forward, per token (4*L*N*H*T for kFull).
  double AttentionForwardFlopsPerToken(int64_t seq, AttentionCount count) const;

  // Bytes of K and V cached per token, all layers: 2*L*K*H*bytes_per_element.
  double KvCacheBytesPerToken(double bytes_per_element) const;
};

// Checks the fields: all sizes >= 1, kv_heads divides heads. InvalidArgument naming the field.
sim::Status ValidateModel(const ModelSpec& model);

// The preset names: llama2-13b, llama3-8b, llama3-70b, llama3-405b, gpt3-175b.
const std::vector<std::string_view>& ModelPresetNames();

// Parses MODEL: a preset name, or
//   custom:layers=..,d_model=..,ffn=..,heads=..,kv_heads=..,head_dim=..,vocab=..
//          [,gated=true|false][,tied=true|false][,bias=true|false][,norm=rms|layer][,positions=N][,dropout=true|false]
// Errors: NotFound for an unknown preset ("unknown model 'llama3-7b' (did you mean
// 'llama3-8b'?); known: ..."), ParseError/InvalidArgument naming the key for a bad custom string.
sim::StatusOr<ModelSpec> ParseModel(std::string_view text);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_MODEL_SPEC_H_
