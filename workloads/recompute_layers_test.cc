#include "workloads/recompute_layers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/memory.h"
#include "workloads/training_schedule.h"

namespace podsim::workloads {
namespace {

TEST(RecomputeLayersTest, NamesParseAndRoundTrip) {
  for (const char* name : {"all", "every:2", "every:1", "first:3"}) {
    sim::StatusOr<RecomputeLayers> layers = RecomputeLayersNamed(name);
    ASSERT_TRUE(layers.ok()) << name << ": " << layers.status();
    EXPECT_EQ(RecomputeLayersName(*layers), name);
  }
  for (const char* bad : {"", "some", "every:", "every:0", "first:-1", "first:2x", "every:1.5"}) {
    sim::StatusOr<RecomputeLayers> layers = RecomputeLayersNamed(bad);
    EXPECT_FALSE(layers.ok()) << "'" << bad << "' parsed";
    if (!layers.ok()) {
      EXPECT_NE(layers.status().message().find(bad), std::string::npos);
    }
  }
}

// torchtitan checkpoints the blocks whose count from 1 is a multiple of N; Megatron's block method
// the first N of each chunk.
TEST(RecomputeLayersTest, SelectsTheFrameworksLayers) {
  const RecomputeLayers every2 = *RecomputeLayersNamed("every:2");
  EXPECT_FALSE(RecomputeLayersNamed("every:5")->Recomputes(3, 3));  // Past the chip's layers.
  const RecomputeLayers first3 = *RecomputeLayersNamed("first:3");
  std::vector<bool> torchtitan, megatron;
  // Two chunks of four layers on one chip.
  for (int chunk = 0; chunk < 2; ++chunk) {
    for (int l = 0; l < 4; ++l) {
      torchtitan.push_back(every2.Recomputes(chunk * 4 + l, l));
      megatron.push_back(first3.Recomputes(chunk * 4 + l, l));
    }
  }
  EXPECT_EQ(torchtitan, (std::vector<bool>{false, true, false, true, false, true, false, true}));
  EXPECT_EQ(megatron, (std::vector<bool>{true, true, true, false, true, true, true, false}));
  EXPECT_TRUE(RecomputeLayers{}.Recomputes(7, 3));
}

struct Step {
  ModelSpec model;
  Layout layout;
  BatchSpec batch{8, 2048};
};

Step Llama(std::string_view layout) {
  Step s{ParseModel("llama3-8b:layers=8").value(), ParseLayout(layout).value()};
  return s;
}

OpOptions Full(std::string_view layers) {
  OpOptions options;
  options.recompute = RecomputePolicy::kFull;
  options.recompute_layers = *RecomputeLayersNamed(layers);
  return options;
}

// Half the layers recomputing hold the mean of the two policies' activations, and the recompute
// peak of one recomputing layer (on the first of two stages, which has no loss peak to hide it).
TEST(RecomputeLayersTest, HalfTheLayersHoldTheMeanOfThePolicies) {
  const Step s = Llama("pp=2,microbatches=2");
  const topology::ChipSpec chip;
  OpOptions none;
  const MemoryBreakdown all = StageMemory(s.model, s.layout, s.batch, Full("all"), chip, 0);
  const MemoryBreakdown kept = StageMemory(s.model, s.layout, s.batch, none, chip, 0);
  const MemoryBreakdown half = StageMemory(s.model, s.layout, s.batch, Full("every:2"), chip, 0);
  EXPECT_NEAR(half.layer_activation_bytes,
              (all.layer_activation_bytes + kept.layer_activation_bytes) / 2,
              1e-9 * kept.layer_activation_bytes);
  EXPECT_EQ(half.recompute_peak_bytes, all.recompute_peak_bytes);
  EXPECT_GT(all.recompute_peak_bytes, 0);
  // first:N with N the chunk's layers is every layer.
  const MemoryBreakdown first_all =
      StageMemory(s.model, s.layout, s.batch, Full("first:4"), chip, 0);
  EXPECT_EQ(first_all.layer_activation_bytes, all.layer_activation_bytes);
}

// The schedule recomputes the selected layers' forwards only: with two pipeline stages of four
// layers, every:2 recomputes the second and fourth of each stage, first:1 the first.
TEST(RecomputeLayersTest, ScheduleRecomputesTheSelectedLayersOnly) {
  const Step s = Llama("pp=2,microbatches=2");
  const topology::System system = topology::ParseSystem("h100:2").value();
  auto recomputed_layers = [&](std::string_view layers) {
    const schedule::Schedule schedule =
        TrainingSchedule(system, s.model, s.layout, s.batch, Full(layers));
    std::vector<std::vector<int>> per_stage;
    for (const schedule::Program& program : schedule.programs()) {
      std::vector<int> layers_seen;
      for (const schedule::Op& op : program.ops()) {
        if (op.phase() != "recompute" || op.name() != "attn.qkv.recompute") continue;
        if (op.microbatch() == 0) layers_seen.push_back(static_cast<int>(op.layer()));
      }
      std::sort(layers_seen.begin(), layers_seen.end());
      per_stage.push_back(layers_seen);
    }
    return per_stage;
  };
  EXPECT_EQ(recomputed_layers("all"), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(recomputed_layers("every:2"), (std::vector<std::vector<int>>{{1, 3}, {5, 7}}));
  EXPECT_EQ(recomputed_layers("first:1"), (std::vector<std::vector<int>>{{0}, {4}}));
}

}  // namespace
}  // namespace podsim::workloads
