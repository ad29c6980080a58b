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
//
// Mixture of experts (experts > 0; Shazeer et al. 2017, GShard, Switch, Mixtral, DeepSeekMoE): the
// layers after the first `dense_layers` replace the MLP by a router (a [D, E] linear layer and a
// top-k), `experts` routed expert MLPs of width `expert_ffn` of which each token uses `top_k`, and
// optionally shared experts that every token uses, counted as one MLP of total width
// `shared_ffn` (DeepSeekMoE fuses its shared experts so). Parameters count every expert;
// FLOPs per token count the active ones (the router, top_k experts and the shared experts), as
// the MoE papers state "activated parameters". Routing is balanced (every expert gets
// tokens x top_k / experts); no token is dropped.
//
// Multi-head latent attention (kv_lora > 0; DeepSeek-AI 2024, DeepSeek-V2 sec. 2.1): keys and
// values come from a per-token latent of width kv_lora, queries from one of width q_lora (or
// from the input when q_lora is 0); each head's query and key have head_dim "nope" dims plus
// rope_dim rotary dims (the rotary key is one per token, shared by the heads), its value
// v_head_dim dims. Weights: the down projections D x q_lora and D x (kv_lora + rope_dim), the up
// projections q_lora x N (head_dim + rope_dim) and kv_lora x N (head_dim + v_head_dim), the
// output N v_head_dim x D, and RMSNorm gains on the two latents. kv_heads equals heads.

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
  // Mixture of experts (header comment); experts == 0: every MLP is dense, of width `ffn`.
  int64_t experts = 0;       // Routed experts of each MoE layer.
  int64_t top_k = 0;         // Routed experts each token uses.
  int64_t expert_ffn = 0;    // FFN width of one routed expert.
  int64_t shared_ffn = 0;    // Total FFN width of the shared experts; 0: none.
  int64_t dense_layers = 0;  // The first layers keep a dense MLP of width `ffn`.
  // Multi-head latent attention (header comment); kv_lora == 0: standard (grouped) attention.
  int64_t q_lora = 0;
  int64_t kv_lora = 0;
  int64_t rope_dim = 0;
  int64_t v_head_dim = 0;

  bool moe() const { return experts > 0; }
  // Whether layer `layer` (0-based) has a mixture of experts instead of a dense MLP.
  bool IsMoeLayer(int64_t layer) const { return experts > 0 && layer >= dense_layers; }
  int64_t MoeLayers() const { return experts > 0 ? layers - dense_layers : 0; }

  // Widths of the attention projections: N*H and K*H.
  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
  bool mla() const { return kv_lora > 0; }
  // Per head: the query/key dims the scores contract over, and the value (and output) dims.
  int64_t qk_head_dim() const { return head_dim + rope_dim; }
  int64_t value_head_dim() const { return mla() ? v_head_dim : head_dim; }
  // The latent projections of MLA (0 without): q's input width (q_lora, or D without it).
  int64_t q_input_dim() const { return q_lora > 0 ? q_lora : d_model; }

  // Weights of one layer's matmuls: Q, K, V, O and the MLP matrices (no biases, no norms).
  int64_t AttentionMatmulParamsPerLayer() const;  // 2D(N+K)H; MLA: its five matrices
  // Weights every tp rank holds whole: the norm gains and, with MLA, the down projections and
  // latent norms (Megatron-Core's MLA keeps them "duplicated").
  int64_t TpReplicatedParamsPerLayer() const;
  int64_t MlpMatmulParamsPerLayer() const;  // 3DF gated, 2DF plain
  // Norm scales/shifts and biases of one layer.
  int64_t SmallParamsPerLayer() const;
  // A dense layer: attention, MLP and small parameters.
  int64_t ParamsPerLayer() const;
  // An MoE layer's parts: the router [D, E], one routed expert's matrices, the shared experts'
  // matrices; and the whole layer (attention, router, every expert, shared experts, norms).
  int64_t RouterParamsPerLayer() const { return experts * d_model; }
  int64_t ExpertParams() const;  // (3 gated, 2 plain) D expert_ffn
  int64_t SharedExpertParamsPerLayer() const;
  int64_t MoeParamsPerLayer() const;
  // Input embedding (VD) plus learned positions; unembedding VD (0 when tied); final norm.
  int64_t EmbeddingParams() const;
  int64_t UnembeddingParams() const;
  int64_t FinalNormParams() const;
  int64_t TotalParams() const;
  // Weights that take part in a matmul per token: all layers' matrices (of an MoE layer the
  // router, top_k routed experts and the shared experts: the activated ones) plus the unembedding
  // (tied or not: the tied matrix is still multiplied). Excludes the embedding lookup.
  int64_t MatmulParams() const;

  // Forward FLOPs of one token in a sequence of length `seq`: 2 x MatmulParams() plus attention
  // scores 4*L*N*H*(pairs per token). Training (forward + backward, no recomputation) is 3x.
  double ForwardFlopsPerToken(int64_t seq, AttentionCount count) const;
  double TrainingFlopsPerToken(int64_t seq, AttentionCount count) const;
  // Attention-score FLOPs alone, forward, per token (4*L*N*H*T for kFull).
  double AttentionForwardFlopsPerToken(int64_t seq, AttentionCount count) const;

  // Bytes of K and V cached per token, all layers: 2*L*K*H*bytes_per_element (MLA: the latent and
  // rotary key, L*(kv_lora + rope_dim)*bytes_per_element).
  double KvCacheBytesPerToken(double bytes_per_element) const;
};

// Checks the fields: all sizes >= 1, kv_heads divides heads; with experts, 1 <= top_k <=
// experts, expert_ffn >= 1, dense_layers < layers, no biases (not modelled for experts); without
// experts, no MoE field set; with kv_lora, rope_dim and v_head_dim >= 1 and kv_heads == heads,
// without it no MLA field set. InvalidArgument naming the field.
sim::Status ValidateModel(const ModelSpec& model);

// The preset names: llama2-13b, llama3-8b, llama3-70b, llama3-405b, gpt3-175b, mixtral-8x7b,
// mixtral-8x22b, qwen2-57b-a14b, deepseek-v2, deepseek-v3.
const std::vector<std::string_view>& ModelPresetNames();

// Parses MODEL: a preset name, a preset with overrides of the custom keys
// ("mixtral-8x7b:layers=4"), or
//   custom:layers=..,d_model=..,ffn=..,heads=..,kv_heads=..,head_dim=..,vocab=..
//          [,gated=true|false][,tied=true|false][,bias=true|false][,norm=rms|layer][,positions=N][,dropout=true|false]
//          [,experts=E,top_k=K[,expert_ffn=F][,shared_ffn=F][,dense_layers=N]]
//          [,kv_lora=..,rope_dim=..,v_head_dim=..[,q_lora=..]]
// (expert_ffn defaults to ffn; with MLA head_dim is the per-head "nope" dim).
// Errors: NotFound for an unknown preset ("unknown model 'llama3-7b' (did you mean
// 'llama3-8b'?); known: ..."), ParseError/InvalidArgument naming the key for a bad custom string.
sim::StatusOr<ModelSpec> ParseModel(std::string_view text);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_MODEL_SPEC_H_
