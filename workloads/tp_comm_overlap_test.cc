// Megatron-Core's --tp-comm-overlap as a rewrite of a layer's ops (issue 14): the same work and
// bytes in chunks, GEMM chunk k after gather chunk k, reduce-scatter chunk k after GEMM chunk k,
// and a simulated step on two H100 nodes whose tp communication hides behind the GEMMs.

#include "workloads/tp_comm_overlap.h"

#include <gtest/gtest.h>

#include <string>

#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/step_simulator.h"
#include "workloads/training.h"

namespace podsim::workloads {
namespace {

struct Lists {
  OpList forward, backward;
};

Lists LayerLists(const std::string& layout_text, const OpOptions& options) {
  const ModelSpec model = ParseModel("llama3-8b").value();
  const Layout layout = ParseLayout(layout_text).value();
  const BatchSpec batch{8, 4096};
  EXPECT_TRUE(ValidateLayout(layout, model, layout.chips(), batch).ok());
  const ShardShape shape = ShapeOf(layout, model, batch);
  return {LayerForwardOps(model, layout, shape, options),
          LayerBackwardOps(model, layout, shape, options)};
}

int Count(const OpList& ops, const std::string& prefix) {
  int n = 0;
  for (const Op& op : ops) n += op.name.rfind(prefix, 0) == 0;
  return n;
}

TEST(TpCommOverlapTest, SplitsGathersGemmsAndReduceScattersKeepingTheWork) {
  for (RecomputePolicy recompute : {RecomputePolicy::kNone, RecomputePolicy::kFull}) {
    OpOptions options;
    options.recompute = recompute;
    const Lists lists = LayerLists("dp=2,tp=8,sp=1", options);
    for (const OpList* ops : {&lists.forward, &lists.backward}) {
      const OpList split = OverlapTpCommunication(*ops, 8);
      const OpTotals before = Totals(*ops), after = Totals(split);
      EXPECT_NEAR(after.flops / before.flops, 1, 1e-12);
      EXPECT_NEAR(after.model_flops / before.model_flops, 1, 1e-12);
      EXPECT_NEAR(after.comm_bytes / before.comm_bytes, 1, 1e-12);
      EXPECT_GT(after.hbm_bytes, before.hbm_bytes);  // Each GEMM chunk reads the weights.
      for (int i = 0; i < static_cast<int>(split.size()); ++i) {
        for (int dep : split[i].deps) EXPECT_LT(dep, i) << split[i].name;
      }
      // Ring exchange: qkv and fc1 (gate and up) in 8 row chunks, chunk 0 on the chip's own rows
      // (no gather), chunk k after exchange step k - 1 of 7.
      for (const Op& op : split) {
        const auto at = op.name.find(".chunk");
        if (op.kind != OpKind::kMatmul || at == std::string::npos) continue;
        const int k = std::stoi(op.name.substr(at + 6));
        int gathers = 0;
        for (int dep : op.deps) {
          if (split[dep].kind != OpKind::kCollective || split[dep].axis != "tp") continue;
          ++gathers;
          EXPECT_EQ(split[dep].collective, collectives::CollectiveOp::kAllGather) << op.name;
          EXPECT_EQ(split[dep].name.substr(split[dep].name.find(".chunk") + 6),
                    std::to_string(k - 1))
              << op.name;
          EXPECT_EQ(split[dep].launched, k > 1) << split[dep].name;  // Launched once.
        }
        // The proj and fc2 forward GEMMs (recomputed too) feed the pipelined reduce-scatters.
        const bool pipelined =
            (op.name.rfind("attn.out", 0) == 0 || op.name.rfind("mlp.down", 0) == 0) &&
            op.name.find(".dx") == std::string::npos;
        if (!pipelined) {
          EXPECT_EQ(gathers, k == 0 ? 0 : 1) << op.name;
        }
      }
    }
    const OpList forward = OverlapTpCommunication(lists.forward, 8);
    EXPECT_EQ(Count(forward, "tp.all-gather.attn.chunk"), 7);
    EXPECT_EQ(Count(forward, "attn.qkv.chunk"), 8);
    EXPECT_EQ(Count(forward, "mlp.gate.chunk"), 8);
    EXPECT_EQ(Count(forward, "mlp.up.chunk"), 8);
    // Pipelined reduce-scatters: 4 chunks (TE's num_splits), each after its GEMM chunk.
    EXPECT_EQ(Count(forward, "attn.out.chunk"), kTpOverlapReduceScatterChunks);
    EXPECT_EQ(Count(forward, "tp.reduce-scatter.mlp.chunk"), kTpOverlapReduceScatterChunks);
    for (const Op& op : forward) {
      if (op.name.rfind("tp.reduce-scatter.", 0) != 0) continue;
      ASSERT_EQ(op.deps.size(), 1u) << op.name;
      const Op& gemm = forward[op.deps[0]];
      EXPECT_EQ(gemm.kind, OpKind::kMatmul) << op.name;
      // Chunk k reduces GEMM chunk k, launched once.
      const std::string k = op.name.substr(op.name.find(".chunk") + 6);
      EXPECT_EQ(gemm.name.substr(gemm.name.find(".chunk") + 6), k) << op.name;
      EXPECT_EQ(op.launched, k != "0") << op.name;
    }
    // A gated MLP's gate and up (one fused fc1 GEMM in Megatron-Core) interleave their chunks,
    // so that every exchange step hides behind both.
    std::vector<std::string> fc1;
    for (const Op& op : forward) {
      if (op.name.rfind("mlp.gate.chunk", 0) == 0 || op.name.rfind("mlp.up.chunk", 0) == 0) {
        fc1.push_back(op.name);
      }
    }
    ASSERT_EQ(fc1.size(), 16u);
    EXPECT_EQ(fc1[0], "mlp.gate.chunk0");
    EXPECT_EQ(fc1[1], "mlp.up.chunk0");
    EXPECT_EQ(fc1[15], "mlp.up.chunk7");
    // Backward: the proj and fc2 input gradients after the ring exchange; weight gradients whole.
    const OpList backward = OverlapTpCommunication(lists.backward, 8);
    EXPECT_EQ(Count(backward, "mlp.down.dx.chunk"), 8);
    EXPECT_EQ(Count(backward, "attn.out.dx.chunk"), 8);
    EXPECT_EQ(Count(backward, "mlp.down.dw.chunk"), 0);
    EXPECT_EQ(Count(backward, "mlp.down.dw"), 1);
  }
  const Lists lists = LayerLists("dp=2,tp=8,sp=1", {});
  EXPECT_EQ(OverlapTpCommunication(lists.forward, 1).size(), lists.forward.size());
}

TEST(TpCommOverlapTest, NeedsSequenceParallelism) {
  OpOptions options;
  options.tp_comm_overlap = true;
  EXPECT_EQ(ValidateOpOptions(options, ParseLayout("tp=8").value()).message(),
            "tp communication overlap needs sequence parallelism with tp=8 (add sp=1 to the "
            "layout), as Megatron-LM requires");
  EXPECT_TRUE(ValidateOpOptions(options, ParseLayout("tp=8,sp=1").value()).ok());
  EXPECT_TRUE(ValidateOpOptions(options, ParseLayout("dp=8").value()).ok());
}

// Two H100 nodes, tp=8 over NVLink with sequence parallelism, a model whose GEMMs outlast their
// tp transfers (llama3-70b's width on four layers): with the overlap the tp communication that
// the compute stream waits for is less than half, and the step shorter; the model FLOPs are the
// same.
TEST(TpCommOverlapTest, HidesTpCommunicationInASimulatedStep) {
  const topology::System system = topology::ParseSystem("h100:16").value();
  const ModelSpec model =
      ParseModel(
          "custom:layers=4,d_model=8192,ffn=28672,heads=64,kv_heads=8,head_dim=128,vocab=128256")
          .value();
  const Layout layout = ParseLayout("dp=2,tp=8,sp=1,microbatches=2").value();
  const BatchSpec batch{8, 4096};
  OpOptions plain;
  OpOptions overlapped;
  overlapped.tp_comm_overlap = true;
  sim::StatusOr<TrainingResult> without = SimulateTraining(system, model, layout, batch, plain);
  sim::StatusOr<TrainingResult> with = SimulateTraining(system, model, layout, batch, overlapped);
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_GT(without->breakdown.at("exposed_tp"), 0);
  EXPECT_LT(with->breakdown.at("exposed_tp"), 0.5 * without->breakdown.at("exposed_tp"));
  EXPECT_LT(with->step_time_s, without->step_time_s);
  EXPECT_NEAR(with->step.total_model_flops / without->step.total_model_flops, 1, 1e-9);
  EXPECT_FALSE(
      SimulateTraining(system, model, ParseLayout("dp=2,tp=8").value(), batch, overlapped).ok());
}

}  // namespace
}  // namespace podsim::workloads
