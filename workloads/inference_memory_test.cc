#include "workloads/inference_memory.h"

#include <gtest/gtest.h>

#include <cmath>

namespace podsim::workloads {
namespace {

// Tolerance tags of book-cases.yaml: exact < 1%, rounded +-5%, approx +-15%.
constexpr double kExact = 0.01;
constexpr double kRounded = 0.05;

#define EXPECT_REL(actual, expected, tol)                                            \
  EXPECT_NEAR(static_cast<double>(actual) / static_cast<double>(expected), 1.0, tol) \
      << #actual " = " << static_cast<double>(actual) << " vs " << (expected)

ModelSpec M(std::string_view text) {
  sim::StatusOr<ModelSpec> m = ParseModel(text);
  PODSIM_CHECK(m.ok()) << m.status();
  return std::move(m).value();
}

InferenceLayout L(std::string_view text) { return ParseInferenceLayout(text).value(); }

InferenceOptions Options(InferencePhase phase, int64_t batch, int64_t context, DType weights,
                         DType kv) {
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
InferenceOptions Prefill(int64_t batch, int64_t context) {
  return Options(InferencePhase::kPrefill, batch, context, DType::kBf16, DType::kBf16);
}

topology::ChipSpec Chip(std::string_view name) { return topology::ChipPreset(name).value(); }

InferenceMemoryBreakdown Memory(const ModelSpec& model, std::string_view layout,
                                const InferenceOptions& options, std::string_view chip) {
  const InferenceLayout l = L(layout);
  sim::Status ok = ValidateInferenceLayout(l, model, l.chips(), options);
  PODSIM_CHECK(ok.ok()) << ok;
  return InferenceMemory(model, l, options, Chip(chip));
}

// The book's Ch7 worked model (I8): L=64, D=4096, F=16384, N=32, K=8, H=256, V=32128, tied.
constexpr std::string_view kCh7Model =
    "custom:layers=64,d_model=4096,ffn=16384,heads=32,kv_heads=8,head_dim=256,vocab=32128,tied=1";
constexpr std::string_view kCh7ModelMqa =
    "custom:layers=64,d_model=4096,ffn=16384,heads=32,kv_heads=1,head_dim=256,vocab=32128,tied=1";

// Smallest TPU v5e slice with at least `chips` chips (1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16,
// 16x16).
int64_t V5eSlice(double chips) {
  for (int64_t slice : {1, 4, 8, 16, 32, 64, 128, 256}) {
    if (slice >= std::ceil(chips)) return slice;
  }
  return 0;
}

TEST(InferenceMemoryTest, WeightsShardOverTheReplica) {
  const ModelSpec m = M("llama3-70b");
  const double total = static_cast<double>(m.TotalParams());
  // 1D and 2D: the shards add up to the model, norm gains replicated over tp (a few MB).
  EXPECT_REL(InferenceParamsPerChip(m, L("tp=8")) * 8, total, 1e-3);
  EXPECT_REL(InferenceParamsPerChip(m, L("tp=4,tp2=2")) * 8, total, 1e-3);
  EXPECT_REL(InferenceParamsPerChip(m, L("tp=1")), total, 1e-12);
  // tp=16 over 8 kv heads: the K and V projections are held twice (and the 161 norms' gains
  // on 8 more chips).
  const double kv_weights = 80.0 * 2 * 8192 * 8 * 128, norms = 161.0 * 8192;
  EXPECT_DOUBLE_EQ(
      InferenceParamsPerChip(m, L("tp=16")) * 16 - InferenceParamsPerChip(m, L("tp=8")) * 8,
      kv_weights + 8 * norms);
  // A tied model holds the table once.
  const ModelSpec tied = M(kCh7Model);
  double layers = 0;
  const double params = InferenceParamsPerChip(tied, L("tp=8"), &layers);
  EXPECT_DOUBLE_EQ(params - layers, 4016.0 * 4096 + 4096);
}

TEST(InferenceMemoryTest, KvCacheShardsByHeadsOrBatch) {
  const ModelSpec m = M("llama3-70b");
  const InferenceOptions o = Decode(32, 8191, DType::kInt8, DType::kInt8);
  const double whole = KvCacheBytes(m, 32, 8192, DType::kInt8);
  EXPECT_DOUBLE_EQ(Memory(m, "tp=8", o, "tpu-v5p").kv_cache_bytes, whole / 8);
  // 16 chips over 8 kv heads: replicated twice by heads, split 16 ways by batch.
  EXPECT_DOUBLE_EQ(Memory(m, "tp=16", o, "tpu-v5p").kv_cache_bytes, whole / 8);
  EXPECT_DOUBLE_EQ(Memory(m, "tp=16,kv_shard=batch", o, "tpu-v5p").kv_cache_bytes, whole / 16);
  EXPECT_DOUBLE_EQ(Memory(m, "tp=4,tp2=2", o, "tpu-v5p").kv_cache_bytes, whole / 8);
  // dp replicas each hold their own sequences.
  EXPECT_DOUBLE_EQ(Memory(m, "tp=8,dp=2", o, "tpu-v5p").kv_cache_bytes, whole / 16);
  // Prefill caches the prompt; decode one more position.
  EXPECT_DOUBLE_EQ(Memory(m, "tp=8", Prefill(32, 8192), "tpu-v5p").kv_cache_bytes,
                   KvCacheBytes(m, 32, 8192, DType::kBf16) / 8);
}

TEST(InferenceMemoryTest, FitsHeadroomAndMaxBatch) {
  const ModelSpec m = M("llama3-70b");
  const InferenceMemoryBreakdown tight = Memory(m, "tp=4", Decode(1, 1023), "tpu-v5e");
  EXPECT_FALSE(tight.fits);  // 35 GB of bf16 weights per chip on 16 GB.
  EXPECT_DOUBLE_EQ(tight.headroom_bytes, tight.hbm_bytes - tight.total_bytes);
  EXPECT_DOUBLE_EQ(tight.total_bytes, tight.weight_bytes + tight.kv_cache_bytes +
                                          tight.activation_bytes + tight.buffer_bytes);
  const InferenceMemoryBreakdown ok = Memory(m, "tp=16", Decode(16, 8191), "tpu-v5e");
  EXPECT_TRUE(ok.fits);
  EXPECT_GT(ok.headroom_bytes, 0);
  EXPECT_DOUBLE_EQ(ok.buffer_bytes, 2.0 * 16 * 128256);  // The gathered logits.

  const ModelSpec small = M("llama3-8b");
  for (const auto& [model, layout] :
       std::vector<std::pair<const ModelSpec*, std::string_view>>{{&m, "tp=16"},
                                                                  {&m, "tp=16,kv_shard=batch"},
                                                                  {&m, "tp=8,tp2=2"},
                                                                  {&small, "tp=4,dp=4"}}) {
    const InferenceLayout l = L(layout);
    const InferenceOptions o = Decode(1, 8191);
    const int64_t most = MaxBatchThatFits(*model, l, o, Chip("tpu-v5e"));
    const int64_t granule = l.kv_shard == KvShard::kBatch ? 16 : l.dp;
    ASSERT_GT(most, 0) << layout;
    EXPECT_EQ(most % granule, 0) << layout;
    InferenceOptions at = o;
    at.batch = most;
    EXPECT_TRUE(InferenceMemory(*model, l, at, Chip("tpu-v5e")).fits) << layout;
    at.batch = most + granule;
    EXPECT_FALSE(InferenceMemory(*model, l, at, Chip("tpu-v5e")).fits) << layout;
  }
  EXPECT_EQ(MaxBatchThatFits(m, L("tp=4"), Decode(1, 1023), Chip("tpu-v5e")), 0);
}

// I3 (Ch7 Pop Quiz): 100 kB of int8 KV per token x 8192 tokens = 819 MB per sequence (the 2.5 ms
// and 21 ms step bounds need the simulator).
TEST(InferenceBookTest, I3_KvCachePerSequence) {
  const ModelSpec m =
      M("custom:layers=50,d_model=4000,ffn=16000,heads=32,kv_heads=8,head_dim=125,vocab=32000");
  EXPECT_DOUBLE_EQ(m.KvCacheBytesPerToken(1), 100e3);
  EXPECT_REL(KvCacheBytes(m, 1, 8192, DType::kInt8), 819e6, kExact);
}

// I4 (Ch7 What about memory, LLaMA-2 13B): 13e9 params = 26 GB in bf16; an 8k-token activation
// [8192, 5120] bf16 = 80 MiB; the KV cache of one 8192-token sequence 6.7 GB.
TEST(InferenceBookTest, I4_Llama2_13bMemory) {
  const ModelSpec m = M("llama2-13b");
  const InferenceMemoryBreakdown mem = Memory(m, "tp=1", Prefill(1, 8192), "h100");
  EXPECT_REL(mem.params, 13e9, kRounded);
  EXPECT_REL(mem.weight_bytes, 26e9, kExact);
  EXPECT_DOUBLE_EQ(mem.residual_bytes, 80.0 * 1024 * 1024);
  EXPECT_REL(mem.kv_cache_bytes, 6.7e9, kExact);
  EXPECT_DOUBLE_EQ(mem.kv_cache_bytes, KvCacheBytes(m, 1, 8192, DType::kBf16));
}

// I6 (Ch7, the same with 8 kv heads): the KV column, B x 1.34 GB at 8192 tokens in bf16.
TEST(InferenceBookTest, I6_GqaKvCacheColumn) {
  const ModelSpec m =
      M("custom:layers=40,d_model=5120,ffn=13824,heads=40,kv_heads=8,head_dim=128,vocab=32000");
  const int64_t batch[] = {1, 8, 16, 32, 64, 240};
  const double kv_gb[] = {1.34, 10.72, 21.44, 42.88, 85.76, 321.6};
  for (int i = 0; i < 6; ++i) {
    EXPECT_REL(KvCacheBytes(m, batch[i], 8192, DType::kBf16), kv_gb[i] * 1e9, kExact) << batch[i];
  }
}

// I8 (Ch7 Q1): L D (3F + 2H(N+K)) + D V = 18.4e9 params; int8 KV per token 2 L K H = 262 kB.
TEST(InferenceBookTest, I8_Ch7ModelParamsAndKvPerToken) {
  const ModelSpec m = M(kCh7Model);
  EXPECT_REL(m.TotalParams(), 18.4e9, kRounded);
  EXPECT_REL(KvCacheBytes(m, 1, 1, DType::kInt8), 262e3, kExact);
}

// I9 (Ch7 Q2, v5e 4x4, int8, 128k-token sequences): 33.5 GB per sequence; pooled over 16 chips,
// (16 x 16e9 - 18.4e9)/33.5e9 = 7 sequences; with one kv head ~56. Per chip, the layouts podsim
// models cannot reach the pooled figure: tp=16 over 8 kv heads replicates each twice (3
// sequences); kv_shard=batch puts a whole 33.5 GB sequence on each chip (none fits); with one kv
// head, 3 by heads and 48 by batch (the pooled 56 needs the sequence itself split).
TEST(InferenceBookTest, I9_MaxBatchAt128k) {
  const ModelSpec m = M(kCh7Model), mqa = M(kCh7ModelMqa);
  const topology::ChipSpec v5e = Chip("tpu-v5e");
  EXPECT_REL(KvCacheBytes(m, 1, 128000, DType::kInt8), 33.5e9, kExact);
  const InferenceOptions o = Decode(1, 128000, DType::kInt8, DType::kInt8);
  EXPECT_EQ(PooledMaxBatch(m, o, 16, v5e), 7);
  EXPECT_EQ(PooledMaxBatch(mqa, o, 16, v5e), 56);
  const InferenceOptions step = Decode(1, 127999, DType::kInt8, DType::kInt8);
  EXPECT_EQ(MaxBatchThatFits(m, L("tp=16"), step, v5e), 3);
  EXPECT_EQ(MaxBatchThatFits(m, L("tp=16,kv_shard=batch"), step, v5e), 0);
  EXPECT_EQ(MaxBatchThatFits(mqa, L("tp=16"), step, v5e), 3);
  EXPECT_EQ(MaxBatchThatFits(mqa, L("tp=16,kv_shard=batch"), step, v5e), 48);
}

// AI2 (Ch8 KV size, LLaMA-3 70B): int8 2 K H L = 160 kB per token; 5.3 GB per 32k sequence;
// 1.3 TB for 240 of them; (70e9 + 1.3e12)/16e9 = 86 v5e chips.
TEST(InferenceBookTest, AI2_Llama3_70bKvSize) {
  const ModelSpec m = M("llama3-70b");
  EXPECT_REL(KvCacheBytes(m, 1, 1, DType::kInt8), 160e3, kRounded);  // 163,840 B.
  EXPECT_REL(KvCacheBytes(m, 1, 32768, DType::kInt8), 5.3e9, kRounded);
  EXPECT_REL(KvCacheBytes(m, 240, 32768, DType::kInt8), 1.3e12, kRounded);
  const double chips =
      PooledChipsNeeded(m, Decode(240, 32768, DType::kInt8, DType::kInt8), Chip("tpu-v5e"));
  EXPECT_REL(std::ceil(chips), 86, kRounded);
}

// AI3 (Ch8, BS=32 at 8192 tokens, int8 weights and KV): KV 160e3 x 8192 x 32 = 41.9e9; with the
// 70e9 of weights 112 GB -> 7 chips -> a v5e 4x2.
TEST(InferenceBookTest, AI3_Batch32At8k) {
  const ModelSpec m = M("llama3-70b");
  const InferenceOptions o = Decode(32, 8192, DType::kInt8, DType::kInt8);
  EXPECT_REL(KvCacheBytes(m, 32, 8192, DType::kInt8), 41.9e9, kRounded);
  const double chips = PooledChipsNeeded(m, o, Chip("tpu-v5e"));
  EXPECT_REL(chips * 16e9, 112e9, kRounded);
  EXPECT_REL(chips, 7, kRounded);
  EXPECT_EQ(V5eSlice(chips), 8);
}

// AI5 (Ch8 smallest topology, LLaMA-3 70B, KV in the weights' dtype): params 140 / 70 / 35 GB;
// KV 324 / 162 / 81 kB per token; min chips 8.75 / 4.38 / 2.19 (the book prints 2.81 for int4,
// an erratum: 35/16 = 2.19); slices 4x4 / 4x2 / 2x2; free HBM 116 / 58 / 29 GB; 43 caches of
// 8k tokens each (pooled: podsim finds 42, since its 327.7 kB per token is the book's "324").
TEST(InferenceBookTest, AI5_SmallestTopologyTable) {
  const ModelSpec m = M("llama3-70b");
  const topology::ChipSpec v5e = Chip("tpu-v5e");
  struct Row {
    DType dtype;
    double param_gb, kv_kb, min_chips;
    int64_t slice;
    double free_gb;
    int64_t caches;
  };
  const Row rows[] = {{DType::kBf16, 140, 324, 8.75, 16, 116, 43},
                      {DType::kInt8, 70, 162, 4.38, 8, 58, 43},
                      {DType::kInt4, 35, 81, 2.19, 4, 29, 43}};
  for (const Row& row : rows) {
    const double weights = static_cast<double>(m.TotalParams()) * DTypeBytes(row.dtype);
    EXPECT_REL(weights, row.param_gb * 1e9, kExact);
    EXPECT_REL(KvCacheBytes(m, 1, 1, row.dtype), row.kv_kb * 1e3, kRounded);
    // KV negligible: one sequence of one token.
    const double chips = PooledChipsNeeded(m, Decode(1, 1, row.dtype, row.dtype), v5e);
    EXPECT_REL(chips, row.min_chips, kExact);
    EXPECT_EQ(V5eSlice(chips), row.slice);
    EXPECT_REL(static_cast<double>(row.slice) * v5e.hbm_bytes - weights, row.free_gb * 1e9,
               kRounded);
    EXPECT_REL(PooledMaxBatch(m, Decode(1, 8192, row.dtype, row.dtype), row.slice, v5e), row.caches,
               kRounded);
  }
  // Per chip on the bf16 4x4 (tp=16): by heads each of the 8 kv heads sits on 2 chips, halving
  // the pooled 43; by batch each chip holds all heads of a 16th of the sequences, in steps of 16.
  const InferenceOptions o = Decode(1, 8191);
  EXPECT_EQ(MaxBatchThatFits(m, L("tp=16"), o, v5e), 20);
  EXPECT_EQ(MaxBatchThatFits(m, L("tp=16,kv_shard=batch"), o, v5e), 32);
}

}  // namespace
}  // namespace podsim::workloads
