#include "workloads/inference_ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "topology/chip_spec.h"
#include "workloads/inference_memory.h"

namespace podsim::workloads {
namespace {

// Tolerance tags of book-cases.yaml: exact < 1%, rounded +-5%, approx +-15%.
constexpr double kExact = 0.01;
constexpr double kRounded = 0.05;
constexpr double kApprox = 0.15;

#define EXPECT_REL(actual, expected, tol)                                            \
  EXPECT_NEAR(static_cast<double>(actual) / static_cast<double>(expected), 1.0, tol) \
      << #actual " = " << static_cast<double>(actual) << " vs " << (expected)

ModelSpec M(std::string_view text) {
  sim::StatusOr<ModelSpec> m = ParseModel(text);
  PODSIM_CHECK(m.ok()) << m.status();
  return std::move(m).value();
}

InferenceLayout L(std::string_view text) {
  sim::StatusOr<InferenceLayout> l = ParseInferenceLayout(text);
  PODSIM_CHECK(l.ok()) << l.status();
  return std::move(l).value();
}

InferenceOptions Options(InferencePhase phase, int64_t batch, int64_t context,
                         DType weights = DType::kBf16, DType kv = DType::kBf16) {
  InferenceOptions o;
  o.phase = phase;
  o.batch = batch;
  o.context = context;
  o.weights = weights;
  o.kv_cache = kv;
  return o;
}
InferenceOptions Decode(int64_t batch, int64_t context, DType weights = DType::kBf16,
                        DType kv = DType::kBf16) {
  return Options(InferencePhase::kDecode, batch, context, weights, kv);
}
InferenceOptions Prefill(int64_t batch, int64_t context, DType weights = DType::kBf16) {
  return Options(InferencePhase::kPrefill, batch, context, weights);
}

// Checks the case is valid on exactly layout.chips() chips, then builds a layer's ops.
OpList Layer(const ModelSpec& model, const InferenceLayout& layout,
             const InferenceOptions& options) {
  sim::Status ok = ValidateInferenceLayout(layout, model, layout.chips(), options);
  PODSIM_CHECK(ok.ok()) << ok;
  return InferenceLayerOps(model, layout, options);
}

std::string Error(std::string_view layout, std::string_view model, int64_t chips,
                  const InferenceOptions& options) {
  return ValidateInferenceLayout(L(layout), M(model), chips, options).message();
}

const Op& Find(const OpList& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  PODSIM_CHECK(false) << "no op " << name;
  return ops.front();
}

bool HasOp(const OpList& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return true;
  }
  return false;
}

double Sum(const OpList& ops, OpKind kind, double Op::*field) {
  double total = 0;
  for (const Op& op : ops) {
    if (op.kind == kind) total += op.*field;
  }
  return total;
}

double Hbm(const Op& op) { return op.hbm_read_bytes + op.hbm_write_bytes; }
double Hbm(const OpList& ops) { return Totals(ops).hbm_bytes; }

std::vector<std::string> Names(const OpList& ops) {
  std::vector<std::string> names;
  for (const Op& op : ops) names.push_back(op.name);
  return names;
}

// A TPU v5e (the book's Ch7/Ch8 chip): C = 1.97e14 bf16, 3.94e14 int8, W_hbm = 8.2e11, 16 GB.
topology::ChipSpec Chip(std::string_view name) { return topology::ChipPreset(name).value(); }

// The book's Ch7 worked model (I8): L=64, D=4096, F=16384, N=32, K=8, H=256, V=32128, tied.
constexpr std::string_view kCh7Model =
    "custom:layers=64,d_model=4096,ffn=16384,heads=32,kv_heads=8,head_dim=256,vocab=32128,tied=1";

TEST(InferenceLayoutTest, ParsesAndPrints) {
  InferenceLayout l = L("tp=8,tp2=2,dp=4,kv_shard=heads");
  EXPECT_EQ(l.tp, 8);
  EXPECT_EQ(l.tp2, 2);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.kv_shard, KvShard::kHeads);
  EXPECT_EQ(l.chips(), 64);
  EXPECT_EQ(l.model_parallel(), 16);
  EXPECT_EQ(l.ToString(), "tp=8,tp2=2,dp=4");
  const std::vector<topology::MeshAxis> axes = l.MeshAxes();
  ASSERT_EQ(axes.size(), 3u);
  EXPECT_EQ(axes[0].name, "tp");
  EXPECT_EQ(axes[0].size, 8);
  EXPECT_EQ(axes[1].name, "tp2");
  EXPECT_EQ(axes[1].size, 2);
  EXPECT_EQ(axes[2].name, "dp");
  EXPECT_EQ(axes[2].size, 4);
  EXPECT_EQ(L("tp=16,kv_shard=batch").ToString(), "tp=16,tp2=1,dp=1,kv_shard=batch");
  EXPECT_EQ(L("dp=2").ToString(), "tp=1,tp2=1,dp=2");

  EXPECT_EQ(ParseDType("int4").value(), DType::kInt4);
  EXPECT_EQ(DTypeBytes(DType::kInt4), 0.5);
  EXPECT_EQ(ParseInferencePhase("prefill").value(), InferencePhase::kPrefill);
}

TEST(InferenceLayoutTest, ParseErrorsNameTheKey) {
  EXPECT_EQ(ParseInferenceLayout("tp=8,tpp=2").status().message(),
            "layout 'tp=8,tpp=2': unknown key 'tpp' (did you mean 'tp'?); form: "
            "tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..]");
  EXPECT_EQ(ParseInferenceLayout("tp=8,kv_shards=batch").status().message(),
            "layout 'tp=8,kv_shards=batch': unknown key 'kv_shards' (did you mean 'kv_shard'?); "
            "form: tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..]");
  EXPECT_EQ(ParseInferenceLayout("tp=8,kv_shard=rows").status().message(),
            "layout 'tp=8,kv_shard=rows': kv_shard must be heads or batch (got 'rows')");
  EXPECT_EQ(ParseInferenceLayout("tp=0").status().message(),
            "layout 'tp=0': tp must be an integer in [1, 1048576] (got '0')");
  EXPECT_EQ(ParseInferenceLayout("tp2=two").status().message(),
            "layout 'tp2=two': tp2 must be an integer in [1, 1048576] (got 'two')");
  EXPECT_EQ(ParseInferenceLayout("tp=8,tp=4").status().message(),
            "layout 'tp=8,tp=4': key 'tp' given twice");
  EXPECT_EQ(ParseInferenceLayout("").status().message(),
            "layout '': expected tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..]");
  EXPECT_EQ(ParseInferenceLayout("tp").status().code(), sim::Status::Code::kParseError);
  EXPECT_EQ(ParseDType("in8").status().message(),
            "unknown dtype 'in8' (did you mean 'int8'?); known: bf16, int8, int4, fp8");
  EXPECT_EQ(ParseDType("fp4").status().code(), sim::Status::Code::kNotFound);
  EXPECT_EQ(*ParseDType("fp8"), DType::kFp8);
  EXPECT_EQ(ParseInferencePhase("decoder").status().message(),
            "unknown phase 'decoder' (did you mean 'decode'?); known: prefill, decode");
}

TEST(InferenceLayoutTest, ValidationErrorsNameTheAxis) {
  const InferenceOptions decode = Decode(32, 1024);
  // heads=48, kv_heads=6 / 4: divisibility cases powers of two cannot reach.
  const std::string k6 =
      "custom:layers=2,d_model=768,ffn=3072,heads=48,kv_heads=6,head_dim=16,vocab=1000";
  const std::string k4 =
      "custom:layers=2,d_model=768,ffn=3072,heads=48,kv_heads=4,head_dim=16,vocab=1000";
  const std::string d100 =
      "custom:layers=2,d_model=100,ffn=384,heads=8,kv_heads=8,head_dim=16,vocab=1000";
  EXPECT_EQ(Error("tp=8", "llama3-70b", 16, decode),
            "layout tp=8,tp2=1,dp=1: tp*tp2*dp = 8 must equal the 16 chips of the system");
  EXPECT_EQ(Error("tp=3", "llama3-70b", 3, decode),
            "layout tp=3,tp2=1,dp=1: tp=3 must divide heads=64 of model 'llama3-70b'");
  EXPECT_EQ(Error("tp=4,tp2=3", "llama3-70b", 12, decode),
            "layout tp=4,tp2=3,dp=1: tp*tp2 = 12 must divide heads=64 of model 'llama3-70b'");
  EXPECT_EQ(Error("tp=4", k6, 4, decode),
            "layout tp=4,tp2=1,dp=1: tp=4 must divide kv_heads=6 or be a multiple of it (kv "
            "heads replicated) of model '" +
                k6 + "'");
  EXPECT_EQ(Error("tp=2,tp2=3", k4, 6, decode),
            "layout tp=2,tp2=3,dp=1: tp*tp2 = 6 must divide kv_heads=4 or be a multiple of it (kv "
            "heads replicated) of model '" +
                k4 + "'");
  EXPECT_EQ(Error("tp=40", "llama2-13b", 40, decode),
            "layout tp=40,tp2=1,dp=1: tp=40 must divide ffn=13824 of model 'llama2-13b'");
  EXPECT_EQ(Error("tp=4,tp2=2", d100, 8, decode),
            "layout tp=4,tp2=2,dp=1: tp*tp2 = 8 must divide d_model=100 of model '" + d100 +
                "' (the 2D layout shards the residual stream over both)");
  EXPECT_EQ(Error("tp=4,tp2=2,kv_shard=batch", "llama3-70b", 8, decode),
            "layout tp=4,tp2=2,dp=1,kv_shard=batch: kv_shard=batch needs tp2=1 (got tp2=2; the 2D "
            "layout shards the KV cache by heads)");
  EXPECT_EQ(Error("tp=8,dp=2", "llama3-70b", 16, Decode(5, 1024)),
            "layout tp=8,tp2=1,dp=2: batch of 5 sequences must be divisible by dp=2");
  EXPECT_EQ(Error("tp=8,kv_shard=batch", "llama3-70b", 8, Decode(4, 1024)),
            "layout tp=8,tp2=1,dp=1,kv_shard=batch: kv_shard=batch needs the 4 sequences of each "
            "replica to be divisible by tp=8");
  EXPECT_EQ(Error("tp=8", "llama3-70b", 8, Decode(0, 1024)),
            "layout tp=8,tp2=1,dp=1: batch must be in [1, 16777216] sequences (got 0)");
  EXPECT_EQ(Error("tp=8", "llama3-70b", 8, Prefill(1, 0)),
            "layout tp=8,tp2=1,dp=1: context must be in [1, 16777216] tokens for prefill (got 0)");
  EXPECT_EQ(Error("tp=8", "llama3-70b", 8, Decode(1, 1 << 25)),
            "layout tp=8,tp2=1,dp=1: context must be in [0, 16777216] tokens for decode (got "
            "33554432)");

  EXPECT_TRUE(ValidateInferenceLayout(L("tp=16"), M("llama3-70b"), 16, decode).ok());
  EXPECT_TRUE(ValidateInferenceLayout(L("tp=16,kv_shard=batch"), M("llama3-70b"), 16, decode).ok());
  EXPECT_TRUE(ValidateInferenceLayout(L("tp=8,tp2=4,dp=2"), M("llama3-70b"), 64, decode).ok());
  EXPECT_TRUE(ValidateInferenceLayout(L("tp=8"), M("llama3-70b"), 8, Decode(1, 0)).ok());
}

TEST(InferenceLayoutTest, ShapeShardsHeadsBatchAndDModel) {
  const ModelSpec m = M("llama3-70b");
  InferenceShape s = InferenceShapeOf(L("tp=16"), m, Decode(32, 1000));
  EXPECT_EQ(s.sequences, 32);
  EXPECT_EQ(s.query_tokens, 1);
  EXPECT_EQ(s.tokens, 32);
  EXPECT_EQ(s.keys, 1001);
  EXPECT_EQ(s.cache_tokens, 1001);
  EXPECT_EQ(s.attn_sequences, 32);
  EXPECT_EQ(s.heads, 4);
  EXPECT_EQ(s.kv_heads, 1);  // 8 kv heads over 16 chips: each replicated on 2.
  EXPECT_EQ(s.attn_heads, 4);
  EXPECT_EQ(s.attn_kv_heads, 1);
  EXPECT_EQ(s.d_in, 8192);
  EXPECT_EQ(s.d_residual, 8192);
  EXPECT_EQ(s.ffn, 1792);
  EXPECT_EQ(s.vocab, 8016);

  s = InferenceShapeOf(L("tp=16,kv_shard=batch"), m, Decode(32, 1000));
  EXPECT_EQ(s.attn_sequences, 2);
  EXPECT_EQ(s.attn_heads, 64);
  EXPECT_EQ(s.attn_kv_heads, 8);

  s = InferenceShapeOf(L("tp=8,tp2=2,dp=2"), m, Prefill(4, 512));
  EXPECT_EQ(s.sequences, 2);
  EXPECT_EQ(s.query_tokens, 512);
  EXPECT_EQ(s.tokens, 1024);
  EXPECT_EQ(s.keys, 512);
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.kv_heads, 1);
  EXPECT_EQ(s.attn_heads, 4);
  EXPECT_EQ(s.attn_kv_heads, 1);
  EXPECT_EQ(s.d_in, 4096);
  EXPECT_EQ(s.d_residual, 512);
  EXPECT_EQ(s.ffn, 3584);
  EXPECT_EQ(s.vocab, 16032);
}

// Every dep names an earlier op; collectives are blocking and on a mesh axis of the layout.
void ExpectWellFormed(const OpList& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int dep : ops[i].deps) {
      EXPECT_GE(dep, 0) << ops[i].name;
      EXPECT_LT(dep, static_cast<int>(i)) << ops[i].name;
    }
    if (i > 0) {
      EXPECT_FALSE(ops[i].deps.empty()) << ops[i].name;
    }
    EXPECT_EQ(ops[i].phase, Phase::kForward);
    if (ops[i].kind == OpKind::kCollective) {
      EXPECT_TRUE(ops[i].blocking) << ops[i].name;
      EXPECT_TRUE(ops[i].axis == "tp" || ops[i].axis == "tp2") << ops[i].name;
      EXPECT_GT(ops[i].comm_bytes, 0) << ops[i].name;
    }
  }
}

TEST(InferenceOpsTest, OneDimensionalDecodeLayer) {
  const ModelSpec m = M("llama3-70b");
  const OpList ops = Layer(m, L("tp=8"), Decode(32, 1023));
  ExpectWellFormed(ops);
  EXPECT_EQ(Names(ops),
            (std::vector<std::string>{"attn.norm", "attn.qkv", "attn.rotary", "attn.kv_write",
                                      "attn.core", "attn.out", "tp.all-reduce.attn",
                                      "attn.residual", "mlp.norm", "mlp.gate", "mlp.up", "mlp.act",
                                      "mlp.down", "tp.all-reduce.mlp", "mlp.residual"}));
  // Megatron: an all-reduce of bf16 [B, D] after O and after down.
  EXPECT_EQ(Find(ops, "tp.all-reduce.attn").comm_bytes, 2.0 * 32 * 8192);
  EXPECT_EQ(Find(ops, "tp.all-reduce.mlp").collective, collectives::CollectiveOp::kAllReduce);
  // The gated MLP's two matmuls read the same input; the activation joins them.
  EXPECT_EQ(Find(ops, "mlp.up").deps, std::vector<int>{8});
  EXPECT_EQ(Find(ops, "mlp.act").deps, (std::vector<int>{9, 10}));
  // Column-parallel QKV (8 query heads, 1 kv head per chip), row-parallel O.
  EXPECT_EQ(Find(ops, "attn.qkv").shape.n, (8 + 2 * 1) * 128);
  EXPECT_EQ(Find(ops, "attn.qkv").shape.m, 32);
  EXPECT_EQ(Find(ops, "attn.out").shape.k, 8 * 128);
  EXPECT_EQ(Find(ops, "mlp.down").shape.k, 28672 / 8);

  // Without tp there is nothing to reduce.
  for (const Op& op : Layer(m, L("dp=2"), Decode(32, 1023))) {
    EXPECT_NE(op.kind, OpKind::kCollective) << op.name;
  }
}

// Matmul FLOPs of a layer over the tp*tp2 chips of a replica = 2 x tokens x the layer's matmul
// weights, in 1D and 2D (no kv replication: tp*tp2 <= kv_heads).
TEST(InferenceOpsTest, MatmulFlopsAreTwoNPerToken) {
  const ModelSpec m = M("llama3-70b");
  const double weights =
      static_cast<double>(m.AttentionMatmulParamsPerLayer() + m.MlpMatmulParamsPerLayer());
  for (std::string_view layout : {"tp=8", "tp=4,tp2=2", "tp=2,tp2=4", "tp=8,kv_shard=batch"}) {
    const InferenceLayout l = L(layout);
    for (const InferenceOptions& o : {Decode(16, 4095), Prefill(8, 1024)}) {
      const OpList ops = Layer(m, l, o);
      ExpectWellFormed(ops);
      const double tokens = static_cast<double>(InferenceShapeOf(l, m, o).tokens);
      EXPECT_DOUBLE_EQ(Sum(ops, OpKind::kMatmul, &Op::flops) * l.model_parallel(),
                       2 * weights * tokens)
          << layout;
      EXPECT_DOUBLE_EQ(Sum(ops, OpKind::kMatmul, &Op::model_flops),
                       Sum(ops, OpKind::kMatmul, &Op::flops));
    }
  }
}

// Attention FLOPs: decode 4 N H (context + 1) per sequence; prefill counts the causal pairs as
// hardware FLOPs and, by default, all T^2 pairs as model FLOPs. Split over the replica's chips.
TEST(InferenceOpsTest, AttentionFlopsAndKvTraffic) {
  const ModelSpec m = M("llama3-70b");
  const double nh = 64 * 128, kh = 8 * 128;
  {
    const OpList ops = Layer(m, L("tp=8"), Decode(16, 4095, DType::kInt8, DType::kInt8));
    const Op& core = Find(ops, "attn.core");
    EXPECT_DOUBLE_EQ(core.flops * 8, 4 * nh * 16 * 4096);
    EXPECT_DOUBLE_EQ(core.model_flops, core.flops);
    // The whole cache of this chip's kv head (int8) for every sequence, plus Q in and O out.
    EXPECT_DOUBLE_EQ(core.hbm_read_bytes, 1.0 * 16 * 4096 * 2 * 128 + 2.0 * 16 * 8 * 128);
    EXPECT_DOUBLE_EQ(core.hbm_write_bytes, 2.0 * 16 * 8 * 128);
    // The new token's K and V, quantized into the cache.
    const Op& write = Find(ops, "attn.kv_write");
    EXPECT_DOUBLE_EQ(write.hbm_write_bytes, 1.0 * 16 * 2 * 128);
    EXPECT_GT(write.flops, 0);
  }
  {
    const OpList ops = Layer(m, L("tp=8"), Prefill(2, 4096));
    const Op& core = Find(ops, "attn.core");
    EXPECT_DOUBLE_EQ(core.flops * 8, 4 * nh * 2 * 4096.0 * 4097 / 2);
    EXPECT_DOUBLE_EQ(core.model_flops * 8, 4 * nh * 2 * 4096.0 * 4096);
    // Prefill reads Q, K, V from the projection, never the cache; it writes every K and V.
    EXPECT_DOUBLE_EQ(core.hbm_read_bytes * 8, 2.0 * 2 * 4096 * (nh + 2 * kh));
    EXPECT_DOUBLE_EQ(Find(ops, "attn.kv_write").hbm_write_bytes * 8, 2.0 * 2 * 4096 * 2 * kh);
    EXPECT_EQ(Find(ops, "attn.kv_write").flops, 0);  // bf16 cache: a copy.
    InferenceOptions causal = Prefill(2, 4096);
    causal.model_flops_count = AttentionCount::kCausal;
    EXPECT_DOUBLE_EQ(Find(Layer(m, L("tp=8"), causal), "attn.core").model_flops, core.flops);
  }
}

// GQA with tp > kv_heads: each chip computes and caches the one kv head its query heads use, so
// the kv projection and cache are replicated tp / K times (kv_shard=heads); kv_shard=batch keeps
// every kv head of 1/tp of the sequences instead and adds the book's two all-to-alls.
TEST(InferenceOpsTest, GqaReplicationAndBatchSharding) {
  const ModelSpec m = M("llama3-70b");
  const InferenceOptions o = Decode(32, 8191);
  const OpList heads = Layer(m, L("tp=16"), o);
  EXPECT_EQ(Find(heads, "attn.qkv").shape.n, (4 + 2) * 128);
  const double cache_heads = Find(heads, "attn.core").hbm_read_bytes;
  const OpList batch = Layer(m, L("tp=16,kv_shard=batch"), o);
  ExpectWellFormed(batch);
  EXPECT_EQ(Names(batch),
            (std::vector<std::string>{"attn.norm", "attn.qkv", "attn.rotary",
                                      "tp.all-to-all.attn.qkv", "attn.kv_write", "attn.core",
                                      "tp.all-to-all.attn.out", "attn.out", "tp.all-reduce.attn",
                                      "attn.residual", "mlp.norm", "mlp.gate", "mlp.up", "mlp.act",
                                      "mlp.down", "tp.all-reduce.mlp", "mlp.residual"}));
  EXPECT_DOUBLE_EQ(Find(batch, "tp.all-to-all.attn.qkv").comm_bytes, 2.0 * 32 * (64 + 16) * 128);
  EXPECT_DOUBLE_EQ(Find(batch, "tp.all-to-all.attn.out").comm_bytes, 2.0 * 32 * 64 * 128);
  // Cache reads: heads = 32 sequences x 1 kv head; batch = 2 sequences x 8 kv heads: half.
  const double kv_per_head_seq = 8192.0 * 2 * 128 * 2;
  EXPECT_DOUBLE_EQ(cache_heads, 32 * kv_per_head_seq + 2.0 * 32 * 4 * 128);
  EXPECT_DOUBLE_EQ(Find(batch, "attn.core").hbm_read_bytes,
                   2 * 8 * kv_per_head_seq + 2.0 * 2 * 64 * 128);
  // Same attention FLOPs per chip either way.
  EXPECT_DOUBLE_EQ(Find(batch, "attn.core").flops, Find(heads, "attn.core").flops);
}

// 2D weight-stationary (Pope et al. 2022): weights [D/tp2, F/tp]; all-gather over tp before
// each block, partial sums reduce-scattered over tp2, gathered again over tp2, reduce-scattered
// over tp into the [tok, D/(tp*tp2)] residual.
TEST(InferenceOpsTest, TwoDimensionalWeightStationaryLayer) {
  const ModelSpec m = M("llama3-70b");
  const OpList ops = Layer(m, L("tp=8,tp2=2"), Decode(32, 1023));
  ExpectWellFormed(ops);
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"tp.all-gather.attn",
                                                  "attn.norm",
                                                  "tp2.all-reduce.attn.norm",
                                                  "attn.qkv",
                                                  "tp2.reduce-scatter.attn.q",
                                                  "tp2.all-reduce.attn.kv",
                                                  "attn.rotary",
                                                  "attn.kv_write",
                                                  "attn.core",
                                                  "tp2.all-gather.attn.out",
                                                  "attn.out",
                                                  "tp.reduce-scatter.attn",
                                                  "attn.residual",
                                                  "tp.all-gather.mlp",
                                                  "mlp.norm",
                                                  "tp2.all-reduce.mlp.norm",
                                                  "mlp.gate",
                                                  "mlp.up",
                                                  "tp2.reduce-scatter.mlp",
                                                  "mlp.act",
                                                  "tp2.all-gather.mlp",
                                                  "mlp.down",
                                                  "tp.reduce-scatter.mlp",
                                                  "mlp.residual"}));
  // One kv head per tp shard cannot split over tp2: it is summed whole, beside the queries.
  EXPECT_EQ(Find(ops, "tp2.all-reduce.attn.kv").deps, std::vector<int>{3});
  EXPECT_EQ(Find(ops, "attn.rotary").deps, (std::vector<int>{4, 5}));
  const double b = 32, e = 2;
  EXPECT_DOUBLE_EQ(Find(ops, "tp.all-gather.mlp").comm_bytes, e * b * 8192 / 2);
  EXPECT_DOUBLE_EQ(Find(ops, "tp.reduce-scatter.mlp").comm_bytes, e * b * 8192 / 2);
  EXPECT_DOUBLE_EQ(Find(ops, "tp2.reduce-scatter.mlp").comm_bytes, e * b * 2 * 28672 / 8);
  EXPECT_DOUBLE_EQ(Find(ops, "tp2.all-gather.mlp").comm_bytes, e * b * 28672 / 8);
  EXPECT_DOUBLE_EQ(Find(ops, "tp2.all-reduce.mlp.norm").comm_bytes, 4 * b);
  EXPECT_EQ(Find(ops, "mlp.up").shape.k, 4096);
  EXPECT_EQ(Find(ops, "mlp.up").shape.n, 3584);
  EXPECT_EQ(Find(ops, "mlp.act").deps, std::vector<int>{18});
  EXPECT_DOUBLE_EQ(Find(ops, "mlp.residual").flops, b * 512);

  // kv heads that split over tp2 go in one reduce-scatter with the queries.
  const OpList split = Layer(m, L("tp=4,tp2=2"), Decode(32, 1023));
  EXPECT_DOUBLE_EQ(Find(split, "tp2.reduce-scatter.attn.qkv").comm_bytes,
                   e * b * (16 + 2 * 2) * 128);
}

// Weights are read once per step whatever the batch: the part of a step's HBM traffic that does
// not grow with the batch is the chip's parameters at their dtype (the embedding table excepted:
// a lookup reads only the rows of the step's tokens).
TEST(InferenceOpsTest, WeightsReadOncePerStep) {
  for (DType w : {DType::kBf16, DType::kInt8, DType::kInt4}) {
    for (std::string_view text : {"tp=8", "tp=16", "tp=4,tp2=4", "tp=16,kv_shard=batch"}) {
      const ModelSpec m = M("llama3-70b");
      const InferenceLayout l = L(text);
      const int64_t g = l.kv_shard == KvShard::kBatch ? 16 : 1;
      auto hbm = [&](int64_t batch, auto ops) {
        return Hbm(ops(m, l, Decode(batch, 2047, w, DType::kInt8)));
      };
      auto intercept = [&](auto ops) { return 2 * hbm(g, ops) - hbm(2 * g, ops); };
      const double bytes = DTypeBytes(w);
      EXPECT_REL(intercept(InferenceLayerOps), InferenceLayerParamsPerChip(m, l) * bytes, 1e-9);
      EXPECT_NEAR(intercept(InferenceEmbeddingOps), 0, 1e-3);
      const InferenceShape s = InferenceShapeOf(l, m, Decode(g, 2047));
      EXPECT_REL(intercept(InferenceHeadOps), (s.vocab + 1.0) * s.d_in * bytes, 1e-9) << text;
    }
  }
}

// Mixture of experts in inference (issue 15, item 6): a layer with experts runs the router, the
// routed experts' grouped GEMMs over tokens x top_k rows with each expert's ffn split over tp, and
// the tp all-reduce; a decode step reads the weights of the experts its tokens reach (uniform
// routing: E (1 - (1 - k/E)^T)), all of them once the batch is large, and the chip holds every
// expert's shard.
TEST(InferenceOpsTest, ExpertsRunOnTheRoutedTokensAndReadTheExpertsTheyReach) {
  const ModelSpec m = M("mixtral-8x7b");  // 8 experts, top 2, expert ffn 14336, D 4096.
  const InferenceLayout l = L("tp=8");
  const OpList ops = InferenceMoeLayerOps(m, l, Decode(64, 4095));
  for (const char* name : {"moe.router", "moe.topk", "moe.experts.gate", "moe.experts.up",
                           "moe.experts.down", "moe.combine", "tp.all-reduce.mlp"}) {
    EXPECT_TRUE(HasOp(ops, name)) << name;
  }
  const double fe = 14336.0 / 8, d = 4096, rows = 64 * 2;
  EXPECT_DOUBLE_EQ(Find(ops, "moe.experts.up").flops, 2 * rows * d * fe);
  EXPECT_DOUBLE_EQ(Find(ops, "moe.router").flops, 2 * 64 * d * 8);
  // Weights read: one token reaches 2 experts; 64 tokens all but 8 (6/8)^64 of them.
  auto expert_weights = [&](int64_t batch) {
    return Find(InferenceMoeLayerOps(m, l, Decode(batch, 4095)), "moe.experts.up").hbm_read_bytes -
           2.0 * batch * 2 * d;
  };
  EXPECT_REL(expert_weights(1), 2 * 2 * d * fe, 1e-9);
  EXPECT_REL(expert_weights(64), 8 * (1 - std::pow(6.0 / 8, 64)) * 2 * d * fe, 1e-9);
  // The chip holds the router and every expert's tp shard; a dense layer holds neither.
  EXPECT_REL(InferenceLayerParamsPerChip(m, l, true) - InferenceLayerParamsPerChip(m, l),
             8 * d + 3 * d * (8 * 14336.0 - 14336) / 8, 1e-12);
  // Without experts, the same model's layer is the dense one.
  EXPECT_FALSE(HasOp(InferenceLayerOps(m, l, Decode(64, 4095)), "moe.router"));
}

// Expert parallelism in inference: each chip routes its 1/tp share of the tokens, dispatches the
// routed copies over the ep group (the tp chips of ep/tp replicas) and combines them back, runs
// E/ep whole experts, and the tp group gathers the shares; the chip holds E/ep experts.
TEST(InferenceOpsTest, ExpertParallelismDispatchesAndCombinesOverTheEpGroup) {
  const ModelSpec m = M("mixtral-8x7b");
  const InferenceLayout l = L("tp=2,dp=4,ep=8");
  EXPECT_EQ(l.ep_replicas(), 4);
  EXPECT_EQ(l.EpGroupAxes(), (std::vector<std::string>{"tp", "ep"}));
  EXPECT_EQ(l.ToString(), "tp=2,tp2=1,dp=4,ep=8");
  const OpList ops = InferenceMoeLayerOps(m, l, Decode(64, 4095));  // 16 sequences a replica.
  const double d = 4096, share = 16.0 / 2;
  EXPECT_DOUBLE_EQ(Find(ops, "ep.all-to-all.moe.dispatch").comm_bytes, 2 * share * 2 * d * 8);
  EXPECT_DOUBLE_EQ(Find(ops, "ep.all-to-all.moe.combine").comm_bytes, 2 * share * 2 * d * 8);
  EXPECT_DOUBLE_EQ(Find(ops, "moe.experts.up").flops, 2 * share * 2 * d * 14336);
  EXPECT_DOUBLE_EQ(Find(ops, "tp.all-gather.mlp").comm_bytes, 2 * 16 * d);
  EXPECT_FALSE(HasOp(ops, "tp.all-reduce.mlp"));
  // One whole expert per chip against every expert's half with tp=2 and no ep.
  EXPECT_REL(InferenceLayerParamsPerChip(m, l, true) - InferenceLayerParamsPerChip(m, l),
             8 * d + 3 * d * 14336 - 3 * d * 14336 / 2, 1e-12);
  // One token on tp=8,ep=8: the chip holding one of its two experts reads that whole expert
  // (the step waits for it), where tp=8 without ep reads an eighth of two.
  const OpList one = InferenceMoeLayerOps(m, L("tp=8,ep=8"), Decode(1, 4095));
  EXPECT_REL(Find(one, "moe.experts.up").hbm_read_bytes - 2.0 * 2 * d, 2 * d * 14336, 1e-9);
  EXPECT_EQ(Error("tp=2,dp=4,ep=6", "mixtral-8x7b", 8, Decode(64, 4095)),
            "layout tp=2,tp2=1,dp=4,ep=6: ep=6 must be a multiple of tp=2 by a divisor of dp=4 "
            "(the ep group is the tp chips of ep/tp replicas)");
  EXPECT_EQ(Error("tp=8,ep=8", "llama3-8b", 8, Decode(64, 4095)),
            "layout tp=8,tp2=1,dp=1,ep=8: ep=8 needs a model with experts");
}

// Latent attention in inference (issue 15, item 6): decode absorbs the up projections and reads
// the cached latents, kv_lora + rope_dim per token shared by the heads; the dense layer's weights
// are read once per step like any layer's; the cache per chip is the whole latent cache.
TEST(InferenceOpsTest, LatentAttentionCachesTheLatentAndAbsorbsTheUpProjections) {
  const ModelSpec m = M("deepseek-v2");  // kv_lora 512, rope 64, 128 heads of 128 + 64, v 128.
  const InferenceLayout l = L("tp=8");
  const OpList decode = InferenceLayerOps(m, l, Decode(32, 4095));
  for (const char* name :
       {"attn.q_down", "attn.kv_down", "attn.q_absorb", "attn.core", "attn.v_absorb", "attn.out"}) {
    EXPECT_TRUE(HasOp(decode, name)) << name;
  }
  EXPECT_FALSE(HasOp(decode, "attn.kv_up"));
  const double heads = 128.0 / 8, keys = 4096;
  const Op& core = Find(decode, "attn.core");
  EXPECT_DOUBLE_EQ(core.flops, 2 * heads * (2 * 512 + 64) * 32 * keys);
  EXPECT_DOUBLE_EQ(core.hbm_read_bytes, 2 * 32 * heads * 576 + 2 * 32 * keys * 576);
  EXPECT_DOUBLE_EQ(Find(decode, "attn.kv_write").hbm_write_bytes, 2 * 32 * 576);
  EXPECT_TRUE(HasOp(InferenceLayerOps(m, l, Prefill(2, 1024)), "attn.kv_up"));
  // Weights once per step (the dense first layer), latent cache whole on each chip.
  auto hbm = [&](int64_t batch) { return Hbm(InferenceLayerOps(m, l, Decode(batch, 2047))); };
  EXPECT_REL(2 * hbm(1) - hbm(2), InferenceLayerParamsPerChip(m, l) * 2, 1e-9);
  const topology::ChipSpec chip = topology::ChipPreset("h100").value();
  EXPECT_DOUBLE_EQ(InferenceMemory(m, l, Decode(32, 4095), chip).kv_cache_bytes,
                   60.0 * 32 * 4096 * 576 * 2);
  EXPECT_EQ(Error("tp=4,tp2=2", "deepseek-v2", 8, Decode(32, 4095)),
            "layout tp=4,tp2=2,dp=1: model 'deepseek-v2' has latent attention: its inference runs "
            "1D tensor parallelism with the cache by heads (tp2=1, kv_shard=heads)");
}

// Prefill: logits for the last token of each sequence only (the next-token distribution is all
// generation needs), so the head's matmul has `batch` rows in both phases.
TEST(InferenceOpsTest, HeadUnembedsLastTokensOnly) {
  const ModelSpec m = M("llama3-70b");
  for (const InferenceOptions& o : {Prefill(4, 2048), Decode(4, 2048)}) {
    const OpList head = InferenceHeadOps(m, L("tp=8"), o);
    ExpectWellFormed(head);
    EXPECT_EQ(Names(head), (std::vector<std::string>{"head.norm", "head.unembed",
                                                     "tp.all-gather.logits", "head.sample"}));
    EXPECT_EQ(Find(head, "head.unembed").shape.m, 4);
    EXPECT_EQ(Find(head, "head.unembed").shape.n, 16032);
    EXPECT_DOUBLE_EQ(Find(head, "tp.all-gather.logits").comm_bytes, 2.0 * 4 * 16032 * 8);
  }
  const OpList embed = InferenceEmbeddingOps(m, L("tp=8"), Prefill(4, 2048));
  EXPECT_EQ(Names(embed), (std::vector<std::string>{"embed.lookup", "tp.all-reduce.embed"}));
  EXPECT_DOUBLE_EQ(Find(embed, "tp.all-reduce.embed").comm_bytes, 2.0 * 4 * 2048 * 8192);
  const OpList embed_2d = InferenceEmbeddingOps(m, L("tp=4,tp2=2"), Decode(4, 2048));
  EXPECT_EQ(Names(embed_2d), (std::vector<std::string>{"embed.lookup", "tp.reduce-scatter.embed"}));
  const OpList head_2d = InferenceHeadOps(m, L("tp=4,tp2=2"), Decode(4, 2048));
  ExpectWellFormed(head_2d);
  EXPECT_EQ(Names(head_2d),
            (std::vector<std::string>{"tp.all-gather.head", "head.norm", "tp2.all-reduce.head.norm",
                                      "head.unembed", "tp2.all-reduce.head", "tp.all-gather.logits",
                                      "head.sample"}));
}

// I1 (Ch7 Linear operations): the critical batch of a decode matmul is where its FLOPs time
// equals the time to load its weights: B_crit = C/W_hbm x bytes per weight / 2, measured on the
// ops (slope of FLOPs in the batch vs the weight bytes they read once).
TEST(InferenceBookTest, I1_CriticalBatchFromArithmeticIntensity) {
  const ModelSpec m = M("llama3-70b");
  auto critical = [&](DType w, double flops_per_s, double hbm_per_s) {
    auto up = [&](int64_t batch) {
      return Find(Layer(m, L("dp=1"), Decode(batch, 0, w)), "mlp.up");
    };
    const double weights = 2 * up(1).hbm_read_bytes - up(2).hbm_read_bytes;
    const double flops_per_sequence = up(2).flops - up(1).flops;
    return weights * flops_per_s / (flops_per_sequence * hbm_per_s);
  };
  const topology::ChipSpec v5e = Chip("tpu-v5e"), h100 = Chip("h100");
  EXPECT_REL(critical(DType::kBf16, v5e.bf16_flops_per_s, v5e.hbm_bytes_per_s), 240, kRounded);
  // int8 weights, bf16 FLOPs: half the bytes, same FLOPs.
  EXPECT_REL(critical(DType::kInt8, v5e.bf16_flops_per_s, v5e.hbm_bytes_per_s), 120, kRounded);
  // int8 x int8 at 3.94e14.
  EXPECT_REL(critical(DType::kInt8, v5e.int8_flops_per_s, v5e.hbm_bytes_per_s), 240, kRounded);
  // H100: 9.89e14 / 3.35e12 = 295; the book says "~280".
  EXPECT_REL(critical(DType::kBf16, h100.bf16_flops_per_s, h100.hbm_bytes_per_s), 280, kApprox);
  // Counting the activations it also reads and writes, the bf16 op turns compute-bound at 250.
  auto up = [&](int64_t batch) { return Find(Layer(m, L("dp=1"), Decode(batch, 0)), "mlp.up"); };
  const double ratio = v5e.bf16_flops_per_s / v5e.hbm_bytes_per_s;
  EXPECT_LT(up(249).flops / Hbm(up(249)), ratio);
  EXPECT_GT(up(250).flops / Hbm(up(250)), ratio);
}

// I2 (Ch7 What about attention): MHA attention's intensity is ST/(S+T): prefill (S = T) T/2 with
// all T^2 pairs counted, so compute-bound on a v5e past ~480 tokens; decode ~1, always HBM-bound.
TEST(InferenceBookTest, I2_AttentionArithmeticIntensity) {
  const ModelSpec m = M("llama2-13b");  // N = K = 40: MHA.
  auto intensity = [&](const InferenceOptions& o) {
    const Op core = Find(Layer(m, L("dp=1"), o), "attn.core");  // A copy: the list is a temporary.
    return core.model_flops / Hbm(core);
  };
  EXPECT_REL(intensity(Prefill(1, 4096)), 4096 / 2, kExact);
  EXPECT_REL(intensity(Decode(8, 4096)), 1, kExact);
  const topology::ChipSpec v5e = Chip("tpu-v5e");
  const double ratio = v5e.bf16_flops_per_s / v5e.hbm_bytes_per_s;  // 240.2
  EXPECT_LT(intensity(Prefill(1, 480)), ratio);
  EXPECT_GT(intensity(Prefill(1, 481)), ratio);
}

// I7 (Ch7 generation, model parallel): with T_HBM = 2DF/(Y W_hbm) for one MLP matrix and
// T_ICI = 2BD/W_ici for the all-reduce's bf16 [B, D], ICI dominates past Y = F/(B beta), beta =
// W_hbm/W_ici ~ 8: 16384/(32*8) = 64 for the Ch7 model at B = 32.
TEST(InferenceBookTest, I7_ModelParallelIciBound) {
  const ModelSpec m = M(kCh7Model);
  const Op up = Find(Layer(m, L("dp=1"), Decode(32, 0)), "mlp.up");
  const double matrix_bytes = up.hbm_read_bytes - 2.0 * 32 * 4096;  // Less the activations.
  const double allreduce = Find(Layer(m, L("tp=2"), Decode(32, 0)), "tp.all-reduce.mlp").comm_bytes;
  const double beta = 8;
  EXPECT_REL(matrix_bytes / (allreduce * beta), 64, kExact);
}

// I10 (Ch7 Q3): a decode step reads every weight once: 18.4e9 int8 bytes over the 16 chips of a
// v5e 4x4 (the latency bound 18.4e9/(16 x 8.2e11) = 1.4 ms needs the simulator). The 2D layout
// (tp=8 heads x tp2=2 d_model) replicates nothing, not even the 8 kv heads.
TEST(InferenceBookTest, I10_WeightBytesReadPerDecodeStep) {
  const ModelSpec m = M(kCh7Model);
  const InferenceLayout l = L("tp=8,tp2=2");
  auto step = [&](int64_t batch) {
    return InferenceStepTotals(m, l, Decode(batch, 4095, DType::kInt8, DType::kInt8)).hbm_bytes;
  };
  EXPECT_REL((2 * step(1) - step(2)) * 16, 18.4e9, kExact);
}

// I12 (Ch7 App. B): 2D weight-stationary comms per MLP, from the ops' bytes: the tp axis (the
// book's YZ, two torus axes, so 2W) moves 2 x bf16[B, D/X] and tp2 (X, one axis) 2 x
// bf16[B, F/YZ]: T_2D = 2BD/(XW) + 4BF/(YZ W). 1D over all N chips (three axes): an all-reduce of
// bf16[B, D], T_1D = 4BD/(3W). With F = 4D the optimum X = sqrt(N/8) gives ~11.3 BD/(sqrt(N) W),
// and 2D wins past N = 72.
TEST(InferenceBookTest, I12_TwoDimensionalWeightStationaryComms) {
  const std::string model =
      "custom:layers=1,d_model=18432,ffn=73728,heads=1152,kv_heads=1152,head_dim=16,vocab=1152,"
      "gated=0";
  const ModelSpec m = M(model);
  const double b = 128, d = 18432, w = 1;  // Time in units of 1/W.
  auto mlp_bytes = [&](const OpList& ops, std::string_view axis) {
    double bytes = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::kCollective && op.axis == axis &&
          op.name.find("mlp") != std::string::npos && op.name.find("norm") == std::string::npos) {
        bytes += op.comm_bytes;
      }
    }
    return bytes;
  };
  auto t2d = [&](int x, int yz) {
    const std::string layout = "tp=" + std::to_string(yz) + ",tp2=" + std::to_string(x);
    const OpList ops = Layer(m, L(layout), Decode(128, 0));
    EXPECT_DOUBLE_EQ(mlp_bytes(ops, "tp"), 2 * 2 * b * d / x);
    EXPECT_DOUBLE_EQ(mlp_bytes(ops, "tp2"), 2 * 2 * b * 4 * d / yz);
    return mlp_bytes(ops, "tp") / (2 * w) + mlp_bytes(ops, "tp2") / w;
  };
  auto t1d = [&](int n) {
    const OpList ops = Layer(m, L("tp=" + std::to_string(n)), Decode(128, 0));
    // An all-reduce is a reduce-scatter plus an all-gather of the array: 2V over 3W.
    return 2 * mlp_bytes(ops, "tp") / (3 * w);
  };
  EXPECT_REL(t1d(72), 4 * b * d / (3 * w), 1e-12);
  EXPECT_REL(t2d(4, 32) * std::sqrt(128.0) * w / (b * d), 11.3, kExact);
  EXPECT_REL(t2d(3, 24), t1d(72), 1e-12);  // The crossover, X = sqrt(72/8) = 3.
  EXPECT_LT(t2d(4, 32), t1d(128));
  EXPECT_GT(t2d(2, 16), t1d(32));
}

// I13 (Ch7 App. A): a D=8192, F=32768 two-matrix MLP sharded 4 ways reads 2*8192*32768 bf16 /4
// = 268 MB of weights per chip per step (327 us at 8.2e11 B/s; the measured ~365 us needs the
// simulator and a calibrated chip).
TEST(InferenceBookTest, I13_MlpWeightBytesPerChip) {
  const ModelSpec m =
      M("custom:layers=1,d_model=8192,ffn=32768,heads=64,kv_heads=64,head_dim=128,vocab=32000,"
        "gated=0");
  auto mlp = [&](int64_t batch) {
    const OpList ops = Layer(m, L("tp=4"), Decode(batch, 0));
    return Hbm(Find(ops, "mlp.up")) + Hbm(Find(ops, "mlp.down"));
  };
  EXPECT_REL(2 * mlp(1) - mlp(2), 1.07e9 / 4, kExact);
}

// I14 (Ch7 App. C): a tp collective is latency-bound when its per-shard bytes take < 1 us at
// 4.5e10 B/s: 8-way, the buffer must be < 360 kB; BS=16, D=8192 in int8 is 131 kB, so it is; int8
// TP over Y is latency-bound for Y > BD/45,000.
TEST(InferenceBookTest, I14_LatencyBoundTpCollectives) {
  InferenceOptions o = Decode(16, 1023);
  o.collective = DType::kInt8;
  const OpList ops = Layer(M("llama3-70b"), L("tp=8"), o);
  const double bytes = Find(ops, "tp.all-reduce.mlp").comm_bytes;
  EXPECT_EQ(bytes, 131072);
  const double link = 4.5e10, latency = 1e-6;
  EXPECT_REL(8 * link * latency, 360e3, kExact);
  EXPECT_LT(bytes / 8 / link, latency);
  EXPECT_REL(bytes / (link * latency), 16.0 * 8192 / 45000, kExact);
}

// AI9 (Ch8): model parallelism stays compute-bound while Y < F M_Y / 2200 (C/W_ici for a v5e,
// W_ici bidirectional 9e10, M_Y = 2 axes of a 4x4): 28672*2/2200 = 26. The book's MLP has two
// matrices, 4BDF/Y FLOPs against an all-reduce (2 x the array) of bf16 [B, D].
TEST(InferenceBookTest, AI9_ComputeBoundModelParallelLimit) {
  const ModelSpec m =
      M("custom:layers=1,d_model=8192,ffn=28672,heads=64,kv_heads=8,head_dim=128,vocab=128256,"
        "gated=0");
  const OpList ops = Layer(m, L("tp=2"), Decode(256, 0));
  const double flops = (Find(ops, "mlp.up").flops + Find(ops, "mlp.down").flops) * 2;  // Y = 1.
  const double comm = 2 * Find(ops, "tp.all-reduce.mlp").comm_bytes;
  const topology::ChipSpec v5e = Chip("tpu-v5e");
  const double w_ici = 2 * v5e.scale_up_link_bytes_per_s, m_y = 2;
  EXPECT_REL(flops * w_ici * m_y / (v5e.bf16_flops_per_s * comm), 26, kApprox);
}

// AI10 (Ch8 prefill): 8192 tokens of LLaMA-3 70B take 2 x 70e9 x 8192 FLOPs (the 0.91 s at 40%
// MFU on 16 v5e chips needs the simulator). The ops count every layer matmul for every token,
// the unembedding for the last token only (and the embedding lookup as no FLOPs): 2.2% under
// the book's 2 x params x tokens. Causal attention adds 7.7% the book leaves out.
TEST(InferenceBookTest, AI10_PrefillFlops) {
  const ModelSpec m = M("llama3-70b");
  const InferenceLayout l = L("tp=8,tp2=2");  // 16 chips, nothing replicated.
  const InferenceOptions o = Prefill(1, 8192);
  ASSERT_TRUE(ValidateInferenceLayout(l, m, 16, o).ok());
  double matmul = 0, attention = 0;
  for (const OpList& ops : {InferenceEmbeddingOps(m, l, o), InferenceHeadOps(m, l, o)}) {
    matmul += Sum(ops, OpKind::kMatmul, &Op::flops) * 16;
  }
  const OpList layer = InferenceLayerOps(m, l, o);
  matmul += Sum(layer, OpKind::kMatmul, &Op::flops) * 16 * 80;
  attention = Sum(layer, OpKind::kAttention, &Op::flops) * 16 * 80;
  EXPECT_REL(matmul, 2 * 70e9 * 8192, kRounded);
  const double layer_weights =
      static_cast<double>(m.AttentionMatmulParamsPerLayer() + m.MlpMatmulParamsPerLayer());
  EXPECT_REL(matmul, 2 * (80 * layer_weights * 8192 + 128256.0 * 8192), 1e-12);
  EXPECT_REL(attention, 4.0 * 80 * 64 * 128 * 8192 * 8193 / 2, 1e-12);
  EXPECT_REL(attention / (2 * 70e9 * 8192), 0.077, kRounded);
}

// I6 (Ch7, LLaMA-2 13B with 8 kv heads on 8 chips): a decode step's HBM traffic is the weights
// plus every sequence's KV cache: (weights + B x 1.34e9) bytes at 8192 cached tokens. The ops
// also read and write each token's activations (unfused norms, residuals: ~4% of a sequence's
// KV here), which the book leaves out. (The book keeps the MHA model's 26e9 weight bytes; this
// model's are 22.7e9. The step times need the simulator.)
TEST(InferenceBookTest, I6_DecodeStepHbmBytes) {
  const ModelSpec m =
      M("custom:layers=40,d_model=5120,ffn=13824,heads=40,kv_heads=8,head_dim=128,vocab=32000");
  const InferenceLayout l = L("tp=8");
  const double kv = KvCacheBytes(m, 1, 8192, DType::kBf16);
  EXPECT_REL(kv, 1.34e9, kExact);
  const double weights = 2 * InferenceStepTotals(m, l, Decode(1, 8191)).hbm_bytes -
                         InferenceStepTotals(m, l, Decode(2, 8191)).hbm_bytes;
  for (int64_t batch : {1, 8, 16, 32, 64, 240}) {
    const double step = InferenceStepTotals(m, l, Decode(batch, 8191)).hbm_bytes * 8;
    EXPECT_REL(step, weights * 8 + batch * kv, kRounded) << batch;
  }
}

}  // namespace
}  // namespace podsim::workloads
