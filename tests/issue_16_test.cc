// issue 16: every reproducer the fuzzing campaign found exits 1 with one line on stderr, quickly,
// leaving no file behind (D6 and the parser targets have their own tests: sim/atomic_file_test,
// fuzz/).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/testing/run_podsim.h"

namespace podsim::testing {
namespace {

class Issue16Test : public TempDirTest {
 protected:
  // Runs podsim, expects exit 1, one "podsim: error: " line containing `words`, no stdout, and
  // nothing left in the test's directory but `keep`.
  void ExpectOneError(const std::vector<std::string>& args, const std::string& words,
                      const std::vector<std::string>& keep = {}) {
    SCOPED_TRACE(args.empty() ? "" : args[0] + " " + (args.size() > 1 ? args[1] : ""));
    Outcome run = Podsim(args);
    EXPECT_EQ(run.code, 1) << run.err;
    EXPECT_TRUE(run.out.empty()) << run.out;
    EXPECT_EQ(run.err.rfind("podsim: error: ", 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_NE(run.err.find(words), std::string::npos) << run.err;
    std::vector<std::string> left;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      left.push_back(entry.path().filename().string());
    }
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, keep);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name), std::ios::binary) << text;
    return Path(name);
  }
};

TEST_F(Issue16Test, D1_EmptyArgumentIsAnErrorNotAHang) {
  ExpectOneError({"infer", "", "--json"}, "argument 2: empty");
}

TEST_F(Issue16Test, D2_TimesPastTheHorizonAreAnError) {
  const std::string words = "takes longer than podsim can represent";
  ExpectOneError(
      {"collective", "--system", "ring:8,bw=1e-300", "--op", "all-reduce", "--bytes", "1MiB"},
      words);
  ExpectOneError({"collective", "--system", "ring:8,bw=1", "--op", "all-reduce", "--bytes", "1e15"},
                 words);
  ExpectOneError({"train", "--system", "h100:1", "--model", "llama3-405b", "--layout", "dp=1",
                  "--batch-tokens", "1099511627776", "--seq", "4096"},
                 words);
  const std::string schedule = Write("s.textproto",
                                     "system: 'tpu-v5e:2x2' mesh { name: 'dp' size: 4 }\n"
                                     "programs { name: 'p' ops { name: 'long' kind: MATMUL "
                                     "stream: 'compute' duration_s: 1e10 } }\n");
  ExpectOneError({"replay", schedule}, words, {"s.textproto"});
  const std::string slow_chip = Write("c.textproto",
                                      "system { custom { chip { base: 'h100' name: 'slow' "
                                      "bf16_flops_per_s: 1e-300 } fabric { kind: SWITCH "
                                      "shape: [8] } } }\n"
                                      "train { model { preset: 'llama3-8b' } layout { tp: 8 } "
                                      "batch_tokens: 8192 seq: 4096 }\n");
  ExpectOneError({"run", slow_chip}, words, {"c.textproto", "s.textproto"});
}

TEST_F(Issue16Test, D2_HugeInferencePrefillIsAnError) {
  ExpectOneError({"infer", "--system", "h100:8", "--model", "llama3-70b", "--layout", "tp=8",
                  "--phase", "prefill", "--batch", "16777216", "--context", "16777216"},
                 "at most");
}

TEST_F(Issue16Test, D3_D4_WorkIsBoundedBeforeItIsSpent) {
  ExpectOneError({"train", "--system", "h100:8", "--model",
                  "custom:layers=262144,d_model=4096,ffn=14336,heads=32,kv_heads=8,head_dim=128,"
                  "vocab=128256",
                  "--layout", "tp=8", "--batch-tokens", "8192", "--seq", "4096"},
                 "layers must be at most 4096");
  ExpectOneError({"train", "--system", "h100:64", "--model", "llama3-8b", "--layout",
                  "pp=8,dp=8,microbatches=65536", "--batch-tokens", "2147483648", "--seq", "4096"},
                 "use fewer microbatches");
  const std::string bound = "(--max-transfers, default 5e6, raises it)";
  // Every rank of the ring (one rank per orbit, the default, is 32k transfers: issue 13).
  ExpectOneError({"collective", "--system", "ring:16384", "--op", "all-reduce", "--bytes", "1MiB",
                  "--reference"},
                 bound);
  // Every rank of the fat tree (one per orbit of slot rotations and pod translations, the
  // default, is 2.3 M transfers).
  ExpectOneError({"collective", "--system", "h100:4096", "--op", "all-reduce", "--bytes", "1GiB",
                  "--reference"},
                 bound);
  ExpectOneError({"collective", "--system", "h100:65536", "--op", "all-reduce", "--bytes", "1GiB"},
                 bound);
  ExpectOneError({"collective", "--system", "ring:64", "--op", "all-reduce", "--bytes", "1MiB",
                  "--max-transfers", "100"},
                 "over the 100 left");
}

TEST_F(Issue16Test, D4_TopologyOfAMillionChipRingAnswers) {
  Outcome run = Podsim({"topology", "ring:1048576", "--json"});
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("\"diameter_hops\": 524288"), std::string::npos) << run.out;
}

TEST_F(Issue16Test, D5_InvalidUtf8IsRefusedWhereItEnters) {
  const std::string scenario =
      Write("u.textproto",
            "system { custom { chip { base: 'tpu-v5p' name: '\xff' } fabric { kind: TORUS "
            "shape: [4, 4] wrap: 'all' } } }\n"
            "collective { op: ALL_GATHER bytes: 1048576 }\n");
  ExpectOneError({"run", scenario, "--json"}, "system.custom.chip.name: not valid UTF-8",
                 {"u.textproto"});
  ExpectOneError({"run", scenario, "--trace", Path("u.json")}, "not valid UTF-8", {"u.textproto"});
  ExpectOneError({"topology", "h100:8\xff"}, "argument 2: not valid UTF-8", {"u.textproto"});
}

// D9: protobuf's own log line (invalid UTF-8 in a binary string field) no longer joins the error.
TEST_F(Issue16Test, D9_BinaryScheduleWithInvalidUtf8IsOneLine) {
  const std::string schedule = Write("bad.pb", std::string("\x0a\x01\xff", 3));
  ExpectOneError({"replay", schedule}, "not a binary podsim.schedule.Schedule", {"bad.pb"});
}

TEST_F(Issue16Test, D10_D11_D12_D14_FlagsAreCheckedAndEchoedSafely) {
  ExpectOneError({"topology", "h100\n:8"},
                 "argument 2: holds a control character (got \"h100\\n:8\")");
  ExpectOneError({"sweep", "--system", "h100:8", "--model", "llama3-8b", "--batch-tokens", "1Mi",
                  "--seq", "4096", "--jobs", "1024"},
                 "must be an integer in [1, 256]");
  ExpectOneError(
      {"infer", "--system", "h100:8", "--model", "llama3-70b", "--layout", "tp=8", "--phase",
       "decode", "--batch", "64", "--context", "4096", "--chip-hour-usd", "1e308"},
      "<= 1e6");
  ExpectOneError(
      {"collective", "--system", "ring:100000000", "--op", "all-reduce", "--bytes", "1MiB"},
      "over podsim's limit of 1048576 chips");
}

TEST_F(Issue16Test, OutputsMustBeTwoFilesAndFlagsGivenOnce) {
  const std::vector<std::string> train = {"train",     "--system", "h100:8", "--model",
                                          "llama3-8b", "--layout", "tp=8",   "--batch-tokens",
                                          "32Ki",      "--seq",    "4096"};
  ExpectOneError(With(train, {"--trace", Path("same.json"), "--write-schedule", Path("same.json")}),
                 "write them to two files");
  // One file however it is spelled (a demanding user's audit of 2026-12-07: the trace was lost
  // and the run said it wrote it): through "." and "..", and through a symbolic link.
  ExpectOneError(
      With(train, {"--trace", Path("same.json"), "--write-schedule", Path("x/../same.json")}),
      "write them to two files");
  ExpectOneError(With(train, {"--report", Path("r.html"), "--write-schedule", Path("./r.html")}),
                 "write them to two files");
  Write("real.json", "{}");
  std::filesystem::create_symlink(Path("real.json"), Path("alias.json"));
  ExpectOneError(
      With(train, {"--trace", Path("real.json"), "--write-schedule", Path("alias.json")}),
      "write them to two files", {"alias.json", "real.json"});
  // A link to a file the run would create (a review of the fix: the trace made the link's
  // target, and the schedule was then written through the link over it).
  std::filesystem::create_symlink(Path("later.json"), Path("dangling.json"));
  std::vector<std::string> keep = {"alias.json", "dangling.json", "real.json"};
  ExpectOneError(
      With(train, {"--trace", Path("later.json"), "--write-schedule", Path("dangling.json")}),
      "write them to two files", keep);
  // And the files of a Chakra trace: PREFIX.comm_groups.json and PREFIX.<rank>.et, any rank.
  ExpectOneError(With(train, {"--trace", Path("c.comm_groups.json"), "--write-chakra", Path("c")}),
                 "is one of the Chakra trace's files", keep);
  ExpectOneError(With(train, {"--write-schedule", Path("c.12.et"), "--write-chakra", Path("c")}),
                 "is one of the Chakra trace's files", keep);
  const std::string schedule = Write("s.textproto",
                                     "system: 'h100:8' mesh { name: 'dp' size: 8 }\n"
                                     "programs { name: 'p' ops { name: 'm' kind: MATMUL stream: "
                                     "'compute' flops: 1e9 } }\n");
  keep.push_back("s.textproto");
  ExpectOneError({"replay", schedule, "--trace", Path("c.3.et"), "--write-chakra", Path("c")},
                 "--trace: '" + Path("c.3.et") + "' is one of the Chakra trace's files", keep);
  EXPECT_EQ(Podsim(With(train, {"--seq", "4096"})).code, 2);
}

// A fuzzing campaign of 2026-12-07 (tools/fuzz_commands.py --seed 4107, input 549): a trace
// written whole, then a schedule file in a missing folder, left the trace behind after exit 1.
// Every output is now checked before the run, so none is written when one cannot be.
TEST_F(Issue16Test, NoOutputIsWrittenWhenAnotherCannotBe) {
  const std::vector<std::string> train = {"train",     "--system", "h100:8", "--model",
                                          "llama3-8b", "--layout", "tp=8",   "--batch-tokens",
                                          "32Ki",      "--seq",    "4096"};
  const std::string missing = Path("missing") + "/";
  ExpectOneError(With(train, {"--trace", Path("step.json"), "--write-schedule", missing + "s.pb"}),
                 "--write-schedule: " + missing + "s.pb: cannot create a file in " + missing);
  ExpectOneError(With(train, {"--trace", Path("step.json"), "--write-schedule", Path("s.pb"),
                              "--write-chakra", missing + "et"}),
                 "--write-chakra: " + missing + "et.comm_groups.json: cannot create a file in");
  ExpectOneError(With(train, {"--write-schedule", Path("s.pb"), "--report", missing + "r.html"}),
                 "--report: " + missing + "r.html: cannot create a file in");
  const std::vector<std::string> infer = {
      "infer",   "--system", "h100:8",  "--model", "llama3-8b", "--layout", "tp=8",
      "--phase", "decode",   "--batch", "8",       "--context", "1024"};
  ExpectOneError(With(infer, {"--trace", Path("d.json"), "--report", Path("r")}),
                 "must end in .html");
  ExpectOneError(With(infer, {"--trace", Path("d.json"), "--write-chakra", missing + "et"}),
                 "--write-chakra: " + missing + "et.comm_groups.json: cannot create a file in");
  std::filesystem::create_directory(Path("folder.html"));
  ExpectOneError(With(infer, {"--trace", Path("d.json"), "--report", Path("folder.html")}),
                 "--report: " + Path("folder.html") + ": is a folder, not a file", {"folder.html"});
}

}  // namespace
}  // namespace podsim::testing
