// Training-step schedules simulated end to end: pipeline bubbles against the closed forms of
// GPipe and 1F1B, interleaving, one chip per program against every chip, and well-formedness.

#include "workloads/training_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "sim/flow_observer.h"
#include "topology/system.h"
#include "workloads/layout_search.h"
#include "workloads/memory.h"
#include "workloads/schedule_check.h"
#include "workloads/step_simulator.h"

namespace podsim::workloads {
namespace {

struct Simulated {
  schedule::Schedule schedule;
  StepResult result;
};

Simulated Simulate(const std::string& system_text, const std::string& model_text,
                   const std::string& layout_text, int64_t sequences, int64_t seq,
                   StepOptions options = {}) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  EXPECT_TRUE(system.ok()) << system.status();
  sim::StatusOr<ModelSpec> model = ParseModel(model_text);
  EXPECT_TRUE(model.ok()) << model.status();
  sim::StatusOr<Layout> layout = ParseLayout(layout_text);
  EXPECT_TRUE(layout.ok()) << layout.status();
  BatchSpec batch{sequences, seq};
  sim::Status valid = ValidateLayout(*layout, *model, system->fabric.chip_count(), batch);
  EXPECT_TRUE(valid.ok()) << valid;
  Simulated run;
  run.schedule = TrainingSchedule(*system, *model, *layout, batch, OpOptions{});
  sim::StatusOr<StepResult> result = SimulateStep(*system, run.schedule, options);
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) run.result = std::move(*result);
  return run;
}

// A small model with a small vocabulary: its stages are balanced (the head and embedding are
// cheap) and their boundaries carry little data, so the bubble is the schedule's.
constexpr char kSmall[] =
    "custom:layers=16,d_model=2048,ffn=8192,heads=16,kv_heads=16,head_dim=128,vocab=1024";

// Waiting for the previous stage (the warm-up) and for the others to finish (the drain).
double BubbleFraction(const StepResult& result) {
  return (result.mean_bubble_s + result.mean_idle_s) / result.step_time.ToSeconds();
}

// Narayanan et al. 2021 sec. 2.2: the pipeline bubble is (p - 1) / (m + p - 1) of the step for
// GPipe and 1F1B alike. The simulated bubble includes the stage-boundary transfers and the
// slightly heavier first and last stages (embedding, head), so it lands near the closed form.
TEST(TrainingScheduleTest, PipelineBubbleMatchesTheClosedForm) {
  for (const char* schedule : {"gpipe", "1f1b"}) {
    for (int m : {4, 8}) {
      Simulated run = Simulate(
          "h100:8", kSmall,
          std::string("pp=4,dp=2,microbatches=") + std::to_string(m) + ",schedule=" + schedule,
          2 * m, 2048);
      const double expected = 3.0 / (m + 3.0);
      EXPECT_NEAR(BubbleFraction(run.result), expected, 0.1 * expected) << schedule << " m=" << m;
    }
  }
}

// Interleaving v chunks divides the bubble by about v (Narayanan et al. 2021 sec. 2.2.2).
TEST(TrainingScheduleTest, InterleavingShrinksTheBubble) {
  Simulated plain = Simulate("h100:8", kSmall, "pp=4,dp=2,microbatches=8", 16, 2048);
  Simulated interleaved = Simulate(
      "h100:8", kSmall, "pp=4,dp=2,microbatches=8,schedule=interleaved,virtual_stages=2", 16, 2048);
  EXPECT_LT(interleaved.result.step_time, plain.result.step_time);
  EXPECT_NEAR(BubbleFraction(interleaved.result) / BubbleFraction(plain.result), 0.5, 0.2);
}

// Every chip against one per stage, with tp, fsdp and pp each on its own axis of a 2x2x2 v5p
// slice (parallel groups share no links, the condition of one chip per program).
// Interleaving over chunks of unequal lengths (LayersOfChunk): 10 layers over 2 x 2 chunks are 2,
// 3, 3, 2, so stage 0 runs layers 0-1 and 5-7, stage 1 layers 2-4 and 8-9, each in every
// microbatch's forward; the step runs, and memory walks the stage's chunks.
TEST(TrainingScheduleTest, InterleavingRunsUnevenChunks) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:2");
  const ModelSpec model =
      ParseModel(
          "custom:layers=10,d_model=1024,ffn=4096,heads=8,kv_heads=8,head_dim=128,"
          "vocab=1024")
          .value();
  const Layout layout =
      ParseLayout("pp=2,microbatches=4,schedule=interleaved,virtual_stages=2").value();
  const BatchSpec batch{4, 1024};
  ASSERT_TRUE(ValidateLayout(layout, model, 2, batch).ok());
  const schedule::Schedule s = TrainingSchedule(*system, model, layout, batch, OpOptions{});
  ASSERT_TRUE(CheckSchedule(*system, s).ok());
  const std::set<int> expected[2] = {{0, 1, 5, 6, 7}, {2, 3, 4, 8, 9}};
  for (int stage = 0; stage < 2; ++stage) {
    std::set<int> layers;
    int forwards = 0;
    for (const schedule::Op& op : s.programs(stage).ops()) {
      // The layers' matmuls (the head's and the embedding's have layer -1).
      if (op.kind() != schedule::MATMUL || op.layer() < 0) continue;
      layers.insert(op.layer());
      if (op.name() == "attn.qkv") ++forwards;
    }
    EXPECT_EQ(layers, expected[stage]) << stage;
    EXPECT_EQ(forwards, 4 * 5) << stage;
  }
  sim::StatusOr<StepResult> step = SimulateStep(*system, s, {});
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_GT(PeakMemory(model, layout, batch, OpOptions{}, system->chip).activation_bytes, 0);
}

TEST(TrainingScheduleTest, OneChipPerStageMatchesEveryChip) {
  StepOptions every;
  every.chips = SimulatedChips::kEveryChip;
  every.network = collectives::NetworkMode::kFlows;
  StepOptions exact;
  exact.chips = SimulatedChips::kOnePerProgram;
  exact.network = collectives::NetworkMode::kFlows;
  Simulated full =
      Simulate("tpu-v5p:2x2x2", kSmall, "fsdp=2,tp=2,pp=2,microbatches=2", 8, 1024, every);
  Simulated one =
      Simulate("tpu-v5p:2x2x2", kSmall, "fsdp=2,tp=2,pp=2,microbatches=2", 8, 1024, exact);
  StepOptions approximate;
  approximate.chips = SimulatedChips::kOnePerProgram;
  Simulated whole =
      Simulate("tpu-v5p:2x2x2", kSmall, "fsdp=2,tp=2,pp=2,microbatches=2", 8, 1024, approximate);
  EXPECT_EQ(full.result.simulated_chips, 8u);
  EXPECT_EQ(one.result.simulated_chips, 2u);
  EXPECT_EQ(one.result.step_time, full.result.step_time);
  // Whole-collective flows (the approximation) share bandwidth as whole collectives where
  // all-gathers and reduce-scatters overlap on the fsdp links (collective_network.h): close to the
  // transfers.
  EXPECT_GT(whole.result.overlapped_collectives, 0u);
  EXPECT_NEAR(whole.result.step_time.ToSeconds() / full.result.step_time.ToSeconds(), 1.0, 0.005);
}

// pp strided across y (fsdp takes y:2 first): a stage's pipeline sends and fsdp rings share y
// links with their parallel copies, which one chip per stage covers with shadows.
TEST(TrainingScheduleTest, ShadowsCoverParallelGroupsThatShareLinks) {
  StepOptions every;
  every.chips = SimulatedChips::kEveryChip;
  every.network = collectives::NetworkMode::kFlows;
  StepOptions exact;
  exact.chips = SimulatedChips::kOnePerProgram;
  exact.network = collectives::NetworkMode::kFlows;
  const char* layout = "fsdp=2,tp=4,pp=2,microbatches=2";
  Simulated full = Simulate("tpu-v5e:4x4", kSmall, layout, 8, 1024, every);
  Simulated one = Simulate("tpu-v5e:4x4", kSmall, layout, 8, 1024, exact);
  EXPECT_GT(one.result.shadow_collectives, 0u);
  EXPECT_NEAR(one.result.step_time.ToSeconds() / full.result.step_time.ToSeconds(), 1.0, 0.002);
}

// Model FLOPs of the schedule are the model's 6N + attention per token (no recomputation).
TEST(TrainingScheduleTest, ModelFlopsAreTheModels) {
  Simulated run = Simulate("tpu-v5e:2x2", kSmall, "fsdp=4", 8, 1024);
  sim::StatusOr<ModelSpec> model = ParseModel(kSmall);
  const double expected = model->TrainingFlopsPerToken(1024, AttentionCount::kCausal) * 8 * 1024;
  EXPECT_NEAR(run.result.total_model_flops / expected, 1.0, 0.01);
  EXPECT_GT(run.result.mean_compute_s, 0);
  // fsdp all-gathers are prefetched: most of their time hides behind compute.
  EXPECT_LT(run.result.mean_exposed_s["fsdp"], 0.2 * run.result.step_time.ToSeconds());
}

// Issue 14, Megatron-LM's distributed optimizer: the dp gradient reductions become
// reduce-scatters in the last microbatch's backward, and the parameters come back by dp
// all-gathers in the first microbatch's forward, each before its layer's first op; no dp
// all-reduce is left. On two H100 nodes, where dp crosses InfiniBand, this exposes less dp
// communication than all-reducing fp32 gradients (half the gradient bytes on the wire in the
// backward, bf16 gathers behind the forward) and updates only the chip's shard.
TEST(TrainingScheduleTest, DistributedOptimizerReduceScattersAndGathersOncePerStep) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:16");
  sim::StatusOr<ModelSpec> model = ParseModel(kSmall);
  const Layout layout = ParseLayout("dp=2,tp=8,microbatches=4").value();
  const BatchSpec batch{8, 4096};
  OpOptions plain;
  plain.precision = PrecisionRecipe::Megatron();
  OpOptions distributed = plain;
  distributed.distributed_optimizer = true;
  const schedule::Schedule s = TrainingSchedule(*system, *model, layout, batch, distributed);
  ASSERT_TRUE(CheckSchedule(*system, s).ok());
  int gathers = 0, scatters = 0;
  for (const schedule::Op& op : s.programs(0).ops()) {
    if (op.kind() != schedule::COLLECTIVE || op.axes_size() != 1 || op.axes(0) != "dp") continue;
    EXPECT_NE(op.collective(), schedule::ALL_REDUCE) << op.name();
    if (op.collective() == schedule::ALL_GATHER) {
      ++gathers;
      EXPECT_EQ(op.microbatch(), 0) << op.name();
    } else if (op.collective() == schedule::REDUCE_SCATTER) {
      ++scatters;
      EXPECT_EQ(op.microbatch(), 3) << op.name();
    }
  }
  // One per layer, plus the embedding's and the head's.
  EXPECT_EQ(gathers, model->layers + 2);
  EXPECT_EQ(scatters, model->layers + 2);
  sim::StatusOr<StepResult> with = SimulateStep(*system, s, {});
  sim::StatusOr<StepResult> without =
      SimulateStep(*system, TrainingSchedule(*system, *model, layout, batch, plain), {});
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_GT(without->mean_exposed_s["dp"], 0);
  EXPECT_LT(with->mean_exposed_s["dp"], without->mean_exposed_s["dp"]);
  EXPECT_LT(with->step_time, without->step_time);
}

// Issue 14: Megatron-Core without --overlap-grad-reduce reduces the gradients over dp after the
// stage's whole backward (finalize_model_grads), one bucket a model chunk's buffer, dense then
// experts, one after the other; without --overlap-param-gather it gathers the distributed
// optimizer's parameters likewise after its step (DistributedDataParallelConfig's defaults,
// framework.h). Each bucket carries the per-layer collectives' bytes; overlapped, the reductions
// start inside the backward and the step is shorter.
struct DpBuckets {
  std::vector<int> reductions, gathers;  // Op indices, in order.
  double reduced = 0, gathered = 0;      // Their bytes.
};
DpBuckets DpCollectivesOf(const schedule::Program& p) {
  DpBuckets b;
  for (int i = 0; i < p.ops_size(); ++i) {
    const schedule::Op& op = p.ops(i);
    if (op.kind() != schedule::COLLECTIVE || (op.stream() != "dp" && op.stream() != "expert-dp")) {
      continue;
    }
    if (op.collective() == schedule::ALL_GATHER) {
      b.gathers.push_back(i);
      b.gathered += op.bytes();
    } else {
      b.reductions.push_back(i);
      b.reduced += op.bytes();
    }
  }
  return b;
}
bool DependsOn(const schedule::Op& op, int dep) {
  return std::find(op.deps().begin(), op.deps().end(), static_cast<uint32_t>(dep)) !=
         op.deps().end();
}

TEST(TrainingScheduleTest, MegatronReducesAfterTheBackwardUnlessOverlapped) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:16");
  ASSERT_TRUE(system.ok());
  struct Case {
    const char* model;
    const char* layout;
    int buckets;  // Per stage: model chunks x dp groups.
  };
  for (const Case& c :
       {Case{kSmall, "dp=2,tp=8,microbatches=4", 1},
        Case{kSmall, "dp=2,tp=4,pp=2,microbatches=4", 1},
        Case{kSmall, "dp=2,tp=4,pp=2,microbatches=4,schedule=interleaved,virtual_stages=2", 2},
        Case{"mixtral-8x7b:layers=4", "dp=4,tp=4,sp=1,ep=2,microbatches=2", 2}}) {
    SCOPED_TRACE(std::string(c.model) + " " + c.layout);
    sim::StatusOr<ModelSpec> model = ParseModel(c.model);
    ASSERT_TRUE(model.ok());
    const Layout layout = ParseLayout(c.layout).value();
    const BatchSpec batch{8, 2048};
    ASSERT_TRUE(ValidateLayout(layout, *model, 16, batch).ok());
    OpOptions exposed = FrameworkOptions(Framework::kMegatron);
    exposed.distributed_optimizer = true;
    ASSERT_FALSE(exposed.overlap_grad_reduce || exposed.overlap_param_gather);
    OpOptions overlapped = exposed;
    overlapped.overlap_grad_reduce = true;
    overlapped.overlap_param_gather = true;
    const schedule::Schedule e = TrainingSchedule(*system, *model, layout, batch, exposed);
    const schedule::Schedule o = TrainingSchedule(*system, *model, layout, batch, overlapped);
    ASSERT_TRUE(CheckSchedule(*system, e).ok());
    ASSERT_TRUE(CheckSchedule(*system, o).ok());
    for (int stage = 0; stage < e.programs_size(); ++stage) {
      const schedule::Program& pe = e.programs(stage);
      const schedule::Program& po = o.programs(stage);
      const DpBuckets be = DpCollectivesOf(pe), bo = DpCollectivesOf(po);
      ASSERT_EQ(be.reductions.size(), static_cast<size_t>(c.buckets));
      ASSERT_EQ(be.gathers.size(), static_cast<size_t>(c.buckets));
      EXPECT_GT(bo.reductions.size(), be.reductions.size());
      EXPECT_DOUBLE_EQ(be.reduced, bo.reduced);
      EXPECT_DOUBLE_EQ(be.gathered, bo.gathered);
      // Gathers first, one after the other, the first compute op waiting for the last.
      for (size_t g = 0; g < be.gathers.size(); ++g) {
        EXPECT_EQ(be.gathers[g], static_cast<int>(g));
        if (g > 0) {
          EXPECT_TRUE(DependsOn(pe.ops(be.gathers[g]), be.gathers[g - 1]));
        }
      }
      int first_compute = -1, last_compute = -1, last_send = -1, optimizer = -1;
      for (int i = 0; i < pe.ops_size(); ++i) {
        const schedule::Op& op = pe.ops(i);
        if (op.kind() == schedule::OPTIMIZER && optimizer < 0) optimizer = i;
        if (op.stream() == "compute" && op.kind() != schedule::OPTIMIZER) {
          if (first_compute < 0) first_compute = i;
          last_compute = i;
        }
        if (op.kind() == schedule::SEND) last_send = i;
      }
      EXPECT_TRUE(DependsOn(pe.ops(first_compute), be.gathers.back()));
      // Reductions after the last compute op and send, one after the other, before the optimizer.
      for (size_t r = 0; r < be.reductions.size(); ++r) {
        const schedule::Op& op = pe.ops(be.reductions[r]);
        EXPECT_GT(be.reductions[r], last_compute);
        EXPECT_TRUE(r == 0 ? DependsOn(op, last_compute) : DependsOn(op, be.reductions[r - 1]));
        if (r == 0 && last_send >= 0) {
          EXPECT_TRUE(DependsOn(op, last_send));
        }
      }
      ASSERT_GE(optimizer, 0);
      EXPECT_TRUE(DependsOn(pe.ops(optimizer), be.reductions.back()));
      // Overlapped, a reduction starts inside the backward.
      int overlapped_last_compute = -1;
      for (int i = 0; i < po.ops_size(); ++i) {
        if (po.ops(i).stream() == "compute" && po.ops(i).kind() != schedule::OPTIMIZER) {
          overlapped_last_compute = i;
        }
      }
      EXPECT_LT(bo.reductions.front(), overlapped_last_compute);
    }
    sim::StatusOr<StepResult> with = SimulateStep(*system, o, {});
    sim::StatusOr<StepResult> without = SimulateStep(*system, e, {});
    ASSERT_TRUE(with.ok() && without.ok());
    auto exposed_dp = [](StepResult& r) {
      return r.mean_exposed_s["dp"] + r.mean_exposed_s["expert-dp"];
    };
    EXPECT_GT(exposed_dp(*without), exposed_dp(*with));
    EXPECT_GT(without->step_time, with->step_time);
  }
}

// Issue 14: torchtitan under pipelining runs FSDP2 as torch.distributed.pipelining does
// (framework.h): each layer's weights gathered in the first microbatch's forward only and kept
// all step, and fsdp's reduce-scatters in the last microbatch only, after the whole of its
// backward (WithLayoutDefaults); the book's FSDP and torchtitan without pp reduce-scatter every
// microbatch and gather again in every forward and backward.
TEST(TrainingScheduleTest, TorchtitanUnderPipeliningReducesFsdpGradientsOncePerStep) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:16");
  sim::StatusOr<ModelSpec> model = ParseModel(kSmall);
  ASSERT_TRUE(system.ok() && model.ok());
  const BatchSpec batch{64, 2048};
  struct Count {
    std::set<int> scatter_microbatches;
    int gathers = 0;
    // Reduce-scatters issued before the last compute op of their microbatch's backward.
    int early_scatters = 0;
    int accumulations = 0;  // Passes adding a layer's gradients into the unsharded ones.
  };
  auto count = [&](const std::string& layout_text, Framework framework) {
    const Layout layout = ParseLayout(layout_text).value();
    const schedule::Schedule s =
        TrainingSchedule(*system, *model, layout, batch, FrameworkOptions(framework));
    EXPECT_TRUE(CheckSchedule(*system, s).ok()) << layout_text;
    Count c;
    int last_compute = -1;
    for (int i = 0; i < s.programs(0).ops_size(); ++i) {
      const schedule::Op& op = s.programs(0).ops(i);
      if (op.kind() != schedule::COLLECTIVE && op.microbatch() == 3) last_compute = i;
    }
    for (int i = 0; i < s.programs(0).ops_size(); ++i) {
      const schedule::Op& op = s.programs(0).ops(i);
      if (op.name() == "grad.accumulate.layer") ++c.accumulations;
      if (op.kind() != schedule::COLLECTIVE || op.axes_size() != 1 || op.axes(0) != "fsdp") {
        continue;
      }
      if (op.collective() == schedule::REDUCE_SCATTER) {
        c.scatter_microbatches.insert(op.microbatch());
        if (op.microbatch() == 3 && i < last_compute) ++c.early_scatters;
      }
      if (op.collective() == schedule::ALL_GATHER) ++c.gathers;
    }
    return c;
  };
  const Count piped = count("fsdp=8,pp=2,microbatches=4", Framework::kTorchtitan);
  EXPECT_EQ(piped.scatter_microbatches, std::set<int>{3});
  const Count book = count("fsdp=8,pp=2,microbatches=4", Framework::kBook);
  EXPECT_EQ(book.scatter_microbatches, (std::set<int>{0, 1, 2, 3}));
  // Stage 0's 8 layers and the embedding gathered once; the book's in every microbatch's forward,
  // and again in its backward for the layers (the embedding's backward reads no weights).
  EXPECT_EQ(piped.gathers, 9);
  EXPECT_EQ(book.gathers, 4 * (9 + 8));
  EXPECT_EQ(piped.early_scatters, 0);
  EXPECT_GT(book.early_scatters, 0);
  // The unsharded gradients accumulate, each layer's in each microbatch's backward; the book's
  // reduce-scatter each microbatch's instead.
  EXPECT_EQ(piped.accumulations, 4 * 8);
  EXPECT_EQ(book.accumulations, 0);
  const Count flat = count("fsdp=16,microbatches=4", Framework::kTorchtitan);
  EXPECT_EQ(flat.scatter_microbatches, (std::set<int>{0, 1, 2, 3}));
  const OpOptions laid_out = WithLayoutDefaults(FrameworkOptions(Framework::kTorchtitan),
                                                ParseLayout("fsdp=8,pp=2").value());
  EXPECT_TRUE(laid_out.fsdp_sync_last_microbatch);
  EXPECT_FALSE(laid_out.fsdp_reshard_after_forward);
  EXPECT_TRUE(
      WithLayoutDefaults(laid_out, ParseLayout("fsdp=8,pp=2").value()).fsdp_sync_last_microbatch);
}

// Issue 14: HFU counts the matmul and attention work executed, so it never exceeds 100%; MFU,
// counting the pairs a causal kernel executes (the default), is never above it. Only the full-pair
// convention on a causal flash kernel counts work that is not done, and may exceed HFU.
TEST(TrainingScheduleTest, HfuIsNeverBelowMfu) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:8");
  sim::StatusOr<ModelSpec> model = ParseModel(kSmall);
  const BatchSpec batch{8, 8192};
  for (RecomputePolicy recompute :
       {RecomputePolicy::kNone, RecomputePolicy::kSelective, RecomputePolicy::kFull}) {
    for (AttentionKernel kernel : {AttentionKernel::kFlash, AttentionKernel::kMaterialized}) {
      for (AttentionCount count : {AttentionCount::kFull, AttentionCount::kCausal}) {
        OpOptions options;
        options.recompute = recompute;
        options.attention = kernel;
        options.model_flops_count = count;
        const schedule::Schedule s =
            TrainingSchedule(*system, *model, ParseLayout("tp=8").value(), batch, options);
        sim::StatusOr<StepResult> r = SimulateStep(*system, s, {});
        ASSERT_TRUE(r.ok()) << r.status();
        const std::string what = std::string(RecomputeName(recompute)) + " " +
                                 (kernel == AttentionKernel::kFlash ? "flash" : "materialized") +
                                 (count == AttentionCount::kCausal ? " causal" : " full");
        const double peak = 8 * 9.89e14 * r->step_time.ToSeconds();  // h100:8 bf16 peak.
        EXPECT_LE(r->total_hfu_flops, peak) << what;
        if (count == AttentionCount::kCausal || kernel == AttentionKernel::kMaterialized) {
          EXPECT_GE(r->total_hfu_flops, r->total_model_flops) << what;
        }
        const double expected = model->TrainingFlopsPerToken(8192, count) * batch.tokens();
        EXPECT_NEAR(r->total_model_flops / expected, 1.0, 0.01) << what;
        if (recompute == RecomputePolicy::kFull && count == AttentionCount::kCausal) {
          // Full recomputation re-runs the forward: about 4/3 of the model FLOPs.
          EXPECT_GT(r->total_hfu_flops, 1.3 * r->total_model_flops) << what;
        }
      }
    }
  }
}

// The expert all-to-all overlap tests' pipeline: MoE layers whose all-to-alls cross InfiniBand.
constexpr char kOverlapSystem[] = "h100:32";
constexpr char kOverlapModel[] = "mixtral-8x7b:layers=8";

// Mean exposed ep time of a step (0 where it has none).
double ExposedEp(const StepResult& r) {
  auto it = r.mean_exposed_s.find("ep");
  return it == r.mean_exposed_s.end() ? 0.0 : it->second;
}

// --ep-comm-overlap (DualPipe's overlapped chunks): a pipeline of MoE layers whose expert
// all-to-alls cross InfiniBand. In the steady state each stage's compute stream alternates a
// backward's and a forward's pieces at every all-to-all, the all-to-alls of one microbatch run
// while the other computes, and the exposed ep time falls; warm-up doubles (memory.h counts it).
TEST(TrainingScheduleTest, EpCommOverlapAlternatesMicrobatchesAtTheAllToAlls) {
  const std::string system_text = kOverlapSystem;
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  ASSERT_TRUE(system.ok()) << system.status();
  sim::StatusOr<ModelSpec> model = ParseModel(kOverlapModel);
  ASSERT_TRUE(model.ok()) << model.status();
  const Layout layout = ParseLayout("dp=8,pp=4,ep=8,microbatches=16").value();
  const BatchSpec batch{128, 4096};
  ASSERT_TRUE(ValidateLayout(layout, *model, 32, batch).ok());
  OpOptions plain, overlap;
  overlap.ep_comm_overlap = true;
  ASSERT_TRUE(ValidateOpOptions(overlap, layout).ok());
  const schedule::Schedule a = TrainingSchedule(*system, *model, layout, batch, plain);
  const schedule::Schedule b = TrainingSchedule(*system, *model, layout, batch, overlap);
  ASSERT_TRUE(CheckSchedule(*system, b).ok()) << CheckSchedule(*system, b).status();
  ASSERT_EQ(a.programs_size(), b.programs_size());
  for (int p = 0; p < b.programs_size(); ++p) {
    // The same ops, reordered.
    EXPECT_EQ(a.programs(p).ops_size(), b.programs(p).ops_size());
    // The compute stream: in the steady state the microbatch of consecutive compute ops changes
    // at every all-to-all; without overlap only between units.
    auto switches = [](const schedule::Program& program) {
      int changes = 0, last = -1;
      for (const schedule::Op& op : program.ops()) {
        if (op.stream() != "compute") continue;
        if (last >= 0 && static_cast<int>(op.microbatch()) != last) ++changes;
        last = static_cast<int>(op.microbatch());
      }
      return changes;
    };
    EXPECT_GT(switches(b.programs(p)), 3 * switches(a.programs(p))) << "stage " << p;
  }
  // Warm-up: stage 0 runs 2 (pp - 1) + 1 = 7 forwards before its first backward (1F1B: 4).
  auto forwards_before_backward = [](const schedule::Program& program) {
    std::set<int> seen;
    for (const schedule::Op& op : program.ops()) {
      if (op.name() == "pp.recv.gradients") break;
      if (op.stream() == "compute") seen.insert(static_cast<int>(op.microbatch()));
    }
    return seen.size();
  };
  EXPECT_EQ(forwards_before_backward(a.programs(0)), 4u);
  EXPECT_EQ(forwards_before_backward(b.programs(0)), 7u);
  EXPECT_EQ(InFlightChunks(layout, 0, true), 7);
  EXPECT_EQ(InFlightChunks(layout, 3, true), 1);
  sim::StatusOr<StepResult> ra = SimulateStep(*system, a, {});
  sim::StatusOr<StepResult> rb = SimulateStep(*system, b, {});
  ASSERT_TRUE(ra.ok() && rb.ok()) << ra.status() << " " << rb.status();
  EXPECT_LT(ExposedEp(*rb), 0.5 * ExposedEp(*ra));
  EXPECT_LT(rb->step_time, ra->step_time);
}

// With fsdp, a paired forward's first weight gather waits for the backward's start, not its last
// layer, so the pieces still alternate and the all-to-alls still hide.
TEST(TrainingScheduleTest, EpCommOverlapHidesTheAllToAllsWithFsdpToo) {
  const std::string system_text = kOverlapSystem;
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  ASSERT_TRUE(system.ok()) << system.status();
  sim::StatusOr<ModelSpec> model = ParseModel(kOverlapModel);
  ASSERT_TRUE(model.ok()) << model.status();
  const BatchSpec batch{128, 4096};
  auto exposed_ep = [&](const char* layout_text, bool overlap) {
    OpOptions options;
    options.ep_comm_overlap = overlap;
    const Layout layout = ParseLayout(layout_text).value();
    sim::StatusOr<StepResult> r =
        SimulateStep(*system, TrainingSchedule(*system, *model, layout, batch, options), {});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? ExposedEp(*r) : 0.0;
  };
  const double dp_overlap = exposed_ep("dp=8,pp=4,ep=8,microbatches=16", true);
  const double fsdp_plain = exposed_ep("fsdp=8,pp=4,ep=8,microbatches=16", false);
  const double fsdp_overlap = exposed_ep("fsdp=8,pp=4,ep=8,microbatches=16", true);
  EXPECT_LT(fsdp_overlap, 0.4 * fsdp_plain);
  EXPECT_LT(fsdp_overlap, 1.5 * dp_overlap);
}

TEST(TrainingScheduleTest, EpCommOverlapNeedsExpertsAndOneFOneB) {
  OpOptions overlap;
  overlap.ep_comm_overlap = true;
  sim::Status no_ep = ValidateOpOptions(overlap, ParseLayout("dp=8,pp=2,microbatches=4").value());
  EXPECT_NE(no_ep.message().find("needs expert parallelism"), std::string::npos) << no_ep;
  sim::Status interleaved = ValidateOpOptions(
      overlap,
      ParseLayout("dp=8,pp=2,ep=8,microbatches=4,schedule=interleaved,virtual_stages=2").value());
  EXPECT_NE(interleaved.message().find("1F1B schedule without virtual stages"), std::string::npos)
      << interleaved;
  EXPECT_TRUE(ValidateOpOptions(overlap, ParseLayout("dp=8,ep=8").value()).ok());
}

// Replays (collectives/collective_network.h): the quotient with replays gives the step without
// them to the picosecond, here with a run discarded (a tensor-parallel all-reduce replayed while
// a data-parallel reduction comes onto its NIC links), and with a flow observer attached.
class UsageCount : public sim::FlowObserver {
 public:
  void OnResourceUsageChanged(sim::Time, sim::ResourceId, double) override { ++changes; }
  uint64_t changes = 0;
};

TEST(TrainingScheduleTest, ReplaysChangeNothingEvenWhenARunIsDiscarded) {
  for (const char* system : {"h100:32,oversub=4", "h100:64"}) {
    const bool discards = std::string(system) == "h100:32,oversub=4";
    const std::string model = std::string("custom:layers=") + (discards ? "2" : "8") +
                              ",d_model=512,ffn=2048,heads=8,kv_heads=4,head_dim=64";
    const std::string layout = discards ? "dp=8,tp=2,pp=2,sp=1,microbatches=4,order=pp/tp/dp"
                                        : "dp=2,tp=8,pp=4,microbatches=4,order=tp/pp/dp";
    StepOptions options;
    options.chips = SimulatedChips::kOrbits;
    StepOptions plain = options;
    plain.replays = false;
    UsageCount usage;
    StepOptions observed = options;
    observed.flow_observer = &usage;
    const StepResult with =
        Simulate(system, model + ",vocab=4096", layout, 32, 256, options).result;
    const StepResult without =
        Simulate(system, model + ",vocab=4096", layout, 32, 256, plain).result;
    const StepResult traced =
        Simulate(system, model + ",vocab=4096", layout, 32, 256, observed).result;
    EXPECT_GT(with.replayed_collectives, 0u) << system;
    EXPECT_EQ(without.replayed_collectives, 0u) << system;
    EXPECT_EQ(with.step_time, without.step_time) << system;
    EXPECT_EQ(with.mean_compute_s, without.mean_compute_s) << system;
    EXPECT_EQ(with.mean_bubble_s, without.mean_bubble_s) << system;
    EXPECT_EQ(with.mean_exposed_s, without.mean_exposed_s) << system;
    // The observed run is the same run, with the same work, and sees links loaded.
    EXPECT_EQ(traced.step_time, with.step_time) << system;
    EXPECT_EQ(traced.replayed_collectives, with.replayed_collectives) << system;
    EXPECT_EQ(traced.discarded_runs, with.discarded_runs) << system;
    EXPECT_EQ(traced.events, with.events) << system;
    EXPECT_GT(usage.changes, 0u) << system;
    if (discards) {
      EXPECT_GE(with.discarded_runs, 1u);
    } else {
      EXPECT_EQ(with.discarded_runs, 0u);
    }
  }
}

// Expected users (collective_network.h): a pipeline of two stages, one SU each, whose
// data-parallel all-reduces ring through the SU's leaf switches, links no replay held before.
// With the footprints and the lookahead, they replay (the second stage on the first's rehearsal,
// moved to its SU) without a discarded run, and change nothing.
TEST(TrainingScheduleTest, DataParallelReductionsReplayOnSwitchLinksAndChangeNothing) {
  const std::string model =
      "custom:layers=8,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,vocab=4096";
  const std::string layout = "dp=32,tp=8,pp=2,microbatches=4";
  StepOptions options;
  options.chips = SimulatedChips::kOrbits;
  StepOptions plain = options;
  plain.replays = false;
  StepOptions verified = options;
  verified.verify_translated_replays = true;
  const StepResult with = Simulate("h100:512", model, layout, 128, 256, options).result;
  EXPECT_EQ(Simulate("h100:512", model, layout, 128, 256, verified).result.step_time,
            with.step_time);
  const StepResult without = Simulate("h100:512", model, layout, 128, 256, plain).result;
  EXPECT_EQ(with.discarded_runs, 0u);
  EXPECT_EQ(without.replayed_collectives, 0u);
  EXPECT_GT(with.replayed_collectives, 0u);
  EXPECT_LT(with.events, without.events / 2);
  EXPECT_EQ(with.step_time, without.step_time);
  EXPECT_EQ(with.mean_compute_s, without.mean_compute_s);
  EXPECT_EQ(with.mean_bubble_s, without.mean_bubble_s);
  EXPECT_EQ(with.mean_exposed_s, without.mean_exposed_s);
}

}  // namespace
}  // namespace podsim::workloads
