// A podsim step written as a Chakra trace (chakra_export.h) and read back (chakra_import.h) is
// the same step: the full simulation of both gives the same step time to the tick.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "interop/chakra_attrs.h"
#include "interop/chakra_export.h"
#include "interop/chakra_import.h"
#include "topology/system.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"
#include "workloads/step_simulator.h"
#include "workloads/training.h"
#include "workloads/training_schedule.h"

namespace podsim::interop {
namespace {

constexpr char kSmall[] =
    "custom:layers=8,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,vocab=4096";

struct RoundTrip {
  workloads::StepResult original;
  workloads::StepResult imported;
  ChakraExport exported;
};

RoundTrip Through(const std::string& system_text, const std::string& layout_text, int64_t sequences,
                  const std::string& model_text = kSmall,
                  const workloads::OpOptions& options = {}) {
  RoundTrip out;
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  EXPECT_TRUE(system.ok()) << system.status();
  sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(model_text);
  EXPECT_TRUE(model.ok()) << model.status();
  sim::StatusOr<workloads::Layout> layout = workloads::ParseLayout(layout_text);
  EXPECT_TRUE(layout.ok()) << layout.status();
  const workloads::BatchSpec batch{sequences, 1024};
  const schedule::Schedule schedule =
      workloads::TrainingSchedule(*system, *model, *layout, batch, options);
  workloads::StepOptions exact;
  exact.chips = workloads::SimulatedChips::kOrbits;
  sim::StatusOr<workloads::StepResult> original = workloads::SimulateStep(*system, schedule, exact);
  EXPECT_TRUE(original.ok()) << original.status();

  sim::StatusOr<ChakraExport> exported =
      ExportChakra(*system, schedule, workloads::DefaultComputeEfficiency(system->chip));
  EXPECT_TRUE(exported.ok()) << exported.status();
  // Through the bytes of the files, as another tool would read them.
  std::vector<ChakraRankTrace> ranks;
  for (const ChakraRankTrace& rank : exported->ranks) {
    sim::StatusOr<ChakraRankTrace> parsed = ParseChakraFile(EncodeChakraFile(rank), "rank");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    ranks.push_back(*parsed);
  }
  sim::StatusOr<CommGroups> groups = ParseCommGroups(CommGroupsJson(exported->groups), "groups");
  EXPECT_TRUE(groups.ok()) << groups.status();
  sim::StatusOr<ChakraImport> imported = ImportChakra(*system, ranks, *groups);
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return out;
  sim::StatusOr<workloads::StepResult> replayed =
      workloads::SimulateStep(*system, imported->schedule, exact);
  EXPECT_TRUE(replayed.ok()) << replayed.status();
  if (original.ok()) out.original = *original;
  if (replayed.ok()) out.imported = *replayed;
  out.exported = std::move(*exported);
  return out;
}

// The same categories, each the same time but for the rounding of a mean over other chips (the
// imported step's groups are explicit, so it simulates every chip, the original one per orbit).
void ExpectSameBreakdown(const workloads::StepResult& imported,
                         const workloads::StepResult& original) {
  const std::map<std::string, double> a = workloads::MeanBreakdown(imported);
  const std::map<std::string, double> b = workloads::MeanBreakdown(original);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, seconds] : b) {
    ASSERT_EQ(a.count(name), 1u) << name;
    EXPECT_NEAR(a.at(name), seconds, 1e-12) << name;
  }
}

// 16 GPUs in two NVLink nodes: tensor parallelism inside a node, a pipeline of two stages
// across the nodes (sends and receives), data parallelism across them.
TEST(ChakraRoundTripTest, SixteenRankPipelineStepKeepsItsStepTime) {
  const RoundTrip run = Through("h100:16", "tp=4,pp=2,dp=2,microbatches=4", 8);
  ASSERT_EQ(run.exported.ranks.size(), 16u);
  EXPECT_GT(run.original.step_time.ToSeconds(), 0);
  EXPECT_EQ(run.imported.step_time, run.original.step_time);
  EXPECT_DOUBLE_EQ(run.imported.total_model_flops, run.original.total_model_flops);
  EXPECT_EQ(run.imported.simulated_chips, 16u);
  // Process groups are numbered from 1 (ASTRA-sim reads them as integers); the tensor-parallel
  // ones, 4 of 4 chips each (a stage of a replica), say what they are.
  std::map<std::string, std::string> description;  // pg_name -> podsim_group
  for (const ChakraRankTrace& rank : run.exported.ranks) {
    for (const ChakraProtoMsg::Node& node : rank.nodes) {
      std::string pg, what;
      for (const ChakraProtoMsg::AttributeProto& attr : node.attr()) {
        if (attr.name() == "pg_name") pg = attr.string_val();
        if (attr.name() == "podsim_group") what = attr.string_val();
      }
      if (!pg.empty()) description[pg] = what;
    }
  }
  ASSERT_EQ(description.size(), run.exported.groups.size());
  int tp = 0;
  for (const auto& [name, ranks] : run.exported.groups) {
    EXPECT_EQ(name, std::to_string(std::stoi(name))) << name;
    if (description[name].rfind("tp@", 0) == 0) {
      ++tp;
      EXPECT_EQ(ranks.size(), 4u) << name;
    }
  }
  EXPECT_EQ(tp, 4);
}

// The kernels that time compute ops come back (podsim_kernel): a named attention kernel (cuDNN's)
// and the HBM kernel classes of a GPT layer in PyTorch eager (LayerNorm, GeLU, dropout, the
// materialized attention's softmax), which hopper times below its streaming rate.
TEST(ChakraRoundTripTest, KernelsThatTimeOpsComeBack) {
  constexpr char kGpt[] =
      "custom:layers=2,d_model=1024,ffn=4096,heads=16,kv_heads=16,head_dim=64,vocab=4096,"
      "gated=0,norm=layer,dropout=1";
  for (workloads::AttentionKernel attention :
       {workloads::AttentionKernel::kCudnn, workloads::AttentionKernel::kMaterialized}) {
    workloads::OpOptions options;
    options.attention = attention;
    options.kernels = workloads::KernelLibrary::kEager;
    const RoundTrip run = Through("h100:8", "tp=2,dp=4", 8, kGpt, options);
    int kernels = 0;
    for (const ChakraRankTrace& rank : run.exported.ranks) {
      for (const ChakraProtoMsg::Node& node : rank.nodes) {
        for (const ChakraProtoMsg::AttributeProto& attr : node.attr()) {
          kernels += attr.name() == "podsim_kernel";
        }
      }
    }
    EXPECT_GT(kernels, 0);
    EXPECT_GT(run.original.step_time.ToSeconds(), 0);
    EXPECT_EQ(run.imported.step_time, run.original.step_time);
  }
}

// A podsim node whose kernel its op cannot name (a matmul naming a kernel class, an unknown
// class) is refused by the import, as the schedule check would (found by fuzz/chakra_fuzzer).
TEST(ChakraRoundTripTest, AKernelItsOpCannotNameIsRefused) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:2");
  ASSERT_TRUE(system.ok());
  sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(kSmall);
  ASSERT_TRUE(model.ok());
  const schedule::Schedule schedule =
      workloads::TrainingSchedule(*system, *model, *workloads::ParseLayout("dp=2"),
                                  workloads::BatchSpec{2, 1024}, workloads::OpOptions{});
  sim::StatusOr<ChakraExport> exported =
      ExportChakra(*system, schedule, workloads::DefaultComputeEfficiency(system->chip));
  ASSERT_TRUE(exported.ok()) << exported.status();
  for (const auto& [kind, kernel, message] :
       {std::tuple{"MATMUL", "softmax", "attr podsim_kernel: only attention and HBM-bound ops"},
        std::tuple{"NORM", "sofmax", "attr podsim_kernel: 'sofmax' is not an HBM kernel class"}}) {
    std::vector<ChakraRankTrace> ranks = exported->ranks;
    bool marked = false;
    for (ChakraRankTrace& rank : ranks) {
      for (ChakraProtoMsg::Node& node : rank.nodes) {
        for (const ChakraProtoMsg::AttributeProto& attr : node.attr()) {
          if (attr.name() == "podsim_kind" && attr.string_val() == kind && !marked) {
            AddStringAttr(&node, kPodsimKernel, kernel);
            marked = true;
            break;
          }
        }
      }
    }
    ASSERT_TRUE(marked) << kind;
    sim::StatusOr<ChakraImport> imported = ImportChakra(*system, ranks, exported->groups);
    ASSERT_FALSE(imported.ok()) << kind;
    EXPECT_EQ(imported.status().code(), sim::Status::Code::kInvalidArgument);
    EXPECT_NE(imported.status().message().find(message), std::string::npos) << imported.status();
  }
}

// A TPU torus: collectives over two mesh axes keep their rank grid (podsim_group_shape).
TEST(ChakraRoundTripTest, TorusStepKeepsItsStepTime) {
  const RoundTrip run = Through("tpu-v5e:4x4", "fsdp=8,tp=2", 8);
  bool grid = false;  // Some group spans two torus dimensions.
  for (const ChakraRankTrace& rank : run.exported.ranks) {
    for (const ChakraProtoMsg::Node& node : rank.nodes) {
      for (const ChakraProtoMsg::AttributeProto& attr : node.attr()) {
        grid = grid || attr.name() == "podsim_group_shape";
      }
    }
  }
  EXPECT_TRUE(grid);
  EXPECT_GT(run.original.step_time.ToSeconds(), 0);
  EXPECT_EQ(run.imported.step_time, run.original.step_time);
}

// Ring attention's shifts (Chakra has no such collective) go out as a send to the next rank of
// the cp group and a receive from the previous one, and come back as the shifts they were: the
// same step time and the same breakdown (an audit of 2026-12-07 found the time waiting on them
// counted as a pipeline bubble when they came back as receives).
TEST(ChakraRoundTripTest, RingAttentionShiftsGoOutAsSendsAndReceivesAndComeBack) {
  const RoundTrip run = Through("h100:8", "cp=4,tp=2", 2);
  int sends = 0, receives = 0;
  for (const ChakraProtoMsg::Node& node : run.exported.ranks[0].nodes) {
    if (node.name().rfind("cp.shift.", 0) != 0) continue;
    sends += node.type() == ChakraProtoMsg::COMM_SEND_NODE ? 1 : 0;
    receives += node.type() == ChakraProtoMsg::COMM_RECV_NODE ? 1 : 0;
  }
  EXPECT_GT(sends, 0);
  EXPECT_EQ(sends, receives);
  EXPECT_GT(run.original.step_time.ToSeconds(), 0);
  EXPECT_EQ(run.imported.step_time, run.original.step_time);
  EXPECT_GT(workloads::MeanBreakdown(run.original).count("exposed_cp"), 0u);
  ExpectSameBreakdown(run.imported, run.original);
}

// A shift's send and receive pair up as any messages do: a trace edited to lose one is an error
// that says so, not a step that moves fewer bytes.
TEST(ChakraRoundTripTest, AShiftWithoutItsSendIsAnError) {
  sim::StatusOr<topology::System> system = topology::ParseSystem("h100:8");
  sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(kSmall);
  sim::StatusOr<workloads::Layout> layout = workloads::ParseLayout("cp=4,tp=2");
  ASSERT_TRUE(system.ok() && model.ok() && layout.ok());
  const schedule::Schedule schedule =
      workloads::TrainingSchedule(*system, *model, *layout, workloads::BatchSpec{2, 1024}, {});
  sim::StatusOr<ChakraExport> exported =
      ExportChakra(*system, schedule, workloads::DefaultComputeEfficiency(system->chip));
  ASSERT_TRUE(exported.ok()) << exported.status();
  auto& nodes = exported->ranks[0].nodes;
  const auto send = std::find_if(nodes.begin(), nodes.end(), [](const ChakraProtoMsg::Node& n) {
    return n.type() == ChakraProtoMsg::COMM_SEND_NODE && FindAttr(n, kPodsimShift) != nullptr;
  });
  ASSERT_NE(send, nodes.end());
  nodes.erase(send);
  sim::StatusOr<ChakraImport> imported = ImportChakra(*system, exported->ranks, exported->groups);
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("shift message(s) (podsim_shift)"), std::string::npos)
      << imported.status();
}

// Transformer Engine's tp overlap runs a collective in chunks, the later ones launched already
// (schedule.proto Op.launched): the mark goes out and comes back (an audit of 2026-12-07 found
// a replayed trace charging their launches again).
TEST(ChakraRoundTripTest, LaunchedChunksStayLaunched) {
  workloads::OpOptions options;
  options.tp_comm_overlap = true;
  const RoundTrip run = Through("h100:8", "dp=4,tp=2,sp=1", 4, kSmall, options);
  int launched = 0;
  for (const ChakraProtoMsg::Node& node : run.exported.ranks[0].nodes) {
    launched += FindAttr(node, kPodsimLaunched) != nullptr ? 1 : 0;
  }
  EXPECT_GT(launched, 0);
  EXPECT_EQ(run.imported.step_time, run.original.step_time);
  ExpectSameBreakdown(run.imported, run.original);
}

}  // namespace
}  // namespace podsim::interop
