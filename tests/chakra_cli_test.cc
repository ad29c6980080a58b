// End-to-end tests of Chakra execution traces on the command line (issue 18): train writes one,
// replay reads it back to the same step, a generator-style trace with every node kind replays,
// and bad input gets one clear error.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/testing/run_podsim.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::With;

std::filesystem::path Scratch(const std::string& name) {
  std::string leaf = "podsim_chakra_cli_";
  leaf += name;
  leaf += '_';
  leaf += std::to_string(getpid());
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / leaf;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string Generator() {
  const char* source = std::getenv("PODSIM_SOURCE_DIR");
  return std::string(source != nullptr ? source : ".") + "/interop/testdata/generator/generator";
}

// A 16-rank training step (tensor parallelism in each NVLink node, two pipeline stages across
// them, data parallelism) written by train and replayed from its Chakra files: the same step.
TEST(ChakraCliTest, Issue18_SixteenRankStepRoundTripsThroughChakra) {
  const std::filesystem::path dir = Scratch("round_trip");
  const std::string prefix = (dir / "step").string();
  const std::vector<std::string> train = {
      "train",
      "--system",
      "h100:16",
      "--model",
      "custom:layers=8,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,vocab=4096",
      "--layout",
      "tp=4,pp=2,dp=2,microbatches=4",
      "--batch-tokens",
      "8Ki",
      "--seq",
      "1024",
      "--exact",
      "--json"};
  Outcome written = Podsim(With(train, {"--write-chakra", prefix}));
  ASSERT_EQ(written.code, 0) << written.err;
  for (int rank = 0; rank < 16; ++rank) {
    EXPECT_TRUE(std::filesystem::exists(prefix + "." + std::to_string(rank) + ".et")) << rank;
  }
  EXPECT_FALSE(std::filesystem::exists(prefix + ".16.et"));
  ASSERT_TRUE(std::filesystem::exists(prefix + ".comm_groups.json"));
  Outcome replayed =
      Podsim({"replay", "--chakra", prefix, "--system", "h100:16", "--exact", "--json"});
  ASSERT_EQ(replayed.code, 0) << replayed.err;
  const nlohmann::json a = nlohmann::json::parse(written.out);
  const nlohmann::json b = nlohmann::json::parse(replayed.out);
  EXPECT_EQ(a["step_time_s"].get<double>(), b["step_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(a["mfu"].get<double>(), b["mfu"].get<double>());
  EXPECT_TRUE(b["simulation"]["exact"].get<bool>());
  // Replaying writes the same trace again, byte for byte.
  Outcome again = Podsim({"replay", "--chakra", prefix, "--system", "h100:16", "--write-chakra",
                          (dir / "again").string()});
  ASSERT_EQ(again.code, 0) << again.err;
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (const std::string& file :
       {std::string(".0.et"), std::string(".15.et"), std::string(".comm_groups.json")}) {
    EXPECT_TRUE(bytes((dir / "again").string() + file) == bytes(prefix + file)) << file;
  }
  std::filesystem::remove_all(dir);
}

TEST(ChakraCliTest, Issue18_AGeneratorTraceWithEveryNodeKindReplays) {
  Outcome run = Podsim({"replay", "--chakra", Generator(), "--system", "h100:4"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("4 ranks, comm groups"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("8 compute at their recorded duration, 12 on the roofline, 24 "
                         "collectives, 4 sends and receives; no time for 4 CPU ops, 4 metadata"),
            std::string::npos)
      << run.out;
  // Each rank its own program, no symmetry: the default simulates all four, every transfer.
  EXPECT_NE(run.out.find("accuracy    exact: one chip per orbit of the step's symmetry (4 of 4 "
                         "chips), every transfer"),
            std::string::npos)
      << run.out;
  Outcome exact = Podsim({"replay", "--chakra", Generator(), "--system", "h100:4", "--exact"});
  ASSERT_EQ(exact.code, 0) << exact.err;
  EXPECT_NE(exact.out.find("accuracy    exact"), std::string::npos) << exact.out;
}

TEST(ChakraCliTest, Issue18_BadInputGetsOneClearError) {
  const std::filesystem::path dir = Scratch("errors");
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const Case cases[] = {
      {{"replay", "--chakra", Generator(), "--system", "h100:8"},
       "podsim: error: --chakra " + Generator() +
           ": the trace has 4 ranks and h100:8 has 8 chips: run it on a system of as many "
           "chips, or place its ranks with a rank map\n"},
      {{"replay", "--chakra", Generator()},
       "podsim: error: --system: required with --chakra (the system to run on)\n"},
      {{"replay", "--chakra", (dir / "none").string(), "--system", "h100:4"},
       "podsim: error: --chakra: " + (dir / "none").string() +
           ".0.et: no such file; a Chakra trace is one file per rank, " + (dir / "none").string() +
           ".0.et, " + (dir / "none").string() + ".1.et, ...\n"},
      {{"replay", "--chakra", Generator(), "--system", "h100:4", "--chakra-compute", "fast"},
       "podsim: error: --chakra-compute: unknown value 'fast'; expected recorded or roofline\n"},
      {{"replay", "x.pb", "--chakra", Generator(), "--system", "h100:4"},
       "podsim: error: replay: give a schedule FILE or --chakra PREFIX (a Chakra trace), not "
       "both\n"},
      {{"replay", "--chakra", Generator(), "--system", "h100:4", "--comm-groups",
        (dir / "missing.json").string()},
       "podsim: error: --comm-groups: " + (dir / "missing.json").string() + ": cannot open\n"},
  };
  for (const Case& c : cases) {
    Outcome run = Podsim(c.args);
    EXPECT_EQ(run.code, 1) << c.args[2];
    EXPECT_EQ(run.err, c.error);
    EXPECT_EQ(run.out, "");
  }
  // A trace that cannot be written leaves nothing behind.
  Outcome unwritable = Podsim({"replay", "--chakra", Generator(), "--system", "h100:4",
                               "--write-chakra", (dir / "no" / "such" / "dir").string()});
  EXPECT_EQ(unwritable.code, 1);
  EXPECT_NE(unwritable.err.find("--write-chakra"), std::string::npos) << unwritable.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podsim::cli
