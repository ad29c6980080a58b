#include "interop/chakra_import.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "topology/system.h"
#include "workloads/step_simulator.h"

namespace podsim::interop {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("PODSIM_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string Prefix() { return SourceDir() + "/interop/testdata/generator/generator"; }

std::vector<ChakraRankTrace> Generator() {
  sim::StatusOr<std::vector<ChakraRankTrace>> trace = ReadChakraTrace(Prefix());
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : std::vector<ChakraRankTrace>{};
}

CommGroups GeneratorGroups() {
  std::ifstream in(Prefix() + ".comm_groups.json");
  std::stringstream text;
  text << in.rdbuf();
  sim::StatusOr<CommGroups> groups = ParseCommGroups(text.str(), "generator.comm_groups.json");
  EXPECT_TRUE(groups.ok()) << groups.status();
  return groups.ok() ? *groups : CommGroups{};
}

topology::System System(const std::string& text) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(text);
  EXPECT_TRUE(system.ok()) << system.status();
  return std::move(*system);
}

// Every node kind of the generator trace (interop/testdata/write_generator_trace.py) becomes the
// op chakra_import.h says, in ascending id order where dependencies allow, and the step runs.
TEST(ChakraImportTest, EveryNodeKindOfAGeneratorTrace) {
  const topology::System system = System("h100:4");
  sim::StatusOr<ChakraImport> imported = ImportChakra(system, Generator(), GeneratorGroups());
  ASSERT_TRUE(imported.ok()) << imported.status();
  const schedule::Schedule& s = imported->schedule;
  ASSERT_EQ(s.programs_size(), 4);
  const ChakraImportSummary& summary = imported->summary;
  EXPECT_EQ(summary.ranks, 4);
  EXPECT_EQ(summary.nodes, 56u);
  EXPECT_EQ(summary.metadata_nodes, 4u);
  EXPECT_EQ(summary.cpu_nodes, 4u);
  EXPECT_EQ(summary.recorded, 8u);   // fwd_gemm and after_store.
  EXPECT_EQ(summary.roofline, 12u);  // roofline_op, load_weights, store_ckpt.
  EXPECT_EQ(summary.collectives, 24u);
  EXPECT_EQ(summary.sends, 4u);
  const schedule::Program& rank0 = s.programs(0);
  std::vector<std::string> names;
  for (const schedule::Op& op : rank0.ops()) names.push_back(op.name());
  EXPECT_EQ(names, (std::vector<std::string>{"fwd_gemm", "tp_allreduce", "roofline_op",
                                             "load_weights", "dp_allgather", "dp_reducescatter",
                                             "world_alltoall", "tp_broadcast", "barrier",
                                             "send_act", "store_ckpt", "after_store"}));
  constexpr double kMiB = 1 << 20;
  EXPECT_DOUBLE_EQ(rank0.ops(0).duration_s(), 100e-6);
  EXPECT_TRUE(rank0.ops(0).deps().empty());  // Its dependency was the metadata node.
  EXPECT_EQ(rank0.ops(1).group(), "1");
  EXPECT_EQ(rank0.ops(1).collective(), schedule::ALL_REDUCE);
  EXPECT_DOUBLE_EQ(rank0.ops(1).bytes(), 64 * kMiB);
  EXPECT_EQ(rank0.ops(1).stream(), "comm 1");
  EXPECT_EQ(rank0.ops(2).duration_s(), 0);  // On the roofline.
  EXPECT_DOUBLE_EQ(rank0.ops(2).flops(), 1e12);
  EXPECT_DOUBLE_EQ(rank0.ops(3).hbm_bytes(), 1024 * kMiB);
  EXPECT_EQ(std::vector<uint32_t>(rank0.ops(4).deps().begin(), rank0.ops(4).deps().end()),
            (std::vector<uint32_t>{2, 3}));
  // ASTRA-sim's all-gather comm_size is one rank's input: the gathered array is twice it.
  EXPECT_EQ(rank0.ops(4).collective(), schedule::ALL_GATHER);
  EXPECT_DOUBLE_EQ(rank0.ops(4).bytes(), 64 * kMiB);
  EXPECT_EQ(rank0.ops(4).group(), "3");
  EXPECT_DOUBLE_EQ(rank0.ops(5).bytes(), 64 * kMiB);
  EXPECT_DOUBLE_EQ(rank0.ops(6).bytes(), 64 * kMiB);  // 16 MiB per rank, 4 ranks.
  EXPECT_EQ(rank0.ops(6).group(), "(all ranks)");
  EXPECT_EQ(rank0.ops(7).collective(), schedule::BROADCAST);
  EXPECT_DOUBLE_EQ(rank0.ops(8).bytes(), 4);
  EXPECT_EQ(rank0.ops(9).kind(), schedule::SEND);
  EXPECT_EQ(s.programs(2).ops(9).kind(), schedule::RECV);
  EXPECT_TRUE(rank0.ops(11).deps().empty());  // Control dependencies are off by default.

  sim::StatusOr<workloads::StepResult> step = workloads::SimulateStep(system, s);
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_GT(step->step_time.ToSeconds(), 150e-6);
  EXPECT_EQ(step->simulated_chips, 4u);
}

TEST(ChakraImportTest, ControlDependenciesWhenAsked) {
  ChakraImportOptions options;
  options.ctrl_deps = true;
  sim::StatusOr<ChakraImport> imported =
      ImportChakra(System("h100:4"), Generator(), GeneratorGroups(), options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  const schedule::Program& rank0 = imported->schedule.programs(0);
  const schedule::Op& last = rank0.ops(rank0.ops_size() - 1);
  EXPECT_EQ(last.name(), "after_store");
  ASSERT_EQ(last.deps_size(), 1);
  EXPECT_EQ(rank0.ops(last.deps(0)).name(), "store_ckpt");
}

TEST(ChakraImportTest, RooflineEverywhereWhenAsked) {
  ChakraImportOptions options;
  options.compute = ChakraCompute::kRoofline;
  sim::StatusOr<ChakraImport> imported =
      ImportChakra(System("h100:4"), Generator(), GeneratorGroups(), options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->summary.recorded, 4u);  // after_store records only a duration.
  EXPECT_EQ(imported->schedule.programs(0).ops(0).duration_s(), 0);
}

TEST(ChakraImportTest, ARankMapPlacesRanksAndIdlesTheOtherChips) {
  ChakraImportOptions options;
  options.rank_chips = {0, 2, 4, 6};
  const topology::System system = System("h100:8");
  sim::StatusOr<ChakraImport> imported =
      ImportChakra(system, Generator(), GeneratorGroups(), options);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->schedule.programs_size(), 8);
  const schedule::Group& tp = imported->schedule.groups(0);
  EXPECT_EQ(std::vector<uint32_t>(tp.chips().begin(), tp.chips().end()),
            (std::vector<uint32_t>{0, 2}));
  sim::StatusOr<workloads::StepResult> step = workloads::SimulateStep(system, imported->schedule);
  ASSERT_TRUE(step.ok()) << step.status();
}

// Each bad trace fails with one error naming the rank, the node and what is wrong.
TEST(ChakraImportTest, BadTracesNameTheRankAndTheNode) {
  const topology::System system = System("h100:4");
  struct Case {
    const char* what;
    void (*mutate)(std::vector<ChakraRankTrace>&, CommGroups&);
    const char* message;
  };
  const Case cases[] = {
      {"rank count", [](auto& t, auto&) { t.pop_back(); },
       "the trace has 3 ranks and h100:4 has 4 chips"},
      {"unknown node type",
       [](auto& t, auto&) { t[1].nodes[1].set_type(ChakraProtoMsg::NodeType(8)); },
       "rank 1 node 2 'fwd_gemm': type 8"},
      {"dangling dependency", [](auto& t, auto&) { t[0].nodes[1].add_data_deps(99); },
       "rank 0 node 2 'fwd_gemm': data_deps: no node 99"},
      {"cycle", [](auto& t, auto&) { t[0].nodes[1].add_data_deps(4); },
       "rank 0 node 2 'fwd_gemm': its dependencies form a cycle"},
      {"duplicate id", [](auto& t, auto&) { t[3].nodes[2].set_id(2); },
       "rank 3 node 2 'aten::linear': a second node with id 2"},
      {"missing group", [](auto&, auto& g) { g.erase("3"); },
       "rank 0 node 7 'dp_allgather': pg_name: process group '3' is not in the comm groups"},
      {"rank outside its group",
       [](auto&, auto& g) {
         g["1"] = {2, 3};
         g["2"] = {0, 1};
       },
       "rank 0 node 4 'tp_allreduce': pg_name: process group '1' does not hold this rank"},
      {"unsupported collective",
       [](auto& t, auto&) { t[2].nodes[3].mutable_attr(1)->set_int64_val(ChakraProtoMsg::GATHER); },
       "rank 2 node 4 'tp_allreduce': comm_type GATHER"},
      {"send without its receive",
       [](auto& t, auto&) { t[2].nodes[11].set_type(ChakraProtoMsg::COMP_NODE); },
       "rank 0 sends 1 message(s) with comm_tag 7 to rank 2, which receives 0"},
      {"attribute of the wrong type",
       [](auto& t, auto&) { t[0].nodes[3].mutable_attr(2)->set_string_val("64MiB"); },
       "rank 0 node 4 'tp_allreduce': attr comm_size: not an integer"},
  };
  for (const Case& c : cases) {
    std::vector<ChakraRankTrace> trace = Generator();
    CommGroups groups = GeneratorGroups();
    c.mutate(trace, groups);
    sim::StatusOr<ChakraImport> imported = ImportChakra(system, trace, groups);
    ASSERT_FALSE(imported.ok()) << c.what;
    EXPECT_EQ(imported.status().code(), sim::Status::Code::kInvalidArgument) << c.what;
    EXPECT_NE(imported.status().message().find(c.message), std::string::npos)
        << c.what << ": " << imported.status();
  }
}

TEST(ChakraImportTest, CommGroupsAndRankMapsAreChecked) {
  EXPECT_FALSE(ParseCommGroups("[1, 2]", "g.json").ok());
  EXPECT_FALSE(ParseCommGroups("{\"a\": []}", "g.json").ok());
  sim::StatusOr<CommGroups> twice = ParseCommGroups("{\"a\": [0, 1, 0]}", "g.json");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("g.json: group \"a\": rank 0 twice"), std::string::npos);
  EXPECT_FALSE(ParseCommGroups("{\"a\": [-1]}", "g.json").ok());
  EXPECT_FALSE(ParseCommGroups("{", "g.json").ok());
  EXPECT_FALSE(ParseRankMap("[0, 0]", "m.json").ok());
  EXPECT_FALSE(ParseRankMap("{}", "m.json").ok());
  sim::StatusOr<std::vector<int64_t>> map = ParseRankMap("[3, 1, 2]", "m.json");
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(*map, (std::vector<int64_t>{3, 1, 2}));
  sim::StatusOr<CommGroups> back = ParseCommGroups(CommGroupsJson({{"x", {2, 0}}}), "x.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->at("x"), (std::vector<int64_t>{2, 0}));
}

}  // namespace
}  // namespace podsim::interop
