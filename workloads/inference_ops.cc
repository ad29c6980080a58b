#include "workloads/inference_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "sim/check.h"
#include "topology/names.h"
#include "workloads/hbm_kernel.h"

namespace podsim::workloads {
namespace {

using collectives::CollectiveOp;
using topology::StrCat;

// FLOPs per element of the elementwise ops (layer_ops.h's counts).
constexpr double kRmsNormFlops = 4;
constexpr double kLayerNormFlops = 7;
constexpr double kAddFlops = 1;
constexpr double kRotaryFlops = 3;
constexpr double kSiluGateFlops = 5;
constexpr double kGeluFlops = 8;
constexpr double kSoftmaxFlops = 5;
// Writing K and V into a cache narrower than bf16: scale and round per element.
constexpr double kQuantizeFlops = 2;
// Activations live in HBM as bf16.
constexpr double kActivationBytes = 2;
// Norm statistics (a sum of squares per token row) travel as fp32.
constexpr double kStatBytes = 4;
// Token ids (int32): read by the embedding lookup, written by sampling.
constexpr double kTokenIdBytes = 4;

// As ParseLayout: far above any pod, small enough that products stay exact in int64.
constexpr int64_t kMaxAxis = 1 << 20;

constexpr std::string_view kGrammar = "tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..]";

double D(int64_t v) { return static_cast<double>(v); }
std::string Str(int64_t v) { return std::to_string(v); }

// Sizes of one step on one chip, as doubles, plus the layout's switches.
struct Dims {
  InferenceShape s;
  double e = kActivationBytes;
  double w = 2;      // Bytes per parameter.
  bool fp8 = false;  // fp8 weights: the matmuls run in fp8 (DType).
  double c = 2;      // Bytes per cached K or V element.
  double x = 2;      // Bytes per element of a tp / tp2 collective's payload.
  double hd = 0;     // head_dim.
  double tok = 0;    // Rows through the matmuls.
  double tok_a = 0;  // Rows through attention here (tokens of attn_sequences).
  double d = 0;      // d_model.
  double d_in = 0;   // D / tp2.
  double d_res = 0;  // Residual width.
  double qp = 0;     // Query width of the projection here.
  double kvp = 0;    // K (or V) width of the projection here.
  double qa = 0;     // Query width attended here.
  double kva = 0;    // K (or V) width cached here.
  double f = 0;      // F / tp.
  double f_act = 0;  // Width of the MLP activation here: F / tp, or F / (tp*tp2) in 2D.
  double vocab = 0;  // Vocabulary shard.
  double norm_flops = 0;
  double gains_per_width = 1;  // Norm parameters per element of a row: 1 (RMS) or 2 (Layer).
  bool tp = false;             // tp > 1.
  bool two_d = false;          // tp2 > 1.
  bool batch = false;          // kv_shard=batch with tp > 1: attention is batch-sharded.
  bool kv_split = true;        // 2D: the projection's kv heads split over tp2.
  bool bias = false;
  bool gated = true;
  bool rotary = true;
};

Dims DimsOf(const ModelSpec& model, const InferenceLayout& layout,
            const InferenceOptions& options) {
  Dims d;
  d.s = InferenceShapeOf(layout, model, options);
  d.w = DTypeBytes(options.weights);
  d.fp8 = options.weights == DType::kFp8;
  d.c = DTypeBytes(options.kv_cache);
  d.x = DTypeBytes(options.collective);
  d.hd = D(model.head_dim);
  d.tok = D(d.s.tokens);
  d.tok_a = D(d.s.attn_sequences * d.s.query_tokens);
  d.d = D(model.d_model);
  d.d_in = D(d.s.d_in);
  d.d_res = D(d.s.d_residual);
  d.qp = D(d.s.heads) * d.hd;
  d.kvp = D(d.s.kv_heads) * d.hd;
  d.qa = D(d.s.attn_heads) * d.hd;
  d.kva = D(d.s.attn_kv_heads) * d.hd;
  d.f = D(d.s.ffn);
  d.f_act = d.f / layout.tp2;
  d.vocab = D(d.s.vocab);
  const bool layer_norm = model.norm == NormKind::kLayer;
  d.norm_flops = layer_norm ? kLayerNormFlops : kRmsNormFlops;
  d.gains_per_width = layer_norm ? 2 : 1;
  d.tp = layout.tp > 1;
  d.two_d = layout.tp2 > 1;
  d.batch = layout.kv_shard == KvShard::kBatch && layout.tp > 1;
  d.kv_split = d.s.kv_heads % layout.tp2 == 0;
  d.bias = model.linear_biases;
  d.gated = model.gated_mlp;
  d.rotary = model.learned_positions == 0;
  return d;
}

// Builds an OpList on one activation path: an op without explicit deps depends on the last one.
class Builder {
 public:
  explicit Builder(const Dims& d) : d_(d) {}

  int Add(Op op) {
    if (op.deps.empty()) {
      op.deps = std::move(join_);
      if (op.deps.empty() && last_ >= 0) op.deps.push_back(last_);
    }
    join_.clear();
    ops_.push_back(std::move(op));
    last_ = static_cast<int>(ops_.size()) - 1;
    return last_;
  }
  int Add(Op op, std::vector<int> deps) {
    op.deps = std::move(deps);
    return Add(std::move(op));
  }

  // Y[m,n] = X[m,k] W[k,n] (+ bias[n]); W read at the weight dtype, X and Y bf16.
  Op Matmul(std::string name, double m, double k, double n, bool bias) const {
    Op op = Base(std::move(name), OpKind::kMatmul);
    op.shape = {static_cast<int64_t>(m), static_cast<int64_t>(k), static_cast<int64_t>(n), 1};
    op.flops = 2 * m * k * n;
    op.model_flops = op.flops;
    op.fp8 = d_.fp8;
    op.hbm_read_bytes = d_.w * (k * n + (bias ? n : 0)) + d_.e * m * k;
    op.hbm_write_bytes = d_.e * m * n;
    op.output_bytes = op.hbm_write_bytes;
    return op;
  }

  Op Elementwise(std::string name, OpKind kind, double elements, double flops_per_element,
                 double reads, double writes) const {
    Op op = Base(std::move(name), kind);
    op.flops = elements * flops_per_element;
    op.hbm_read_bytes = d_.e * reads * elements;
    op.hbm_write_bytes = d_.e * writes * elements;
    op.output_bytes = op.hbm_write_bytes;
    return op;
  }

  // The MLP's activation over `elements`: SwiGLU (gate and up in) or the tanh GeLU, whose
  // kernel class the family may time (hbm_kernel.h).
  Op Activation(std::string name, double elements) const {
    Op op = Elementwise(std::move(name), OpKind::kElementwise, elements,
                        d_.gated ? kSiluGateFlops : kGeluFlops, d_.gated ? 2 : 1, 1);
    if (!d_.gated) op.kernel = kGeluKernel;
    return op;
  }

  // A norm over `rows` rows `width` wide; reads its gains (and shifts) at the weight dtype.
  Op Norm(std::string name, double rows, double width) const {
    Op op = Elementwise(std::move(name), OpKind::kNorm, rows * width, d_.norm_flops, 1, 1);
    op.hbm_read_bytes += d_.w * d_.gains_per_width * width;
    return op;
  }

  // A blocking collective over `axis` of an array of `bytes` (the whole gathered or reduced
  // array of one group, op.h).
  Op Collective(std::string name, CollectiveOp collective, std::string axis, double bytes) const {
    Op op = Base(std::move(name), OpKind::kCollective);
    op.collective = collective;
    op.axis = std::move(axis);
    op.comm_bytes = bytes;
    op.blocking = true;  // Activations: the next compute op waits (formulas.md 2.5).
    return op;
  }

  int last() const { return last_; }
  void set_last(int last) { last_ = last; }
  // The next op depends on all of `deps` (two branches meeting).
  void Join(std::vector<int> deps) { join_ = std::move(deps); }
  OpList Take() { return std::move(ops_); }

 private:
  static Op Base(std::string name, OpKind kind) {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.phase = Phase::kForward;
    return op;
  }

  const Dims& d_;
  OpList ops_;
  int last_ = -1;
  std::vector<int> join_;
};

// The 2D layout's norm on D/tp2-wide rows: a partial sum of squares per row, all-reduced over tp2.
void NormStats(Builder& b, const Dims& d, double rows, const std::string& what) {
  if (!d.two_d) return;
  b.Add(b.Collective("tp2.all-reduce." + what + ".norm", CollectiveOp::kAllReduce, "tp2",
                     kStatBytes * rows));
}

// Gathers the residual [tok, D/(tp*tp2)] into the matmul input [tok, D/tp2] (2D).
void GatherInput(Builder& b, const Dims& d, double rows, const std::string& what) {
  if (!d.two_d || !d.tp) return;
  b.Add(b.Collective("tp.all-gather." + what, CollectiveOp::kAllGather, "tp", d.x * rows * d.d_in));
}

// Reduces a row-parallel matmul's partial sums into the residual: an all-reduce of [tok, D]
// (1D), a reduce-scatter of [tok, D/tp2] (2D).
void ReduceOutput(Builder& b, const Dims& d, const std::string& what) {
  if (!d.tp) return;
  if (d.two_d) {
    b.Add(b.Collective("tp.reduce-scatter." + what, CollectiveOp::kReduceScatter, "tp",
                       d.x * d.tok * d.d_in));
  } else {
    b.Add(b.Collective("tp.all-reduce." + what, CollectiveOp::kAllReduce, "tp", d.x * d.tok * d.d));
  }
}

// `elements` of the new tokens appended to the KV cache at its dtype (quantized when narrower).
Op CacheWrite(const Builder& b, const Dims& d, double elements) {
  Op write = b.Elementwise("attn.kv_write", OpKind::kElementwise, elements,
                           d.c < d.e ? kQuantizeFlops : 0, 1, 0);
  write.hbm_write_bytes = d.c * elements;
  write.output_bytes = write.hbm_write_bytes;
  return write;
}

// The attention core, before its FLOPs and bytes.
Op AttentionCore() {
  Op core;
  core.name = "attn.core";
  core.kind = OpKind::kAttention;
  core.phase = Phase::kForward;
  return core;
}

// `heads` products [tok, k] x [k, n], one weight matrix per head (the absorbed projections).
Op PerHeadMatmul(const Builder& b, const Dims& d, std::string name, double heads, double k,
                 double n) {
  Op op = b.Matmul(std::move(name), d.tok, k, n, false);
  op.shape.batch = static_cast<int64_t>(heads);
  op.flops *= heads;
  op.model_flops = op.flops;
  op.hbm_read_bytes = d.w * heads * k * n + d.e * d.tok * heads * k;
  op.hbm_write_bytes = d.e * d.tok * heads * n;
  op.output_bytes = op.hbm_write_bytes;
  return op;
}

// Query-key pairs of a prefill's prompts on this chip: those a causal kernel computes, and those
// its model FLOPs count (AttentionCount).
struct PromptPairs {
  double causal, counted;
};
PromptPairs PairsOfPrompts(double seqs, const Dims& d, const InferenceOptions& options) {
  const double t = D(d.s.query_tokens);
  const double causal = seqs * t * (t + 1) / 2;
  return {causal, options.model_flops_count == AttentionCount::kFull ? seqs * t * t : causal};
}

// Multi-head latent attention (1D, heads sharded; inference_ops.h "Latent attention") from the
// normed input to attn.out, as vLLM's DeepseekV2 MLA runs it under tensor parallelism: the down
// projections replicated on every chip, the up projections and the output split by heads.
void AppendLatentAttention(Builder& b, const ModelSpec& model, const InferenceLayout& layout,
                           const Dims& d, bool prefill, const InferenceOptions& options) {
  const double heads = D(model.heads / layout.tp);
  const double nope = D(model.head_dim), rope = D(model.rope_dim), lora = D(model.kv_lora);
  const double v = D(model.v_head_dim), qk = nope + rope;
  const int input = b.last();
  if (model.q_lora > 0) {
    b.Add(b.Matmul("attn.q_down", d.tok, d.d, D(model.q_lora), false));
    b.Add(b.Norm("attn.q_norm", d.tok, D(model.q_lora)));
  }
  const int q = b.Add(b.Matmul("attn.q_up", d.tok, D(model.q_input_dim()), heads * qk, false));
  b.set_last(input);
  b.Add(b.Matmul("attn.kv_down", d.tok, d.d, lora + rope, false));
  b.Add(b.Norm("attn.kv_norm", d.tok, lora));
  const int latent = b.last();
  // The queries' rotary dims and the one shared rotary key per token.
  b.Add(b.Elementwise("attn.rotary", OpKind::kElementwise, d.tok * (heads + 1) * rope, kRotaryFlops,
                      1, 1),
        {q, latent});
  const int rotated = b.last();
  {
    // The latent and the rotary key appended to the cache: kv_lora + rope_dim per token, shared
    // by every head (each chip of the tp group keeps the whole latent cache).
    b.Add(CacheWrite(b, d, d.tok * (lora + rope)), {rotated});
  }
  const int written = b.last();
  Op core = AttentionCore();
  const double seqs = D(d.s.sequences);
  if (prefill) {
    // The prompt's keys and values from the latent, then causal flash attention over qk dims
    // (scores) and v dims (values).
    b.Add(b.Matmul("attn.kv_up", d.tok, lora, heads * (nope + v), false), {written});
    const PromptPairs pairs = PairsOfPrompts(seqs, d, options);
    core.flops = 2 * heads * (qk + v) * pairs.causal;
    core.model_flops = 2 * heads * (qk + v) * pairs.counted;
    core.hbm_read_bytes = d.e * d.tok * heads * (2 * qk + v);
  } else {
    // Decode with the up projections absorbed (DeepSeek-V2 sec. 2.1.2): each head's query is
    // taken into the latent space, attends over the cached latents (scores over kv_lora +
    // rope_dim, values over kv_lora) and comes back out through the value projection.
    b.Add(PerHeadMatmul(b, d, "attn.q_absorb", heads, nope, lora), {written});
    const double keys = D(d.s.keys);
    core.flops = 2 * heads * (2 * lora + rope) * seqs * keys;
    core.model_flops = core.flops;
    core.hbm_read_bytes = d.e * d.tok * heads * (lora + rope) + d.c * seqs * keys * (lora + rope);
  }
  core.hbm_write_bytes = d.e * d.tok * heads * (prefill ? v : lora);
  core.output_bytes = core.hbm_write_bytes;
  b.Add(core);
  if (!prefill) b.Add(PerHeadMatmul(b, d, "attn.v_absorb", heads, lora, v));
  b.Add(b.Matmul("attn.out", d.tok, heads * v, d.d, false));
}

// A mixture of experts in place of the MLP (1D; inference_ops.h): the router and its top-k on every
// chip, the routed experts as grouped GEMMs over the chip's tp shard of every expert (each reading
// the weights of the experts the step's tokens touch), the shared experts as a dense MLP, and one
// tp all-reduce of their sum.
void AppendMoe(Builder& b, const ModelSpec& model, const InferenceLayout& layout, const Dims& d) {
  const int input = b.last();
  const bool ep = layout.ep > 1;
  // Rows this chip routes: the replica's tokens, or with ep its 1/tp share of them, rounded up:
  // the busiest chip's (the step waits for it).
  const double tok = ep ? std::ceil(d.tok / layout.tp) : d.tok;
  const double experts = D(model.experts), k = D(model.top_k);
  b.Add(b.Matmul("moe.router", tok, d.d_in, experts, /*bias=*/false));
  b.Add(b.Elementwise("moe.topk", OpKind::kElementwise, tok * experts, kSoftmaxFlops, 1, 0));
  // Routed copies this chip's experts run (balanced), and the experts here that at least one of
  // the tokens routed over them reaches when routing is uniform: E' (1 - (1 - k/E)^T) for the E'
  // experts here and the T tokens of the ep group's replicas (an assumption: real routers are
  // skewed, which touches fewer experts with more tokens each). With ep, the busiest chip
  // reaches at least one of its experts: a decode step of one token reads a whole expert there.
  const double rows = tok * k;
  const double local = ep ? experts / layout.ep : experts;
  const double routing_tokens = ep ? d.tok * layout.ep_replicas() : d.tok;
  const double expected = local * (1 - std::pow(1 - k / experts, routing_tokens));
  const double touched = ep ? std::min(local, std::max(1.0, expected)) : expected;
  const double fe = D(ep ? model.expert_ffn : model.expert_ffn / layout.tp);
  // Each chip sends its routed copies to the ep group and gets as many back: the all-to-all's
  // whole array is the group's copies (op.h).
  const double exchange = d.x * rows * d.d_in * layout.ep;
  if (ep) {
    b.Add(b.Collective("ep.all-to-all.moe.dispatch", CollectiveOp::kAllToAll, "ep", exchange));
  }
  const int routed_in = b.last();
  auto grouped = [&](std::string name, double in, double out) {
    Op op = b.Matmul(std::move(name), rows, in, out, d.bias);
    op.shape.m = std::max<int64_t>(1, std::llround(rows / touched));
    op.shape.batch = std::max<int64_t>(1, std::llround(touched));
    op.hbm_read_bytes = d.w * touched * (in * out + (d.bias ? out : 0)) + d.e * rows * in;
    return op;
  };
  std::vector<int> pre_act;
  if (d.gated) {
    pre_act.push_back(b.Add(grouped("moe.experts.gate", d.d_in, fe)));
    b.set_last(routed_in);
  }
  pre_act.push_back(b.Add(grouped("moe.experts.up", d.d_in, fe)));
  b.Add(b.Activation("moe.experts.act", rows * fe), pre_act);
  b.Add(grouped("moe.experts.down", fe, d.d_in));
  if (ep) {
    b.Add(b.Collective("ep.all-to-all.moe.combine", CollectiveOp::kAllToAll, "ep", exchange));
  }
  // Each token's top_k outputs weighted by its router scores and summed.
  Op combine = b.Elementwise("moe.combine", OpKind::kElementwise, rows * d.d_in, 2, 1, 0);
  combine.hbm_write_bytes = d.e * tok * d.d_in;
  combine.output_bytes = combine.hbm_write_bytes;
  std::vector<int> sum = {b.Add(combine)};
  if (model.shared_ffn > 0) {
    // Split over tp like a dense MLP, or whole on the chip's share of the tokens with ep.
    const double fs = D(ep ? model.shared_ffn : model.shared_ffn / layout.tp);
    b.set_last(input);
    std::vector<int> shared_pre;
    if (d.gated) {
      shared_pre.push_back(b.Add(b.Matmul("moe.shared.gate", tok, d.d_in, fs, d.bias)));
      b.set_last(input);
    }
    shared_pre.push_back(b.Add(b.Matmul("moe.shared.up", tok, d.d_in, fs, d.bias)));
    b.Add(b.Activation("moe.shared.act", tok * fs), shared_pre);
    sum.push_back(b.Add(b.Matmul("moe.shared.down", tok, fs, d.d_in, d.bias)));
  }
  b.Add(b.Elementwise("moe.sum", OpKind::kElementwise, tok * d.d_in, kAddFlops,
                      static_cast<double>(sum.size()), 1),
        sum);
}

OpList LayerOps(const ModelSpec& model, const InferenceLayout& layout, InferenceOptions options,
                InferencePhase phase, bool moe) {
  options.phase = phase;
  const Dims d = DimsOf(model, layout, options);
  const bool prefill = phase == InferencePhase::kPrefill;
  Builder b(d);

  // Attention.
  GatherInput(b, d, d.tok, "attn");
  b.Add(b.Norm("attn.norm", d.tok, d.d_in));
  NormStats(b, d, d.tok, "attn");
  if (model.mla()) {
    AppendLatentAttention(b, model, layout, d, prefill, options);
  } else {
    const int qkv = b.Add(b.Matmul("attn.qkv", d.tok, d.d_in, d.qp + 2 * d.kvp, d.bias));
    if (d.two_d) {
      // Partial sums over tp2, split by heads. Kv heads that do not split over tp2 are summed
      // whole (each chip keeps the one its query heads use).
      if (d.kv_split) {
        b.Add(b.Collective("tp2.reduce-scatter.attn.qkv", CollectiveOp::kReduceScatter, "tp2",
                           d.x * d.tok * (d.qp + 2 * d.kvp)));
      } else {
        const int q = b.Add(b.Collective("tp2.reduce-scatter.attn.q", CollectiveOp::kReduceScatter,
                                         "tp2", d.x * d.tok * d.qp));
        const int kv = b.Add(b.Collective("tp2.all-reduce.attn.kv", CollectiveOp::kAllReduce, "tp2",
                                          d.x * d.tok * 2 * d.kvp),
                             {qkv});
        b.Join({q, kv});
      }
    }
    if (d.rotary) {
      // Queries and keys of this chip's heads (before the all-to-all with kv_shard=batch).
      const double width = d.two_d ? d.qa + d.kva : d.qp + d.kvp;
      b.Add(b.Elementwise("attn.rotary", OpKind::kElementwise, d.tok * width, kRotaryFlops, 1, 1));
    }
    if (d.batch) {
      // Head-sharded [tok, N+2K heads] to batch-sharded: the whole array is every head once.
      b.Add(b.Collective("tp.all-to-all.attn.qkv", CollectiveOp::kAllToAll, "tp",
                         d.x * d.tok * D(model.q_dim() + 2 * model.kv_dim())));
    }
    b.Add(CacheWrite(b, d, d.tok_a * 2 * d.kva));  // The new tokens' K and V.
    {
      Op core = AttentionCore();
      const double seqs = D(d.s.attn_sequences);
      if (prefill) {
        // Causal flash attention over the prompt: Q, K, V from the projection, no cache read.
        const PromptPairs pairs = PairsOfPrompts(seqs, d, options);
        core.flops = 4 * d.qa * pairs.causal;
        core.model_flops = 4 * d.qa * pairs.counted;
        core.hbm_read_bytes = d.e * d.tok_a * (d.qa + 2 * d.kva);
      } else {
        // One query per sequence against every cached position, the new one included.
        const double keys = D(d.s.keys);
        core.flops = 4 * d.qa * seqs * keys;
        core.model_flops = core.flops;
        core.hbm_read_bytes = d.e * seqs * d.qa + d.c * seqs * keys * 2 * d.kva;
      }
      core.hbm_write_bytes = d.e * d.tok_a * d.qa;
      core.output_bytes = core.hbm_write_bytes;
      b.Add(core);
    }
    if (d.batch) {
      b.Add(b.Collective("tp.all-to-all.attn.out", CollectiveOp::kAllToAll, "tp",
                         d.x * d.tok * D(model.q_dim())));
    }
    if (d.two_d) {
      b.Add(b.Collective("tp2.all-gather.attn.out", CollectiveOp::kAllGather, "tp2",
                         d.x * d.tok * d.qp));
    }
    b.Add(b.Matmul("attn.out", d.tok, d.qp, d.d_in, d.bias));
  }
  ReduceOutput(b, d, "attn");
  b.Add(b.Elementwise("attn.residual", OpKind::kElementwise, d.tok * d.d_res, kAddFlops, 2, 1));

  // MLP.
  GatherInput(b, d, d.tok, "mlp");
  b.Add(b.Norm("mlp.norm", d.tok, d.d_in));
  NormStats(b, d, d.tok, "mlp");
  if (moe) {
    AppendMoe(b, model, layout, d);
    if (layout.ep > 1 && d.tp) {
      // Each chip holds its share of the tokens' outputs: the tp group gathers them.
      b.Add(b.Collective("tp.all-gather.mlp", CollectiveOp::kAllGather, "tp", d.x * d.tok * d.d));
    } else {
      ReduceOutput(b, d, "mlp");
    }
    b.Add(b.Elementwise("mlp.residual", OpKind::kElementwise, d.tok * d.d_res, kAddFlops, 2, 1));
    return b.Take();
  }
  const int input = b.last();
  std::vector<int> pre_act;
  if (d.gated) {
    pre_act.push_back(b.Add(b.Matmul("mlp.gate", d.tok, d.d_in, d.f, d.bias)));
    b.set_last(input);
  }
  pre_act.push_back(b.Add(b.Matmul("mlp.up", d.tok, d.d_in, d.f, d.bias)));
  const double pre_act_width = (d.gated ? 2 : 1) * d.f;
  if (d.two_d) {
    b.Add(b.Collective("tp2.reduce-scatter.mlp", CollectiveOp::kReduceScatter, "tp2",
                       d.x * d.tok * pre_act_width),
          pre_act);
    pre_act = {b.last()};
  }
  b.Add(b.Activation("mlp.act", d.tok * d.f_act), pre_act);
  if (d.two_d) {
    b.Add(b.Collective("tp2.all-gather.mlp", CollectiveOp::kAllGather, "tp2", d.x * d.tok * d.f));
  }
  b.Add(b.Matmul("mlp.down", d.tok, d.f, d.d_in, d.bias));
  ReduceOutput(b, d, "mlp");
  b.Add(b.Elementwise("mlp.residual", OpKind::kElementwise, d.tok * d.d_res, kAddFlops, 2, 1));
  return b.Take();
}

template <typename T, size_t N>
sim::StatusOr<T> ParseName(std::string_view text, std::string_view what,
                           const std::array<T, N>& values, std::string_view (*name)(T)) {
  std::vector<std::string_view> names;
  for (T v : values) {
    if (name(v) == text) return v;
    names.push_back(name(v));
  }
  std::string known;
  for (std::string_view n : names) known += StrCat({known.empty() ? "" : ", ", n});
  return sim::Status::NotFound(StrCat(
      {"unknown ", what, " '", text, "'", topology::DidYouMean(text, names), "; known: ", known}));
}

}  // namespace

std::string_view KvShardName(KvShard shard) { return shard == KvShard::kHeads ? "heads" : "batch"; }

std::string InferenceLayout::ToString() const {
  std::string text = StrCat({"tp=", Str(tp), ",tp2=", Str(tp2), ",dp=", Str(dp)});
  if (kv_shard != KvShard::kHeads) text += StrCat({",kv_shard=", KvShardName(kv_shard)});
  if (ep > 1) text += StrCat({",ep=", Str(ep)});
  return text;
}

std::vector<topology::MeshAxis> InferenceLayout::MeshAxes() const {
  const int replicas = ep_replicas();
  std::vector<topology::MeshAxis> axes = {{"tp", tp}, {"tp2", tp2}, {"dp", dp / replicas}};
  if (replicas > 1) axes.push_back({"ep", replicas});
  return axes;
}

std::vector<std::string> InferenceLayout::EpGroupAxes() const {
  if (ep_replicas() > 1) return {"tp", "ep"};
  return {"tp"};
}

sim::StatusOr<InferenceLayout> ParseInferenceLayout(std::string_view text) {
  static const std::vector<std::string_view> kKeys = {"tp", "tp2", "dp", "kv_shard", "ep"};
  const std::string where = StrCat({"layout '", text, "'"});
  if (text.empty()) return sim::Status::ParseError(StrCat({where, ": expected ", kGrammar}));
  PODSIM_ASSIGN_OR_RETURN(auto pairs, topology::ParseKeyValues(text, kKeys, where, kGrammar));
  InferenceLayout layout;
  for (const auto& [key, value] : pairs) {
    if (key == "kv_shard") {
      if (value == "heads") {
        layout.kv_shard = KvShard::kHeads;
      } else if (value == "batch") {
        layout.kv_shard = KvShard::kBatch;
      } else {
        return sim::Status::InvalidArgument(
            StrCat({where, ": kv_shard must be heads or batch (got '", value, "')"}));
      }
      continue;
    }
    std::optional<int64_t> n = topology::ParseCount(value, kMaxAxis);
    if (!n || *n < 1) {
      return sim::Status::InvalidArgument(StrCat({where, ": ", key, " must be an integer in [1, ",
                                                  Str(kMaxAxis), "] (got '", value, "')"}));
    }
    const int v = static_cast<int>(*n);
    if (key == "tp") layout.tp = v;
    if (key == "tp2") layout.tp2 = v;
    if (key == "dp") layout.dp = v;
    if (key == "ep") layout.ep = v;
  }
  return layout;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return "bf16";
    case DType::kInt8:
      return "int8";
    case DType::kInt4:
      return "int4";
    case DType::kFp8:
      return "fp8";
  }
  return "?";
}

double DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return 2;
    case DType::kInt8:
      return 1;
    case DType::kInt4:
      return 0.5;
    case DType::kFp8:
      return 1;
  }
  return 2;
}

sim::StatusOr<DType> ParseDType(std::string_view text) {
  return ParseName(text, "dtype", std::array{DType::kBf16, DType::kInt8, DType::kInt4, DType::kFp8},
                   &DTypeName);
}

std::string_view InferencePhaseName(InferencePhase phase) {
  return phase == InferencePhase::kPrefill ? "prefill" : "decode";
}

sim::StatusOr<InferencePhase> ParseInferencePhase(std::string_view text) {
  return ParseName(text, "phase", std::array{InferencePhase::kPrefill, InferencePhase::kDecode},
                   &InferencePhaseName);
}

sim::Status ValidateInferenceLayout(const InferenceLayout& layout, const ModelSpec& model,
                                    int64_t chip_count, const InferenceOptions& options) {
  const std::string where = StrCat({"layout ", layout.ToString()});
  auto fail = [&](std::string_view what) {
    return sim::Status::InvalidArgument(StrCat({where, ": ", what}));
  };
  const std::string of_model = StrCat({" of model '", model.name, "'"});
  const bool prefill = options.phase == InferencePhase::kPrefill;
  if (options.batch < 1 || options.batch > kMaxInferenceBatch) {
    return fail(StrCat({"batch must be in [1, ", Str(kMaxInferenceBatch), "] sequences (got ",
                        Str(options.batch), ")"}));
  }
  const int64_t min_context = prefill ? 1 : 0;
  if (options.context < min_context || options.context > kMaxInferenceContext) {
    return fail(StrCat({"context must be in [", Str(min_context), ", ", Str(kMaxInferenceContext),
                        "] tokens for ", InferencePhaseName(options.phase), " (got ",
                        Str(options.context), ")"}));
  }
  if (layout.chips() != chip_count) {
    return fail(StrCat({"tp*tp2*dp = ", Str(layout.chips()), " must equal the ", Str(chip_count),
                        " chips of the system"}));
  }
  const int tp = layout.tp, m = layout.model_parallel();
  const bool two_d = layout.tp2 > 1;
  const bool batch = layout.kv_shard == KvShard::kBatch;
  if (batch && two_d) {
    return fail(StrCat({"kv_shard=batch needs tp2=1 (got tp2=", Str(layout.tp2),
                        "; the 2D layout shards the KV cache by heads)"}));
  }
  // The attention's heads are split over the whole replica (heads) or the projection's over tp.
  const std::string group = two_d ? StrCat({"tp*tp2 = ", Str(m)}) : StrCat({"tp=", Str(tp)});
  if (model.heads % m != 0) {
    return fail(StrCat({group, " must divide heads=", Str(model.heads), of_model}));
  }
  if (model.kv_heads % tp != 0 && tp % model.kv_heads != 0) {
    return fail(StrCat({"tp=", Str(tp), " must divide kv_heads=", Str(model.kv_heads),
                        " or be a multiple of it (kv heads replicated)", of_model}));
  }
  if (two_d && model.kv_heads % m != 0 && m % model.kv_heads != 0) {
    return fail(StrCat({group, " must divide kv_heads=", Str(model.kv_heads),
                        " or be a multiple of it (kv heads replicated)", of_model}));
  }
  // 2D: the MLP activation is split over both axes, the residual stream too.
  if (model.ffn % m != 0) {
    return fail(StrCat({group, " must divide ffn=", Str(model.ffn), of_model}));
  }
  if (model.mla() && (two_d || batch)) {
    return fail(StrCat({"model '", model.name,
                        "' has latent attention: its inference runs 1D tensor parallelism with the "
                        "cache by heads (tp2=1, kv_shard=heads)"}));
  }
  if (model.moe() && two_d) {
    return fail(StrCat({"model '", model.name,
                        "' has experts: its inference runs 1D tensor parallelism (tp2=1), not tp2=",
                        Str(layout.tp2)}));
  }
  if (layout.ep > 1) {
    if (!model.moe()) return fail(StrCat({"ep=", Str(layout.ep), " needs a model with experts"}));
    if (layout.ep % tp != 0 || layout.dp % layout.ep_replicas() != 0) {
      return fail(StrCat({"ep=", Str(layout.ep), " must be a multiple of tp=", Str(tp),
                          " by a divisor of dp=", Str(layout.dp),
                          " (the ep group is the tp chips of ep/tp replicas)"}));
    }
    if (model.experts % layout.ep != 0) {
      return fail(
          StrCat({"ep=", Str(layout.ep), " must divide experts=", Str(model.experts), of_model}));
    }
  }
  if (model.moe() && layout.ep == 1 && model.expert_ffn % tp != 0) {
    return fail(StrCat({"tp=", Str(tp), " must divide expert_ffn=", Str(model.expert_ffn), of_model,
                        " (each expert's ffn is split over tp)"}));
  }
  if (model.moe() && layout.ep == 1 && model.shared_ffn % tp != 0) {
    return fail(
        StrCat({"tp=", Str(tp), " must divide shared_ffn=", Str(model.shared_ffn), of_model}));
  }
  if (two_d && model.d_model % m != 0) {
    return fail(StrCat({group, " must divide d_model=", Str(model.d_model), of_model,
                        " (the 2D layout shards the residual stream over both)"}));
  }
  if (options.batch % layout.dp != 0) {
    return fail(StrCat(
        {"batch of ", Str(options.batch), " sequences must be divisible by dp=", Str(layout.dp)}));
  }
  if (batch && (options.batch / layout.dp) % tp != 0) {
    return fail(StrCat({"kv_shard=batch needs the ", Str(options.batch / layout.dp),
                        " sequences of each replica to be divisible by tp=", Str(tp)}));
  }
  return sim::Status::Ok();
}

InferenceShape InferenceShapeOf(const InferenceLayout& layout, const ModelSpec& model,
                                const InferenceOptions& options) {
  InferenceShape s;
  const int64_t tp = layout.tp, m = layout.model_parallel();
  s.sequences = options.batch / layout.dp;
  const bool prefill = options.phase == InferencePhase::kPrefill;
  s.query_tokens = prefill ? options.context : 1;
  s.keys = prefill ? options.context : options.context + 1;
  s.cache_tokens = s.keys;
  s.tokens = s.sequences * s.query_tokens;
  s.heads = model.heads / tp;
  s.kv_heads = model.kv_heads % tp == 0 ? model.kv_heads / tp : 1;
  if (layout.kv_shard == KvShard::kBatch) {
    s.attn_sequences = s.sequences / tp;
    s.attn_heads = model.heads;
    s.attn_kv_heads = model.kv_heads;
  } else {
    s.attn_sequences = s.sequences;
    s.attn_heads = model.heads / m;
    s.attn_kv_heads = model.kv_heads % m == 0 ? model.kv_heads / m : 1;
  }
  s.d_in = model.d_model / layout.tp2;
  s.d_residual = layout.tp2 > 1 ? model.d_model / m : model.d_model;
  s.ffn = model.ffn / tp;
  s.vocab = (model.vocab + tp - 1) / tp;
  PODSIM_CHECK(s.sequences >= 1 && s.attn_sequences >= 1 && s.attn_heads >= 1 && s.d_in >= 1)
      << "InferenceShapeOf on an unvalidated layout " << layout.ToString();
  return s;
}

OpList PrefillLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                       const InferenceOptions& options) {
  return LayerOps(model, layout, options, InferencePhase::kPrefill, false);
}

OpList DecodeLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                      const InferenceOptions& options) {
  return LayerOps(model, layout, options, InferencePhase::kDecode, false);
}

OpList InferenceLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                         const InferenceOptions& options) {
  return LayerOps(model, layout, options, options.phase, false);
}

OpList InferenceMoeLayerOps(const ModelSpec& model, const InferenceLayout& layout,
                            const InferenceOptions& options) {
  PODSIM_CHECK(model.moe()) << "model '" << model.name << "' has no experts";
  return LayerOps(model, layout, options, options.phase, true);
}

OpList InferenceEmbeddingOps(const ModelSpec& model, const InferenceLayout& layout,
                             const InferenceOptions& options) {
  const Dims d = DimsOf(model, layout, options);
  Builder b(d);
  // Vocab-parallel lookup (the table is [V/tp, D/tp2], the unembedding's sharding, so a tied
  // model keeps one copy): each chip reads the rows of its vocabulary shard, on average tok/tp
  // of them, and writes zeros elsewhere; the partial rows are summed over tp.
  Op lookup = b.Elementwise("embed.lookup", OpKind::kEmbedding, d.tok * d.d_in, 0, 0, 1);
  lookup.hbm_read_bytes = d.w * d.tok * d.d_in / layout.tp + kTokenIdBytes * d.tok;
  b.Add(lookup);
  if (d.tp) {
    if (d.two_d) {
      b.Add(b.Collective("tp.reduce-scatter.embed", CollectiveOp::kReduceScatter, "tp",
                         d.x * d.tok * d.d_in));
    } else {
      b.Add(b.Collective("tp.all-reduce.embed", CollectiveOp::kAllReduce, "tp", d.x * d.tok * d.d));
    }
  }
  if (model.learned_positions > 0) {
    // The position table is sharded like the residual stream.
    Op add =
        b.Elementwise("embed.positions", OpKind::kElementwise, d.tok * d.d_res, kAddFlops, 1, 1);
    add.hbm_read_bytes += d.w * d.tok * d.d_res;
    b.Add(add);
  }
  return b.Take();
}

OpList InferenceHeadOps(const ModelSpec& model, const InferenceLayout& layout,
                        const InferenceOptions& options) {
  const Dims d = DimsOf(model, layout, options);
  Builder b(d);
  const double rows = D(d.s.sequences);  // The last token of each sequence.
  const double full_vocab = d.vocab * layout.tp;
  GatherInput(b, d, rows, "head");
  b.Add(b.Norm("head.norm", rows, d.d_in));
  NormStats(b, d, rows, "head");
  b.Add(b.Matmul("head.unembed", rows, d.d_in, d.vocab, /*bias=*/false));
  // Logits stay bf16 on the wire whatever the collective dtype: sampling needs them exact.
  if (d.two_d) {
    b.Add(
        b.Collective("tp2.all-reduce.head", CollectiveOp::kAllReduce, "tp2", d.e * rows * d.vocab));
  }
  if (d.tp) {
    b.Add(b.Collective("tp.all-gather.logits", CollectiveOp::kAllGather, "tp",
                       d.e * rows * full_vocab));
  }
  Op sample =
      b.Elementwise("head.sample", OpKind::kElementwise, rows * full_vocab, kSoftmaxFlops, 1, 0);
  sample.hbm_write_bytes = kTokenIdBytes * rows;
  sample.output_bytes = sample.hbm_write_bytes;
  b.Add(sample);
  return b.Take();
}

OpTotals InferenceStepTotals(const ModelSpec& model, const InferenceLayout& layout,
                             const InferenceOptions& options) {
  OpTotals total = Totals(InferenceEmbeddingOps(model, layout, options));
  const OpTotals head = Totals(InferenceHeadOps(model, layout, options));
  for (const bool moe : {false, true}) {
    const double layers = D(moe ? model.MoeLayers() : model.layers - model.MoeLayers());
    if (layers == 0) continue;
    const OpTotals layer = Totals(moe ? InferenceMoeLayerOps(model, layout, options)
                                      : InferenceLayerOps(model, layout, options));
    total.flops += layers * layer.flops;
    total.model_flops += layers * layer.model_flops;
    total.hbm_bytes += layers * layer.hbm_bytes;
    total.comm_bytes += layers * layer.comm_bytes;
  }
  total.flops += head.flops;
  total.model_flops += head.model_flops;
  total.hbm_bytes += head.hbm_bytes;
  total.comm_bytes += head.comm_bytes;
  return total;
}

}  // namespace podsim::workloads
