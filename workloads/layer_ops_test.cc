#include "workloads/layer_ops.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace podsim::workloads {
namespace {

struct Case {
  ModelSpec model;
  Layout layout;
  BatchSpec batch;
  ShardShape shape;
};

Case Make(std::string_view model, std::string_view layout, int64_t sequences, int64_t seq) {
  Case s;
  s.model = ParseModel(model).value();
  s.layout = ParseLayout(layout).value();
  s.batch = {sequences, seq};
  sim::Status ok = ValidateLayout(s.layout, s.model, s.layout.chips(), s.batch);
  PODSIM_CHECK(ok.ok()) << ok;
  s.shape = ShapeOf(s.layout, s.model, s.batch);
  return s;
}

double Sum(const OpList& ops, OpKind kind, double Op::*field) {
  double total = 0;
  for (const Op& op : ops) {
    if (op.kind == kind) total += op.*field;
  }
  return total;
}

double CommBytes(const OpList& ops, std::string_view axis) {
  double total = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kCollective && op.axis == axis) total += op.comm_bytes;
  }
  return total;
}

OpList Concat(OpList a, const OpList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Forward matmul FLOPs of a layer on one chip x tp = 2 x tokens x the layer's matmul weights
// (formulas.md 2.4); backward = 2 x forward; training = 6 x params x tokens per layer (AT2's 6N).
TEST(LayerOpsTest, MatmulFlopsAreSixNPerToken) {
  Case s = Make("llama3-70b", "dp=2,tp=8", 16, 4096);
  const OpOptions options;
  const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, options);
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, options);
  const double layer_weights = static_cast<double>(s.model.AttentionMatmulParamsPerLayer() +
                                                   s.model.MlpMatmulParamsPerLayer());
  const double tokens = static_cast<double>(s.shape.tokens);
  EXPECT_DOUBLE_EQ(Sum(fwd, OpKind::kMatmul, &Op::flops) * 8, 2 * layer_weights * tokens);
  EXPECT_DOUBLE_EQ(Sum(bwd, OpKind::kMatmul, &Op::flops) * 8, 4 * layer_weights * tokens);
  for (const Op& op : Concat(fwd, bwd)) {
    if (op.kind == OpKind::kMatmul) {
      EXPECT_DOUBLE_EQ(op.flops, 2.0 * op.shape.m * op.shape.k * op.shape.n) << op.name;
      EXPECT_EQ(op.model_flops, op.flops) << op.name;
    }
  }
}

// The model FLOPs of all ops of a step (every layer, head; per chip x chips) equal
// ModelSpec::TrainingFlopsPerToken x tokens (full attention convention, Megatron/PaLM).
TEST(LayerOpsTest, ModelFlopsOfAllOpsMatchModelSpec) {
  Case s = Make("llama3-8b", "tp=4", 2, 2048);
  const OpOptions options;
  double per_chip = 0;
  per_chip += Totals(LayerForwardOps(s.model, s.layout, s.shape, options)).model_flops;
  per_chip += Totals(LayerBackwardOps(s.model, s.layout, s.shape, options)).model_flops;
  per_chip *= static_cast<double>(s.model.layers);
  per_chip += Totals(HeadForwardOps(s.model, s.layout, s.shape, options)).model_flops;
  per_chip += Totals(HeadBackwardOps(s.model, s.layout, s.shape, options)).model_flops;
  per_chip += Totals(EmbeddingForwardOps(s.model, s.layout, s.shape, options)).model_flops;
  per_chip += Totals(EmbeddingBackwardOps(s.model, s.layout, s.shape, options)).model_flops;
  const double tokens = static_cast<double>(s.batch.tokens());
  EXPECT_NEAR(
      per_chip * 4 / (s.model.TrainingFlopsPerToken(2048, AttentionCount::kCausal) * tokens), 1.0,
      1e-12);
}

// X10 (Ch4 Q6): recomputing the attention core costs 4BT^2NH extra FLOPs (QK^T and PV), with the
// materialized kernel and selective recomputation. Flash: nothing extra, but its backward does 5
// score-sized matmul passes instead of 4.
TEST(LayerOpsTest, X10SelectiveRecomputeExtraFlops) {
  Case s = Make(
      "custom:layers=2,d_model=2048,ffn=8192,heads=16,kv_heads=16,head_dim=128,"
      "vocab=1000,gated=0,positions=4096",
      "dp=1", 2, 4096);
  OpOptions none;
  none.attention = AttentionKernel::kMaterialized;
  OpOptions selective = none;
  selective.recompute = RecomputePolicy::kSelective;
  const double extra = Totals(LayerBackwardOps(s.model, s.layout, s.shape, selective)).flops -
                       Totals(LayerBackwardOps(s.model, s.layout, s.shape, none)).flops;
  const double B = 2, T = 4096, N = 16, H = 128;
  const double softmax = 5 * B * N * T * T;  // Softmax FLOPs, also recomputed.
  EXPECT_DOUBLE_EQ(extra, 4 * B * T * T * N * H + softmax);

  OpOptions flash;
  flash.causal = false;
  OpOptions flash_selective = flash;
  flash_selective.recompute = RecomputePolicy::kSelective;
  EXPECT_DOUBLE_EQ(Totals(LayerBackwardOps(s.model, s.layout, s.shape, flash)).flops,
                   Totals(LayerBackwardOps(s.model, s.layout, s.shape, flash_selective)).flops);
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, flash);
  EXPECT_DOUBLE_EQ(Sum(bwd, OpKind::kAttention, &Op::flops),
                   1.25 * Sum(bwd, OpKind::kAttention, &Op::model_flops));
  // Causal flash computes T(T+1)/2 of the T^2 pairs; model FLOPs count them (the default) or all
  // T^2 (the full convention).
  const OpList causal = LayerForwardOps(s.model, s.layout, s.shape, OpOptions());
  EXPECT_DOUBLE_EQ(Sum(causal, OpKind::kAttention, &Op::flops), 4 * B * N * H * T * (T + 1) / 2);
  EXPECT_DOUBLE_EQ(Sum(causal, OpKind::kAttention, &Op::model_flops),
                   4 * B * N * H * T * (T + 1) / 2);
  OpOptions all_pairs;
  all_pairs.model_flops_count = AttentionCount::kFull;
  EXPECT_DOUBLE_EQ(Sum(LayerForwardOps(s.model, s.layout, s.shape, all_pairs), OpKind::kAttention,
                       &Op::model_flops),
                   4 * B * N * H * T * T);
}

// The kernels a Megatron-style layer (LayerNorm, GeLU, dropout, materialized attention) runs in
// PyTorch eager are named by their class (hbm_kernel.h), forward, recomputed and backward, with
// the bytes of data/calibration/kernels.csv's fit; RMSNorm and SwiGLU name none.
TEST(LayerOpsTest, NonGemmKernelsNameTheirClassWithTheFittedBytes) {
  Case s = Make(
      "custom:layers=2,d_model=1024,ffn=4096,heads=8,kv_heads=8,head_dim=128,vocab=1000,"
      "gated=0,bias=1,norm=layer,dropout=1",
      "dp=1", 2, 512);
  OpOptions options;
  options.attention = AttentionKernel::kMaterialized;
  options.recompute = RecomputePolicy::kFull;
  options.kernels = KernelLibrary::kEager;  // PyTorch's LayerNorm (hbm_kernel.h).
  const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, options);
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, options);
  const double P = 2.0 * 8 * 512 * 512, Th = 2.0 * 512 * 1024, Tf = 2.0 * 512 * 4096;
  std::map<std::string, double> bytes;
  for (const OpList* ops : {&fwd, &bwd}) {
    for (const Op& op : *ops) {
      if (op.phase == Phase::kRecompute) continue;
      if (!op.kernel.empty() && op.kind != OpKind::kAttention) {
        bytes[op.kernel] += op.hbm_read_bytes + op.hbm_write_bytes;
      }
    }
  }
  EXPECT_DOUBLE_EQ(bytes["softmax"], 4 * P);
  EXPECT_DOUBLE_EQ(bytes["softmax.dx"], 6 * P);
  EXPECT_DOUBLE_EQ(bytes["dropout"], 5 * (P + 2 * Th));
  EXPECT_DOUBLE_EQ(bytes["dropout.dx"], 5 * (P + 2 * Th));
  EXPECT_DOUBLE_EQ(bytes["layernorm"], 2 * (4 * Th + 2 * 2 * 1024));
  EXPECT_DOUBLE_EQ(bytes["layernorm.dx"], 2 * (10 * Th + 8 * 1024));
  EXPECT_DOUBLE_EQ(bytes["gelu"], 4 * Tf);
  EXPECT_DOUBLE_EQ(bytes["gelu.dx"], 6 * Tf);
  EXPECT_EQ(bytes.size(), 8u);
  int recomputed = 0;
  for (const Op& op : bwd) recomputed += op.phase == Phase::kRecompute && op.kernel == "softmax";
  EXPECT_EQ(recomputed, 1);
  // Fused kernels (Transformer Engine's, apex's LayerNorm) are not PyTorch's: no class.
  options.kernels = KernelLibrary::kFused;
  for (const Op& op : LayerBackwardOps(s.model, s.layout, s.shape, options)) {
    if (op.kind == OpKind::kNorm) {
      EXPECT_EQ(op.kernel, "") << op.name;
    }
  }

  Case rms =
      Make("custom:layers=2,d_model=1024,ffn=4096,heads=8,kv_heads=8,head_dim=128,vocab=1000",
           "dp=1", 2, 512);
  for (const OpList& ops : {LayerForwardOps(rms.model, rms.layout, rms.shape, OpOptions()),
                            LayerBackwardOps(rms.model, rms.layout, rms.shape, OpOptions())}) {
    for (const Op& op : ops) {
      if (op.kind != OpKind::kAttention) {
        EXPECT_EQ(op.kernel, "") << op.name;
      }
    }
  }
}

// X3 (Ch4): with block remat the training FLOPs grow from 6ND to ~8ND: every forward matmul runs
// twice (exactly 8/6 for the matmul part).
TEST(LayerOpsTest, X3FullRecomputeIsEightNd) {
  Case s = Make("llama3-8b", "tp=2", 2, 2048);
  OpOptions full;
  full.recompute = RecomputePolicy::kFull;
  const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, full);
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, full);
  const OpList all = Concat(fwd, bwd);
  EXPECT_DOUBLE_EQ(
      Sum(all, OpKind::kMatmul, &Op::flops) / Sum(all, OpKind::kMatmul, &Op::model_flops),
      8.0 / 6.0);
  // The recomputation re-runs the tp collectives too (the backward all-reduces plus two more).
  int recomputed_tp = 0;
  for (const Op& op : bwd) {
    recomputed_tp += op.phase == Phase::kRecompute && op.axis == "tp";
  }
  EXPECT_EQ(recomputed_tp, 2);
}

// formulas.md 2.5 "per-layer bytes" for the MLP: TP (with sp: AG + RS of bf16[B,D]) moves 4BD
// forward and 4BD backward; FSDP gathers 4DF (2 bf16 matrices) forward and gathers + scatters
// 8DF backward. Measured here on the MLP collectives of a 2-matrix MLP.
TEST(LayerOpsTest, PerLayerCommBytesMatchBookTable) {
  const std::string model =
      "custom:layers=4,d_model=4096,ffn=16384,heads=32,kv_heads=32,head_dim=128,vocab=1000,"
      "gated=0";
  Case tp = Make(model, "tp=8,sp=1", 4, 1024);
  const OpList fwd = LayerForwardOps(tp.model, tp.layout, tp.shape, OpOptions());
  const OpList bwd = LayerBackwardOps(tp.model, tp.layout, tp.shape, OpOptions());
  const double B = 4 * 1024, Dm = 4096, F = 16384;
  auto mlp_tp = [](const OpList& ops) {
    double bytes = 0;
    for (const Op& op : ops) {
      if (op.axis == "tp" && op.name.find("mlp") != std::string::npos) bytes += op.comm_bytes;
    }
    return bytes;
  };
  EXPECT_DOUBLE_EQ(mlp_tp(fwd), 4 * B * Dm);
  EXPECT_DOUBLE_EQ(mlp_tp(bwd), 4 * B * Dm);
  for (const Op& op : Concat(fwd, bwd)) {
    if (op.kind == OpKind::kCollective) {
      EXPECT_TRUE(op.blocking) << op.name;
      EXPECT_NE(op.collective, collectives::CollectiveOp::kAllReduce) << op.name;
    }
  }

  // The book's bf16 gradients (its recipe); the default's travel in fp32, twice the bytes.
  OpOptions book;
  book.precision = PrecisionRecipe::Book();
  Case fsdp = Make(model, "fsdp=8", 8, 1024);
  const double layer_bytes = 2 * LayerParamsPerTpShard(fsdp.model, fsdp.layout);
  const double mlp_bytes = 2 * 2 * Dm * F;
  EXPECT_DOUBLE_EQ(
      CommBytes(LayerForwardOps(fsdp.model, fsdp.layout, fsdp.shape, OpOptions()), "fsdp"),
      layer_bytes);
  EXPECT_DOUBLE_EQ(CommBytes(LayerBackwardOps(fsdp.model, fsdp.layout, fsdp.shape, book), "fsdp"),
                   2 * layer_bytes);
  EXPECT_DOUBLE_EQ(
      CommBytes(LayerBackwardOps(fsdp.model, fsdp.layout, fsdp.shape, OpOptions()), "fsdp"),
      3 * layer_bytes);  // The bf16 gather and the fp32 reduce-scatter.
  EXPECT_DOUBLE_EQ(CommBytes(LayerForwardOps(fsdp.model, fsdp.layout, fsdp.shape, book), "fsdp"),
                   layer_bytes);
  // The MLP's share of the gathered layer is the book's 4DF.
  EXPECT_NEAR(mlp_bytes / layer_bytes,
              2.0 * Dm * F / static_cast<double>(fsdp.model.ParamsPerLayer()), 1e-12);

  // DP: one all-reduce of the layer's gradients (V = 2 bytes x params; its cost is 2V/W, the
  // book's 8DF/W for the MLP).
  Case dp = Make(model, "dp=8", 8, 1024);
  EXPECT_DOUBLE_EQ(CommBytes(LayerBackwardOps(dp.model, dp.layout, dp.shape, book), "dp"),
                   layer_bytes);
  EXPECT_DOUBLE_EQ(CommBytes(LayerBackwardOps(dp.model, dp.layout, dp.shape, OpOptions()), "dp"),
                   2 * layer_bytes);
}

// The frameworks' tp backward (framework.h) on a gated MLP and qkv with sp: Megatron gathers the
// sp input again for the weight gradients and issues the input gradient's reduce-scatter before
// them; torchtitan keeps the gathered input and reduces after the weight gradients; MaxText keeps
// it and reduces before them; the book keeps the shard, gathers nothing again and reduces each
// input gradient once summed. Without sp nothing is gathered again and the shard is the input.
TEST(LayerOpsTest, FrameworksOrderTheTpBackwardAsTheyRunIt) {
  for (const char* layout : {"tp=4,sp=1", "tp=4"}) {
    for (Framework framework :
         {Framework::kBook, Framework::kMegatron, Framework::kTorchtitan, Framework::kMaxtext}) {
      SCOPED_TRACE(std::string(layout) + " " + std::string(FrameworkName(framework)));
      const Case s = Make("llama3-8b", layout, 2, 2048);
      OpOptions options;
      options.framework = framework;
      const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, options);
      const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, options);
      auto index_in = [](const OpList& ops, const std::string& name) {
        for (size_t i = 0; i < ops.size(); ++i) {
          if (ops[i].name == name) return static_cast<int>(i);
        }
        return -1;
      };
      auto index = [&](const std::string& name) { return index_in(bwd, name); };
      auto saved = [&](const std::string& name) { return fwd[index_in(fwd, name)].saved_bytes; };
      auto waits = [&](const std::string& op, int dep) {
        const std::vector<int>& deps = bwd[index(op)].deps;
        return std::find(deps.begin(), deps.end(), dep) != deps.end();
      };
      // Megatron's fused fc1 writes one input gradient: no sum.
      EXPECT_EQ(index("mlp.sum.dx") >= 0, framework != Framework::kMegatron);
      const bool sp = s.layout.sp;
      const bool regather = sp && framework == Framework::kMegatron;
      const bool kept_gathered =
          sp && (framework == Framework::kTorchtitan || framework == Framework::kMaxtext);
      const double tokens = 2 * 2048, shard = sp ? tokens / 4 : tokens;
      EXPECT_DOUBLE_EQ(saved("attn.qkv"), 2.0 * (kept_gathered ? tokens : shard) * 4096);
      EXPECT_DOUBLE_EQ(saved("mlp.gate"), 2.0 * (kept_gathered ? tokens : shard) * 4096);
      for (const auto& [what, gemms] :
           {std::pair{std::string("attn"), std::vector<std::string>{"attn.qkv"}},
            std::pair{std::string("mlp"), std::vector<std::string>{"mlp.gate", "mlp.up"}}}) {
        const int gather = index("tp.all-gather." + what + ".dw");
        EXPECT_EQ(gather >= 0, regather) << what;
        if (gather >= 0) {
          EXPECT_FALSE(bwd[gather].blocking);
          EXPECT_DOUBLE_EQ(bwd[gather].comm_bytes, 2.0 * tokens * 4096);  // bf16 [tokens, D].
        }
        const int reduce = index((sp ? "tp.reduce-scatter." : "tp.all-reduce.") + what + ".dx");
        ASSERT_GE(reduce, 0) << what;
        for (const std::string& gemm : gemms) {
          const int dx = index(gemm + ".dx"), dw = index(gemm + ".dw");
          if (gather >= 0) {
            EXPECT_TRUE(waits(gemm + ".dw", gather)) << gemm;
            EXPECT_FALSE(waits(gemm + ".dx", gather)) << gemm;
          }
          // The reduction is issued after the weight gradients in the list (so that it overlaps
          // them) unless it waits for them; it waits for them only under torchtitan.
          EXPECT_LT(dw, reduce) << gemm;
          EXPECT_EQ(waits(bwd[reduce].name, dw), framework == Framework::kTorchtitan) << gemm;
          if (framework == Framework::kMegatron || framework == Framework::kMaxtext) {
            // Every input gradient of the group before any of its weight gradients.
            for (const std::string& other : gemms) EXPECT_LT(dx, index(other + ".dw")) << gemm;
          }
        }
      }
    }
  }
}

// The book's framework options are OpOptions{}'s: naming no framework changes nothing.
TEST(LayerOpsTest, TheBookIsTheDefault) {
  const OpOptions book = FrameworkOptions(Framework::kBook), none;
  EXPECT_EQ(book.framework, none.framework);
  EXPECT_EQ(book.precision.name, none.precision.name);
  EXPECT_EQ(book.kernels, none.kernels);
  EXPECT_EQ(book.loss, none.loss);
  EXPECT_EQ(book.fp8_library, none.fp8_library);
}

// The unembedding is a column-parallel matmul on the sp-sharded final norm's output: Megatron's
// ColumnParallelLinear gathers it again for its weight gradient; torchtitan keeps it gathered.
TEST(LayerOpsTest, TheHeadFollowsTheFrameworksTpBackward) {
  const Case s = Make("llama3-8b", "tp=4,sp=1", 2, 2048);
  const double tokens = 2 * 2048;
  for (Framework framework : {Framework::kBook, Framework::kMegatron, Framework::kTorchtitan}) {
    SCOPED_TRACE(FrameworkName(framework));
    const OpOptions options = FrameworkOptions(framework);
    const OpList fwd = HeadForwardOps(s.model, s.layout, s.shape, options);
    const OpList bwd = HeadBackwardOps(s.model, s.layout, s.shape, options);
    const bool kept = framework == Framework::kTorchtitan;
    double saved = 0, regathered = 0;
    for (const Op& op : fwd) saved += op.name == "head.unembed" ? op.saved_bytes : 0;
    for (const Op& op : bwd) regathered += op.name == "tp.all-gather.head.dw" ? op.comm_bytes : 0;
    EXPECT_DOUBLE_EQ(saved, 2.0 * (kept ? tokens : tokens / 4) * 4096);
    EXPECT_DOUBLE_EQ(regathered, framework == Framework::kMegatron ? 2.0 * tokens * 4096 : 0);
  }
}

// Every dependency points backwards in its list, and the only non-blocking collectives compute
// ops wait for are FSDP weight gathers: no compute op waits for a gradient reduction.
TEST(LayerOpsTest, DependenciesPointBackwards) {
  Case s = Make("llama3-70b", "dp=2,fsdp=2,tp=4,sp=1", 8, 2048);
  for (const auto& [framework, policy] : std::vector<std::pair<Framework, RecomputePolicy>>{
           {Framework::kBook, RecomputePolicy::kNone},
           {Framework::kBook, RecomputePolicy::kSelective},
           {Framework::kBook, RecomputePolicy::kFull},
           {Framework::kMegatron, RecomputePolicy::kFull},
           {Framework::kTorchtitan, RecomputePolicy::kNone},
           {Framework::kMaxtext, RecomputePolicy::kSelective}}) {
    SCOPED_TRACE(FrameworkName(framework));
    OpOptions options = FrameworkOptions(framework);
    options.recompute = policy;
    for (const OpList& ops : {LayerForwardOps(s.model, s.layout, s.shape, options),
                              LayerBackwardOps(s.model, s.layout, s.shape, options),
                              HeadForwardOps(s.model, s.layout, s.shape, options),
                              HeadBackwardOps(s.model, s.layout, s.shape, options),
                              EmbeddingForwardOps(s.model, s.layout, s.shape, options),
                              EmbeddingBackwardOps(s.model, s.layout, s.shape, options)}) {
      for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
        for (int dep : ops[i].deps) {
          EXPECT_GE(dep, 0) << ops[i].name;
          EXPECT_LT(dep, i) << ops[i].name;
          if (ops[i].kind != OpKind::kCollective && ops[dep].kind == OpKind::kCollective &&
              !ops[dep].blocking) {
            // FSDP's weight gathers; and Megatron's sp inputs gathered again, for weight
            // gradients only.
            const bool regather = framework == Framework::kMegatron && ops[dep].axis == "tp" &&
                                  ops[i].phase == Phase::kBackwardWeight;
            EXPECT_TRUE(ops[dep].axis == "fsdp" || regather)
                << ops[i].name << " <- " << ops[dep].name;
            EXPECT_EQ(ops[dep].collective, collectives::CollectiveOp::kAllGather);
          }
        }
      }
    }
  }
  // The gradient reductions wait for every weight gradient of the layer.
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, OpOptions());
  int dws = 0;
  for (const Op& op : bwd) dws += op.phase == Phase::kBackwardWeight && op.kind == OpKind::kMatmul;
  EXPECT_EQ(dws, 5);  // qkv, out, gate, up, down.
  for (const Op& op : bwd) {
    if (op.name == "fsdp.reduce-scatter.layer") {
      EXPECT_EQ(static_cast<int>(op.deps.size()), dws);
    }
  }
}

TEST(LayerOpsTest, OptimizerReadsAndWritesEveryState) {
  OpOptions options;
  options.precision = PrecisionRecipe::Megatron();
  const OpList adam = OptimizerOps(1e9, Layout{}, options);
  ASSERT_EQ(adam.size(), 1u);
  // Params, fp32 main grads, master and moments (2 + 4 + 4 + 8), plus the main grads again for
  // the norm clipping; writes params, master and moments, plus zeroing the main grads.
  EXPECT_DOUBLE_EQ(adam[0].hbm_read_bytes, 22e9);
  EXPECT_DOUBLE_EQ(adam[0].hbm_write_bytes, 18e9);
  EXPECT_EQ(adam[0].model_flops, 0);
}

// An MoE layer's matmuls are 6 x its activated weights per token, summed over the ep group: each
// chip computes its tokens' attention (1/tp of it) and, through the all-to-alls, the same share
// of the group's routed rows (balanced routing).
TEST(LayerOpsTest, MoeLayerMatmulsAreSixActivatedWeightsPerToken) {
  for (const char* layout : {"dp=8,ep=8", "dp=4,tp=2,ep=4,sp=1", "dp=4,tp=2,ep=8,etp=1,sp=1"}) {
    Case s = Make("qwen2-57b-a14b", layout, 8, 4096);
    const OpOptions options;
    const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, options, MlpKind::kMoe);
    const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, options, MlpKind::kMoe);
    const ModelSpec& m = s.model;
    const double active =
        static_cast<double>(m.AttentionMatmulParamsPerLayer() + m.RouterParamsPerLayer() +
                            m.top_k * m.ExpertParams() + m.SharedExpertParamsPerLayer());
    // The router is replicated over tp: each tp rank runs it on its T/tp tokens (sp).
    const double tokens = static_cast<double>(s.shape.tokens);
    const double tp = s.layout.tp;
    EXPECT_NEAR(Sum(fwd, OpKind::kMatmul, &Op::flops) * tp / (2 * active * tokens), 1, 1e-12)
        << layout;
    EXPECT_NEAR(Sum(bwd, OpKind::kMatmul, &Op::flops) * tp / (4 * active * tokens), 1, 1e-12)
        << layout;
    // Dispatch and combine, forward and backward: V = ep x the chip's routed copies.
    const double routed = tokens / tp * static_cast<double>(m.top_k) * m.d_model * 2;
    EXPECT_DOUBLE_EQ(CommBytes(fwd, "ep"), 2 * s.layout.ep * routed) << layout;
    EXPECT_DOUBLE_EQ(CommBytes(bwd, "ep"), 2 * s.layout.ep * routed) << layout;
    // With etp = tp the local experts' rows are gathered over tp and reduce-scattered back.
    const double etp = s.layout.expert_tp();
    EXPECT_DOUBLE_EQ(CommBytes(fwd, "etp"), etp > 1 ? 2 * routed * etp : 0) << layout;
  }
}

// --fp8-dispatch (DeepSeek-V3, DeepEP): the dispatch and the backward's combine carry 7,392 bytes a
// 7,168-wide token, the forward combine and the backward's dispatch bf16.
TEST(LayerOpsTest, Fp8DispatchSendsTheExpertInputsAndOutputGradientsInFp8) {
  Case s = Make("deepseek-v3:layers=4", "dp=8,ep=8", 8, 4096);
  OpOptions options;
  options.fp8 = true;
  options.fp8_dispatch = true;
  ASSERT_TRUE(ValidateOpOptions(options, s.layout).ok());
  const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, options, MlpKind::kMoe);
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, options, MlpKind::kMoe);
  const double copies = 8 * static_cast<double>(s.shape.tokens) * 8;  // ep x tokens x top-8.
  auto bytes = [](const OpList& ops, const std::string& name) {
    for (const Op& op : ops) {
      if (op.name == name) return op.comm_bytes;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(bytes(fwd, "ep.all-to-all.dispatch"), copies * 7392);
  EXPECT_DOUBLE_EQ(bytes(fwd, "ep.all-to-all.combine"), copies * 7168 * 2);
  EXPECT_DOUBLE_EQ(bytes(bwd, "ep.all-to-all.combine.dx"), copies * 7392);
  EXPECT_DOUBLE_EQ(bytes(bwd, "ep.all-to-all.dispatch.dx"), copies * 7168 * 2);
  sim::Status no_ep = ValidateOpOptions(options, ParseLayout("dp=8").value());
  EXPECT_NE(no_ep.message().find("fp8 dispatch needs expert parallelism"), std::string::npos);
}

// The routed experts' weights are gathered and their gradients reduced over what dp and fsdp keep
// after ep (expert-fsdp, expert-dp); the rest of the layer's over the whole data axes.
TEST(LayerOpsTest, ExpertGradientsReduceOverTheExpertDataAxes) {
  Case s = Make("mixtral-8x7b:layers=2", "dp=4,fsdp=4,ep=2", 16, 1024);
  const OpOptions options;
  const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, options, MlpKind::kMoe);
  const double experts = ExpertParamsPerChip(s.model, s.layout);
  EXPECT_DOUBLE_EQ(experts, 4.0 * static_cast<double>(s.model.ExpertParams()));
  const double dense = LayerParamsPerTpShard(s.model, s.layout, MlpKind::kMoe);
  // ep took 2 of dp's 4 chips: expert-dp has 2, expert-fsdp all 4 of fsdp.
  const double wire = CommBytes(bwd, "expert-dp") * 4 / experts;
  EXPECT_GT(wire, 0);
  EXPECT_DOUBLE_EQ(CommBytes(bwd, "dp"), wire * dense / 4);
  const double param = options.precision.param_bytes;
  EXPECT_DOUBLE_EQ(CommBytes(bwd, "expert-fsdp"), (param + wire) * experts);
  EXPECT_DOUBLE_EQ(CommBytes(bwd, "fsdp"), (param + wire) * dense);
}

// The amp recipe (PyTorch autocast): each forward first casts the layer's fp32 weights to 16 bits
// (4 bytes read, 2 written a parameter), a full recomputation casts them again, and each weight
// gradient is cast to fp32 (2 read, 4 written) and, with several microbatches, added into .grad
// (8 read, 4 written), before the fp32 all-reduce.
TEST(LayerOpsTest, AmpCastsTheWeightsEachForwardAndTheGradientsToFp32) {
  OpOptions amp;
  amp.precision = PrecisionRecipe::Amp();
  for (const int microbatches : {1, 4}) {
    SCOPED_TRACE(microbatches);
    const Case s = Make("llama3-8b", "dp=2,microbatches=" + std::to_string(microbatches), 8, 1024);
    const double params = LayerParamsPerTpShard(s.model, s.layout);
    const OpList fwd = LayerForwardOps(s.model, s.layout, s.shape, amp);
    ASSERT_EQ(fwd.front().name, "weights.cast.layer");
    EXPECT_DOUBLE_EQ(fwd.front().hbm_read_bytes, 4 * params);
    EXPECT_DOUBLE_EQ(fwd.front().hbm_write_bytes, 2 * params);
    const OpList bwd = LayerBackwardOps(s.model, s.layout, s.shape, amp);
    auto find = [&](const OpList& ops, std::string_view name) -> const Op* {
      for (const Op& op : ops) {
        if (op.name == name) return &op;
      }
      return nullptr;
    };
    // The matmuls' weight gradients: the layer's parameters but its two norms' gains.
    const double linear = params - 2.0 * s.model.d_model;
    const Op* cast = find(bwd, "grad.cast.layer");
    ASSERT_NE(cast, nullptr);
    EXPECT_DOUBLE_EQ(cast->hbm_read_bytes, 2 * linear);
    EXPECT_DOUBLE_EQ(cast->hbm_write_bytes, 4 * linear);
    const Op* add = find(bwd, "grad.accumulate.layer");
    if (microbatches == 1) {
      EXPECT_EQ(add, nullptr);
    } else {
      ASSERT_NE(add, nullptr);
      EXPECT_DOUBLE_EQ(add->hbm_read_bytes, 8 * params);
      EXPECT_DOUBLE_EQ(add->hbm_write_bytes, 4 * params);
    }
    EXPECT_DOUBLE_EQ(CommBytes(bwd, "dp"), 4 * params);
    EXPECT_EQ(find(bwd, "weights.cast.layer"), nullptr);
    OpOptions full = amp;
    full.recompute = RecomputePolicy::kFull;
    const OpList recomputing = LayerBackwardOps(s.model, s.layout, s.shape, full);
    const Op* recast = find(recomputing, "weights.cast.layer");
    ASSERT_NE(recast, nullptr);
    EXPECT_EQ(recast->phase, Phase::kRecompute);
    EXPECT_DOUBLE_EQ(recast->hbm_write_bytes, 2 * linear);
  }
  // The embedding's lookup is not cast, nor its gradient; the head's projection and its weight
  // gradient are, tied or not (a tied head's gradient is reduced with the embedding's).
  for (const char* model : {"llama3-8b", "llama3-8b:tied=true"}) {
    SCOPED_TRACE(model);
    const Case s = Make(model, "dp=2", 8, 1024);
    const OpList embed_fwd = EmbeddingForwardOps(s.model, s.layout, s.shape, amp);
    const OpList embed_bwd = EmbeddingBackwardOps(s.model, s.layout, s.shape, amp);
    for (const OpList* ops : {&embed_fwd, &embed_bwd}) {
      for (const Op& op : *ops) EXPECT_EQ(op.name.find("cast"), std::string::npos) << op.name;
    }
    EXPECT_EQ(HeadForwardOps(s.model, s.layout, s.shape, amp).front().name, "weights.cast.head");
    double cast = 0;
    for (const Op& op : HeadBackwardOps(s.model, s.layout, s.shape, amp)) {
      if (op.name == "grad.cast.head") cast = op.hbm_write_bytes;
    }
    EXPECT_DOUBLE_EQ(cast, 4.0 * s.model.vocab * s.model.d_model);
  }
  // Not modelled with fsdp, pp, fp8 or bf16 gradients: refused.
  EXPECT_TRUE(ValidateOpOptions(amp, ParseLayout("dp=2,tp=2").value()).ok());
  for (const char* layout : {"fsdp=2", "pp=2,microbatches=2"}) {
    EXPECT_FALSE(ValidateOpOptions(amp, ParseLayout(layout).value()).ok()) << layout;
  }
  OpOptions fp8 = amp;
  fp8.fp8 = true;
  EXPECT_FALSE(ValidateOpOptions(fp8, ParseLayout("dp=2").value()).ok());
}

// Context parallelism, all-gather variant: each chip computes 1/cp of the sequence's matmuls and
// causal attention pairs (load-balanced), after gathering the sequence's keys and values over cp;
// the backward gathers them again and reduce-scatters their gradients.
TEST(LayerOpsTest, ContextParallelismSplitsTheWorkAndGathersKeysAndValues) {
  const Case whole = Make("llama3-8b", "dp=1", 1, 32768);
  const Case split = Make("llama3-8b", "cp=4,cp_comm=all-gather", 1, 32768);
  const OpOptions options;
  const OpList fwd1 = LayerForwardOps(whole.model, whole.layout, whole.shape, options);
  const OpList fwd4 = LayerForwardOps(split.model, split.layout, split.shape, options);
  const OpList bwd4 = LayerBackwardOps(split.model, split.layout, split.shape, options);
  EXPECT_DOUBLE_EQ(4 * Sum(fwd4, OpKind::kMatmul, &Op::flops),
                   Sum(fwd1, OpKind::kMatmul, &Op::flops));
  EXPECT_DOUBLE_EQ(4 * Sum(fwd4, OpKind::kAttention, &Op::flops),
                   Sum(fwd1, OpKind::kAttention, &Op::flops));
  EXPECT_DOUBLE_EQ(4 * Sum(fwd4, OpKind::kAttention, &Op::model_flops),
                   Sum(fwd1, OpKind::kAttention, &Op::model_flops));
  // K and V of the whole sequence: 2 x 8 kv heads x 128 x 32768 tokens x 2 bytes.
  const double kv = 2.0 * 8 * 128 * 32768 * 2;
  EXPECT_DOUBLE_EQ(CommBytes(fwd4, "cp"), kv);
  EXPECT_DOUBLE_EQ(CommBytes(bwd4, "cp"), 2 * kv);
  for (const Op& op : fwd4) {
    if (op.kind != OpKind::kAttention) continue;
    EXPECT_EQ(op.shape.m, 32768 / 4);  // The chip's queries
    EXPECT_EQ(op.shape.n, 32768);      // against the whole sequence's keys.
  }
}

// Ring attention (cp's default): the same work split over cp steps of T/cp queries against T/cp
// keys, causal against the chip's own block only; the key/value blocks go round the ring in
// cp-1 shifts forward, and in the backward with their gradients: cp-1 block shifts and cp
// gradient shifts, the last one home. Each step's core waits for the shift that brought its
// block, and each shift for the previous step's core (double buffering).
TEST(LayerOpsTest, RingAttentionPassesBlocksRoundTheContextRing) {
  const Case whole = Make("llama3-8b", "dp=1", 1, 32768);
  const Case split = Make("llama3-8b", "cp=4", 1, 32768);
  ASSERT_TRUE(split.layout.ring_attention());
  const OpOptions options;
  const OpList fwd1 = LayerForwardOps(whole.model, whole.layout, whole.shape, options);
  const OpList bwd1 = LayerBackwardOps(whole.model, whole.layout, whole.shape, options);
  const OpList fwd4 = LayerForwardOps(split.model, split.layout, split.shape, options);
  const OpList bwd4 = LayerBackwardOps(split.model, split.layout, split.shape, options);
  for (auto field : {&Op::flops, &Op::model_flops}) {
    EXPECT_DOUBLE_EQ(4 * Sum(fwd4, OpKind::kAttention, field),
                     Sum(fwd1, OpKind::kAttention, field));
    EXPECT_DOUBLE_EQ(4 * Sum(bwd4, OpKind::kAttention, field),
                     Sum(bwd1, OpKind::kAttention, field));
  }
  const double kv = 2.0 * 8 * 128 * 32768 * 2;  // K and V of the whole sequence.
  EXPECT_DOUBLE_EQ(CommBytes(fwd4, "cp"), 3 * kv);
  EXPECT_DOUBLE_EQ(CommBytes(bwd4, "cp"), (3 + 4) * kv);
  int steps = 0, causal = 0;
  for (size_t i = 0; i < fwd4.size(); ++i) {
    const Op& op = fwd4[i];
    if (op.kind == OpKind::kCollective && op.axis == "cp") {
      EXPECT_EQ(op.collective, collectives::CollectiveOp::kShift) << op.name;
    }
    if (op.kind != OpKind::kAttention) continue;
    EXPECT_EQ(op.shape.m, 32768 / 4);
    EXPECT_EQ(op.shape.n, 32768 / 4);
    causal += op.causal ? 1 : 0;
    if (steps++ == 0) continue;
    // Steps after the first wait for a shift, which waited for the step before.
    bool after_shift = false;
    for (int dep : op.deps) {
      if (fwd4[dep].kind != OpKind::kCollective) continue;
      after_shift = true;
      EXPECT_EQ(fwd4[dep].name, "cp.shift.kv");
    }
    EXPECT_TRUE(after_shift) << "step " << steps - 1;
  }
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(causal, 1);
  EXPECT_EQ(std::count_if(bwd4.begin(), bwd4.end(),
                          [](const Op& op) { return op.name == "cp.shift.dkv"; }),
            1);
}

}  // namespace
}  // namespace podsim::workloads
