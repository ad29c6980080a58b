// Float8 linear layers (issue 15, item 5): the rewrite of a layer's ops keeps the work, runs the
// linear layers' GEMMs in fp8 after their casts, leaves attention and the router in bf16, and a
// step on an H100 node is faster with it; chips without fp8 refuse it.

#include "workloads/fp8_training.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/memory.h"
#include "workloads/tp_comm_overlap.h"
#include "workloads/training.h"
#include "workloads/training_schedule.h"

namespace podsim::workloads {
namespace {

OpList Layer(const std::string& model_text, const std::string& layout_text, bool backward,
             const OpOptions& options = {}) {
  const ModelSpec model = ParseModel(model_text).value();
  const Layout layout = ParseLayout(layout_text).value();
  const BatchSpec batch{8, 4096};
  EXPECT_TRUE(ValidateLayout(layout, model, layout.chips(), batch).ok());
  const ShardShape shape = ShapeOf(layout, model, batch);
  const MlpKind mlp = model.moe() ? MlpKind::kMoe : MlpKind::kDense;
  return backward ? LayerBackwardOps(model, layout, shape, options, mlp)
                  : LayerForwardOps(model, layout, shape, options, mlp);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(Fp8TrainingTest, LinearGemmsRunInFp8AfterTheirCasts) {
  for (bool backward : {false, true}) {
    const OpList ops = Layer("llama3-8b", "dp=8", backward);
    const OpList fp8 = Float8Linears(ops, 2);
    const OpTotals before = Totals(ops), after = Totals(fp8);
    EXPECT_DOUBLE_EQ(after.model_flops, before.model_flops);
    EXPECT_DOUBLE_EQ(after.comm_bytes, before.comm_bytes);
    int gemms = 0, weight_casts = 0;
    for (int i = 0; i < static_cast<int>(fp8.size()); ++i) {
      const Op& op = fp8[i];
      for (int dep : op.deps) EXPECT_LT(dep, i) << op.name;
      if (op.kind == OpKind::kAttention) {
        EXPECT_FALSE(op.fp8) << op.name;
      }
      if (op.kind != OpKind::kMatmul) continue;
      ++gemms;
      EXPECT_TRUE(op.fp8) << op.name;
      // Each GEMM waits for the cast of its left operand, made just before it.
      bool cast = false;
      for (int dep : op.deps) cast = cast || fp8[dep].name == op.name + ".fp8_cast";
      EXPECT_TRUE(cast) << op.name;
      // Operands of one byte: the left one's elements and the weights' read once.
      const double k = static_cast<double>(op.shape.k), n = static_cast<double>(op.shape.n);
      const double rows = op.flops / (2 * k * n);
      EXPECT_DOUBLE_EQ(op.hbm_read_bytes, rows * k + k * n) << op.name;
    }
    for (const Op& op : fp8) weight_casts += EndsWith(op.name, ".fp8_cast.weight") ? 1 : 0;
    // Forward: qkv, out, gate, up, down each cast their weights once; the backward reuses them.
    EXPECT_EQ(weight_casts, backward ? 0 : 5);
    EXPECT_EQ(gemms, backward ? 10 : 5);
  }
}

// Materialized attention's batched products are attention, not linear layers: they stay bf16.
TEST(Fp8TrainingTest, MaterializedAttentionStaysBf16) {
  OpOptions materialized;
  materialized.attention = AttentionKernel::kMaterialized;
  for (bool backward : {false, true}) {
    int linear = 0;
    for (const Op& op : Float8Linears(Layer("llama3-8b", "dp=8", backward, materialized), 2)) {
      if (op.kind != OpKind::kMatmul) continue;
      EXPECT_EQ(op.fp8, !op.name.starts_with("attn.core")) << op.name;
      linear += op.fp8 ? 1 : 0;
    }
    EXPECT_EQ(linear, backward ? 10 : 5);
  }
}

TEST(Fp8TrainingTest, RouterStaysBf16AndChunksShareTheirWeightCast) {
  for (const Op& op : Float8Linears(Layer("mixtral-8x7b:layers=2", "dp=8,ep=8", false), 2)) {
    if (op.name.starts_with("moe.router")) {
      EXPECT_FALSE(op.fp8) << op.name;
    }
  }
  const OpList split = OverlapTpCommunication(Layer("llama3-8b", "tp=8,sp=1", false), 8);
  int qkv_weight_casts = 0, qkv_chunks = 0;
  for (const Op& op : Float8Linears(split, 2)) {
    qkv_weight_casts += op.name == "attn.qkv.fp8_cast.weight" ? 1 : 0;
    qkv_chunks += op.kind == OpKind::kMatmul && op.name.starts_with("attn.qkv.chunk") ? 1 : 0;
  }
  EXPECT_EQ(qkv_chunks, 8);
  EXPECT_EQ(qkv_weight_casts, 1);
}

TEST(Fp8TrainingTest, StepIsFasterOnHopperAndRefusedWithoutFp8) {
  const ModelSpec model = ParseModel("llama3-8b:layers=4").value();
  const Layout layout = ParseLayout("fsdp=8").value();
  const BatchSpec batch{16, 8192};
  const topology::System h100 = topology::ParseSystem("h100:8").value();
  OpOptions bf16, fp8;
  fp8.fp8 = true;
  const double t_bf16 = SimulateTraining(h100, model, layout, batch, bf16).value().step_time_s;
  const TrainingResult with_fp8 = SimulateTraining(h100, model, layout, batch, fp8).value();
  EXPECT_LT(with_fp8.step_time_s, 0.85 * t_bf16);
  EXPECT_GT(with_fp8.step_time_s, 0.5 * t_bf16);  // Attention and the casts stay.
  const topology::System a100 = topology::ParseSystem("a100:8").value();
  EXPECT_EQ(SimulateTraining(a100, model, layout, batch, fp8).status().message(),
            "chip a100 has no fp8 peak (fp8 training needs h100, h200, b200 or gb200)");
}

// torchao's fp8 all-gather: each chip casts its own weight shard (1/fsdp of the cast), and the
// layer's fsdp gather moves a byte a parameter instead of two; the gathered buffers shrink too.
TEST(Fp8TrainingTest, Fp8AllGatherCastsShardsAndGathersHalfTheBytes) {
  OpOptions fp8, gathered;
  fp8.fp8 = gathered.fp8 = true;
  gathered.fp8_all_gather = true;
  auto op_named = [](const OpList& ops, const std::string& name) {
    for (const Op& op : ops) {
      if (op.name == name) return op;
    }
    ADD_FAILURE() << "no " << name;
    return Op{};
  };
  const OpList plain = Layer("llama3-8b", "fsdp=8", false, fp8);
  const OpList sharded = Layer("llama3-8b", "fsdp=8", false, gathered);
  EXPECT_DOUBLE_EQ(op_named(sharded, "fsdp.all-gather.layer").comm_bytes,
                   op_named(plain, "fsdp.all-gather.layer").comm_bytes / 2);
  const std::string cast = "attn.qkv.fp8_cast.weight";
  EXPECT_DOUBLE_EQ(op_named(Float8Linears(sharded, 2, {.weight_shards = 8}), cast).hbm_read_bytes,
                   op_named(Float8Linears(plain, 2), cast).hbm_read_bytes / 8);
  // The routed experts' shards are over expert_fsdp: fsdp=8 with ep=2 carved out of it, 4.
  const Layout moe_layout = ParseLayout("fsdp=8,ep=2").value();
  ASSERT_EQ(moe_layout.expert_fsdp(), 4);
  const OpList experts = Layer("mixtral-8x7b:layers=2", "fsdp=8,ep=2", false, gathered);
  const Fp8Rewrite moe_shards{.weight_shards = 8, .expert_weight_shards = 4};
  for (const char* name : {"moe.experts.up.fp8_cast.weight", "attn.qkv.fp8_cast.weight"}) {
    const double shards = std::string(name).starts_with("moe.experts") ? 4 : 8;
    EXPECT_DOUBLE_EQ(op_named(Float8Linears(experts, 2, moe_shards), name).hbm_read_bytes,
                     op_named(Float8Linears(experts, 2), name).hbm_read_bytes / shards)
        << name;
  }

  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("fsdp=8").value();
  const topology::ChipSpec h100 = topology::ChipPreset("h100").value();
  EXPECT_LT(StageMemory(model, layout, {8, 4096}, gathered, h100, 0).buffer_bytes,
            StageMemory(model, layout, {8, 4096}, fp8, h100, 0).buffer_bytes);
  const topology::System system = topology::ParseSystem("h100:8").value();
  OpOptions no_fp8;
  no_fp8.fp8_all_gather = true;
  EXPECT_EQ(SimulateTraining(system, model, layout, {8, 4096}, no_fp8).status().message(),
            "an fp8 all-gather needs fp8 training (--fp8)");
}

// Megatron-Core's fp8_param_gather: with the distributed optimizer the layer's parameter
// all-gather over dp moves a byte a parameter instead of two; the weights kept count as before
// (Transformer Engine's fp8 parameters carry a transposed copy: layer_ops.h).
TEST(Fp8TrainingTest, Fp8ParamGatherHalvesTheDistributedOptimizersGather) {
  OpOptions fp8;
  fp8.fp8 = true;
  fp8.distributed_optimizer = true;
  fp8.fp8_library = Fp8Library::kTransformerEngine;
  OpOptions gathered = fp8;
  gathered.fp8_all_gather = true;
  auto gather_bytes = [](const OpList& ops) {
    for (const Op& op : ops) {
      if (op.name == "dp.all-gather.layer") return op.comm_bytes;
    }
    ADD_FAILURE() << "no dp.all-gather.layer";
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(gather_bytes(Layer("llama3-8b", "dp=8", false, gathered)),
                   gather_bytes(Layer("llama3-8b", "dp=8", false, fp8)) / 2);

  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("dp=8").value();
  const topology::ChipSpec h100 = topology::ChipPreset("h100").value();
  // With bf16 parameters Transformer Engine keeps fp8 copies of the weights besides.
  const MemoryBreakdown bf16_params = StageMemory(model, layout, {8, 4096}, fp8, h100, 0);
  EXPECT_GT(bf16_params.fp8_weight_cache_bytes, 0);
  EXPECT_DOUBLE_EQ(StageMemory(model, layout, {8, 4096}, gathered, h100, 0).total_bytes,
                   bf16_params.total_bytes - bf16_params.fp8_weight_cache_bytes);
}

// Transformer Engine under Megatron-Core casts a chunk's weights in its first forward of the
// step and reads the cached copies after, recomputed forwards included; torchao casts in every
// forward and recomputed forward; with fp8 parameters nothing is cast in a forward.
TEST(Fp8TrainingTest, TransformerEngineCastsEachChunksWeightsOnceAStep) {
  const topology::System system = topology::ParseSystem("h100:2").value();
  const ModelSpec model = ParseModel("llama3-8b").value();
  const BatchSpec batch{4, 4096};
  struct Casts {
    int forward_mb0 = 0, forward_later = 0, recompute = 0;
    std::set<int64_t> layers_mb0;
    // Per microbatch: fp8 GEMMs and input casts of the forwards and recomputed forwards.
    std::map<int64_t, int> fp8_gemms, input_casts;
  };
  auto weight_casts = [&](const std::string& layout_text, const OpOptions& options) {
    const schedule::Schedule s =
        TrainingSchedule(system, model, ParseLayout(layout_text).value(), batch, options);
    Casts casts;
    for (const schedule::Program& program : s.programs()) {
      for (const schedule::Op& op : program.ops()) {
        if (op.phase() == "forward" || op.phase() == "recompute") {
          if (op.fp8()) ++casts.fp8_gemms[op.microbatch()];
          if (EndsWith(op.name(), ".fp8_cast")) ++casts.input_casts[op.microbatch()];
        }
        if (!EndsWith(op.name(), ".fp8_cast.weight")) continue;
        if (op.phase() == "recompute") {
          ++casts.recompute;
        } else if (op.microbatch() == 0) {
          ++casts.forward_mb0;
          casts.layers_mb0.insert(op.layer());
        } else {
          ++casts.forward_later;
        }
      }
    }
    return casts;
  };
  OpOptions torchao;
  torchao.fp8 = true;
  torchao.recompute = RecomputePolicy::kFull;
  OpOptions te = torchao;
  te.fp8_library = Fp8Library::kTransformerEngine;
  const std::string interleaved = "pp=2,microbatches=4,schedule=interleaved,virtual_stages=2";
  const Casts a = weight_casts(interleaved, torchao), b = weight_casts(interleaved, te);
  EXPECT_GT(a.forward_mb0, 0);
  EXPECT_EQ(a.forward_later, 3 * a.forward_mb0);
  EXPECT_EQ(a.recompute, 4 * a.forward_mb0);
  EXPECT_EQ(b.forward_mb0, a.forward_mb0);
  EXPECT_EQ(b.layers_mb0.size(), 32u);  // Both chunks of both stages.
  EXPECT_EQ(b.forward_later, 0);
  EXPECT_EQ(b.recompute, 0);
  // Every microbatch's GEMMs run in fp8 after their input casts, as torchao's, but for the gate
  // and up projections, which share one (Megatron-Core's fused fc1): four a layer, not five.
  EXPECT_EQ(b.fp8_gemms.size(), 4u);
  EXPECT_EQ(b.fp8_gemms, a.fp8_gemms);
  for (const auto& [microbatch, count] : a.input_casts) {
    EXPECT_EQ(b.input_casts.at(microbatch) * 5, count * 4) << microbatch;
  }
  EXPECT_EQ(b.fp8_gemms.at(3), b.fp8_gemms.at(0));
  EXPECT_GT(b.input_casts.at(3), 0);

  OpOptions fp8_params = te;
  fp8_params.distributed_optimizer = true;
  fp8_params.fp8_all_gather = true;
  const Casts c = weight_casts("dp=2,microbatches=2", fp8_params);
  EXPECT_EQ(c.forward_mb0 + c.forward_later + c.recompute, 0);
  EXPECT_EQ(c.fp8_gemms.at(1), b.fp8_gemms.at(1));

  // Under fsdp, bf16 weights gathered for each forward are cast in each, as torchao's; fp8 ones
  // gathered over Megatron-FSDP on Hopper are transposed again in each input gradient.
  OpOptions fsdp = te;
  const Casts d = weight_casts("fsdp=2,microbatches=2", fsdp);
  EXPECT_GT(d.forward_later, 0);
  EXPECT_EQ(d.forward_later, d.forward_mb0);
  EXPECT_EQ(d.recompute, 2 * d.forward_mb0);
  OpOptions fsdp_fp8_params = te;
  fsdp_fp8_params.fp8_all_gather = true;
  int transposes = 0;
  const schedule::Schedule s = TrainingSchedule(
      system, model, ParseLayout("fsdp=2,microbatches=2").value(), batch, fsdp_fp8_params);
  for (const schedule::Op& op : s.programs(0).ops()) {
    EXPECT_FALSE(EndsWith(op.name(), ".fp8_cast.weight")) << op.name();
    transposes += EndsWith(op.name(), ".fp8_transpose.weight") ? 1 : 0;
  }
  EXPECT_EQ(transposes, d.forward_mb0 * 2);  // Each microbatch's backward, every linear weight.
}

// The cache holds a byte for each weight the stage's forwards read, and a transposed copy where
// the chip's fp8 GEMMs take only the TN layout (Hopper); nothing under torchao or with fp8
// parameters.
TEST(Fp8TrainingTest, TransformerEngineWeightCacheHoldsTheStagesWeights) {
  const BatchSpec batch{8, 4096};
  OpOptions te;
  te.fp8 = true;
  te.fp8_library = Fp8Library::kTransformerEngine;
  OpOptions mxfp8 = te;
  mxfp8.fp8_recipe = Fp8Recipe::kMxfp8;
  const topology::ChipSpec h100 = topology::ChipPreset("h100").value();
  const topology::ChipSpec b200 = topology::ChipPreset("b200").value();
  // The stage's layer parameters (norms and router included, memory.cc), dense and MoE, whole.
  for (const auto& [model_text, layout_text] :
       {std::pair{"llama3-8b", "tp=2,pp=2,microbatches=4"},
        std::pair{"mixtral-8x7b:layers=8", "tp=2,sp=1,dp=2,ep=2,etp=2,pp=2,microbatches=4"},
        std::pair{"llama3-8b:layers=8",
                  "pp=2,microbatches=4,schedule=interleaved,virtual_stages=2"}}) {
    SCOPED_TRACE(std::string(model_text) + " " + layout_text);
    const ModelSpec model = ParseModel(model_text).value();
    const Layout layout = ParseLayout(layout_text).value();
    ASSERT_TRUE(ValidateLayout(layout, model, layout.chips(), batch).ok());
    const MemoryBreakdown one = StageMemory(model, layout, batch, te, b200, 1);
    EXPECT_DOUBLE_EQ(one.fp8_weight_cache_bytes, one.layer_params);
    EXPECT_DOUBLE_EQ(StageMemory(model, layout, batch, te, h100, 1).fp8_weight_cache_bytes,
                     2 * one.layer_params);
    EXPECT_DOUBLE_EQ(StageMemory(model, layout, batch, mxfp8, b200, 1).fp8_weight_cache_bytes,
                     2 * (1 + 1.0 / 32) * one.layer_params);
  }
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout("tp=2,pp=2,microbatches=4").value();
  // Under fsdp each forward casts the weights it gathers: nothing kept.
  EXPECT_EQ(
      StageMemory(model, ParseLayout("fsdp=2,tp=2,pp=2,microbatches=4").value(), batch, te, h100, 1)
          .fp8_weight_cache_bytes,
      0);
  OpOptions torchao = te;
  torchao.fp8_library = Fp8Library::kTorchao;
  EXPECT_EQ(StageMemory(model, layout, batch, torchao, h100, 1).fp8_weight_cache_bytes, 0);
  OpOptions fp8_params = te;
  fp8_params.distributed_optimizer = true;
  fp8_params.fp8_all_gather = true;
  EXPECT_EQ(StageMemory(model, ParseLayout("dp=2,tp=2,pp=2,microbatches=4").value(), batch,
                        fp8_params, h100, 1)
                .fp8_weight_cache_bytes,
            0);
}

// Transformer Engine keeps an fp8 linear layer's input in fp8 for the backward, torchao the
// high-precision one: the layer's saved bytes differ by the linear GEMMs' inputs, (e - 1) / e of
// them; attention, norms and the MoE router keep theirs.
TEST(Fp8TrainingTest, TransformerEngineKeepsTheLinearInputsInFp8) {
  for (const char* model : {"llama3-8b", "mixtral-8x7b"}) {
    SCOPED_TRACE(model);
    OpOptions torchao;
    torchao.fp8 = true;
    OpOptions te = torchao;
    te.fp8_library = Fp8Library::kTransformerEngine;
    const OpList fwd = Layer(model, std::string(model) == "llama3-8b" ? "fsdp=8" : "dp=8,ep=8",
                             /*backward=*/false, te);
    double linear_inputs = 0;
    for (const Op& op : fwd) {
      if (IsFp8LinearGemm(op)) linear_inputs += op.saved_bytes;
    }
    ASSERT_GT(linear_inputs, 0);
    const double e = te.precision.activation_bytes;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(fwd, te),
                     LayerActivationBytes(fwd, torchao) - linear_inputs * (e - 1) / e);
    OpOptions bf16;
    EXPECT_DOUBLE_EQ(LayerActivationBytes(fwd, torchao), LayerActivationBytes(fwd, bf16));
  }
  EXPECT_EQ(Fp8LibraryNamed("te").value(), Fp8Library::kTransformerEngine);
  EXPECT_EQ(Fp8LibraryName(Fp8Library::kTorchao), "torchao");
  EXPECT_FALSE(Fp8LibraryNamed("TE").ok());
}

// Transformer Engine's backward: the input gradient casts the output gradient, with a column-wise
// copy where a cast writes one, and the weight gradient casts nothing, reading that cast. MXFP8
// adds a scale a block of 32 elements to every fp8 byte and reads the working precision once.
TEST(Fp8TrainingTest, TransformerEngineWeightGradientReadsTheCastsBeforeIt) {
  const OpList bwd = Layer("llama3-8b", "dp=8", /*backward=*/true);
  const OpList fwd = Layer("llama3-8b", "dp=8", /*backward=*/false);
  auto find = [](const OpList& ops, const std::string& name) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name == name) return static_cast<int>(i);
    }
    ADD_FAILURE() << "no " << name;
    return 0;
  };
  const Fp8Rewrite torchao;
  Fp8Rewrite te;
  te.library = Fp8Library::kTransformerEngine;
  Fp8Rewrite hopper = te;
  hopper.columnwise_copies = true;
  Fp8Rewrite mx = hopper;
  mx.recipe = Fp8Recipe::kMxfp8;
  const OpList a = Float8Linears(bwd, 2, torchao);
  EXPECT_EQ(a[find(a, "mlp.up.dw.fp8_cast")].hbm_write_bytes,
            a[find(a, "mlp.up.dw.fp8_cast")].hbm_read_bytes / 4);
  for (const Fp8Rewrite& rewrite : {te, hopper, mx}) {
    const OpList b = Float8Linears(bwd, 2, rewrite);
    const double bytes = Fp8ElementBytes(rewrite.recipe);
    const int copies = rewrite.columnwise_copies ? 2 : 1;
    const int passes = rewrite.recipe == Fp8Recipe::kMxfp8 ? 1 : 2;
    for (const Op& op : b) EXPECT_NE(op.name, "mlp.up.dw.fp8_cast");
    // The gate and up projections read one cast of their shared input.
    const OpList f0 = Float8Linears(fwd, 2, rewrite);
    const int shared = find(f0, "mlp.gate.fp8_cast");
    for (const Op& op : f0) EXPECT_NE(op.name, "mlp.up.fp8_cast");
    for (const char* gemm : {"mlp.gate", "mlp.up"}) {
      const Op& g = f0[find(f0, gemm)];
      EXPECT_NE(std::find(g.deps.begin(), g.deps.end(), shared), g.deps.end()) << gemm;
    }
    const Op& cast = b[find(b, "mlp.up.dx.fp8_cast")];
    const double elements = cast.hbm_read_bytes / (2.0 * passes);
    EXPECT_DOUBLE_EQ(cast.hbm_write_bytes, copies * bytes * elements);
    const Op& dw = b[find(b, "mlp.up.dw")];
    EXPECT_NE(std::find(dw.deps.begin(), dw.deps.end(), find(b, "mlp.up.dx.fp8_cast")),
              dw.deps.end());
    EXPECT_TRUE(dw.fp8);
    const Op& gemm = b[find(b, "mlp.up.dx")];
    EXPECT_DOUBLE_EQ(gemm.hbm_read_bytes, bytes * a[find(a, "mlp.up.dx")].hbm_read_bytes);
    const OpList f = Float8Linears(fwd, 2, rewrite);
    const Op& weight = f[find(f, "mlp.up.fp8_cast.weight")];
    EXPECT_DOUBLE_EQ(weight.hbm_write_bytes, copies * bytes * weight.hbm_read_bytes / (2 * passes));
  }
  EXPECT_DOUBLE_EQ(Fp8ElementBytes(Fp8Recipe::kMxfp8), 1 + 1.0 / 32);
  EXPECT_EQ(Fp8RecipeNamed("mxfp8").value(), Fp8Recipe::kMxfp8);
  EXPECT_EQ(Fp8RecipeName(Fp8Recipe::kTensorwise), "tensorwise");
  EXPECT_FALSE(Fp8RecipeNamed("MXFP8").ok());
}

// MXFP8 is Transformer Engine's, on Blackwell, with its parameters gathered in bf16.
TEST(Fp8TrainingTest, Mxfp8NeedsTransformerEngineOnBlackwell) {
  OpOptions mx;
  mx.fp8 = true;
  mx.fp8_library = Fp8Library::kTransformerEngine;
  mx.fp8_recipe = Fp8Recipe::kMxfp8;
  const topology::ChipSpec b200 = topology::ChipPreset("b200").value();
  EXPECT_TRUE(ValidateFp8Recipe(mx, b200).ok());
  EXPECT_EQ(ValidateFp8Recipe(mx, topology::ChipPreset("h200").value()).message(),
            "chip h200 has no block-scaled fp8 (mxfp8 needs b200 or gb200)");
  OpOptions torchao = mx;
  torchao.fp8_library = Fp8Library::kTorchao;
  EXPECT_EQ(ValidateFp8Recipe(torchao, b200).message(),
            "mxfp8 is modelled as Transformer Engine runs it (--fp8 --fp8-library te)");
  OpOptions gathered = mx;
  gathered.fp8_all_gather = true;
  EXPECT_EQ(ValidateFp8Recipe(gathered, b200).message(),
            "Megatron-Core gathers MXFP8 parameters in bf16: leave out --fp8-all-gather");
  EXPECT_TRUE(ValidateFp8Recipe(OpOptions{}, b200).ok());
}

}  // namespace
}  // namespace podsim::workloads
