// issue 7: `podsim infer --trace` (cli/step_trace.h, as train). Tracing only observes: the results
// are byte-identical with and without it; both formats pass the trace lint; the trace names the
// step's role and holds one slice per op; a trace of several steps (a batch list, a disaggregated
// deployment) is refused with one clear error and no file.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/main_command.h"
#include "tests/testing/run_podsim.h"
#include "traces/trace_lint.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::ReadFile;
using podsim::testing::With;

// A decode step of a 2-way data-parallel, 4-way tensor-parallel replica on 8 GPUs.
const std::vector<std::string> kDecode = {
    "infer",   "--system", "h100:8",  "--model", "llama3-8b", "--layout", "tp=4,dp=2",
    "--phase", "decode",   "--batch", "16",      "--context", "2048"};

class InferTraceTest : public podsim::testing::TempDirTest {};

TEST_F(InferTraceTest, TracingDoesNotChangeResultsAndBothFormatsLint) {
  for (const std::vector<std::string>& args :
       {kDecode, With(kDecode, {"--weights", "int8"}),
        std::vector<std::string>{"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b",
                                 "--layout", "tp=16", "--phase", "prefill", "--batch", "1",
                                 "--context", "2048"}}) {
    const std::string untraced = Podsim(With(args, {"--json"})).out;
    ASSERT_FALSE(untraced.empty());
    for (const char* name : {"step.json", "step.pftrace"}) {
      SCOPED_TRACE(name);
      Outcome traced = Podsim(With(args, {"--json", "--trace", Path(name)}));
      ASSERT_EQ(traced.code, 0) << traced.err;
      EXPECT_EQ(traced.out, untraced);
      const std::string trace = ReadFile(Path(name));
      ASSERT_FALSE(trace.empty());
      sim::Status lint = std::string(name).ends_with(".json") ? traces::LintChromeJson(trace)
                                                              : traces::LintPerfetto(trace);
      EXPECT_TRUE(lint.ok()) << lint;
      EXPECT_TRUE(Temporaries().empty());
    }
  }
}

TEST_F(InferTraceTest, TheReplicaIsNamedAfterItsRoleWithOneSlicePerOp) {
  Outcome run = Podsim(With(kDecode, {"--json", "--trace", Path("step.json")}));
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json result = nlohmann::json::parse(run.out);
  std::map<int, std::string> processes;
  std::set<std::string> threads;
  std::set<std::string> counters;  // Each also names a thread of value slices.
  int op_slices = 0, collectives = 0, flows = 0;
  const nlohmann::json trace = nlohmann::json::parse(ReadFile(Path("step.json")));
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"]);
    if (e["ph"] == "C") counters.insert(e["name"]);
    if (e["ph"] == "X" && e["cat"] == "op") {
      ++op_slices;
      if (e["args"]["kind"] == "collective") {
        ++collectives;
        EXPECT_EQ(e["args"]["mesh_axes"], "tp") << e;
        // NCCL's NVLS inside one H100 node (collectives/collective_runner.h).
        if (e["args"]["collective"] == "all-reduce") {
          EXPECT_EQ(e["args"]["algorithm"], "in-switch") << e;
        }
      }
    }
    if (e["ph"] == "s") ++flows;
  }
  // The step's symmetry rotates the tp ranks within each replica's half of the node (slot digits
  // 4 x 2, step_symmetry.h) and swaps the replicas: one chip stands for all 8.
  EXPECT_EQ(processes, (std::map<int, std::string>{{1, "system"},
                                                   {2, "decode replica (chip 0: tp 0, dp 0)"}}));
  for (const std::string& counter : counters) threads.erase(counter);
  EXPECT_EQ(threads, (std::set<std::string>{"step", "compute", "tp"}));
  EXPECT_EQ(op_slices, result["simulation"]["ops"].get<int>());
  EXPECT_GT(collectives, 0);
  // Each all-reduce is fed by the compute stream and feeds it: two flows.
  EXPECT_GE(flows, 2 * collectives);

  run = Podsim(With(kDecode, {"--trace", Path("step.pftrace")}));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("trace       " + Path("step.pftrace") + " (1 chip, "), std::string::npos)
      << run.out;
}

TEST_F(InferTraceTest, ScenarioFileTracesTheSameStep) {
  ASSERT_EQ(Podsim(With(kDecode, {"--trace", Path("flags.pftrace")})).code, 0);
  Outcome dump = Podsim(With(kDecode, {"--trace", Path("file.pftrace"), "--dump-scenario"}));
  ASSERT_EQ(dump.code, 0) << dump.err;
  EXPECT_NE(dump.out.find("trace: \"" + Path("file.pftrace") + "\""), std::string::npos)
      << dump.out;
  std::ofstream(Path("step.textproto")) << dump.out;
  Outcome run = Podsim({"run", Path("step.textproto")});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(ReadFile(Path("file.pftrace")), ReadFile(Path("flags.pftrace")));
}

TEST_F(InferTraceTest, SeveralStepsOrBadArgumentsFailWithoutWritingAFile) {
  const std::vector<std::string> decode = {"infer",     "--system",  "h100:8", "--model",
                                           "llama3-8b", "--layout",  "tp=8",   "--phase",
                                           "decode",    "--context", "2048"};
  Outcome run = Podsim(With(decode, {"--batch", "1,8,16", "--trace", Path("t.json")}));
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "podsim: error: --trace: a trace follows one step; give one batch size (got 3)\n");
  run =
      Podsim({"infer", "--system", "h100:8", "--model", "llama3-8b", "--layout", "tp=8", "--batch",
              "8", "--prefill-len", "1024", "--decode-len", "256", "--trace", Path("t.json")});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "podsim: error: --trace: a trace follows one step; trace the prefill or the decode "
            "step alone\n");
  run = Podsim(With(decode, {"--batch", "8", "--trace", Path("t.txt")}));
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: --trace: " + Path("t.txt") +
                         ": unknown trace format; use a name ending in .pftrace or "
                         ".perfetto-trace (Perfetto) or .json (Chrome JSON)\n");
  run = Podsim(With(decode, {"--batch", "8", "--trace", Path("t.json"), "--trace-chips", "8"}));
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err,
            "podsim: error: --trace-chips: expected \"all\" or chip indices and ranges from 0 to 7 "
            "like \"0-15,32\" (got \"8\")\n");
  // A layout that does not fit the model fails before the file is created.
  run =
      Podsim({"infer", "--system", "h100:8", "--model", "llama3-8b", "--layout", "tp=3", "--phase",
              "decode", "--batch", "8", "--context", "2048", "--trace", Path("t.json")});
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(run.err.starts_with("podsim: error: --layout: ")) << run.err;
  // The same refusal from a scenario file names the field.
  std::ofstream(Path("batches.textproto"))
      << "system { preset: 'h100:8' }\ninfer {\n  model { preset: 'llama3-8b' }\n"
         "  layout { text: 'tp=8' }\n  phase: DECODE\n  batch: [1, 8]\n  context: 2048\n}\n"
         "outputs { trace: 't.json' }\n";
  run = Podsim({"run", Path("batches.textproto")});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: " + Path("batches.textproto") +
                         ":9:11: outputs.trace: a trace follows one step; give one batch size "
                         "(got 2)\n");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().extension(), ".textproto") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

}  // namespace
}  // namespace podsim::cli
