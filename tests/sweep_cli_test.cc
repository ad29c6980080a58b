// End-to-end tests of `podsim sweep`: the ranking does not depend on --jobs, skipping layouts by
// the compute lower bound never changes the top K, and the lower bound holds for every layout.

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/main_command.h"
#include "tests/testing/run_podsim.h"
#include "topology/system.h"
#include "workloads/layout_search.h"
#include "workloads/step_simulator.h"
#include "workloads/training.h"
#include "workloads/training_schedule.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;

constexpr char kModel[] =
    "custom:layers=8,d_model=1024,ffn=4096,heads=16,kv_heads=16,head_dim=64,vocab=1024";

std::vector<std::string> Sweep(const std::string& system, std::vector<std::string> more) {
  std::vector<std::string> args = {"sweep", "--system",       system,  "--model",
                                   kModel,  "--batch-tokens", "64Ki",  "--seq",
                                   "2048",  "--json",         "--top", "5"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(SweepCliTest, RankingDoesNotDependOnJobs) {
  Outcome one = Podsim(Sweep("tpu-v5e:2x4", {"--jobs", "1"}));
  Outcome two = Podsim(Sweep("tpu-v5e:2x4", {"--jobs", "2"}));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, two.out);
  nlohmann::json j = nlohmann::json::parse(one.out);
  ASSERT_EQ(j["layouts"].size(), 5u);
  double previous = 0;
  for (const auto& layout : j["layouts"]) {
    for (const char* key : {"layout", "step_time_s", "mfu", "fits"}) {
      EXPECT_TRUE(layout.contains(key)) << key;
    }
    EXPECT_GE(layout["step_time_s"].get<double>(), previous);
    previous = layout["step_time_s"].get<double>();
  }
  // The family's validation record (workloads/measured_accuracy.h): v5e training has one.
  EXPECT_EQ(j["validation"]["family"], "tpu-v5e");
  EXPECT_GT(j["validation"]["rows"].get<int>(), 0);
}

// The top 5 with layouts skipped by the lower bound equal the top 5 of simulating every one.
TEST(SweepCliTest, SkippingByTheLowerBoundKeepsTheTop) {
  for (const char* system : {"tpu-v5e:2x4", "h100:16"}) {
    Outcome pruned = Podsim(Sweep(system, {}));
    Outcome all = Podsim(Sweep(system, {"--exhaustive"}));
    ASSERT_EQ(pruned.code, 0) << pruned.err;
    ASSERT_EQ(all.code, 0) << all.err;
    nlohmann::json p = nlohmann::json::parse(pruned.out), a = nlohmann::json::parse(all.out);
    EXPECT_EQ(p["layouts"], a["layouts"]) << system;
    EXPECT_EQ(a["skipped_by_lower_bound"].get<int>(), 0);
  }
}

// The bounds are bounds: for every layout, the simulated step is at least its compute alone, and
// at least its compute and dependencies with free communication, which is the tighter of the two
// and strictly tighter where a pipeline has a bubble. Without pipeline stages the two are equal,
// as DependencyBoundIsComputeBound says (the sweep then skips the simulation of the bound), with
// and without the framework options that add ops or streams.
TEST(SweepCliTest, LowerBoundsNeverExceedTheStep) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:16");
  ASSERT_TRUE(system.ok());
  sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(kModel);
  ASSERT_TRUE(model.ok());
  const workloads::BatchSpec batch{32, 2048};
  int checked = 0;
  int pipelines = 0;
  for (const workloads::LayoutCandidate& c : workloads::EnumerateLayouts(*system, *model, batch)) {
    workloads::OpOptions options;
    options.recompute = c.recompute;
    sim::StatusOr<workloads::TrainingResult> result =
        workloads::SimulateTraining(*system, *model, c.layout, batch, options);
    ASSERT_TRUE(result.ok()) << c.Name() << ": " << result.status();
    const sim::Time compute = workloads::ComputeLowerBound(*system, result->schedule);
    sim::StatusOr<sim::Time> dependency =
        workloads::DependencyLowerBound(*system, result->schedule);
    ASSERT_TRUE(dependency.ok()) << c.Name() << ": " << dependency.status();
    EXPECT_EQ(workloads::DependencyBoundIsComputeBound(result->schedule), c.layout.pp == 1)
        << c.Name();
    if (c.layout.pp == 1) {
      EXPECT_EQ(compute, *dependency) << c.Name();
    }
    for (const bool distributed_optimizer : {false, true}) {
      if (checked % 4 != 0) break;  // A quarter of the layouts: each variant simulates.
      workloads::OpOptions framework = options;
      framework.distributed_optimizer = distributed_optimizer;
      framework.tp_comm_overlap = c.layout.tp > 1 && c.layout.sp;
      const schedule::Schedule schedule =
          workloads::TrainingSchedule(*system, *model, c.layout, batch, framework);
      if (!workloads::DependencyBoundIsComputeBound(schedule)) continue;
      sim::StatusOr<sim::Time> simulated = workloads::DependencyLowerBound(*system, schedule);
      ASSERT_TRUE(simulated.ok()) << c.Name() << ": " << simulated.status();
      EXPECT_EQ(workloads::ComputeLowerBound(*system, schedule), *simulated)
          << c.Name() << " " << distributed_optimizer;
    }
    EXPECT_LE(compute, *dependency) << c.Name();
    EXPECT_LE(*dependency, result->step.step_time) << c.Name();
    if (c.layout.pp > 1) {
      EXPECT_GT(*dependency, compute) << c.Name();
      ++pipelines;
    }
    ++checked;
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(pipelines, 5);
}

TEST(SweepCliTest, BadInputGetsOneClearError) {
  Outcome run = Podsim({"sweep", "--system", "ring:8", "--model", kModel, "--batch-tokens", "64Ki",
                        "--seq", "2048"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: --system: generic fabrics have no compute to train on\n");
  run = Podsim({"sweep", "--system", "h100:16", "--model", kModel, "--batch-tokens", "64Ki",
                "--seq", "2048", "--top", "0"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: --top: must be >= 1\n");
  // Three sequences of 2050 tokens: no split of the data chips divides them or the tokens, and
  // the slices of a multi-slice system are not searched for a smaller one that would.
  run = Podsim({"sweep", "--system", "tpu-v5e:4x4,slices=2", "--model", kModel, "--batch-tokens",
                "6150", "--seq", "2050"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err.substr(0, 60),
            "podsim: error: no layout of " + std::string(kModel).substr(0, 32));
  EXPECT_NE(run.err.find("the slices of a multi-slice system are not searched"), std::string::npos)
      << run.err;
  // The expert options apply to the layouts with ep: a model without experts has none.
  run = Podsim({"sweep", "--system", "h100:8", "--model", "llama3-8b", "--batch-tokens", "64Ki",
                "--seq", "4096", "--ep-comm-overlap"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "podsim: error: --ep-comm-overlap: model 'llama3-8b' has no experts: no layout of the "
            "sweep has ep > 1\n");
}

// Issue 14: a sweep takes train's framework options for every layout, says so in its JSON, and
// ranks with them: Megatron's recipe with its distributed optimizer keeps less per chip than
// without it on the same best layout, and the tp overlap runs where a layout has sp.
TEST(SweepCliTest, FrameworkOptionsApplyToEveryLayout) {
  Outcome plain = Podsim(Sweep("h100:16", {"--precision", "megatron"}));
  Outcome sharded = Podsim(Sweep(
      "h100:16", {"--precision", "megatron", "--distributed-optimizer", "--tp-comm-overlap"}));
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(sharded.code, 0) << sharded.err;
  const nlohmann::json a = nlohmann::json::parse(plain.out);
  const nlohmann::json b = nlohmann::json::parse(sharded.out);
  EXPECT_EQ(a["precision"], "megatron");
  EXPECT_EQ(a["distributed_optimizer"], false);
  EXPECT_EQ(b["distributed_optimizer"], true);
  EXPECT_EQ(b["tp_comm_overlap"], true);
  std::map<std::string, double> memory;
  for (const auto& layout : a["layouts"]) {
    memory[layout["layout"].get<std::string>() + layout["recompute"].get<std::string>()] =
        layout["memory_per_chip_bytes"].get<double>();
  }
  int compared = 0;
  for (const auto& layout : b["layouts"]) {
    const std::string key =
        layout["layout"].get<std::string>() + layout["recompute"].get<std::string>();
    if (memory.count(key) == 0 || layout["layout"].get<std::string>().find("dp=1,") == 0) continue;
    EXPECT_LT(layout["memory_per_chip_bytes"].get<double>(), memory[key]) << key;
    ++compared;
  }
  EXPECT_GT(compared, 0);
  Outcome bad = Podsim(Sweep("h100:16", {"--precision", "fp64"}));
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err,
            "podsim: error: --precision: unknown value 'fp64'; expected mixed, zero, megatron, "
            "book, amp\n");
}

// Each ranked layout says what its fsdp does: torchtitan's layouts with pp and fsdp gather the
// weights once a step and reduce the gradients after the last microbatch (WithLayoutDefaults),
// whatever the stated option at the top says; its other layouts do as stated, and those without
// fsdp say null.
TEST(SweepCliTest, EachLayoutSaysWhatItsFsdpDoes) {
  Outcome out = Podsim({"sweep", "--system", "h100:16", "--model", kModel, "--batch-tokens", "64Ki",
                        "--seq", "2048", "--json", "--top", "1000", "--framework", "torchtitan"});
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json j = nlohmann::json::parse(out.out);
  EXPECT_EQ(j["reshard_after_forward"], true);
  auto degree = [](const std::string& layout, const std::string& axis) {
    const size_t at = ("," + layout).find("," + axis + "=");
    return at == std::string::npos ? 1 : std::stoi(layout.substr(at + axis.size() + 1));
  };
  int pipelined = 0, other = 0, without = 0;
  for (const auto& entry : j["layouts"]) {
    const std::string layout = entry["layout"].get<std::string>();
    if (degree(layout, "fsdp") == 1) {
      EXPECT_TRUE(entry["fsdp_sync_last_microbatch"].is_null()) << layout;
      EXPECT_TRUE(entry["reshard_after_forward"].is_null()) << layout;
      ++without;
      continue;
    }
    const bool under_pp = degree(layout, "pp") > 1;
    EXPECT_EQ(entry["fsdp_sync_last_microbatch"], under_pp) << layout;
    EXPECT_EQ(entry["reshard_after_forward"], !under_pp) << layout;
    (under_pp ? pipelined : other) += 1;
  }
  EXPECT_GT(pipelined, 0);
  EXPECT_GT(other, 0);
  EXPECT_GT(without, 0);
}

// Layouts beyond the work bound are not ranked, and the count says so; the same with every
// --jobs (shared rehearsals are charged to every layout that uses them). Nothing within it: one
// clear error.
TEST(SweepCliTest, LayoutsBeyondTheWorkBoundAreListedNotRanked) {
  Outcome one = Podsim(Sweep("tpu-v5e:2x4", {"--jobs", "1", "--max-transfers", "200"}));
  Outcome two = Podsim(Sweep("tpu-v5e:2x4", {"--jobs", "2", "--max-transfers", "200"}));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out, two.out);
  EXPECT_NE(one.out.find("\"beyond_limits\": "), std::string::npos);
  EXPECT_EQ(one.out.find("\"beyond_limits\": 0,"), std::string::npos) << one.out;
  Outcome none = Podsim(Sweep("tpu-v5e:2x4", {"--max-transfers", "2"}));
  EXPECT_EQ(none.code, 1);
  EXPECT_EQ(none.err.rfind("podsim: error: no simulated layout is within podsim's limits", 0), 0u)
      << none.err;
}

}  // namespace
}  // namespace podsim::cli
