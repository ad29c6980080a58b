// End-to-end tests of the podsim command line: exit codes, the stable JSON keys of design.md,
// byte-for-byte determinism of the output, and one clear error line for bad input.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/byte_size.h"
#include "cli/main_command.h"
#include "tests/testing/run_podsim.h"
#include "traces/trace_lint.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::ReadFile;

TEST(CliTest, BareCommandRunsTheDefaultScenario) {
  Outcome run = Podsim({});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("default scenario"), std::string::npos);
  EXPECT_NE(run.out.find("podsim train"), std::string::npos);
  EXPECT_NE(run.out.find("MFU"), std::string::npos);
  EXPECT_NE(run.out.find("fits        yes"), std::string::npos);
  EXPECT_TRUE(run.err.empty());
}

TEST(CliTest, CollectiveJsonHasTheStableKeys) {
  Outcome run = Podsim({"collective", "--system", "tpu-v5p:4x4x4", "--op", "all-gather", "--bytes",
                        "64MiB", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  for (const char* key : {"time_s", "algbw_Bps", "busbw_Bps"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  EXPECT_EQ(j["bytes"].get<double>(), 64.0 * (1 << 20));
  EXPECT_EQ(j["ranks_per_group"].get<int>(), 64);
}

TEST(CliTest, SweepPrintsOneRowPerSize) {
  Outcome run =
      Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "--sweep-bytes", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["sweep"].size(), 25u);  // 1 KiB .. 16 GiB in powers of two.
  double previous = 0;
  for (const auto& row : j["sweep"]) {
    EXPECT_GE(row["busbw_Bps"].get<double>(), previous);  // Bandwidth grows with size.
    previous = row["busbw_Bps"].get<double>();
  }
}

TEST(CliTest, PointToPointTakesTorusCoordinates) {
  Outcome run = Podsim({"collective", "--system", "tpu-v5p:4x4x4", "--op", "p2p", "--src", "0,0,0",
                        "--dst", "1,0,0", "--bytes", "9e10", "--ideal", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  // One ICI hop of a TPU v5p: 9e10 bytes at 9e10 B/s one way (hardware.md 1.1), plus 1 us.
  EXPECT_NEAR(j["time_s"].get<double>(), 1.0 + 1e-6, 1e-6);
  // Three hops away on three axes: three disjoint shortest routes share the bytes (formulas.md
  // 2.2: bytes / (links used x W_oneway) + hops x 1 us).
  run = Podsim({"collective", "--system", "tpu-v5p:4x4x4", "--op", "p2p", "--src", "0,0,0", "--dst",
                "1,3,1", "--bytes", "9e10", "--ideal", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NEAR(nlohmann::json::parse(run.out)["time_s"].get<double>(), 1.0 / 3 + 3e-6, 1e-6);
}

TEST(CliTest, CalibratedModelIsTheDefaultAndIdealIsTheLineRate) {
  std::vector<std::string> args = {"collective", "--system", "h100:8", "--op",
                                   "all-gather", "--bytes",  "1GiB",   "--json"};
  nlohmann::json calibrated = nlohmann::json::parse(Podsim(args).out);
  args.push_back("--ideal");
  nlohmann::json ideal = nlohmann::json::parse(Podsim(args).out);
  EXPECT_EQ(calibrated["model"], "calibrated for gpu (collectives/efficiency_model.h)");
  EXPECT_EQ(ideal["model"], "ideal fabric (line rate, hop latencies only)");
  // NCCL reaches ~370 of the 450 GB/s NVLink line rate (measured.md V9).
  EXPECT_NEAR(ideal["busbw_Bps"].get<double>() / 450e9, 1.0, 0.02);
  EXPECT_NEAR(calibrated["busbw_Bps"].get<double>() / 370e9, 1.0, 0.05);
}

// --bytes is nccl-tests' S for every op: for all-to-all one rank's send buffer, of which S/n goes
// to each rank (nccl-tests' alltoall.cu), so busbw is the rate of each GPU's own links.
TEST(CliTest, AllToAllBytesArePerRankAsInNcclTests) {
  nlohmann::json j =
      nlohmann::json::parse(Podsim({"collective", "--system", "h100:8", "--op", "all-to-all",
                                    "--bytes", "1GiB", "--ideal", "--json"})
                                .out);
  EXPECT_EQ(j["bytes"].get<double>(), 1 << 30);
  // nccl-tests' count is the call's per-rank element count: S / 4 / n floats to each peer.
  EXPECT_EQ(j["count"].get<double>(), (1 << 30) / 4 / 8);
  // Each GPU sends 7/8 GiB over its 450 GB/s of NVLink (G11's closed form with V = 8 GiB).
  EXPECT_NEAR(j["time_s"].get<double>() / (7.0 / 8 * (1 << 30) / 450e9), 1.0, 0.01);
  EXPECT_NEAR(j["busbw_Bps"].get<double>() / 450e9, 1.0, 0.01);
}
TEST(CliTest, OutputIsByteForByteDeterministic) {
  std::vector<std::string> args = {"collective", "--system", "tpu-v5e:8x16", "--op",
                                   "all-to-all", "--bytes",  "128MiB",       "--json"};
  EXPECT_EQ(Podsim(args).out, Podsim(args).out);
}

TEST(CliTest, BadInputIsOneErrorLineAndExitOne) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"collective", "--system", "tpu-v5e:16x16", "--op", "all-reduce", "--bytes", "-1"},
       "podsim: error: --bytes: must be > 0 and at most 1e15 (got -1)\n"},
      {{"collective", "--system", "tpu-v5e:16x16", "--op", "all-reduce", "--bytes", "12parsecs"},
       "podsim: error: --bytes: expected a size like 1048576, 1e9, 64KiB, 16GiB or 1.5GB (got "
       "'12parsecs')\n"},
      {{"collective", "--system", "tpu-v5e:16x16", "--op", "all-reduce", "--bytes", "1GiB",
        "--axes", "z"},
       "podsim: error: --axes: the system has no axis 'z' (did you mean 'x'?); its axes are x, "
       "y\n"},
      {{"collective", "--system", "h100:8", "--op", "all-to-all", "--bytes", "1001"},
       "podsim: error: --bytes: 1001 bytes per rank do not split evenly over the 8 ranks of a "
       "group; use a multiple of 8\n"},
      {{"collective", "--system", "tpu-v5e:16x16", "--op", "all-reduse", "--bytes", "1GiB"},
       "podsim: error: --op: unknown collective 'all-reduse'; expected one of all-gather, "
       "reduce-scatter, all-reduce, all-to-all, broadcast, p2p, shift\n"},
      {{"collective", "--system", "tpu-v5p:4x4x4", "--op", "p2p", "--src", "0,0,9", "--dst",
        "1,0,0", "--bytes", "1MiB"},
       "podsim: error: --src: coordinate 2 must be 0..3 (got \"0,0,9\")\n"},
      // An audit of 2026-12-07: this said "at most 1e15 bytes (got 1.024e+15)", not what was
      // given.
      {{"collective", "--system", "ring:1024", "--op", "all-to-all", "--bytes", "1e12"},
       "podsim: error: --bytes: 1e+12 bytes per rank x 1024 ranks = 1.024e+15 bytes of an "
       "all-to-all's array, over podsim's limit of 1e15\n"},
      // An audit of 2026-12-07: this printed a transfer of 1 MiB in 2.7 us.
      {{"collective", "--system", "tpu-v5p:4x4x4", "--op", "p2p", "--src", "1,1,1", "--dst",
        "1,1,1", "--bytes", "1MiB"},
       "podsim: error: --dst: the source chip; a p2p moves bytes between two chips\n"},
      {{"collective", "--system", "h100:8", "--op", "p2p", "--src", "0", "--dst", "0", "--bytes",
        "1MiB"},
       "podsim: error: --dst: the source chip; a p2p moves bytes between two chips\n"},
  };
  for (const Case& c : cases) {
    Outcome run = Podsim(c.args);
    EXPECT_EQ(run.code, 1);
    EXPECT_EQ(run.err, c.message);
    EXPECT_TRUE(run.out.empty()) << "nothing half-written on failure: " << run.out;
  }
}

TEST(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Podsim({"collective", "--system", "h100:8"}).code, 2);  // --op is required.
  EXPECT_EQ(Podsim({"collective", "--frobnicate"}).code, 2);
  EXPECT_EQ(Podsim({"no-such-command"}).code, 2);
}

TEST(CliTest, TopologyJsonForEverySystemForm) {
  for (const char* system :
       {"tpu-v5p:16x20x28", "tpu-v4p:4x4x4", "tpu-v5e:8x4", "tpu-v5e:16x16,slices=4", "h100:8",
        "h100:1024", "b200:8", "gb200:72", "ring:8,bw=1e11,lat=1e-6", "torus:4x4", "switch:8"}) {
    Outcome run = Podsim({"topology", system, "--json"});
    EXPECT_EQ(run.code, 0) << system << ": " << run.err;
    EXPECT_TRUE(nlohmann::json::accept(run.out)) << system;
  }
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("podsim_cli_test_" + name)).string();
}

// issue 7: tracing only observes. The results are byte-identical with and without --trace, and
// both formats pass the trace lint (declared tracks, balanced slices, flows with both ends).
TEST(CliTraceTest, TracingDoesNotChangeResultsAndBothFormatsLint) {
  const std::vector<std::string> base = {"collective", "--system", "h100:16", "--op",
                                         "all-reduce", "--bytes",  "16MiB",   "--json"};
  const std::string untraced = Podsim(base).out;
  for (const char* extension : {".json", ".pftrace"}) {
    SCOPED_TRACE(extension);
    const std::string path = TempPath(std::string("trace") + extension);
    std::filesystem::remove(path);
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--trace", path});
    Outcome traced = Podsim(args);
    ASSERT_EQ(traced.code, 0) << traced.err;
    EXPECT_EQ(traced.out, untraced);
    const std::string trace = ReadFile(path);
    ASSERT_FALSE(trace.empty());
    sim::Status lint = std::string(extension) == ".json" ? traces::LintChromeJson(trace)
                                                         : traces::LintPerfetto(trace);
    EXPECT_TRUE(lint.ok()) << lint;
    std::filesystem::remove(path);
  }
}

TEST(CliTraceTest, BadTraceArgumentsFailWithoutWritingAFile) {
  const std::string path = TempPath("trace.txt");
  Outcome run = Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "1MiB",
                        "--trace", path});
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("--trace: "), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(path));
  run = Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "1MiB",
                "--trace", TempPath("t.json"), "--trace-chips", "3-1"});
  EXPECT_EQ(run.err,
            "podsim: error: --trace-chips: expected \"all\" or chip indices and ranges from 0 to 7 "
            "like \"0-15,32\" (got \"3-1\")\n");
  EXPECT_FALSE(std::filesystem::exists(TempPath("t.json")));
}

// An audit of 2026-12-07: a replay's MFU over 100% blamed stated durations where no op stated
// one; the cause named is the one the schedule has.
TEST(CliReplayTest, MfuOverAHundredPercentNamesItsCause) {
  const std::string counted = TempPath("model_flops.textproto");
  std::ofstream(counted) << "system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 4 }\n"
                            "programs { name: 'p' ops { name: 'm' kind: MATMUL stream: 'compute' "
                            "flops: 2e9 model_flops: 2e15 } }\n";
  Outcome run = Podsim({"replay", counted});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("over 100%: ops count more model_flops (or hfu_flops) than the flops they "
                         "execute"),
            std::string::npos)
      << run.out;
  const std::string timed = TempPath("duration.textproto");
  std::ofstream(timed) << "system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 4 }\n"
                          "programs { name: 'p' ops { name: 'm' kind: MATMUL stream: 'compute' "
                          "flops: 2e15 model_flops: 2e15 duration_s: 1e-3 } }\n";
  run = Podsim({"replay", timed});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("over 100%: ops that state their time"), std::string::npos) << run.out;
  std::filesystem::remove(counted);
  std::filesystem::remove(timed);
}

// An audit of 2026-12-07: a model with 100 learned positions trained on 4,096-token sequences.
TEST(CliTrainTest, SequencesFitTheLearnedPositions) {
  const std::string model =
      "custom:layers=2,d_model=1024,ffn=4096,heads=16,kv_heads=16,head_dim=64,vocab=1000,"
      "positions=100";
  Outcome run = Podsim({"train", "--system", "h100:8", "--model", model, "--layout", "dp=8",
                        "--batch-tokens", "32Ki", "--seq", "4096"});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: --seq: 4096 tokens exceed the 100 positions of model '" +
                         model + "' (its learned position embedding has a row per position)\n");
  run = Podsim({"train", "--system", "h100:8", "--model", model, "--layout", "dp=8",
                "--batch-tokens", "800", "--seq", "100"});
  EXPECT_EQ(run.code, 0) << run.err;
  // A decode step feeds the token at position `context`.
  const std::vector<std::string> decode = {"infer",  "--system", "h100:8", "--model",
                                           model,    "--layout", "tp=8",   "--phase",
                                           "decode", "--batch",  "8",      "--context"};
  std::vector<std::string> args = decode;
  args.push_back("100");
  run = Podsim(args);
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("--context: 101 tokens exceed the 100 positions"), std::string::npos)
      << run.err;
  args.back() = "99";
  EXPECT_EQ(Podsim(args).code, 0);
}

// A review of 2026-12-07: the recompute line said "save-named" and not what is kept.
TEST(CliTrainTest, StatesWhatItRecomputesAndKeeps) {
  Outcome run = Podsim({"train", "--system", "h100:8", "--model", "llama3-8b:layers=2", "--layout",
                        "dp=8", "--batch-tokens", "32Ki", "--seq", "4096", "--recompute",
                        "save:attn.qkv,input", "--attention", "cudnn"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("recompute   save-named: keeps attn.qkv,input; attention kernel cudnn\n"),
            std::string::npos)
      << run.out;
}

TEST(ByteSizeTest, ParsesBinaryAndDecimalSuffixes) {
  EXPECT_EQ(*ParseByteSize("--bytes", "1048576"), 1048576.0);
  EXPECT_EQ(*ParseByteSize("--bytes", "64KiB"), 65536.0);
  EXPECT_EQ(*ParseByteSize("--bytes", "16GiB"), 16.0 * (1u << 30));
  EXPECT_EQ(*ParseByteSize("--bytes", "1.5GB"), 1.5e9);
  EXPECT_EQ(*ParseByteSize("--bytes", "1e9"), 1e9);
  EXPECT_FALSE(ParseByteSize("--bytes", "GiB").ok());
  EXPECT_EQ(FormatByteSize(1024), "1 KiB");
  EXPECT_EQ(FormatByteSize(1.5 * (1 << 20)), "1.5 MiB");
  EXPECT_EQ(FormatByteSize(1000), "1000 B");
}

}  // namespace
}  // namespace podsim::cli
