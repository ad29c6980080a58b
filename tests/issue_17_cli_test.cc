// Issue 17: a command line that never misleads. One test per item of the issue's "Why" list that
// the command line answers: spelling suggestions, `podsim help CMD`, `podsim list`, --system on
// topology, booleans, --trace-chips naming a chip that is not simulated, token suffixes, layouts
// that do not fit, the default's printed command, the pipeline bubble, and sources a clone holds.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/testing/run_podsim.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;

std::filesystem::path SourceDir() {
  const char* dir = std::getenv("PODSIM_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::filesystem::path TempPath(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("podsim_issue17_" + std::to_string(::testing::UnitTest::GetInstance()
                                                                       ->random_seed()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

const std::vector<std::string> kSmallTrain = {"train",         "--system", "h100:16",
                                              "--model",       "llama3-8b", "--layout",
                                              "tp=8,dp=2",     "--seq",     "4096",
                                              "--batch-tokens"};

std::vector<std::string> With(std::vector<std::string> base, std::vector<std::string> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

TEST(Issue17CliTest, MisspelledFlagNamesTheFlagItMeant) {
  Outcome run = Podsim({"train", "--sytem", "h100:8", "--model", "llama3-8b"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(run.err,
            "podsim: error: unknown flag '--sytem' of 'podsim train' (did you mean '--system'?); "
            "podsim help train lists its flags\n");
  EXPECT_TRUE(run.out.empty());
  // A flag of an option group (infer's --phase) is known; its misspelling is caught too.
  Outcome infer = Podsim({"infer", "--system", "h100:8", "--model", "llama3-8b", "--layout",
                          "tp=8", "--phse", "decode", "--batch", "8", "--context", "128"});
  EXPECT_EQ(infer.code, 2);
  EXPECT_NE(infer.err.find("(did you mean '--phase'?)"), std::string::npos) << infer.err;
  // Global flags after the command, and --flag=value forms, are not misspellings.
  EXPECT_EQ(Podsim({"topology", "h100:8", "--max-transfers=1e6"}).code, 0);
}

TEST(Issue17CliTest, MisspelledCommandNamesTheCommandItMeant) {
  Outcome run = Podsim({"trian", "--system", "h100:8"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("unknown command 'trian' (did you mean 'train'?); commands: topology, "),
            std::string::npos)
      << run.err;
}

TEST(Issue17CliTest, HelpCommandDescribesOneCommand) {
  Outcome train = Podsim({"help", "train"});
  ASSERT_EQ(train.code, 0) << train.err;
  EXPECT_NE(train.out.find("Usage: podsim train"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("--batch-tokens"), std::string::npos);
  // The breakdown's categories are explained where the flags are.
  EXPECT_NE(train.out.find("bubble + idle is the pipeline bubble"), std::string::npos);
  Outcome all = Podsim({"help"});
  ASSERT_EQ(all.code, 0);
  EXPECT_NE(all.out.find("Usage: podsim [OPTIONS] [SUBCOMMAND]"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("podsim list shows"), std::string::npos);
  Outcome bad = Podsim({"help", "trian"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err, "podsim: error: help: unknown command 'trian' (did you mean 'train'?)\n");
}

TEST(Issue17CliTest, ListShowsEveryPresetWithItsSource) {
  Outcome run = Podsim({"list", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["models"].size(), 5u);
  for (const auto& m : j["models"]) {
    EXPECT_FALSE(m["source"].get<std::string>().empty()) << m["name"];
    EXPECT_GT(m["params"].get<double>(), 1e9);
  }
  ASSERT_EQ(j["chips"].size(), 10u);
  for (const auto& c : j["chips"]) {
    EXPECT_FALSE(c["source"].get<std::string>().empty()) << c["name"];
    EXPECT_GT(c["bf16_flops_per_s"].get<double>(), 0);
  }
  // Every example system is accepted as it is printed.
  for (const auto& s : j["systems"]) {
    EXPECT_EQ(Podsim({"topology", s["example"].get<std::string>()}).code, 0) << s["example"];
  }
  for (const auto& a : j["algorithms"]) {
    EXPECT_FALSE(a["summary"].get<std::string>().empty()) << a["name"];
  }
  Outcome text = Podsim({"list", "chips"});
  ASSERT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("h100"), std::string::npos);
  EXPECT_EQ(text.out.find("llama3-8b"), std::string::npos);  // One kind only.
  Outcome bad = Podsim({"list", "model"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("(did you mean 'models'?)"), std::string::npos) << bad.err;
}

TEST(Issue17CliTest, TopologyTakesSystemAsAFlagToo) {
  Outcome positional = Podsim({"topology", "tpu-v5e:8x8", "--json"});
  Outcome flag = Podsim({"topology", "--system", "tpu-v5e:8x8", "--json"});
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_EQ(flag.out, positional.out);
  Outcome both = Podsim({"topology", "tpu-v5e:8x8", "--system", "tpu-v5e:8x8"});
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("give the system once"), std::string::npos);
  EXPECT_EQ(Podsim({"topology"}).code, 1);
}

TEST(Issue17CliTest, BooleansAcceptTrueAndFalse) {
  const std::string model =
      "custom:layers=2,d_model=1024,ffn=4096,heads=8,kv_heads=8,head_dim=128,vocab=32000";
  auto train = [&](const std::string& keys, const std::string& layout) {
    return Podsim({"train", "--system", "h100:8", "--model", model + keys, "--layout", layout,
                   "--batch-tokens", "32Ki", "--seq", "4096", "--json"});
  };
  Outcome words = train(",gated=false,tied=true", "tp=8,sp=true");
  Outcome digits = train(",gated=0,tied=1", "tp=8,sp=1");
  ASSERT_EQ(words.code, 0) << words.err;
  ASSERT_EQ(digits.code, 0) << digits.err;
  // Same model and layout, so the same result but for the model's name.
  nlohmann::json a = nlohmann::json::parse(words.out);
  nlohmann::json b = nlohmann::json::parse(digits.out);
  a.erase("model");
  b.erase("model");
  EXPECT_EQ(a, b);
  EXPECT_NE(train(",gated=false", "tp=8").out, train(",gated=true", "tp=8").out);
  Outcome bad = train(",gated=no", "tp=8");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("gated must be true, false, 1 or 0 (got 'no')"), std::string::npos);
}

TEST(Issue17CliTest, TracingAChipThatIsNotSimulatedIsAnError) {
  const std::filesystem::path trace = TempPath("not_simulated.json");
  std::filesystem::remove(trace);
  Outcome run = Podsim(With(kSmallTrain, {"64Ki", "--trace", trace.string(), "--trace-chips", "3"}));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("--trace-chips: chip 3 is not simulated in this mode (simulated: 0); "
                         "--every-chip simulates every chip"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(trace));
  Outcome every = Podsim(With(
      kSmallTrain, {"64Ki", "--trace", trace.string(), "--trace-chips", "3", "--every-chip"}));
  ASSERT_EQ(every.code, 0) << every.err;
  EXPECT_TRUE(std::filesystem::exists(trace));
  std::filesystem::remove(trace);
}

TEST(Issue17CliTest, DecimalAndBinarySuffixesAreExplained) {
  Outcome decimal = Podsim(With(kSmallTrain, {"4M"}));
  EXPECT_EQ(decimal.code, 1);
  EXPECT_EQ(decimal.err,
            "podsim: error: --batch-tokens: 4000000 is not a whole number of sequences of --seq "
            "4096 tokens (M is 10^6; 4Mi is 4194304 tokens, 1024 sequences)\n");
  EXPECT_EQ(Podsim(With(kSmallTrain, {"64Ki", "--json"})).code, 0);
  Outcome help = Podsim({"help", "train"});
  EXPECT_NE(help.out.find("4Mi (4 x 2^20 = 4,194,304) or"), std::string::npos);
  // Byte sizes take the same suffixes, with or without B.
  Outcome bytes = Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes",
                          "64Mi", "--json"});
  Outcome with_b = Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes",
                           "64MiB", "--json"});
  ASSERT_EQ(bytes.code, 0) << bytes.err;
  EXPECT_EQ(bytes.out, with_b.out);
}

TEST(Issue17CliTest, ALayoutThatDoesNotFitWarnsOrFails) {
  // tp=8,dp=2 of llama3-8b at 256Ki tokens keeps 190 GiB of activations per H100.
  Outcome warned = Podsim(With(kSmallTrain, {"256Ki"}));
  ASSERT_EQ(warned.code, 0) << warned.err;
  EXPECT_EQ(warned.err,
            "podsim: warning: layout dp=2,fsdp=1,tp=8,pp=1 does not fit: 205.9 GiB per chip over "
            "the 74.51 GiB of HBM; the result assumes it would (--require-fit makes this an "
            "error)\n");
  EXPECT_NE(warned.out.find("fits        NO"), std::string::npos);
  const std::filesystem::path schedule = TempPath("unfit.textproto");
  std::filesystem::remove(schedule);
  Outcome required = Podsim(
      With(kSmallTrain, {"256Ki", "--require-fit", "--write-schedule", schedule.string()}));
  EXPECT_EQ(required.code, 1);
  EXPECT_EQ(required.err,
            "podsim: error: --require-fit: layout dp=2,fsdp=1,tp=8,pp=1 does not fit: 205.9 GiB "
            "per chip over the 74.51 GiB of HBM\n");
  EXPECT_TRUE(required.out.empty());
  EXPECT_FALSE(std::filesystem::exists(schedule));
  // A layout that fits says nothing on stderr, with or without the flag.
  Outcome fits = Podsim(With(kSmallTrain, {"32Ki", "--require-fit"}));
  EXPECT_EQ(fits.code, 0) << fits.err;
  EXPECT_TRUE(fits.err.empty()) << fits.err;
  // Inference too.
  Outcome infer = Podsim({"infer", "--system", "h100:8", "--model", "llama3-70b", "--layout",
                          "tp=8", "--phase", "decode", "--batch", "4096", "--context", "8192",
                          "--require-fit"});
  EXPECT_EQ(infer.code, 1);
  EXPECT_NE(infer.err.find("--require-fit: batch 4096 on layout"), std::string::npos) << infer.err;
}

TEST(Issue17CliTest, TheDefaultsPrintedCommandReproducesIt) {
  Outcome bare = Podsim({});
  ASSERT_EQ(bare.code, 0) << bare.err;
  std::smatch command;
  const std::regex printed("\n  podsim (train [^\n]*)\n");
  ASSERT_TRUE(std::regex_search(bare.out, command, printed)) << bare.out;
  std::vector<std::string> args;
  std::string words = command[1].str();
  for (size_t start = 0; start < words.size();) {
    size_t end = words.find(' ', start);
    if (end == std::string::npos) end = words.size();
    args.push_back(words.substr(start, end - start));
    start = end + 1;
  }
  Outcome rerun = Podsim(args);
  ASSERT_EQ(rerun.code, 0) << rerun.err;
  // The report after the default's three-line preamble is the printed command's report.
  const std::string report = bare.out.substr(bare.out.find("\nsystem ") + 1);
  EXPECT_EQ(report, rerun.out);
}

TEST(Issue17CliTest, PipelineBubbleIsBubblePlusIdle) {
  Outcome run = Podsim({"train", "--system", "h100:16", "--model", "llama3-8b", "--layout",
                        "tp=4,pp=2,dp=2,microbatches=8", "--batch-tokens", "256Ki", "--seq", "4096"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("pipeline bubble"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(bubble + idle: waiting on other stages)"), std::string::npos);
  Outcome flat = Podsim(With(kSmallTrain, {"32Ki"}));
  EXPECT_EQ(flat.out.find("pipeline bubble"), std::string::npos);  // pp = 1: no pipeline.
}

TEST(Issue17CliTest, OutputCitesOnlyFilesACloneHolds) {
  const std::regex cited("(?:docs|collectives|workloads|topology|cli|sim)/[A-Za-z0-9_./-]+\\."
                         "(?:md|yaml|h|cc|proto)");
  std::set<std::string> files;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "1GiB"},
           {"collective", "--system", "tpu-v5e:8x8", "--op", "all-gather", "--bytes", "1GiB"},
           {"list"},
           With(kSmallTrain, {"32Ki"})}) {
    Outcome run = Podsim(args);
    ASSERT_EQ(run.code, 0) << run.err;
    EXPECT_EQ(run.out.find("shared/"), std::string::npos) << run.out;
    for (std::sregex_iterator it(run.out.begin(), run.out.end(), cited), end; it != end; ++it) {
      files.insert(it->str());
    }
  }
  EXPECT_TRUE(files.contains("docs/reference/measured.md")) << files.size();
  for (const std::string& file : files) {
    EXPECT_TRUE(std::filesystem::exists(SourceDir() / file)) << file;
  }
}

}  // namespace
}  // namespace podsim::cli
