// The ops of one inference step on one chip -- a prefill over the prompts or one decode step --
// in the OpList currency of training (op.h): embedding, one transformer layer, and the head, with
// the model-parallel collectives on the critical path. Units and conventions as in op.h; every
// op has phase kForward.
//
// Layout (InferenceLayout): model replicas dp, each over tp x tp2 chips.
//   1D (tp2 = 1): Megatron tensor parallelism over tp (the book's Ch7 "model parallelism"):
//     column-parallel QKV / gate / up, row-parallel O / down, vocab-parallel embedding and
//     unembedding; an all-reduce of [tokens, D] after O and after down. Blocking.
//   2D weight-stationary (tp2 > 1; Pope et al. 2022, "Efficiently Scaling Transformer Inference"
//     sec. 3.2.2, the book's Ch7 App. B): every weight matrix is sharded over d_model by tp2 (the
//     book's X) and over heads / ffn / vocab by tp (the book's YZ): W_in[D_tp2, F_tp],
//     W_out[F_tp, D_tp2]. The residual stream is sharded over both, [tokens, D/(tp*tp2)]. Per
//     block: all-gather over tp -> [tokens, D/tp2]; the matmul's partial sums over tp2 are
//     reduce-scattered over tp2 (along heads or ffn); the result is all-gathered over tp2 before
//     the second matmul, whose partial sums are reduce-scattered over tp back into the residual.
//     Norms on the D/tp2-wide rows all-reduce their sums of squares over tp2 (fp32, one per
//     token). With F = 4D this is the book's T_2D = 2BD/(XW) + 4BF/(YZW) when tp's groups span
//     two torus axes (I12).
// KV cache (kv_shard):
//   heads  (default) attention and the cache are split by heads over tp*tp2 chips: N/(tp*tp2)
//          query heads and K/(tp*tp2) kv heads per chip, or one kv head replicated on
//          tp*tp2/K chips when tp*tp2 > K (GQA/MQA: each chip keeps the kv head its query heads
//          use). In 2D, when the tp shard's kv heads do not split over tp2, they are all-reduced
//          over tp2 instead of reduce-scattered.
//   batch  (1D only) attention and the cache are split by sequences over tp: each chip keeps
//          all K kv heads of batch/(dp*tp) sequences, so nothing is replicated when tp > K. The
//          book's "2 AllToAlls per attention layer" (Ch7, Distributing the KV cache): the QKV
//          projection's output [tokens, N+2K heads] goes from head- to batch-sharded, and the
//          attention output back. (The book first shards kv heads K-way and batch over the rest;
//          podsim shards batch over the whole tp group.)
// Phases: prefill runs `batch` prompts of `context` tokens with causal attention and writes
// their K and V to the cache; decode runs one new token for each of `batch` sequences that
// already hold `context` tokens: the new K and V are appended first, then attention reads all
// context + 1 cached positions (as vLLM's reshape_and_cache + paged attention do). The KV cache
// is part of each decode step's HBM traffic; weights are read once per step.
// Head: final norm, unembedding and sampling for the last token of each sequence only -- the
// next-token distribution is all generation uses (vLLM's and JetStream's prefill compute logits
// for the last position only; Hugging Face's logits_to_keep=1), so both phases unembed `batch`
// rows. With tp > 1 the vocab-sharded logits are all-gathered before sampling (vLLM gathers
// logits to sample).
// Precision: every parameter (matmul weights, biases, norm gains, embeddings) is stored and read
// at `weights` bytes (the book's accounting: "70e9 params int8 = 70 GB"); matmuls compute in
// bf16 on dequantized weights (the book's "int8 weights + bf16 FLOPs", Ch7); activations are
// bf16 in HBM; collective payloads are `collective` bytes per element (the book's int8 TP, Ch7
// App. C). The cache holds K and V at `kv_cache` bytes.
// Mixture of experts (models with experts, 1D layouts; vLLM's tensor-parallel MoE without expert
// parallelism): the layers after the dense ones replace the MLP by the router ([D, E], replicated
// on every chip of a replica) and its top-k, the routed experts with each expert's ffn split over
// tp, run as grouped GEMMs over the step's tokens x top_k routed copies, and the shared experts
// as a dense tp-split MLP; one tp all-reduce sums them. Routing is taken uniform: a step of T
// tokens reaches E (1 - (1 - k/E)^T) experts in expectation, and only their weights are read (a
// decode step of a small batch reads few experts). With expert parallelism (ep > 1; vLLM's
// --enable-expert-parallel with DeepEP-style all-to-alls) the experts are whole and split over the
// ep chips instead: each chip routes its 1/tp share of the replica's tokens, sends the routed
// copies to their experts' chips by an all-to-all over the ep group (moe.dispatch), runs its
// E/ep experts on what it receives (balanced: its share x top_k rows, reading the local experts
// the ep group's tokens reach), sends the outputs back (moe.combine_a2a), runs the shared experts
// whole on its share, and the tp group all-gathers the shares (instead of the all-reduce).
// Latent attention (models with kv_lora; 1D, cache by heads; vLLM's DeepseekV2 MLA under tensor
// parallelism): the down projections (q_lora, kv_lora + rope_dim) and their norms run on every
// chip, the up projections and the output are split by heads. The cache holds the latent and the
// rotary key, kv_lora + rope_dim per token and layer, whole on every chip of the tp group.
// Prefill up-projects the prompt's keys and values and runs flash attention (scores over
// head_dim + rope_dim, values over v_head_dim); decode absorbs the up projections (DeepSeek-V2
// sec. 2.1.2): attn.q_absorb takes each head's query into the latent space, attn.core attends
// over the cached latents (scores over kv_lora + rope_dim, values over kv_lora) and
// attn.v_absorb maps the result out per head before attn.out.
// FLOPs: matmuls 2mkn; attention 4 x head_dim x query heads x query-key pairs (causal pairs in
// prefill, as a causal flash kernel computes; model_flops by `model_flops_count`); elementwise
// counts as in layer_ops.h.

#ifndef PODSIM_WORKLOADS_INFERENCE_OPS_H_
#define PODSIM_WORKLOADS_INFERENCE_OPS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "topology/mesh_mapping.h"
#include "workloads/model_spec.h"
#include "workloads/op.h"

namespace podsim::workloads {

enum class KvShard { kHeads, kBatch };

// "heads", "batch".
std::string_view KvShardName(KvShard shard);

struct InferenceLayout {
  int tp = 1;   // Heads, kv heads, ffn and vocabulary (1D and 2D).
  int tp2 = 1;  // d_model (2D weight-stationary); 1 = 1D.
  int dp = 1;   // Model replicas; the batch is split over them.
  KvShard kv_shard = KvShard::kHeads;
  // Expert parallelism (models with experts; header comment): 1, or a multiple of tp whose ep/tp
  // divides dp: the routed experts are split over the tp chips of ep/tp replicas.
  int ep = 1;

  int64_t chips() const { return int64_t{tp} * tp2 * dp; }
  int model_parallel() const { return tp * tp2; }  // Chips of one replica.
  // The replicas of an ep group (1 without expert parallelism or within one replica).
  int ep_replicas() const { return ep > tp ? ep / tp : 1; }

  // "tp=8,tp2=1,dp=1[,kv_shard=batch][,ep=..]": every axis written, kv_shard and ep only when not
  // default.
  std::string ToString() const;

  // The mesh axes for topology::MapMesh: tp, tp2, dp (tp2 ranks with dp there; listing it first
  // gives it the faster links on ties); with ep_replicas() > 1, "ep" takes that part of dp.
  std::vector<topology::MeshAxis> MeshAxes() const;
  // The mesh axes of the ep group's all-to-alls: tp, and "ep" when it spans replicas.
  std::vector<std::string> EpGroupAxes() const;
};

// Parses "tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..]"; omitted axes are 1. Errors name
// the key: unknown keys get a spelling suggestion (ParseError / NotFound / InvalidArgument as
// ParseLayout). Checks only the text; ValidateInferenceLayout checks it against a model, system and
// options.
sim::StatusOr<InferenceLayout> ParseInferenceLayout(std::string_view text);

// Storage types: bytes per element bf16 2, int8 1, int4 0.5.
// Datatypes of weights, KV caches and collective payloads. Weights in int8 and int4 are read
// narrow and multiplied at the bf16 peak (weight-only quantization); fp8 weights are multiplied
// in fp8 with fp8 activations, at the chip's fp8 peak (ModelOpt's FP8 checkpoints for
// TensorRT-LLM), and need a chip with one.
enum class DType { kBf16, kInt8, kInt4, kFp8 };
std::string_view DTypeName(DType dtype);  // "bf16", "int8", "int4", "fp8".
double DTypeBytes(DType dtype);
// Parses "bf16", "int8", "int4", "fp8": NotFound with a suggestion otherwise ("unknown dtype
// 'in8' (did you mean 'int8'?); known: bf16, int8, int4, fp8").
sim::StatusOr<DType> ParseDType(std::string_view text);

enum class InferencePhase { kPrefill, kDecode };
std::string_view InferencePhaseName(InferencePhase phase);  // "prefill", "decode".
// Parses "prefill" / "decode" (NotFound with a suggestion otherwise).
sim::StatusOr<InferencePhase> ParseInferencePhase(std::string_view text);

struct InferenceOptions {
  DType weights = DType::kBf16;
  DType kv_cache = DType::kBf16;
  DType collective = DType::kBf16;  // Activation payloads of the tp / tp2 collectives.
  InferencePhase phase = InferencePhase::kDecode;
  int64_t batch = 1;  // Sequences per step, whole system (split over dp).
  // Decode: tokens already in each sequence's KV cache. Prefill: prompt length.
  int64_t context = 1;
  AttentionCount model_flops_count = AttentionCount::kFull;  // Prefill attention's model FLOPs.
};

// Largest batch and context accepted: far above any real serving step, small enough that their
// product stays exact in int64 and double.
inline constexpr int64_t kMaxInferenceBatch = int64_t{1} << 24;
inline constexpr int64_t kMaxInferenceContext = int64_t{1} << 24;

// Checks `layout` against the model, the system's chip count and the options. Returns the first
// failure as InvalidArgument naming the axis or option and the values (also for a model with
// experts, whose inference is not modelled yet), e.g.
//   "layout tp=3,tp2=1,dp=1: tp*tp2 = 3 must divide heads=64 of model 'llama3-70b'".
sim::Status ValidateInferenceLayout(const InferenceLayout& layout, const ModelSpec& model,
                                    int64_t chip_count, const InferenceOptions& options);

// What one chip holds and computes in one step (REQUIRES: ValidateInferenceLayout ok).
struct InferenceShape {
  int64_t sequences = 0;       // Sequences of one replica: batch / dp.
  int64_t query_tokens = 0;    // New tokens per sequence: context (prefill) or 1 (decode).
  int64_t tokens = 0;          // sequences * query_tokens: rows through the matmuls.
  int64_t keys = 0;            // Keys of the last query: context (prefill) or context + 1.
  int64_t cache_tokens = 0;    // Cached positions per sequence after the step (= keys).
  int64_t attn_sequences = 0;  // Sequences whose attention runs here: sequences or / tp (batch).
  int64_t heads = 0;           // Query heads of the QKV projection here: N / tp.
  int64_t kv_heads = 0;        // KV heads of the projection here: K / tp, or 1 when tp > K.
  int64_t attn_heads = 0;      // Query heads attended here: N / (tp*tp2), or N (batch).
  int64_t attn_kv_heads = 0;   // KV heads cached here: K / (tp*tp2) or 1 (heads), K (batch).
  int64_t d_in = 0;            // Matmul input width over d_model: D / tp2.
  int64_t d_residual = 0;      // Residual stream width here: D (1D) or D / (tp*tp2) (2D).
  int64_t ffn = 0;             // F / tp.
  int64_t vocab = 0;           // ceil(V / tp): the vocabulary is padded to a multiple of tp.
};
InferenceShape InferenceShapeOf(const InferenceLayout& layout, const ModelSpec& model,
                                const InferenceOptions& options);

// One transformer layer on one chip (REQUIRES: ValidateInferenceLayout ok; options.phase is
// ignored, the function says the phase). Op names: attn.norm, attn.qkv, attn.rotary,
// attn.kv_write, attn.core, attn.out, attn.residual, mlp.norm, mlp.gate, mlp.up, mlp.act,
// mlp.down, mlp.residual; collectives "<axis>.<collective>.<what>" on axes tp and tp2. In a layer
// with a mixture of experts (InferenceMoeLayerOps) the MLP's ops are moe.router,
// moe.topk, moe.experts.gate/up/act/down, moe.combine, the shared experts' moe.shared.* and
// moe.sum (header comment, "Mixture of experts").
OpList PrefillLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                       const InferenceOptions& options);
OpList DecodeLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                      const InferenceOptions& options);
// PrefillLayerOps or DecodeLayerOps by options.phase.
OpList InferenceLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                         const InferenceOptions& options);
// The same for a layer with experts (REQUIRES: model.moe()).
OpList InferenceMoeLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                            const InferenceOptions& options);

// Token (and learned position) embedding of the step's tokens: embed.lookup, then the tp
// all-reduce (1D) or reduce-scatter (2D) of the vocab-parallel rows; embed.positions.
OpList InferenceEmbeddingOps(const ModelSpec& model, const InferenceLayout& layout,
                             const InferenceOptions& options);
// Final norm, unembedding and sampling of each sequence's last token: head.norm, head.unembed,
// tp.all-gather.logits, head.sample (2D adds the tp gather of the rows and tp2 reductions).
OpList InferenceHeadOps(const ModelSpec& model, const InferenceLayout& layout,
                        const InferenceOptions& options);

// Totals of the whole step on one chip: embedding, model.layers layers and the head (without
// materialising model.layers copies of the layer's ops).
OpTotals InferenceStepTotals(const ModelSpec& model, const InferenceLayout& layout,
                             const InferenceOptions& options);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_INFERENCE_OPS_H_
