#include "workloads/memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "workloads/remat_policy.h"

namespace podsim::workloads {
namespace {

// Tolerance tags of book-cases.yaml: exact < 1%, rounded +-5%, approx +-15%.
constexpr double kExact = 0.01;
constexpr double kRounded = 0.05;
constexpr double kApprox = 0.15;
constexpr double kGiB = 1024.0 * 1024 * 1024;

#define EXPECT_REL(actual, expected, tol)                                            \
  EXPECT_NEAR(static_cast<double>(actual) / static_cast<double>(expected), 1.0, tol) \
      << #actual " = " << static_cast<double>(actual) << " vs " << (expected)

struct Case {
  ModelSpec model;
  Layout layout;
  BatchSpec batch;
};

Case Make(std::string_view model, std::string_view layout, BatchSpec batch) {
  Case c{ParseModel(model).value(), ParseLayout(layout).value(), batch};
  sim::Status ok = ValidateLayout(c.layout, c.model, c.layout.chips(), c.batch);
  PODSIM_CHECK(ok.ok()) << ok;
  return c;
}

topology::ChipSpec Chip(std::string_view name) { return topology::ChipPreset(name).value(); }

// A Megatron GPT (measured.md V1/V3): LayerNorm, biases, GeLU, dropout, learned positions, tied
// embeddings, V = 51200.
std::string Gpt(int layers, int hidden, int heads) {
  return "custom:layers=" + std::to_string(layers) + ",d_model=" + std::to_string(hidden) +
         ",ffn=" + std::to_string(4 * hidden) + ",heads=" + std::to_string(heads) +
         ",kv_heads=" + std::to_string(heads) + ",head_dim=" + std::to_string(hidden / heads) +
         ",vocab=51200,gated=0,tied=1,bias=1,norm=layer,positions=2048,dropout=1";
}

OpOptions Korthikanti(RecomputePolicy policy) {
  OpOptions o;
  o.attention = AttentionKernel::kMaterialized;  // Megatron 2022's attention.
  o.recompute = policy;
  o.precision = PrecisionRecipe::Megatron();
  return o;
}

double PerLayer(const Case& c, const OpOptions& options) {
  return LayerActivationBytes(
      LayerForwardOps(c.model, c.layout, ShapeOf(c.layout, c.model, c.batch), options), options);
}

// Korthikanti et al. 2022, Table 2 (measured.md V3): activation bytes per layer, from the ops'
// saved tensors, for the 22B model (s=2048, b=4, h=6144, a=64, t=8). Exact.
TEST(MemoryTest, KorthikantiTable2PerLayerActivations) {
  const std::string gpt22b = Gpt(48, 6144, 64);
  const double s = 2048, b = 4, h = 6144, a = 64, t = 8, sbh = s * b * h;
  Case none1 = Make(gpt22b, "dp=1", {4, 2048});
  EXPECT_REL(PerLayer(none1, Korthikanti(RecomputePolicy::kNone)), sbh * (34 + 5 * a * s / h),
             1e-12);
  Case tp = Make(gpt22b, "tp=8", {4, 2048});
  Case tp_sp = Make(gpt22b, "tp=8,sp=1", {4, 2048});
  EXPECT_REL(PerLayer(tp, Korthikanti(RecomputePolicy::kNone)),
             sbh * (10 + 24 / t + 5 * a * s / (h * t)), 1e-12);
  EXPECT_REL(PerLayer(tp_sp, Korthikanti(RecomputePolicy::kNone)),
             sbh * (34 / t + 5 * a * s / (h * t)), 1e-12);
  EXPECT_REL(PerLayer(tp, Korthikanti(RecomputePolicy::kSelective)), sbh * (10 + 24 / t), 1e-12);
  EXPECT_REL(PerLayer(tp_sp, Korthikanti(RecomputePolicy::kSelective)), sbh * 34 / t, 1e-12);
  EXPECT_REL(PerLayer(tp, Korthikanti(RecomputePolicy::kFull)), sbh * 2, 1e-12);
  // A flash kernel never stores the T x T tensors: its "none" is the selective row plus the
  // softmax statistics (4 bytes per row and head).
  OpOptions flash;
  EXPECT_REL(PerLayer(tp, flash), sbh * (10 + 24 / t) + 4 * s * b * a / t, 1e-12);
}

// Korthikanti Figure 1 (measured.md V3, from Calculon): activations (GiB per GPU, first stage)
// without recomputation / with sequence parallelism + selective recomputation, and params +
// optimizer state with 18 bytes/param. Interleaving v=3 for 175B and 530B (1F1B for 22B, 1T).
TEST(MemoryTest, KorthikantiFigure1) {
  struct Row {
    std::string model, layout;
    BatchSpec batch;
    double none_gib, seqsel_gib, state_gib;
    bool embedding_small;  // Stage 0's embedding is < 5% of its state.
  };
  // clang-format off
  const Row rows[] = {
      {Gpt(48, 6144, 64), "tp=8", {4, 2048}, 59.25, 9.56, 45.56, true},
      {"gpt3-175b", "tp=8,pp=8,microbatches=64,schedule=interleaved,virtual_stages=3",
       {64, 2048}, 66.84, 12.35, 45.56, true},
      {Gpt(105, 20480, 128), "tp=8,pp=35,microbatches=280,schedule=interleaved,virtual_stages=3",
       {280, 2048}, 114.02, 23.08, 31.64, false},
      {Gpt(128, 25600, 160), "tp=8,pp=64,microbatches=512", {512, 2048}, 131.25, 26.56, 32.96,
       false},
  };
  // clang-format on
  const topology::ChipSpec a100 = Chip("a100");
  for (const Row& r : rows) {
    Case none = Make(r.model, r.layout, r.batch);
    Case sp = Make(r.model, r.layout + ",sp=1", r.batch);
    MemoryBreakdown m0 = StageMemory(none.model, none.layout, none.batch,
                                     Korthikanti(RecomputePolicy::kNone), a100, 0);
    MemoryBreakdown m1 = StageMemory(sp.model, sp.layout, sp.batch,
                                     Korthikanti(RecomputePolicy::kSelective), a100, 0);
    EXPECT_REL(m0.layer_activation_bytes / kGiB, r.none_gib, kExact) << r.model;
    EXPECT_REL(m1.layer_activation_bytes / kGiB, r.seqsel_gib, kExact) << r.model;
    // Calculon counts the 12lh^2 layer weights only: compare that part exactly, and the whole
    // state (with the embedding on stage 0) as rounded where the embedding is small. For 530B
    // and 1T stage 0 holds 3 and 2 layers, and its 51200 x h / 8 embedding adds 7-9%.
    EXPECT_REL(m0.layer_params * 18 / kGiB, r.state_gib, kExact) << r.model;
    const double state = m0.param_bytes + m0.grad_bytes + m0.optimizer_bytes;
    if (r.embedding_small) {
      EXPECT_REL(state / kGiB, r.state_gib, kRounded) << r.model;
    }
    const double h = static_cast<double>(none.model.d_model);
    // The rest is the embedding and positions (and, with one stage, the final norm).
    EXPECT_REL(state - m0.layer_params * 18, 18 * (51200 + 2048) * h / 8, 1e-3) << r.model;
  }
}

// Korthikanti Figure 7 (measured.md V3): activation memory relative to the TP baseline for
// none / sequence parallel / selective / both / full recomputation.
TEST(MemoryTest, KorthikantiFigure7Relative) {
  struct Row {
    std::string model;
    double seq, sel, seqsel, full, tol;
  };
  const Row rows[] = {{Gpt(48, 6144, 64), 66.84, 49.42, 16.18, 7.64, kExact},
                      {"gpt3-175b", 62.04, 56.53, 18.49, 8.71, kExact},
                      {Gpt(105, 20480, 128), 58.31, 62.04, 20.27, 9.42, kRounded}};
  for (const Row& r : rows) {
    Case tp = Make(r.model, "tp=8", {8, 2048});
    Case sp = Make(r.model, "tp=8,sp=1", {8, 2048});
    const double base = PerLayer(tp, Korthikanti(RecomputePolicy::kNone));
    EXPECT_REL(100 * PerLayer(sp, Korthikanti(RecomputePolicy::kNone)) / base, r.seq, r.tol);
    EXPECT_REL(100 * PerLayer(tp, Korthikanti(RecomputePolicy::kSelective)) / base, r.sel, r.tol);
    EXPECT_REL(100 * PerLayer(sp, Korthikanti(RecomputePolicy::kSelective)) / base, r.seqsel,
               r.tol);
    EXPECT_REL(100 * PerLayer(tp, Korthikanti(RecomputePolicy::kFull)) / base, r.full, r.tol);
  }
}

// X3 (Ch4): block remat keeps 2*B*T*D*L bytes: 4.2TB for BT=4e6, L=64, D=8192 (rounded).
TEST(MemoryTest, X3BlockRematActivations) {
  Case c = Make(
      "custom:layers=64,d_model=8192,ffn=32768,heads=64,kv_heads=64,head_dim=128,"
      "vocab=32000",
      "dp=1", {1000, 4000});
  OpOptions full;
  full.recompute = RecomputePolicy::kFull;
  MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, full, Chip("tpu-v5p"), 0);
  EXPECT_REL(m.layer_activation_bytes, 4.2e12, kRounded);
  EXPECT_DOUBLE_EQ(m.layer_activation_bytes, 2.0 * 4e6 * 8192 * 64);
}

// Under recomputation a layer's backward first re-runs its forward and holds what that forward
// saves: on a first pipeline stage (no loss) the peak adds one layer's activations beyond its
// checkpoint; on a single stage the loss's peak, which comes first, covers it.
TEST(MemoryTest, RecomputationHoldsOneLayersActivationsInItsBackward) {
  Case c = Make("llama3-8b", "tp=8,pp=4,microbatches=8", {32, 4096});
  OpOptions none, full;
  full.recompute = RecomputePolicy::kFull;
  const ShardShape shape = ShapeOf(c.layout, c.model, c.batch);
  const OpList fwd = LayerForwardOps(c.model, c.layout, shape, full);
  const double transient = RecomputeTransientBytes(fwd, full);
  EXPECT_DOUBLE_EQ(transient, LayerActivationBytes(fwd, none) - LayerActivationBytes(fwd, full));
  EXPECT_GT(transient, 0);
  EXPECT_EQ(RecomputeTransientBytes(fwd, none), 0);
  const MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, full, Chip("h100"), 0);
  EXPECT_DOUBLE_EQ(m.recompute_peak_bytes, transient);
  EXPECT_DOUBLE_EQ(m.total_bytes, m.param_bytes + m.grad_bytes + m.optimizer_bytes +
                                      m.activation_bytes + m.buffer_bytes + transient);
  EXPECT_EQ(StageMemory(c.model, c.layout, c.batch, none, Chip("h100"), 0).recompute_peak_bytes, 0);
  // One stage: the loss's peak comes first and counts; the layer's counts beyond it only.
  for (const char* loss : {"vocab-parallel", "upcast"}) {
    Case one = Make("llama3-8b", "tp=8", {8, 4096});
    OpOptions o = full;
    o.loss = LossKernelNamed(loss).value();
    const MemoryBreakdown single =
        StageMemory(one.model, one.layout, one.batch, o, Chip("h100"), 0);
    const double layer = RecomputeTransientBytes(
        LayerForwardOps(one.model, one.layout, ShapeOf(one.layout, one.model, one.batch), o), o);
    EXPECT_GT(single.loss_peak_bytes, 0) << loss;
    EXPECT_DOUBLE_EQ(single.recompute_peak_bytes, std::max(0.0, layer - single.loss_peak_bytes))
        << loss;
  }
}

// The checks of OffloadedActivationsLeaveHbmForTheHost on one layout.
void OffloadedActivationsLeaveHbm(const Case& c) {
  auto options = [](const char* name) {
    const RematPolicy policy = MaxTextRematPolicy(name).value();
    OpOptions o;
    o.recompute = RecomputePolicy::kSaveNamed;
    o.saved_ops = policy.saved;
    o.offloaded_ops = policy.offloaded;
    return o;
  };
  for (const auto& [saving, offloading] : {std::pair{"save_qkv_proj", "qkv_proj_offloaded"},
                                           std::pair{"minimal", "minimal_offloaded"}}) {
    SCOPED_TRACE(offloading);
    const OpOptions kept = options(saving), offloaded = options(offloading), full = options("full");
    const ShardShape shape = ShapeOf(c.layout, c.model, c.batch);
    const OpList fwd = LayerForwardOps(c.model, c.layout, shape, offloaded);
    EXPECT_DOUBLE_EQ(LayerOffloadedBytes(fwd, offloaded),
                     LayerActivationBytes(fwd, kept) - LayerActivationBytes(fwd, full));
    EXPECT_DOUBLE_EQ(LayerActivationBytes(fwd, offloaded), LayerActivationBytes(fwd, full));
    for (int stage : {0, 1}) {
      const MemoryBreakdown on_chip =
          StageMemory(c.model, c.layout, c.batch, kept, Chip("tpu-v5p"), stage);
      const MemoryBreakdown host =
          StageMemory(c.model, c.layout, c.batch, offloaded, Chip("tpu-v5p"), stage);
      EXPECT_EQ(on_chip.host_offload_bytes, 0);
      EXPECT_GT(host.host_offload_bytes, 0);
      EXPECT_NEAR(host.layer_activation_bytes + host.host_offload_bytes,
                  on_chip.layer_activation_bytes, 1e-6 * on_chip.layer_activation_bytes);
    }
  }
  // The peak's host figures are the largest stage's, whichever stage peaks in HBM; a step copies
  // every microbatch's.
  const OpOptions offloaded = options("qkv_proj_offloaded");
  double host = 0, traffic = 0;
  for (int stage = 0; stage < c.layout.pp; ++stage) {
    const MemoryBreakdown m =
        StageMemory(c.model, c.layout, c.batch, offloaded, Chip("tpu-v5p"), stage);
    host = std::max(host, m.host_offload_bytes);
    traffic = std::max(traffic, m.host_offload_traffic_bytes);
  }
  const MemoryBreakdown peak = PeakMemory(c.model, c.layout, c.batch, offloaded, Chip("tpu-v5p"));
  EXPECT_DOUBLE_EQ(peak.host_offload_bytes, host);
  EXPECT_DOUBLE_EQ(peak.host_offload_traffic_bytes, traffic);
  const ShardShape shape = ShapeOf(c.layout, c.model, c.batch);
  EXPECT_DOUBLE_EQ(traffic,
                   LayerOffloadedBytes(LayerForwardOps(c.model, c.layout, shape, offloaded),
                                       offloaded) *
                       c.model.layers / c.layout.pp * 4);  // 4 microbatches.
  // The policies by name: unknown ones are refused with the list.
  EXPECT_EQ(MaxTextRematPolicy("qkv_offloaded").status().message(),
            "unknown MaxText remat policy 'qkv_offloaded'; expected full, minimal, "
            "save_dot_except_mlpwi, save_dot_except_mlp, save_qkv_proj, save_out_proj, "
            "qkv_proj_offloaded or minimal_offloaded");
  OpOptions bad = options("qkv_proj_offloaded");
  bad.recompute_layers = {RecomputeLayers::Kind::kEvery, 2};
  EXPECT_FALSE(ValidateOpOptions(bad, c.layout).ok());
}

// MaxText's offloaded remat policies (remat_policy.h) keep their outputs in host memory: the same
// outputs the saving policy keeps leave HBM and are reported apart, and nothing else changes;
// likewise with interleaving over unequal chunks (32 layers over 6: memory walks the units).
TEST(MemoryTest, OffloadedActivationsLeaveHbmForTheHost) {
  for (const char* layout :
       {"fsdp=4,tp=4,sp=1,pp=2,microbatches=4",
        "fsdp=4,tp=4,sp=1,pp=2,microbatches=4,schedule=interleaved,virtual_stages=3"}) {
    SCOPED_TRACE(layout);
    Case c = Make("llama3-8b", layout, {16, 4096});
    OffloadedActivationsLeaveHbm(c);
  }
}

// TR13 (Ch5 Q2, LLaMA-2 13B, 16M-token batch): params + optimizer (2+4+4)*13e9 ~ 130GB;
// 3 checkpoints per layer after the 3 FFW matmuls: 2*L*B*(D+2F) ~ 4.2e13 (rounded).
TEST(MemoryTest, TR13ParamsOptimizerAndThreeCheckpoints) {
  Case c = Make("llama2-13b", "dp=1", {4000, 4000});
  OpOptions o;
  o.precision = PrecisionRecipe::Book();
  o.recompute = RecomputePolicy::kSaveNamed;
  o.saved_ops = {"mlp.gate", "mlp.up", "mlp.down"};
  MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, o, Chip("tpu-v5p"), 0);
  EXPECT_REL(m.param_bytes + m.optimizer_bytes, 130e9, kRounded);
  EXPECT_EQ(m.grad_bytes, 0);  // The book's recipe holds no gradients.
  EXPECT_REL(m.layer_activation_bytes, 4.2e13, kRounded);
  EXPECT_DOUBLE_EQ(m.layer_activation_bytes, 2.0 * 40 * 16e6 * (5120 + 2 * 13824));
}

// AT5 (Ch6, LLaMA-3 70B, 4M-token batch, 4 checkpoints per layer): params ~140GB, optimizer
// ~560GB, checkpoints 2*8192*4e6*4*80 ~ 20.9TB, total ~21.6TB -> 225 v5p chips (rounded). The
// four D-wide checkpoints are the two norms' and the two output projections' outputs. The book
// leaves out the fp32 logits of the loss (another 2 TB here), so the chip count uses its terms.
TEST(MemoryTest, AT5MinimumChipsForFourMillionTokens) {
  Case c = Make("llama3-70b", "dp=1", {1000, 4000});
  OpOptions o;
  o.precision = PrecisionRecipe::Book();
  o.recompute = RecomputePolicy::kSaveNamed;
  o.saved_ops = {"attn.norm", "attn.out", "mlp.norm", "mlp.down"};
  const topology::ChipSpec v5p = Chip("tpu-v5p");
  MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, o, v5p, 0);
  EXPECT_REL(m.param_bytes, 140e9, kRounded);
  EXPECT_REL(m.optimizer_bytes, 560e9, kRounded);
  EXPECT_REL(m.layer_activation_bytes, 20.9e12, kRounded);
  const double book_total = m.param_bytes + m.optimizer_bytes + m.layer_activation_bytes;
  EXPECT_REL(book_total, 21.6e12, kRounded);
  EXPECT_REL(book_total / v5p.hbm_bytes, 225, kRounded);
  EXPECT_FALSE(m.fits);
}

// TR1 (Ch5): with Adam and pure DP the largest model is HBM/10: ~9B params on a 96GB v5p
// (approx).
TEST(MemoryTest, TR1PureDpLargestModel) {
  const topology::ChipSpec v5p = Chip("tpu-v5p");
  EXPECT_REL(v5p.hbm_bytes / PrecisionRecipe::Book().total_bytes_per_param(), 9e9, kApprox);
  EXPECT_EQ(PrecisionRecipe::Zero().total_bytes_per_param(), 16);
  EXPECT_EQ(PrecisionRecipe::Megatron().total_bytes_per_param(), 18);
}

// Issue 14 (FSDP's reshard after forward): without it, every layer's gathered weights -- the 7/8
// other chips hold on fsdp=8 -- are held at the turn from forward to backward, in the working
// precision, where nothing is prefetched (the two layers of the resharding buffer); and the
// backward gathers nothing.
TEST(MemoryTest, NoReshardAfterForwardHoldsEveryLayersGatheredWeights) {
  Case c = Make("llama3-8b", "fsdp=8", {8, 4096});
  OpOptions keep;
  keep.fsdp_reshard_after_forward = false;
  const topology::ChipSpec h100 = Chip("h100");
  const MemoryBreakdown resharded = StageMemory(c.model, c.layout, c.batch, {}, h100, 0);
  const MemoryBreakdown kept = StageMemory(c.model, c.layout, c.batch, keep, h100, 0);
  const double layer = LayerParamsPerTpShard(c.model, c.layout);
  EXPECT_REL(kept.buffer_bytes - resharded.buffer_bytes, (32 - 2) * layer * 2 * 7.0 / 8, 1e-9);
  EXPECT_EQ(kept.param_bytes, resharded.param_bytes);

  const ShardShape shape = ShapeOf(c.layout, c.model, c.batch);
  auto gathers = [&](const OpOptions& options) {
    int count = 0;
    for (const Op& op : LayerBackwardOps(c.model, c.layout, shape, options)) {
      count += op.name.starts_with("fsdp.all-gather") ? 1 : 0;
    }
    return count;
  };
  EXPECT_EQ(gathers({}), 1);
  EXPECT_EQ(gathers(keep), 0);
  EXPECT_EQ(LayerForwardOps(c.model, c.layout, shape, keep).front().name, "fsdp.all-gather.layer");
}

// Issue 14: torchtitan under pipelining (WithLayoutDefaults) keeps every parameter of the stage
// gathered all step -- the 7/8 other chips hold, in bf16, the embedding's too -- and accumulates
// the stage's unsharded gradients in fp32 (in bf16 with one microbatch) in place of the shards'
// gradients; plus one layer's fresh gradients before they are accumulated, in bf16, and the
// all-gather copy-in stream's pool: a layer's flat output and the larger of the next one's and
// the root's (stage 0's: the embedding); a middle stage has no root, and its pool is two layers'.
TEST(MemoryTest, TorchtitanUnderPipeliningAccumulatesUnshardedGradients) {
  const OpOptions torchtitan = FrameworkOptions(Framework::kTorchtitan);
  const topology::ChipSpec h100 = Chip("h100");
  for (const int microbatches : {1, 4}) {
    SCOPED_TRACE(microbatches);
    Case c = Make("llama3-8b", "fsdp=8,pp=2,microbatches=" + std::to_string(microbatches),
                  {8 * microbatches, 4096});
    const MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, torchtitan, h100, 0);
    const double unsharded = 8 * m.params;
    EXPECT_REL(m.grad_bytes, unsharded * (microbatches > 1 ? 4 : 2), 1e-12);
    const double layer = LayerParamsPerTpShard(c.model, c.layout);
    // And pp's send and receive buffers of one microbatch's [tokens, D].
    const double boundary = 2.0 * ShapeOf(c.layout, c.model, c.batch).tokens * c.model.d_model;
    const double root = (m.params - m.layer_params) * 8;
    ASSERT_GT(root, layer);
    EXPECT_REL(m.buffer_bytes, 7 * m.params * 2 + layer * 2 + 2 * boundary + 2 * (layer + root),
               1e-12);
  }
  Case c = Make("llama3-8b", "fsdp=8,pp=4,microbatches=4", {32, 4096});
  const MemoryBreakdown middle = StageMemory(c.model, c.layout, c.batch, torchtitan, h100, 1);
  EXPECT_EQ(middle.params, middle.layer_params);
  const double layer = LayerParamsPerTpShard(c.model, c.layout);
  const double boundary = 2.0 * ShapeOf(c.layout, c.model, c.batch).tokens * c.model.d_model;
  EXPECT_REL(middle.buffer_bytes, 7 * middle.params * 2 + layer * 2 + 2 * boundary + 2 * 2 * layer,
             1e-12);
}

// Issue 14 (the torchtitan memory rows): FSDP2's root module -- Llama 3 8B's untied embedding,
// final norm and head -- stays gathered from its forward to the end of the backward, and the
// all-gather copy-in stream keeps a pool the size of the largest flat all-gather output (the
// root's, 1.05e9 parameters, over two layers' 0.44e9), beside podsim's two gathered layers and one
// layer's gradients; a framework without FSDP2 counts the layers only.
TEST(MemoryTest, TorchtitanHoldsFsdp2sRootAndItsAllGatherPool) {
  const topology::ChipSpec h100 = Chip("h100");
  Case c = Make("llama3-8b", "fsdp=8", {16, 8192});
  OpOptions torchtitan = FrameworkOptions(Framework::kTorchtitan);
  OpOptions book;
  book.precision = torchtitan.precision;
  const MemoryBreakdown titan = StageMemory(c.model, c.layout, c.batch, torchtitan, h100, 0);
  const MemoryBreakdown other = StageMemory(c.model, c.layout, c.batch, book, h100, 0);
  const double root = (titan.params - titan.layer_params) * 8;
  const double layer = LayerParamsPerTpShard(c.model, c.layout);
  EXPECT_REL(root, 2.0 * 128256 * 4096 + 4096, 1e-12);
  ASSERT_GT(root, layer);
  EXPECT_REL(titan.buffer_bytes - other.buffer_bytes, root * 2 * 7 / 8 + layer * 2 + root * 2,
             1e-12);
  // Layers gathered in fp8 leave the root's weights in bf16 (torchao converts linear layers only,
  // and torchtitan leaves the head out): only the layers' flat output shrinks.
  torchtitan.fp8 = book.fp8 = true;
  torchtitan.fp8_all_gather = book.fp8_all_gather = true;
  const MemoryBreakdown fp8 = StageMemory(c.model, c.layout, c.batch, torchtitan, h100, 0);
  const MemoryBreakdown fp8_other = StageMemory(c.model, c.layout, c.batch, book, h100, 0);
  EXPECT_REL(fp8.buffer_bytes - fp8_other.buffer_bytes, root * 2 * 7 / 8 + layer + root * 2, 1e-12);
}

// Issue 14: a step of several microbatches holds its gradients between them, whatever the recipe
// counts; the book's recipe (one microbatch) gets a buffer in the working precision.
TEST(MemoryTest, GradientAccumulationAlwaysHoldsAGradientBuffer) {
  OpOptions book;
  book.precision = PrecisionRecipe::Book();
  Case one = Make("llama3-8b", "dp=8", {8, 4096});
  Case four = Make("llama3-8b", "dp=8,microbatches=4", {32, 4096});
  const topology::ChipSpec h100 = Chip("h100");
  const MemoryBreakdown single = StageMemory(one.model, one.layout, one.batch, book, h100, 0);
  const MemoryBreakdown accumulated =
      StageMemory(four.model, four.layout, four.batch, book, h100, 0);
  EXPECT_EQ(single.grad_bytes, 0);
  EXPECT_DOUBLE_EQ(accumulated.grad_bytes, 2 * accumulated.params);
  EXPECT_EQ(PrecisionRecipe::Book().total_bytes_per_param(4), 12);
  // The default recipe holds bf16 gradients for one microbatch and accumulates several in fp32;
  // ZeRO's in fp16; Megatron's fp32 main gradients either way.
  EXPECT_DOUBLE_EQ(StageMemory(one.model, one.layout, one.batch, {}, h100, 0).grad_bytes,
                   2 * single.params);
  EXPECT_DOUBLE_EQ(StageMemory(four.model, four.layout, four.batch, {}, h100, 0).grad_bytes,
                   4 * accumulated.params);
  OpOptions zero;
  zero.precision = PrecisionRecipe::Zero();
  EXPECT_DOUBLE_EQ(StageMemory(four.model, four.layout, four.batch, zero, h100, 0).grad_bytes,
                   2 * accumulated.params);
  OpOptions megatron;
  megatron.precision = PrecisionRecipe::Megatron();
  EXPECT_DOUBLE_EQ(StageMemory(four.model, four.layout, four.batch, megatron, h100, 0).grad_bytes,
                   4 * accumulated.params);
}

// Megatron-LM docs/distrib_optimizer.md, "bytes per parameter": with bf16 parameters and fp32
// gradients the distributed optimizer keeps 6 + 12/d bytes per parameter (d: data-parallel size)
// where the plain optimizer keeps 18; gradients stay whole. Exact.
TEST(MemoryTest, DistributedOptimizerShardsMasterAndMomentsOverDp) {
  OpOptions megatron;
  megatron.precision = PrecisionRecipe::Megatron();
  OpOptions distributed = megatron;
  distributed.distributed_optimizer = true;
  const topology::ChipSpec h100 = Chip("h100");
  for (int dp : {1, 8, 48}) {
    Case c =
        Make("llama3-8b", "dp=" + std::to_string(dp) + ",microbatches=4", {int64_t{4} * dp, 4096});
    const MemoryBreakdown plain = StageMemory(c.model, c.layout, c.batch, megatron, h100, 0);
    const MemoryBreakdown sharded = StageMemory(c.model, c.layout, c.batch, distributed, h100, 0);
    // The docs count the optimizer step's fp32 gradient shard too, which podsim holds only
    // during the step (memory.h).
    auto per_param = [](const MemoryBreakdown& m) {
      return (m.param_bytes + m.grad_bytes + m.optimizer_bytes + m.optimizer_step_bytes) / m.params;
    };
    EXPECT_DOUBLE_EQ(per_param(plain), 18) << "dp=" << dp;
    EXPECT_DOUBLE_EQ(per_param(sharded), 6 + 12.0 / dp) << "dp=" << dp;
    EXPECT_DOUBLE_EQ(sharded.activation_bytes, plain.activation_bytes) << "dp=" << dp;
    // 16-bit gradients (the default recipe over one microbatch): the optimizer keeps an fp32
    // copy of its gradient shard, 4 + 16/d.
    Case one = Make("llama3-8b", "dp=" + std::to_string(dp), {int64_t{1} * dp, 4096});
    OpOptions mixed;
    mixed.distributed_optimizer = true;
    EXPECT_DOUBLE_EQ(per_param(StageMemory(one.model, one.layout, one.batch, mixed, h100, 0)),
                     4 + 16.0 / dp)
        << "dp=" << dp;
    // Megatron's recipe with --grad-reduce-in-bf16 over several microbatches: the same 4 + 16/d.
    OpOptions bf16 = distributed;
    bf16.precision.bf16_gradients = true;
    EXPECT_DOUBLE_EQ(per_param(StageMemory(c.model, c.layout, c.batch, bf16, h100, 0)),
                     4 + 16.0 / dp)
        << "dp=" << dp;
  }
}

// --grad-reduce-in-bf16 holds and sends 2-byte gradients whatever the recipe keeps, and a recipe
// that holds none at one microbatch still holds none.
// The distributed optimizer's fp32 copy of a bf16 gradient shard counts only where it exceeds the
// activations' peak: it lives during the optimizer step, after the backward has freed them.
TEST(MemoryTest, OptimizerStepCopyCountsBeyondTheActivationsOnly) {
  const topology::ChipSpec h100 = Chip("h100");
  OpOptions options;
  options.distributed_optimizer = true;
  // One microbatch of a 4096-token sequence: activations above the copy's 4/8 bytes a parameter.
  Case c = Make("llama3-8b", "dp=8", {8, 4096});
  MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, options, h100, 0);
  EXPECT_DOUBLE_EQ(m.optimizer_step_bytes, 4 * m.params / 8);
  EXPECT_GT(m.activation_bytes, m.optimizer_step_bytes);
  EXPECT_DOUBLE_EQ(m.total_bytes, m.StaticBytes() + m.activation_bytes + m.loss_peak_bytes +
                                      m.recompute_peak_bytes);
  // One short sequence: the step's copy is the larger.
  Case tiny = Make("llama3-8b", "dp=8", {8, 16});
  MemoryBreakdown t = StageMemory(tiny.model, tiny.layout, tiny.batch, options, h100, 0);
  EXPECT_GT(t.optimizer_step_bytes, t.activation_bytes + t.loss_peak_bytes);
  EXPECT_DOUBLE_EQ(t.total_bytes, t.StaticBytes() + t.optimizer_step_bytes);
  // fp32 gradients need no copy.
  options.precision = PrecisionRecipe::Megatron();
  EXPECT_EQ(StageMemory(c.model, c.layout, c.batch, options, h100, 0).optimizer_step_bytes, 0);
}

TEST(MemoryTest, Bf16GradientsOverrideTheRecipesGradients) {
  for (PrecisionRecipe recipe :
       {PrecisionRecipe::Mixed(), PrecisionRecipe::Megatron(), PrecisionRecipe::Zero(),
        PrecisionRecipe::Book(), PrecisionRecipe::Amp()}) {
    SCOPED_TRACE(std::string(recipe.name));
    const double one = recipe.GradBufferBytes(1);
    recipe.bf16_gradients = true;
    EXPECT_EQ(recipe.GradBufferBytes(1), std::min(one, 2.0));
    EXPECT_EQ(recipe.GradBufferBytes(4), 2);
    EXPECT_EQ(recipe.GradWireBytes(1), 2);
    EXPECT_EQ(recipe.GradWireBytes(4), 2);
    EXPECT_EQ(PrecisionLabel(recipe), std::string(recipe.name) + ", gradients in bf16");
  }
}

TEST(MemoryTest, RecipesByName) {
  EXPECT_EQ(PrecisionRecipeNames(),
            (std::vector<std::string>{"mixed", "zero", "megatron", "book", "amp"}));
  EXPECT_EQ(PrecisionRecipeNamed("megatron")->total_bytes_per_param(), 18);
  // PyTorch autocast: fp32 parameters and gradients, Adam, and the 16-bit casts of one forward.
  EXPECT_EQ(PrecisionRecipeNamed("amp")->total_bytes_per_param(), 18);
  EXPECT_EQ(PrecisionRecipeNamed("amp")->GradWireBytes(1), 4);
  // ZeroRedundancyOptimizer under autocast shards Adam's moments only: the fp32 parameters are
  // the model's own.
  Case c = Make("llama3-8b", "dp=8", {8, 4096});
  OpOptions amp;
  amp.precision = PrecisionRecipe::Amp();
  amp.distributed_optimizer = true;
  const MemoryBreakdown m = StageMemory(c.model, c.layout, c.batch, amp, Chip("h100"), 0);
  EXPECT_REL(m.optimizer_bytes, m.params * (4 + 8.0 / 8), 1e-12);
  EXPECT_EQ(PrecisionRecipeNamed("fp8").status().message(),
            "precision 'fp8' is not a recipe; use one of mixed, zero, megatron, book, amp");
}

// G26 (Ch12 Quiz5 Q2): LLaMA-3 70B with tp=8 over dp=512 on H100: 700GB/8 = 87.5GB per GPU ->
// does not fit (80GB); reported with the shortfall, not simulated as if it fit.
TEST(MemoryTest, G26Tp8DoesNotFitOnH100) {
  Case c = Make("llama3-70b", "dp=512,tp=8", {1024, 4096});
  OpOptions full;
  full.precision = PrecisionRecipe::Book();
  full.recompute = RecomputePolicy::kFull;
  const topology::ChipSpec h100 = Chip("h100");
  MemoryBreakdown m = PeakMemory(c.model, c.layout, c.batch, full, h100);
  EXPECT_REL(m.param_bytes + m.optimizer_bytes, 87.5e9, kRounded);
  EXPECT_FALSE(m.fits);
  EXPECT_LT(m.headroom_bytes, -(87.5e9 - h100.hbm_bytes));
  EXPECT_DOUBLE_EQ(m.headroom_bytes, m.hbm_bytes - m.total_bytes);

  // Sharding the state 64 ways more (fsdp) makes it fit.
  Case fsdp = Make("llama3-70b", "fsdp=512,tp=8", {1024, 4096});
  MemoryBreakdown f = PeakMemory(fsdp.model, fsdp.layout, fsdp.batch, full, h100);
  EXPECT_TRUE(f.fits) << f.total_bytes;
  EXPECT_GT(f.buffer_bytes, 0);
}

TEST(MemoryTest, PipelineInFlightChunks) {
  Layout gpipe = ParseLayout("pp=4,microbatches=8,schedule=gpipe").value();
  Layout one = ParseLayout("pp=4,microbatches=8").value();
  Layout inter = ParseLayout("pp=4,microbatches=8,schedule=interleaved,virtual_stages=2").value();
  EXPECT_EQ(InFlightChunks(gpipe, 0), 8);
  EXPECT_EQ(InFlightChunks(one, 0), 4);
  EXPECT_EQ(InFlightChunks(one, 3), 1);
  EXPECT_EQ(InFlightChunks(inter, 0), 2 * 3 + 4 + 1);
  EXPECT_EQ(InFlightChunks(inter, 3), 5);
  // Interleaved with one chunk per stage runs as 1F1B, and holds as much.
  Layout inter1 = ParseLayout("pp=4,microbatches=8,schedule=interleaved,virtual_stages=1").value();
  EXPECT_EQ(InFlightChunks(inter1, 0), 4);
  EXPECT_EQ(InFlightChunks(inter1, 2), 2);
  // Stage 0 holds the most layer activations, the last stage the logits.
  Case c = Make("llama3-8b", "pp=4,microbatches=8", {8, 2048});
  const topology::ChipSpec h100 = Chip("h100");
  MemoryBreakdown s0 = StageMemory(c.model, c.layout, c.batch, OpOptions(), h100, 0);
  MemoryBreakdown s3 = StageMemory(c.model, c.layout, c.batch, OpOptions(), h100, 3);
  EXPECT_DOUBLE_EQ(s0.layer_activation_bytes, 4 * s3.layer_activation_bytes);
  EXPECT_GT(s3.activation_bytes - s3.layer_activation_bytes, 0);
}

// The embedding's and the head's saved tensors are held for as many microbatches as a stage runs
// their chunk's forwards ahead of its backwards: every microbatch under GPipe, one on the last
// stage of 1F1B and interleaved 1F1B, and on stage 0 as many as its warm-up holds of chunk 0.
TEST(MemoryTest, EmbeddingAndHeadHeldPerForwardInFlight) {
  Layout gpipe = ParseLayout("pp=4,microbatches=8,schedule=gpipe").value();
  Layout one = ParseLayout("pp=4,microbatches=8").value();
  Layout inter = ParseLayout("pp=4,microbatches=8,schedule=interleaved,virtual_stages=2").value();
  EXPECT_EQ(MostForwardsInFlight(StageOrder(gpipe, 3, false), 0), 8);
  EXPECT_EQ(MostForwardsInFlight(StageOrder(one, 3, false), 0), 1);
  EXPECT_EQ(MostForwardsInFlight(StageOrder(one, 3, true), 0), 1);
  EXPECT_EQ(MostForwardsInFlight(StageOrder(one, 0, false), 0), 4);
  EXPECT_EQ(MostForwardsInFlight(StageOrder(inter, 3, false), 1), 1);
  // Stage 0 runs chunk 0's forward for all 8 microbatches before its first backward of chunk 0
  // (backwards start with the last chunk).
  EXPECT_EQ(MostForwardsInFlight(StageOrder(inter, 0, false), 0), 8);

  Case c = Make("llama3-8b", "pp=4,microbatches=8,schedule=gpipe", {8, 2048});
  Case d = Make("llama3-8b", "pp=4,microbatches=8", {8, 2048});
  const topology::ChipSpec h100 = Chip("h100");
  const MemoryBreakdown g = StageMemory(c.model, c.layout, c.batch, OpOptions(), h100, 3);
  const MemoryBreakdown o = StageMemory(d.model, d.layout, d.batch, OpOptions(), h100, 3);
  const double head_gpipe = g.activation_bytes - g.layer_activation_bytes;
  const double head_1f1b = o.activation_bytes - o.layer_activation_bytes;
  EXPECT_GT(head_1f1b, 0);
  EXPECT_DOUBLE_EQ(head_gpipe, 8 * head_1f1b);
}

}  // namespace
}  // namespace podsim::workloads

namespace podsim::workloads {
namespace {

// With every layer alike, walking a stage's units holds what the closed form counts: its chunk's
// layers times the chunk-microbatches in flight (InFlightChunks), on every stage and schedule.
TEST(MemoryTest, WalkOfUniformLayersIsTheClosedForm) {
  for (const char* text :
       {"pp=4,microbatches=8", "pp=4,microbatches=2", "pp=4,microbatches=8,schedule=gpipe",
        "pp=4,microbatches=8,schedule=interleaved,virtual_stages=2",
        "pp=2,microbatches=4,schedule=interleaved,virtual_stages=3",
        "pp=4,microbatches=8,schedule=interleaved,virtual_stages=1"}) {
    const Layout layout = ParseLayout(text).value();
    constexpr int kLayersPerChunk = 3;
    const LayerHold layer{2.0, 5.0};
    const std::vector<std::vector<LayerHold>> chunks(
        layout.virtual_stages, std::vector<LayerHold>(kLayersPerChunk, layer));
    for (int stage = 0; stage < layout.pp; ++stage) {
      SCOPED_TRACE(std::string(text) + " stage " + std::to_string(stage));
      const ActivationPeak peak = WalkActivations(StageOrder(layout, stage, false), chunks);
      const double closed = layer.saved * kLayersPerChunk * InFlightChunks(layout, stage);
      EXPECT_EQ(peak.held, closed);
      EXPECT_EQ(peak.with_transient, closed + layer.transient);
    }
  }
}

}  // namespace
}  // namespace podsim::workloads
