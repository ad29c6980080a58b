// End-to-end tests of scenario files on the command line (issue 8): `podsim run FILE` prints the
// same bytes as the equivalent flags, `--dump-scenario` prints a scenario that runs to the same
// result, and a bad scenario is one error line with file:line:col and exit code 1.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/main_command.h"
#include "tests/testing/run_podsim.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::With;

// A path of this process only: test binaries of several builds may run at once.
std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("podsim_scenario_cli_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Writes `text` to a temporary file and returns its path.
std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

const std::vector<std::string> kTopology = {"topology", "tpu-v5e:4x4"};
const std::vector<std::string> kCollective = {"collective", "--system",   "tpu-v5p:4x4x4",
                                              "--op",       "all-gather", "--bytes",
                                              "64MiB",      "--axes",     "x,y"};
const std::vector<std::string> kInfer = {"infer",      "--system", "tpu-v5e:4x4", "--model",
                                         "llama3-70b", "--layout", "tp=16"};
const std::vector<std::string> kTrain = {"train",     "--system", "tpu-v5p:2x2x4", "--model",
                                         "llama3-8b", "--layout", "fsdp=8,tp=2",   "--batch-tokens",
                                         "64Ki",      "--seq",    "4096"};

// The same commands written by hand as scenario files.
constexpr const char* kTopologyScenario = R"(# podsim topology tpu-v5e:4x4
system { preset: "tpu-v5e:4x4" }
topology {}
)";
constexpr const char* kCollectiveScenario = R"(system { preset: "tpu-v5p:4x4x4" }
collective {
  op: ALL_GATHER
  bytes: 67108864  # 64 MiB
  axes: ["x", "y"]
}
)";
constexpr const char* kInferScenario = R"(system { preset: "tpu-v5e:4x4" }
infer {
  model { preset: "llama3-70b" }
  layout { tp: 16 }
  phase: DECODE
  batch: [8]
  context: 1024
  weight_dtype: INT8
}
)";
constexpr const char* kTrainScenario = R"(system { preset: "tpu-v5p:2x2x4" }
train {
  model { preset: "llama3-8b" }
  layout { fsdp: 8 tp: 2 }
  batch_tokens: 65536
  seq: 4096
}
)";

TEST(ScenarioCliTest, RunPrintsTheSameBytesAsTheFlags) {
  struct Case {
    std::vector<std::string> flags;
    const char* scenario;
  };
  const std::vector<std::string> infer =
      With(kInfer, {"--phase", "decode", "--batch", "8", "--context", "1024", "--weights", "int8"});
  for (const Case& c : {Case{kTopology, kTopologyScenario}, Case{kCollective, kCollectiveScenario},
                        Case{kTrain, kTrainScenario}, Case{infer, kInferScenario}}) {
    SCOPED_TRACE(c.flags[0]);
    const std::string file = WriteTemp(c.flags[0] + ".textproto", c.scenario);
    for (const std::vector<std::string>& more :
         std::vector<std::vector<std::string>>{{}, {"--json"}}) {
      Outcome flags = Podsim(With(c.flags, more));
      Outcome run = Podsim(With({"run", file}, more));
      ASSERT_EQ(flags.code, 0) << flags.err;
      ASSERT_EQ(run.code, 0) << run.err;
      EXPECT_EQ(run.out, flags.out);
      EXPECT_EQ(run.err, "");
    }
    std::filesystem::remove(file);
  }
}

// Every option of each command travels through the dump: podsim run of what --dump-scenario
// prints gives the bytes of the flags.
TEST(ScenarioCliTest, DumpScenarioRunsToTheSameResult) {
  const std::string schedule = TempPath("step.textproto");
  const std::vector<std::vector<std::string>> commands = {
      kTopology,
      With(kTopology, {"--json"}),
      With(kTopology, {"--dot"}),
      {"topology", "ring:8,bw=1e11,lat=1e-6", "--json"},
      With(kCollective, {"--algorithm", "multi-axis", "--json"}),
      {"collective", "--system", "h100:16", "--op", "all-reduce", "--sweep-bytes", "--ideal"},
      {"collective", "--system", "tpu-v5p:4x4x4", "--op", "p2p", "--src", "0,0,0", "--dst", "1,0,0",
       "--bytes", "1e6"},
      {"collective", "--system", "h100:8", "--op", "broadcast", "--src", "3", "--bytes", "1GiB",
       "--json"},
      kTrain,
      With(kTrain,
           {"--recompute", "selective", "--attention", "materialized", "--flows", "--json"}),
      With(kTrain, {"--recompute", "full", "--every-chip", "--write-schedule", schedule}),
      {"train", "--system", "tpu-v5p:2x2x4", "--model",
       "custom:layers=4,d_model=1024,ffn=4096,heads=8,kv_heads=8,head_dim=128,vocab=32000",
       "--layout", "dp=2,pp=2,tp=4,microbatches=4,schedule=gpipe", "--batch-tokens", "32Ki",
       "--seq", "2048", "--json"},
      With(kInfer, {"--phase", "prefill", "--batch", "4", "--context", "2048", "--json"}),
      With(kInfer, {"--phase", "decode", "--batch", "1,8,64", "--context", "0", "--weights", "int4",
                    "--kv", "int8", "--chip-hour-usd", "1.2"}),
      With(kInfer, {"--prefill-len", "1024", "--decode-len", "256", "--batch", "16",
                    "--chip-hour-usd", "2", "--json"}),
      {"sweep", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--batch-tokens", "64Ki",
       "--seq", "4096", "--top", "3", "--jobs", "2", "--csv"},
      {"sweep", "--system", "h100:8", "--model", "llama3-8b", "--batch-tokens", "8Ki", "--seq",
       "2048", "--exhaustive", "--json"},
  };
  const std::string file = TempPath("dumped.textproto");
  for (const std::vector<std::string>& command : commands) {
    std::string line;
    for (const std::string& arg : command) line += arg + " ";
    SCOPED_TRACE(line);
    Outcome flags = Podsim(command);
    ASSERT_EQ(flags.code, 0) << flags.err;
    Outcome dump = Podsim(With(command, {"--dump-scenario"}));
    ASSERT_EQ(dump.code, 0) << dump.err;
    EXPECT_EQ(dump.out.rfind("# proto-file: scenario/scenario.proto\n", 0), 0u) << dump.out;
    std::ofstream(file, std::ios::binary) << dump.out;
    Outcome run = Podsim({"run", file});
    ASSERT_EQ(run.code, 0) << run.err << "\n" << dump.out;
    EXPECT_EQ(run.out, flags.out) << dump.out;
    // The canonical form is a fixed point.
    Outcome redump = Podsim({"run", file, "--dump-scenario"});
    EXPECT_EQ(redump.out, dump.out) << redump.err;
  }
  std::filesystem::remove(file);
  std::filesystem::remove(schedule);
}

TEST(ScenarioCliTest, DumpScenarioIsTheCanonicalTextAndSimulatesNothing) {
  const std::string schedule = TempPath("never_written.pb");
  std::filesystem::remove(schedule);
  Outcome dump = Podsim(With(
      kTrain, {"--recompute", "full", "--json", "--write-schedule", schedule, "--dump-scenario"}));
  ASSERT_EQ(dump.code, 0) << dump.err;
  EXPECT_EQ(dump.out,
            "# proto-file: scenario/scenario.proto\n"
            "# proto-message: podsim.scenario.Scenario\n"
            "\n"
            "system {\n"
            "  preset: \"tpu-v5p:2x2x4\"\n"
            "}\n"
            "train {\n"
            "  model {\n"
            "    preset: \"llama3-8b\"\n"
            "  }\n"
            "  layout {\n"
            "    text: \"fsdp=8,tp=2\"\n"
            "  }\n"
            "  batch_tokens: 65536\n"
            "  seq: 4096\n"
            "  recompute: FULL\n"
            "}\n"
            "outputs {\n"
            "  json: true\n"
            "  write_schedule: \"" +
                schedule + "\"\n" + "}\n");
  EXPECT_FALSE(std::filesystem::exists(schedule));

  EXPECT_EQ(Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "1GiB",
                    "--dump-scenario"})
                .out,
            "# proto-file: scenario/scenario.proto\n"
            "# proto-message: podsim.scenario.Scenario\n"
            "\n"
            "system {\n"
            "  preset: \"h100:8\"\n"
            "}\n"
            "collective {\n"
            "  op: ALL_REDUCE\n"
            "  bytes: 1073741824\n"
            "}\n");
}

// --dump-scenario checks the scenario as podsim run would, so that what it prints loads; its
// errors name the flags.
TEST(ScenarioCliTest, DumpScenarioOfBadFlagsNamesTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"collective", "--system", "tpu-v5e:4x4", "--op", "all-gather", "--bytes", "1GiB", "--axes",
        "x,z", "--dump-scenario"},
       "podsim: error: --axes: the system has no axis 'z' (did you mean 'x'?); its axes are x, "
       "y\n"},
      {{"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "-3",
        "--dump-scenario"},
       "podsim: error: --bytes: must be > 0 and at most 1e15 (got -3)\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=4,tp=2",
        "--batch-tokens", "64Ki", "--seq", "4096", "--dump-scenario"},
       "podsim: error: --layout: layout dp=1,fsdp=4,tp=2,pp=1: dp*fsdp*tp*pp = 8 must equal the "
       "16 chips of the system\n"},
      {{"topology", "tpu-v5q:4x4", "--dump-scenario"},
       "podsim: error: system 'tpu-v5q:4x4': unknown system 'tpu-v5q' (did you mean 'tpu-v5e'?); "
       "known: tpu-v4p, tpu-v5e, tpu-v5p, tpu-v6e, tpu7x, a100, h100, h200, b200, gb200, ring, "
       "torus, switch\n"},
  };
  for (const Case& c : cases) {
    Outcome run = Podsim(c.args);
    EXPECT_EQ(run.code, 1);
    EXPECT_EQ(run.err, c.error);
    EXPECT_EQ(run.out, "");
  }
}

TEST(ScenarioCliTest, BadScenarioIsOneLineWithItsPositionAndExitOne) {
  struct Case {
    const char* text;
    std::vector<std::string> more;
    std::string error;  // After "podsim: error: ", FILE standing for the scenario's path.
  };
  const std::vector<Case> cases = {
      {"system { preset: 'h100:8' }\ncollective {\n  op: ALL_REDUCE\n  bites: 1e9\n}\n",
       {},
       "FILE:4:3: unknown field 'bites' in Collective (did you mean 'bytes'?); fields: op, bytes, "
       "axes, algorithm, src, dst, sweep_bytes, ideal"},
      {"system { preset: 'h100:8' }\ncollective { op: ALL_REDUSE bytes: 1e9 }\n",
       {},
       "FILE:2:18: unknown value 'ALL_REDUSE' for field 'op' (did you mean 'ALL_REDUCE'?); values: "
       "ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, P2P, SHIFT"},
      {"system { preset: 'h100:8' }\ncollective {\n  op: ALL_REDUCE\n  bytes: -3\n}\n",
       {},
       "FILE:4:3: collective.bytes: must be > 0 and at most 1e15 (got -3)"},
      {"system { preset: 'h100:8' }\ncollective {\n  op: ALL_REDUCE\n  bytes: 1e9\n"
       "  algorithm: 'rign'\n}\n",
       {},
       "FILE:5:3: collective.algorithm: unknown algorithm 'rign'"},
      {"system { preset: 'h100:8' }\ntopology {}\n",
       {"--trace", "t.json"},
       "--trace: only collective, train and infer write traces"},
      {"system { preset: 'h100:8' }\ntopology {}\n"
       "outputs { csv: true }\n",
       {},
       "FILE:3:11: outputs.csv: only sweep and collective print CSV"},
      {"system { preset: 'h100:8' }\ncollective { op: ALL_REDUCE min_bytes: 8 }\n",
       {},
       "FILE:2:1: collective.max_bytes: missing; a size sweep needs both min_bytes and "
       "max_bytes"},
      {"system { preset: 'h100:8' }\n"
       "collective { op: ALL_REDUCE min_bytes: 8 max_bytes: 1e9 step_factor: 1 }\n",
       {},
       "FILE:2:57: collective.step_factor: must be > 1 and at most 1e6 (got 1)"},
      {"system { preset: 'tpu-v5e:4x4' }\ninfer {\n  model { preset: 'llama3-70b' }\n"
       "  layout { text: 'tp=8' }\n  phase: DECODE\n  batch: 1\n  context: 10\n}\n",
       {},
       "FILE:4:3: infer.layout: layout tp=8,tp2=1,dp=1: tp*tp2*dp = 8 must equal the 16 chips of "
       "the system"},
      {"system { preset: 'tpu-v5e:4x4' }\ninfer {\n  model { preset: 'llama3-70b' }\n"
       "  layout { tp: 16 }\n  phase: DECODE\n  batch: 1\n  prefill_len: 10\n  decode_len: 5\n}"
       "\n",
       {},
       "FILE:5:3: infer.phase: not with prefill_len and decode_len (the deployment runs both "
       "phases)"},
      {"system { preset: 'ring:8' }\nsweep {\n  model { preset: 'llama3-8b' }\n"
       "  batch_tokens: 65536\n  seq: 4096\n}\n",
       {},
       "FILE:1:1: system: generic fabrics have no compute to train on"},
  };
  const std::string file = TempPath("bad.textproto");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    std::ofstream(file, std::ios::binary) << c.text;
    Outcome run = Podsim(With({"run", file}, c.more));
    EXPECT_EQ(run.code, 1);
    std::string error = c.error;
    if (error.starts_with("FILE")) error.replace(0, 4, file);
    // Messages that end in a list of names are compared up to it.
    EXPECT_EQ(run.err.substr(0, std::string("podsim: error: ").size() + error.size()),
              "podsim: error: " + error)
        << run.err;
    EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
    EXPECT_EQ(run.out, "");
  }
  std::filesystem::remove(file);

  Outcome missing = Podsim({"run", "/nonexistent/run.textproto"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err,
            "podsim: error: cannot read scenario '/nonexistent/run.textproto': No such file or "
            "directory\n");
  EXPECT_EQ(Podsim({"run"}).code, 2);  // SCENARIO is required.
}

// --json and --trace on podsim run override the file's outputs.
TEST(ScenarioCliTest, RunFlagsOverrideTheOutputs) {
  const std::string file = WriteTemp("override.textproto", kCollectiveScenario);
  const std::string trace = TempPath("override.json");
  std::filesystem::remove(trace);
  Outcome run = Podsim({"run", file, "--json", "--trace", trace});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out, Podsim(With(kCollective, {"--json"})).out);
  EXPECT_TRUE(std::filesystem::exists(trace));
  std::filesystem::remove(trace);
  std::filesystem::remove(file);
}

TEST(ScenarioCliTest, EveryExampleLoadsAndDumpsCanonically) {
  for (const auto& entry : std::filesystem::directory_iterator(PODSIM_SCENARIO_EXAMPLES_DIR)) {
    SCOPED_TRACE(entry.path().string());
    Outcome dump = Podsim({"run", entry.path().string(), "--dump-scenario"});
    ASSERT_EQ(dump.code, 0) << dump.err;
    const std::string file = WriteTemp("example.textproto", dump.out);
    EXPECT_EQ(Podsim({"run", file, "--dump-scenario"}).out, dump.out);
    std::filesystem::remove(file);
  }
  // The small examples run.
  for (const char* name : {"topology_tpu_v5p.textproto", "collective_custom_chip.textproto",
                           "infer_llama3_70b_tpu_v5e.textproto"}) {
    Outcome run =
        Podsim({"run", (std::filesystem::path(PODSIM_SCENARIO_EXAMPLES_DIR) / name).string()});
    EXPECT_EQ(run.code, 0) << name << ": " << run.err;
  }
}

}  // namespace
}  // namespace podsim::cli
