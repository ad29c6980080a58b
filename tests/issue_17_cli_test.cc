// Issue 17: a command line that never misleads. One test per item of the issue's "Why" list that
// the command line answers: spelling suggestions, `podsim help CMD`, `podsim list`, --system on
// topology, booleans, --trace-chips naming a chip that is not simulated, token suffixes, layouts
// that do not fit, the default's printed command, the pipeline bubble, and sources a clone holds.

#include <gtest/gtest.h>

#include <algorithm>
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
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("podsim_issue17_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

const std::vector<std::string> kSmallTrain = {"train",     "--system",      "h100:16",   "--model",
                                              "llama3-8b", "--layout",      "tp=8,dp=2", "--seq",
                                              "4096",      "--batch-tokens"};

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
  Outcome infer = Podsim({"infer", "--system", "h100:8", "--model", "llama3-8b", "--layout", "tp=8",
                          "--phse", "decode", "--batch", "8", "--context", "128"});
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
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err, "podsim: error: help: unknown command 'trian' (did you mean 'train'?)\n");
}

TEST(Issue17CliTest, ListShowsEveryPresetWithItsSource) {
  Outcome run = Podsim({"list", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["models"].size(), 12u);
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
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("(did you mean 'models'?)"), std::string::npos) << bad.err;
}

TEST(Issue17CliTest, TopologyTakesSystemAsAFlagToo) {
  Outcome positional = Podsim({"topology", "tpu-v5e:8x8", "--json"});
  Outcome flag = Podsim({"topology", "--system", "tpu-v5e:8x8", "--json"});
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_EQ(flag.out, positional.out);
  Outcome both = Podsim({"topology", "tpu-v5e:8x8", "--system", "tpu-v5e:8x8"});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("give the system once"), std::string::npos);
  EXPECT_EQ(Podsim({"topology"}).code, 2);
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
  Outcome run =
      Podsim(With(kSmallTrain, {"64Ki", "--trace", trace.string(), "--trace-chips", "3"}));
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.err.find("--trace-chips: chip 3 is not simulated in this mode (simulated: 0); "
                         "--every-chip simulates every chip"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(trace));
  Outcome every = Podsim(
      With(kSmallTrain, {"64Ki", "--trace", trace.string(), "--trace-chips", "3", "--every-chip"}));
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
  Outcome bytes = Podsim(
      {"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "64Mi", "--json"});
  Outcome with_b = Podsim(
      {"collective", "--system", "h100:8", "--op", "all-reduce", "--bytes", "64MiB", "--json"});
  ASSERT_EQ(bytes.code, 0) << bytes.err;
  EXPECT_EQ(bytes.out, with_b.out);
}

TEST(Issue17CliTest, ALayoutThatDoesNotFitWarnsOrFails) {
  // tp=8,dp=2 of llama3-8b at 256Ki tokens keeps 190 GiB of activations per H100.
  Outcome warned = Podsim(With(kSmallTrain, {"256Ki"}));
  ASSERT_EQ(warned.code, 0) << warned.err;
  EXPECT_EQ(warned.err,
            "podsim: warning: layout dp=2,fsdp=1,tp=8,pp=1 does not fit: 209.8 GiB per chip over "
            "the 74.51 GiB of HBM; the result assumes it would (--require-fit makes this an "
            "error)\n");
  EXPECT_NE(warned.out.find("fits        NO"), std::string::npos);
  const std::filesystem::path schedule = TempPath("unfit.textproto");
  std::filesystem::remove(schedule);
  Outcome required =
      Podsim(With(kSmallTrain, {"256Ki", "--require-fit", "--write-schedule", schedule.string()}));
  EXPECT_EQ(required.code, 1);
  EXPECT_EQ(required.err,
            "podsim: error: --require-fit: layout dp=2,fsdp=1,tp=8,pp=1 does not fit: 209.8 GiB "
            "per chip over the 74.51 GiB of HBM\n");
  EXPECT_TRUE(required.out.empty());
  EXPECT_FALSE(std::filesystem::exists(schedule));
  // A layout that fits says nothing on stderr, with or without the flag.
  Outcome fits = Podsim(With(kSmallTrain, {"32Ki", "--require-fit"}));
  EXPECT_EQ(fits.code, 0) << fits.err;
  EXPECT_TRUE(fits.err.empty()) << fits.err;
  // Inference too.
  Outcome infer =
      Podsim({"infer", "--system", "h100:8", "--model", "llama3-70b", "--layout", "tp=8", "--phase",
              "decode", "--batch", "4096", "--context", "8192", "--require-fit"});
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
  Outcome run =
      Podsim({"train", "--system", "h100:16", "--model", "llama3-8b", "--layout",
              "tp=4,pp=2,dp=2,microbatches=8", "--batch-tokens", "256Ki", "--seq", "4096"});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("\npipeline    bubble + idle = "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" of the step: the pipeline bubble, waiting on other stages\n"),
            std::string::npos);
  Outcome flat = Podsim(With(kSmallTrain, {"32Ki"}));
  EXPECT_EQ(flat.out.find("pipeline bubble"), std::string::npos);  // pp = 1: no pipeline.
}

TEST(Issue17CliTest, OutputCitesOnlyFilesACloneHolds) {
  const std::regex cited(
      "(?:docs|collectives|workloads|topology|cli|sim)/[A-Za-z0-9_./-]+\\."
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

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(Issue17CliTest, SizeSweepsAsNcclTestsRunThem) {
  const std::vector<std::string> sweep = {
      "collective", "--system", "h100:8", "--op", "all-reduce", "-b", "8", "-e", "8Gi", "-f", "2"};
  Outcome text = Podsim(sweep);
  ASSERT_EQ(text.code, 0) << text.err;
  const std::vector<std::string> lines = Lines(text.out);
  const auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("size (B)") != std::string::npos;
  });
  ASSERT_NE(header, lines.end()) << text.out;
  for (const char* column : {"count (elts)", "type", "time (us)", "algbw (GB/s)", "busbw (GB/s)"}) {
    EXPECT_NE(header->find(column), std::string::npos) << column;
  }
  // 8 B to 8 GiB doubling: 31 sizes, the first 8 B (2 floats), the last 8589934592 B.
  ASSERT_EQ(lines.end() - header - 1, 31) << text.out;
  EXPECT_NE(header[1].find("             8              2   float"), std::string::npos)
      << header[1];
  EXPECT_NE(lines.back().find("8589934592"), std::string::npos) << lines.back();
  // CSV: the same rows; JSON: the same sizes with their counts.
  std::vector<std::string> csv_args = sweep;
  csv_args.push_back("--csv");
  Outcome csv = Podsim(csv_args);
  ASSERT_EQ(csv.code, 0) << csv.err;
  const std::vector<std::string> rows = Lines(csv.out);
  ASSERT_EQ(rows.size(), 32u);
  EXPECT_EQ(rows[0], "size_bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm");
  EXPECT_TRUE(rows[1].starts_with("8,2,float,")) << rows[1];
  std::vector<std::string> json_args = sweep;
  json_args.push_back("--json");
  const nlohmann::json j = nlohmann::json::parse(Podsim(json_args).out);
  ASSERT_EQ(j["sweep"].size(), 31u);
  EXPECT_EQ(j["sweep"][30]["count"].get<double>(), 8589934592.0 / 4);
  // G is 10^9 as everywhere in podsim: -e 8G stops at 4 GiB.
  std::vector<std::string> decimal = sweep;
  decimal[8] = "8G";
  decimal.push_back("--csv");
  EXPECT_EQ(Lines(Podsim(decimal).out).size(), 31u);
}

TEST(Issue17CliTest, ShortFlagsTakeTheirValueAttached) {
  Outcome attached =
      Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "-b8", "-e64", "--csv"});
  ASSERT_EQ(attached.code, 0) << attached.err;
  Outcome apart = Podsim(
      {"collective", "--system", "h100:8", "--op", "all-reduce", "-b", "8", "-e", "64", "--csv"});
  EXPECT_EQ(attached.out, apart.out);
  EXPECT_EQ(Podsim({"-vv", "topology", "h100:8"}).code, 0);
  Outcome unknown = Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "-x8"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown flag '-x8'"), std::string::npos) << unknown.err;
}

TEST(Issue17CliTest, SizesThatRoundAlikeAreListedOnce) {
  // 1, 1.5, 2.25, ... rounded up to whole shards of 8 ranks: 8 six times, then 16.
  Outcome run = Podsim({"collective", "--system", "h100:8", "--op", "all-reduce", "-b", "1", "-e",
                        "16", "-f", "1.5", "--csv"});
  ASSERT_EQ(run.code, 0) << run.err;
  const std::vector<std::string> rows = Lines(run.out);
  ASSERT_EQ(rows.size(), 3u) << run.out;
  EXPECT_TRUE(rows[1].starts_with("8,2,")) << rows[1];
  EXPECT_TRUE(rows[2].starts_with("16,4,")) << rows[2];
}

TEST(Issue17CliTest, UsageErrorsAreOnePodsimLine) {
  Outcome missing = Podsim({"train", "--system", "h100:8"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(missing.err.starts_with("podsim: error: ")) << missing.err;
  EXPECT_TRUE(missing.err.ends_with("; podsim help train lists the flags\n")) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1);
}

TEST(Issue17CliTest, SizeSweepBoundsAreChecked) {
  auto sweep = [](std::vector<std::string> range) {
    std::vector<std::string> args = {"collective", "--system", "h100:8", "--op", "all-reduce"};
    args.insert(args.end(), range.begin(), range.end());
    return Podsim(args);
  };
  Outcome half = sweep({"-b", "8"});
  EXPECT_EQ(half.code, 1);
  EXPECT_NE(half.err.find("needs both -b/--min-bytes and -e/--max-bytes"), std::string::npos);
  Outcome flat = sweep({"-b", "8", "-e", "1Mi", "-f", "1"});
  EXPECT_EQ(flat.code, 1);
  EXPECT_NE(flat.err.find("must be > 1"), std::string::npos) << flat.err;
  Outcome many = sweep({"-b", "1", "-e", "1e15", "-f", "1.01"});
  EXPECT_EQ(many.code, 1);
  EXPECT_NE(many.err.find("more than 128 sizes"), std::string::npos) << many.err;
  Outcome both = sweep({"--bytes", "1Mi", "-b", "8", "-e", "1Mi"});
  EXPECT_EQ(both.code, 1);
  Outcome backwards = sweep({"-b", "1Mi", "-e", "8"});
  EXPECT_EQ(backwards.code, 1);
  EXPECT_NE(backwards.err.find("must be >= min_bytes"), std::string::npos) << backwards.err;
}

TEST(Issue17CliTest, CollectivesNameTheirBottleneckAndWhatWraps) {
  const std::vector<std::string> ring = {"collective", "--system",   "tpu-v5e:16x16",
                                         "--op",       "all-reduce", "--bytes",
                                         "256MiB",     "--axes",     "x"};
  Outcome text = Podsim(ring);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("torus       x wraps (spanned), y wraps\n"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("bottleneck  512 links at "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(ici)"), std::string::npos);
  // The quotient's figure is the full simulation's: every x link of the 16 rings is as busy.
  std::vector<std::string> json = ring;
  json.push_back("--json");
  std::vector<std::string> reference = json;
  reference.push_back("--reference");
  const nlohmann::json quotient = nlohmann::json::parse(Podsim(json).out);
  const nlohmann::json full = nlohmann::json::parse(Podsim(reference).out);
  ASSERT_TRUE(quotient["symmetric"].get<bool>());
  ASSERT_FALSE(full["symmetric"].get<bool>());
  EXPECT_EQ(quotient["bottleneck"]["link_count"], 512);
  EXPECT_EQ(full["bottleneck"]["link_count"], 512);
  EXPECT_NEAR(quotient["bottleneck"]["utilisation"].get<double>(),
              full["bottleneck"]["utilisation"].get<double>(), 1e-9);
  EXPECT_EQ(quotient["bottleneck"]["links"], full["bottleneck"]["links"]);  // The same names.
  EXPECT_GT(full["bottleneck"]["utilisation"].get<double>(), 0.5);
  EXPECT_LE(full["bottleneck"]["utilisation"].get<double>(), 1.0);
  EXPECT_EQ(quotient["wraps"], nlohmann::json::parse(R"({"x": true, "y": true})"));
  // A slice too small to wrap says so.
  Outcome line = Podsim({"collective", "--system", "tpu-v5p:2x2x4", "--op", "all-gather", "--bytes",
                         "64MiB", "--axes", "z"});
  ASSERT_EQ(line.code, 0) << line.err;
  EXPECT_NE(line.out.find("z does not wrap (spanned)"), std::string::npos) << line.out;
  // On NVLink the bottleneck is a GPU's link into the switches.
  Outcome nvlink =
      Podsim({"collective", "--system", "h100:8", "--op", "all-gather", "--bytes", "1GiB"});
  ASSERT_EQ(nvlink.code, 0) << nvlink.err;
  EXPECT_NE(nvlink.out.find("bottleneck  "), std::string::npos);
  EXPECT_EQ(nvlink.out.find("torus "), std::string::npos);
}

}  // namespace
}  // namespace podsim::cli
