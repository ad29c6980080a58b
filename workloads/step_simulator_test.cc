// Step simulation of hand-written schedules: overlap from dependencies, exposed communication,
// pipeline sends, one chip per program against every chip, deadlocks and bad schedules.

#include "workloads/step_simulator.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "collectives/collective_runner.h"
#include "topology/system.h"
#include "workloads/schedule_check.h"

namespace podsim::workloads {
namespace {

schedule::Schedule Parse(const std::string& text) {
  schedule::Schedule schedule;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &schedule)) << text;
  return schedule;
}

topology::System System(const std::string& text) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(text);
  EXPECT_TRUE(system.ok()) << system.status();
  return std::move(*system);
}

// An op that takes exactly `seconds` on the compute stream.
std::string Compute(const std::string& name, double seconds, const std::string& deps = "") {
  std::ostringstream op;
  op.precision(17);
  op << "ops { name: '" << name << "' kind: MATMUL stream: 'compute' duration_s: " << seconds << " "
     << deps << " }\n";
  return op.str();
}

constexpr char kAllGather[] =
    "ops { name: 'ag' kind: COLLECTIVE stream: 'fsdp' collective: ALL_GATHER axes: 'fsdp' "
    "bytes: 67108864 }\n";

double AllGatherSeconds(const topology::System& system, bool calibrated) {
  collectives::CollectiveRequest request;
  request.op = collectives::CollectiveOp::kAllGather;
  request.bytes = 64 << 20;
  request.axes = {"x"};
  request.calibrated = calibrated;
  sim::StatusOr<collectives::CollectiveResult> result =
      collectives::SimulateCollective(system.fabric, request);
  EXPECT_TRUE(result.ok()) << result.status();
  return result->time.ToSeconds();
}

// A prefetched all-gather overlaps the op before its consumer; only what sticks out is exposed.
TEST(StepSimulatorTest, CommunicationOverlapsIndependentCompute) {
  topology::System system = System("tpu-v5e:4x4");
  const double ag = AllGatherSeconds(system, true);
  for (double before : {ag / 2, ag * 2}) {
    schedule::Schedule schedule = Parse(
        "system: 'tpu-v5e:4x4' mesh { name: 'fsdp' size: 4 } mesh { name: 'dp' size: 4 }\n"
        "programs { name: 'all' " +
        std::string(kAllGather) + Compute("a", before) + Compute("b", 1e-3, "deps: 0") + "}");
    StepOptions per_program;  // One all-gather: the representative's.
    per_program.chips = SimulatedChips::kOnePerProgram;
    sim::StatusOr<StepResult> result = SimulateStep(system, schedule, per_program);
    ASSERT_TRUE(result.ok()) << result.status();
    const double expected = std::max(before, ag) + 1e-3;
    EXPECT_NEAR(result->step_time.ToSeconds(), expected, 1e-9);
    const TimeBreakdown& time = result->programs[0].time;
    EXPECT_NEAR(time.compute.ToSeconds(), before + 1e-3, 1e-9);
    const double exposed = time.exposed.count("fsdp") ? time.exposed.at("fsdp").ToSeconds() : 0;
    EXPECT_NEAR(exposed, std::max(0.0, ag - before), 1e-9);
    EXPECT_EQ(result->collectives, 1u);
  }
}

// A wait on collectives chained one after another (a dense gradient reduction, then the
// experts') is charged along the chain: each its own axis's part, whether a compute op follows
// the chain or the step ends with it.
TEST(StepSimulatorTest, ChainedCollectivesEachChargeTheirOwnAxis) {
  topology::System system = System("tpu-v5e:4x4");
  const double ag = AllGatherSeconds(system, true);  // Either axis: the 4x4 is symmetric.
  for (const bool compute_after : {true, false}) {
    schedule::Schedule schedule = Parse(
        "system: 'tpu-v5e:4x4' mesh { name: 'fsdp' size: 4 } mesh { name: 'dp' size: 4 }\n"
        "programs { name: 'all' " +
        Compute("a", 1e-3) +
        "ops { name: 'g1' kind: COLLECTIVE stream: 'fsdp' collective: ALL_GATHER axes: 'fsdp' "
        "bytes: 67108864 deps: 0 }\n"
        "ops { name: 'g2' kind: COLLECTIVE stream: 'dp' collective: ALL_GATHER axes: 'dp' "
        "bytes: 67108864 deps: 1 }\n" +
        (compute_after ? Compute("b", 1e-3, "deps: 2") : std::string()) + "}");
    sim::StatusOr<StepResult> result = SimulateStep(system, schedule, StepOptions{});
    ASSERT_TRUE(result.ok()) << result.status();
    const TimeBreakdown& time = result->programs[0].time;
    ASSERT_EQ(time.exposed.size(), 2u) << compute_after;
    EXPECT_NEAR(time.exposed.at("fsdp").ToSeconds(), ag, 1e-9) << compute_after;
    EXPECT_NEAR(time.exposed.at("dp").ToSeconds(), ag, 1e-9) << compute_after;
    EXPECT_EQ(time.idle, sim::Time::Zero()) << compute_after;
    EXPECT_NEAR(result->step_time.ToSeconds(), 2 * ag + (compute_after ? 2e-3 : 1e-3), 1e-9);
  }
}

// Interference (calibration.md G5.4): a compute op slows by overlap_slowdown while its chip's
// collective runs, and resumes its pace when it ends. With the all-gather taking ag and an op of
// work w > ag started with it, w - ag / (1 + s) is left when the gather ends: the op ends at
// ag + w - ag / (1 + s), and the breakdown charges the difference to interference. The 4x4
// torus's compute model is TPU's (no slowdown), so a GPU-like one is passed in.
TEST(StepSimulatorTest, ComputeSlowsWhileItsChipCommunicates) {
  topology::System system = System("tpu-v5e:4x4");
  const double ag = AllGatherSeconds(system, true);
  const double work = 3 * ag;
  schedule::Schedule schedule = Parse(
      "system: 'tpu-v5e:4x4' mesh { name: 'fsdp' size: 4 } mesh { name: 'dp' size: 4 }\n"
      "programs { name: 'all' " +
      std::string(kAllGather) + Compute("a", work) + "}");
  for (double slowdown : {0.0, 0.189, 1.0}) {
    ComputeEfficiency efficiency = DefaultComputeEfficiency(system.chip);
    efficiency.overlap_slowdown = slowdown;
    StepOptions options;
    options.compute = efficiency;
    sim::StatusOr<StepResult> result = SimulateStep(system, schedule, options);
    ASSERT_TRUE(result.ok()) << result.status();
    const double end = ag + work - ag / (1 + slowdown);
    EXPECT_NEAR(result->step_time.ToSeconds(), end, 1e-9) << slowdown;
    const TimeBreakdown& time = result->programs[0].time;
    EXPECT_NEAR(time.compute.ToSeconds(), work, 1e-9);
    EXPECT_NEAR(time.interference.ToSeconds(), end - work, 1e-9) << slowdown;
    EXPECT_NEAR(result->mean_interference_s, end - work, 1e-9) << slowdown;
  }
}

// Counts what an observer sees.
class CountingObserver : public StepObserver {
 public:
  void OnOpStart(sim::Time, uint32_t, int, int) override { ++starts; }
  uint64_t starts = 0;
};

// Issue 13, the default (kAuto): the quotient where it is cheap -- a torus whose step leaves at
// most kAutoExactOrbits orbits -- else the approximation with the reason; the same answer with an
// observer attached, which sees one run.
TEST(StepSimulatorTest, DefaultIsExactWhereTheQuotientIsCheap) {
  const std::string program = "programs { name: 'all' " + std::string(kAllGather) +
                              Compute("a", 1e-4) + Compute("b", 1e-3, "deps: 0") + "}";
  auto step = [&](const std::string& system_text, const std::string& mesh,
                  StepObserver* observer = nullptr) {
    StepOptions options;
    options.observer = observer;
    sim::StatusOr<StepResult> result = SimulateStep(
        System(system_text), Parse("system: '" + system_text + "' " + mesh + program), options);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : StepResult{};
  };
  const std::string small_mesh = "mesh { name: 'fsdp' size: 4 } mesh { name: 'dp' size: 4 }\n";
  const StepResult torus = step("tpu-v5e:4x4", small_mesh);
  EXPECT_TRUE(torus.exact);
  EXPECT_EQ(torus.approximate_reason, "");
  CountingObserver observer;
  const StepResult traced = step("tpu-v5e:4x4", small_mesh, &observer);
  EXPECT_EQ(traced.step_time, torus.step_time);
  EXPECT_EQ(observer.starts, traced.ops_executed);

  // GPU fat trees: slots rotate in every node, and the 2 nodes of one scalable unit translate.
  const StepResult gpu = step("h100:16", small_mesh);
  EXPECT_TRUE(gpu.exact);
  EXPECT_EQ(gpu.approximate_reason, "");
  // 70 nodes, 3 scalable units, the last one partial: no node translation, 70 orbits.
  const StepResult partial =
      step("h100:560", "mesh { name: 'fsdp' size: 8 } mesh { name: 'dp' size: 70 }\n");
  EXPECT_FALSE(partial.exact);
  EXPECT_EQ(partial.approximate_reason,
            "the step's symmetry leaves 70 orbits of chips, over the 64 simulated exactly by "
            "default");

  // An unwrapped 4x4x8: no translation maps the step onto itself, 128 orbits.
  const StepResult many = step("tpu-v5p:4x4x8,wrap=none",
                               "mesh { name: 'fsdp' size: 4 } mesh { name: 'dp' size: 32 }\n");
  EXPECT_FALSE(many.exact);
  EXPECT_EQ(many.approximate_reason,
            "the step's symmetry leaves 128 orbits of chips, over the 64 simulated exactly by "
            "default");
}

// Every chip of a 4x4 torus against one chip per program: the same step, since parallel rings
// along x (fsdp) and y (tp) share no links.
TEST(StepSimulatorTest, OneChipPerProgramMatchesEveryChip) {
  topology::System system = System("tpu-v5e:4x4");
  schedule::Schedule schedule = Parse(
      "system: 'tpu-v5e:4x4' mesh { name: 'fsdp' size: 4 } mesh { name: 'tp' size: 4 }\n"
      "programs { name: 'all' " +
      std::string(kAllGather) + Compute("a", 1e-4) +
      "ops { name: 'ar' kind: COLLECTIVE stream: 'tp' collective: ALL_REDUCE axes: 'tp' "
      "bytes: 8388608 deps: 1 }\n" +
      Compute("b", 1e-4, "deps: 0 deps: 2") +
      "ops { name: 'rs' kind: COLLECTIVE stream: 'fsdp' collective: REDUCE_SCATTER axes: 'fsdp' "
      "axes: 'tp' bytes: 67108864 deps: 3 }\n}");
  StepOptions every;
  every.chips = SimulatedChips::kEveryChip;
  every.network = collectives::NetworkMode::kFlows;
  sim::StatusOr<StepResult> full = SimulateStep(system, schedule, every);
  StepOptions per_program;
  per_program.chips = SimulatedChips::kOnePerProgram;
  sim::StatusOr<StepResult> one = SimulateStep(system, schedule, per_program);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(full->simulated_chips, 16u);
  EXPECT_EQ(one->simulated_chips, 1u);
  EXPECT_EQ(one->step_time, full->step_time);
  EXPECT_EQ(one->programs[0].time.exposed, full->programs[0].time.exposed);
}

// Issue 13: tp=4 inside nodes of 8 GPUs rotates within each half of the node (slot digits,
// step_symmetry.h), the halves swap and the two nodes translate: 1 of 16 chips simulated (the
// slot axis whole cannot rotate a group of 4 onto itself), the same step as every chip with
// every transfer.
TEST(StepSimulatorTest, TensorParallelismShorterThanANodeRotatesWithinIt) {
  topology::System system = System("h100:16");
  schedule::Schedule schedule = Parse(
      "system: 'h100:16' mesh { name: 'tp' size: 4 } mesh { name: 'fsdp' size: 4 }\n"
      "programs { name: 'all' " +
      std::string(kAllGather) + Compute("a", 1e-4) +
      "ops { name: 'ar' kind: COLLECTIVE stream: 'tp' collective: ALL_REDUCE axes: 'tp' "
      "bytes: 8388608 deps: 1 }\n" +
      Compute("b", 1e-4, "deps: 0 deps: 2") + "}");
  StepOptions every;
  every.chips = SimulatedChips::kEveryChip;
  every.network = collectives::NetworkMode::kFlows;
  sim::StatusOr<StepResult> full = SimulateStep(system, schedule, every);
  sim::StatusOr<StepResult> quotient = SimulateStep(system, schedule, StepOptions{});
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(quotient.ok()) << quotient.status();
  EXPECT_TRUE(quotient->exact);
  EXPECT_EQ(quotient->simulated_chips, 1u);
  EXPECT_EQ(quotient->step_time, full->step_time);
  EXPECT_EQ(quotient->programs[0].time.exposed, full->programs[0].time.exposed);
}

// Two pipeline stages: the second waits for the first's activations (its bubble).
TEST(StepSimulatorTest, PipelineSendFeedsTheNextStage) {
  topology::System system = System("tpu-v5e:2x2");
  schedule::Schedule schedule = Parse(
      "system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 2 } mesh { name: 'pp' size: 2 }\n"
      "programs { name: 'stage 0' where { key: 'pp' value: 0 } " +
      Compute("f0", 1e-3) +
      "ops { name: 'send' kind: SEND stream: 'pp' peer_axis: 'pp' peer_offset: 1 tag: 7 "
      "bytes: 4500000 deps: 0 } }\n"
      "programs { name: 'stage 1' where { key: 'pp' value: 1 } "
      "ops { name: 'recv' kind: RECV stream: 'pp' peer_axis: 'pp' peer_offset: -1 tag: 7 } " +
      Compute("f1", 1e-3, "deps: 0") + "}");
  sim::StatusOr<StepResult> result = SimulateStep(system, schedule);
  ASSERT_TRUE(result.ok()) << result.status();
  // 4.5 MB over one ICI link at 95% of 4.5e10 B/s, plus hop and launch latencies.
  const double transfer = result->step_time.ToSeconds() - 2e-3;
  EXPECT_GT(transfer, 4.5e6 / 4.5e10);
  EXPECT_LT(transfer, 4.5e6 / (0.95 * 4.5e10) + 10e-6);
  EXPECT_NEAR(result->programs[1].time.bubble.ToSeconds(), 1e-3 + transfer, 1e-9);
  EXPECT_NEAR(result->programs[0].time.idle.ToSeconds() +
                  result->programs[0].time.exposed.at("pp").ToSeconds(),
              1e-3 + transfer, 1e-9);
}

TEST(StepSimulatorTest, DeadlockIsReported) {
  topology::System system = System("tpu-v5e:2x2");
  // Each stage receives before it sends: neither send can start.
  auto stage = [](int s, int offset, int in, int out) {
    return "programs { name: 'stage " + std::to_string(s) +
           "' where { key: 'pp' value: " + std::to_string(s) +
           " } ops { name: 'recv' kind: RECV stream: 'pp' peer_axis: 'pp' peer_offset: " +
           std::to_string(offset) + " tag: " + std::to_string(in) +
           " } ops { name: 'send' kind: SEND stream: 'pp' peer_axis: 'pp' peer_offset: " +
           std::to_string(offset) + " tag: " + std::to_string(out) + " bytes: 1024 } }\n";
  };
  schedule::Schedule schedule =
      Parse("system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 2 } mesh { name: 'pp' size: 2 }\n" +
            stage(0, 1, 1, 2) + stage(1, -1, 2, 1));
  sim::StatusOr<StepResult> result = SimulateStep(system, schedule);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "schedule: program 'stage 0' op 0 'recv' never finished: its dependencies, its "
            "stream's order, its group's other members or its send can never all be ready");
}

TEST(StepSimulatorTest, BadSchedulesGetOneClearError) {
  topology::System system = System("tpu-v5e:2x2");
  const std::string mesh = "system: 'tpu-v5e:2x2' mesh { name: 'tp' size: 4 }\n";
  struct Case {
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {mesh + "programs { name: 'p' " + Compute("a", 1e-6, "deps: 0") + "}",
       "schedule: program 0 'p' op 0 'a': deps: 0 is not an earlier op"},
      {mesh + "programs { name: 'p' ops { name: 'c' kind: COLLECTIVE stream: 'tp' "
              "collective: ALL_REDUCE axes: 'dp' bytes: 8 } }",
       "schedule: program 0 'p' op 0 'c': axes: no mesh axis 'dp'"},
      {mesh + "programs { name: 'p' where { key: 'tp' value: 0 } }",
       "schedule: chip 1 matches no program"},
      {mesh + "programs { name: 'p' ops { name: 'm' kind: MATMUL stream: 'tp' } }",
       "schedule: program 0 'p' op 0 'm': stream: compute ops run on stream \"compute\" (got "
       "\"tp\")"},
      {"system: 'tpu-v5e:2x2' mesh { name: 'tp' size: 3 } programs { name: 'p' }",
       "schedule: mesh: mesh tp=3 has 3 devices but tpu-v5e:2x2 has 4 chips"},
      // An fp8 matmul on a chip without fp8, a kernel the chip's family has no curve for.
      {mesh + "programs { name: 'p' ops { name: 'm' kind: MATMUL stream: 'compute' flops: 8 "
              "fp8: true } }",
       "schedule: program 0 'p' op 0 'm': fp8: chip tpu-v5e has no fp8 peak"},
      {mesh + "programs { name: 'p' ops { name: 'a' kind: ATTENTION stream: 'compute' flops: 8 "
              "kernel: 'fa2' } }",
       "schedule: program 0 'p' op 0 'a': kernel: no attention kernel 'fa2' calibrated for chip "
       "tpu-v5e (family tpu-v5e)"},
      // HBM kernel classes (hbm_kernel.h): on HBM-bound ops only, and only the known ones.
      {mesh + "programs { name: 'p' ops { name: 'e' kind: ELEMENTWISE stream: 'compute' "
              "hbm_bytes: 8 kernel: 'sofmax' } }",
       "schedule: program 0 'p' op 0 'e': kernel: 'sofmax' is not an HBM kernel class (softmax, "
       "softmax.dx, dropout, dropout.dx, layernorm, layernorm.dx, gelu, gelu.dx)"},
      {mesh + "programs { name: 'p' ops { name: 'm' kind: MATMUL stream: 'compute' flops: 8 "
              "kernel: 'softmax' } }",
       "schedule: program 0 'p' op 0 'm': kernel: only attention and HBM-bound ops name a "
       "kernel"},
      // An audit of 2026-12-07: a negative count gave 0 tokens/s.
      {mesh + "tokens_per_step: -5 programs { name: 'p' }",
       "schedule: tokens_per_step: must be >= 0 (got -5)"},
      {mesh + "programs { name: 'p' static_hbm_bytes: -1 }",
       "schedule: program 0 'p': static_hbm_bytes: must be finite, >= 0 and <= 1e18"},
      {mesh + "programs { name: 'p' " + Compute("a", 1e-6, "hbm_free_bytes: -8") + "}",
       "schedule: program 0 'p' op 0 'a': hbm_alloc_bytes and hbm_free_bytes must be finite "
       "and >= 0"},
      // Found by fuzz/: mesh names, and a send whose peers on other chips run another program.
      {"system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 2 } mesh { name: 'dp' size: 2 } "
       "programs { name: 'p' }",
       "schedule: mesh: axis 'dp' twice"},
      {"system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 2 } mesh { name: 'pp' size: 2 }\n"
       "programs { name: 'A' where { key: 'pp' value: 0 } ops { name: 's' kind: SEND "
       "stream: 'pp' peer_axis: 'pp' peer_offset: 1 tag: 1 bytes: 8 } }"
       "programs { name: 'B0' where { key: 'pp' value: 1 } where { key: 'dp' value: 0 } "
       "ops { name: 'r' kind: RECV stream: 'pp' peer_axis: 'pp' peer_offset: -1 tag: 1 } }"
       "programs { name: 'B1' where { key: 'pp' value: 1 } where { key: 'dp' value: 1 } }",
       "schedule: program 0 'A': send tag 1 along 'pp' offset 1 (1 in the program) needs exactly "
       "one receive with that tag and peer_offset -1 in program 'B1' (found 0)"},
      // issue 16 D8: a peer offset near INT32_MAX does not overflow.
      {"system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 2 } mesh { name: 'pp' size: 2 }\n"
       "programs { name: 'p' where { key: 'pp' value: 1 } ops { name: 's' kind: SEND "
       "stream: 'pp' peer_axis: 'pp' peer_offset: 2147483647 bytes: 8 } }"
       "programs { name: 'q' where { key: 'pp' value: 0 } }",
       "schedule: program 0 'p' op 0 's': peer_offset: coordinate 2147483648 is outside 'pp' "
       "(size 2)"},
  };
  for (const Case& c : cases) {
    sim::StatusOr<StepResult> result = SimulateStep(system, Parse(c.text));
    ASSERT_FALSE(result.ok()) << c.text;
    EXPECT_EQ(result.status().message(), c.error);
  }
}

// issue 16 D7: members of a group that disagree on their n-th collective are refused before
// the simulation, whichever program comes first.
TEST(StepSimulatorTest, GroupMembersMustAgreeOnEachCollective) {
  topology::System system = System("tpu-v5e:2x2");
  const std::string mesh =
      "system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 2 } "
      "mesh { name: 'tp' size: 2 }\n";
  auto program = [](const std::string& name, int tp, const std::string& ops) {
    return "programs { name: '" + name + "' where { key: 'tp' value: " + std::to_string(tp) +
           " } " + ops + "}\n";
  };
  const std::string reduce =
      "ops { name: 'ar' kind: COLLECTIVE stream: 'tp' collective: ALL_REDUCE axes: 'tp' "
      "bytes: 1000000 }";
  const std::string gather =
      "ops { name: 'ag' kind: COLLECTIVE stream: 'tp' collective: ALL_GATHER axes: 'tp' "
      "bytes: 2000000000 }";
  sim::StatusOr<StepResult> result =
      SimulateStep(system, Parse(mesh + program("a", 0, reduce) + program("b", 1, gather)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "schedule: programs 'a' and 'b' meet in groups over tp (chips 0 and 1) but disagree "
            "on their collective 0 over them: ALL_REDUCE of 1000000 bytes (op 0 'ar') against "
            "ALL_GATHER of 2000000000 bytes (op 0 'ag')");
  result = SimulateStep(system, Parse(mesh + program("b", 1, gather) + program("a", 0, reduce)));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("disagree on their collective 0"), std::string::npos);
  result = SimulateStep(system,
                        Parse(mesh + program("a", 0, reduce + reduce) + program("b", 1, reduce)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "schedule: programs 'a' and 'b' meet in groups over tp (chips 0 and 1) but run 2 and "
            "1 collectives over them");
  // Agreeing members, and collectives over axes the programs do not share, are fine.
  EXPECT_TRUE(
      SimulateStep(system, Parse(mesh + program("a", 0, reduce) + program("b", 1, reduce))).ok());
}

// Schedule groups (traces recorded elsewhere, interop/chakra_import.h): a collective over a group
// of chips is the collective over the mesh axes that make the same group, at the same time.
TEST(StepSimulatorTest, ScheduleGroupsAreTheirMeshAxesGroups) {
  topology::System system = System("tpu-v5e:2x2");
  const std::string mesh = "system: 'tpu-v5e:2x2' mesh { name: 'fsdp' size: 4 }\n";
  const StepResult axes = *SimulateStep(
      system, Parse(mesh + "programs { name: 'all' " + std::string(kAllGather) + "}"));
  // The same group, named: every chip a program of its own, as an import makes it.
  sim::StatusOr<CheckedSchedule> checked =
      CheckSchedule(system, Parse(mesh + "programs { name: 'all' }"));
  ASSERT_TRUE(checked.ok()) << checked.status();
  std::vector<uint32_t> ranks;
  std::vector<int> shape;
  checked->grid.Group(0, {0}, &ranks, &shape);
  std::string text = mesh + "groups { name: 'g'";
  for (uint32_t chip : ranks) text += " chips: " + std::to_string(chip);
  for (int length : shape) text += " shape: " + std::to_string(length);
  text += " }\n";
  for (uint32_t chip = 0; chip < 4; ++chip) {
    text += "programs { name: 'chip " + std::to_string(chip) +
            "' where { key: 'fsdp' value: " + std::to_string(checked->grid.Coord(chip, 0)) +
            " } ops { name: 'ag' kind: COLLECTIVE stream: 'fsdp' collective: ALL_GATHER "
            "group: 'g' bytes: 67108864 } }\n";
  }
  for (SimulatedChips chips : {SimulatedChips::kOnePerProgram, SimulatedChips::kOrbits}) {
    StepOptions options;
    options.chips = chips;
    sim::StatusOr<StepResult> named = SimulateStep(system, Parse(text), options);
    ASSERT_TRUE(named.ok()) << named.status();
    const StepResult reference = *SimulateStep(
        system, Parse(mesh + "programs { name: 'all' " + std::string(kAllGather) + "}"), options);
    EXPECT_EQ(named->step_time, reference.step_time);
    EXPECT_EQ(named->simulated_chips, 4u);
  }
  EXPECT_GT(axes.step_time.ToSeconds(), 0);

  struct Case {
    std::string text;
    std::string error;
  };
  const std::string op =
      "ops { name: 'c' kind: COLLECTIVE stream: 'x' collective: ALL_REDUCE group: 'g' bytes: 8 }";
  const Case cases[] = {
      {mesh + "groups { name: 'g' chips: 0 chips: 4 } programs { name: 'p' }",
       "schedule: group 0 'g': chips: 4 is not a chip of the system (it has 4)"},
      {mesh + "groups { name: 'g' chips: 1 chips: 1 } programs { name: 'p' }",
       "schedule: group 0 'g': chips: 1 twice"},
      {mesh + "groups { name: 'g' chips: 0 } groups { name: 'g' chips: 1 } programs { name: 'p' }",
       "schedule: group 1 'g': name: a second group of that name"},
      {mesh + "groups { name: 'g' chips: 0 chips: 1 shape: 3 } programs { name: 'p' }",
       "schedule: group 0 'g': shape: sizes multiply to 3, not its 2 chips"},
      // Found by fuzz/schedule_binary_fuzzer: the product saturates instead of overflowing.
      {mesh + "groups { name: 'g' chips: 0 shape: 1073741824 shape: 1073741824 shape: "
              "536870911 } programs { name: 'p' }",
       "schedule: group 0 'g': shape: sizes multiply to 1099511627776, not its 1 chips"},
      {mesh + "programs { name: 'p' " + op + " }",
       "schedule: program 0 'p' op 0 'c': group: no schedule group 'g'"},
      {mesh + "groups { name: 'g' chips: 0 chips: 1 } programs { name: 'p' " + op + " }",
       "schedule: program 0 'p' op 0 'c': group: the program runs on chip 2, which is not a "
       "member of group 'g'"},
      {mesh + "groups { name: 'g' chips: 0 } programs { name: 'p' ops { name: 'c' kind: "
              "COLLECTIVE stream: 'x' collective: ALL_REDUCE group: 'g' axes: 'fsdp' bytes: 8 } }",
       "schedule: program 0 'p' op 0 'c': axes and group: a collective spans one or the other"},
  };
  for (const Case& c : cases) {
    sim::StatusOr<StepResult> result = SimulateStep(system, Parse(c.text));
    ASSERT_FALSE(result.ok()) << c.text;
    EXPECT_EQ(result.status().message(), c.error);
  }
}

}  // namespace
}  // namespace podsim::workloads
