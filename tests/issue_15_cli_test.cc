// issue 15: mixture-of-experts models and expert parallelism from the command line and scenario
// files. A step of an MoE preset runs with ep folded into the data axes (and tp with etp=1); the
// dispatch and combine all-to-alls are in the schedule over the ep group's mesh axes and in the
// trace; the routed experts' gradients are reduced over what remains of dp; bad MoE inputs are
// one error line naming the key.

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/testing/run_podsim.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::ReadFile;
using podsim::testing::With;

// Mixtral 8x7B cut to 2 layers on one 8-GPU node: 8 experts, one per GPU.
const std::vector<std::string> kTrain = {
    "train",    "--system",  "h100:8",         "--model", "mixtral-8x7b:layers=2",
    "--layout", "dp=8,ep=8", "--batch-tokens", "64Ki",    "--seq",
    "4096"};

class Issue15CliTest : public podsim::testing::TempDirTest {};

TEST_F(Issue15CliTest, MoeStepRunsWithDispatchAndCombineOnTheEpGroup) {
  Outcome run = Podsim(With(kTrain, {"--json", "--write-schedule", Path("step.textproto"),
                                     "--trace", Path("step.json")}));
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_GT(j["breakdown"]["exposed_ep"].get<double>(), 0) << run.out;
  // ep takes every chip of dp: nothing is left to reduce the experts' gradients over.
  EXPECT_FALSE(j["breakdown"].contains("exposed_expert-dp")) << run.out;
  const std::string schedule = ReadFile(Path("step.textproto"));
  EXPECT_NE(schedule.find("name: \"ep.all-to-all.dispatch\""), std::string::npos);
  EXPECT_NE(schedule.find("name: \"ep.all-to-all.combine.dx\""), std::string::npos);
  EXPECT_NE(schedule.find("collective: ALL_TO_ALL\n    axes: \"ep\""), std::string::npos);
  EXPECT_NE(schedule.find("mesh {\n  name: \"ep\"\n  size: 8\n}"), std::string::npos) << schedule;
  const std::string trace = ReadFile(Path("step.json"));
  EXPECT_NE(trace.find("ep.all-to-all.dispatch"), std::string::npos);
  EXPECT_NE(trace.find("ep.all-to-all.combine"), std::string::npos);
  // The schedule replays to the same step.
  Outcome replay = Podsim({"replay", Path("step.textproto"), "--json"});
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(nlohmann::json::parse(replay.out)["step_time_s"], j["step_time_s"]);
}

// With etp=1 the ep group spans tp; experts are whole on each chip, their gradients reduced over
// the dp chips ep leaves.
TEST_F(Issue15CliTest, EpFoldsIntoTpWithEtpOne) {
  Outcome run = Podsim({"train", "--system", "h100:16", "--model", "mixtral-8x7b:layers=2",
                        "--layout", "dp=8,tp=2,ep=8,etp=1,sp=1", "--batch-tokens", "64Ki", "--seq",
                        "4096", "--json", "--write-schedule", Path("step.textproto")});
  ASSERT_EQ(run.code, 0) << run.err;
  const std::string schedule = ReadFile(Path("step.textproto"));
  EXPECT_NE(schedule.find("collective: ALL_TO_ALL\n    axes: \"tp\"\n    axes: \"ep\""),
            std::string::npos);
  EXPECT_NE(schedule.find("name: \"expert-dp.all-reduce.experts\""), std::string::npos);
  EXPECT_EQ(schedule.find("etp."), std::string::npos);
}

TEST_F(Issue15CliTest, BadMoeInputsAreOneErrorLineNamingTheKey) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"train", "--system", "h100:8", "--model", "mixtral-8x7b:layers=2", "--layout", "dp=8,ep=3",
        "--batch-tokens", "64Ki", "--seq", "4096"},
       "podsim: error: --layout: layout dp=8,fsdp=1,tp=1,pp=1,ep=3: ep=3 must divide experts=8 of "
       "model 'mixtral-8x7b:layers=2'\n"},
      {{"train", "--system", "h100:8", "--model", "mixtral-8x7b:top_k=9", "--layout", "dp=8",
        "--batch-tokens", "64Ki", "--seq", "4096"},
       "podsim: error: --model: model 'mixtral-8x7b:top_k=9': top_k must be in [1, experts=8] "
       "(got 9)\n"},
      {{"train", "--system", "h100:8", "--model", "llama3-8b", "--layout", "dp=8,ep=2",
        "--batch-tokens", "64Ki", "--seq", "4096"},
       "podsim: error: --layout: layout dp=8,fsdp=1,tp=1,pp=1,ep=2: ep and etp need a model with "
       "experts; model 'llama3-8b' has none\n"},
      {{"train", "--system", "h100:16", "--model", "llama3-8b", "--layout", "cp=8,tp=2",
        "--batch-tokens", "128Ki", "--seq", "131072", "--attention", "materialized"},
       "podsim: error: --attention: materialized attention is not modelled with cp=8 (flash "
       "attention, the default, is)\n"},
  };
  for (const Case& c : cases) {
    Outcome run = Podsim(c.args);
    EXPECT_EQ(run.code, 1) << c.message;
    EXPECT_EQ(run.err, c.message);
    EXPECT_TRUE(run.out.empty()) << run.out;
  }
}

// The sweep searches ep and etp for a model with experts, with sp wherever tp > 1.
TEST_F(Issue15CliTest, SweepSearchesExpertParallelism) {
  Outcome run = Podsim({"sweep", "--system", "h100:8", "--model", "mixtral-8x7b:layers=1",
                        "--batch-tokens", "32Ki", "--seq", "4096", "--top", "60", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  bool ep = false, etp_one = false, tp_without_sp = false;
  for (const nlohmann::json& row : j["layouts"]) {
    const std::string layout = row["layout"].get<std::string>();
    ep = ep || layout.find(",ep=8") != std::string::npos;
    etp_one = etp_one || layout.find(",etp=1") != std::string::npos;
    tp_without_sp = tp_without_sp || (layout.find("tp=1,") == std::string::npos &&
                                      layout.find("sp=1") == std::string::npos);
  }
  EXPECT_TRUE(ep) << run.out.substr(0, 2000);
  EXPECT_TRUE(etp_one);
  EXPECT_FALSE(tp_without_sp);
}

// A sweep of one 16k-token sequence on 8 GPUs: only context parallelism (with tp and pp) spreads
// it, so cp fills the chips that tp and pp leave; at 4096 tokens the sweep does not try cp.
TEST_F(Issue15CliTest, SweepSearchesContextParallelismForLongSequences) {
  const std::vector<std::string> sweep = {
      "sweep",
      "--system",
      "h100:8",
      "--model",
      "custom:layers=4,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,vocab=4096",
      "--top",
      "100",
      "--json"};
  std::vector<std::string> long_seq = sweep;
  long_seq.insert(long_seq.end(), {"--batch-tokens", "16Ki", "--seq", "16384"});
  Outcome run = Podsim(long_seq);
  ASSERT_EQ(run.code, 0) << run.err;
  int with_cp = 0;
  const nlohmann::json ranked = nlohmann::json::parse(run.out);
  for (const nlohmann::json& row : ranked["layouts"]) {
    const std::string layout = row["layout"].get<std::string>();
    // One sequence: more data chips split it (sequence sharding on the data axes).
    EXPECT_TRUE(layout.find("dp=1,fsdp=1,") != std::string::npos ||
                layout.find(",seq_shards=") != std::string::npos)
        << layout;
    with_cp += layout.find(",cp=") != std::string::npos;
  }
  EXPECT_GT(with_cp, 0) << run.out.substr(0, 2000);
  std::vector<std::string> short_seq = sweep;
  short_seq.insert(short_seq.end(), {"--batch-tokens", "32Ki", "--seq", "4096"});
  run = Podsim(short_seq);
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.out.find(",cp="), std::string::npos);
}

// The scenario fields give the same step as the flags.
TEST_F(Issue15CliTest, ScenarioFieldsMatchTheFlags) {
  const std::string path = Path("moe.textproto");
  {
    std::ofstream out(path);
    out << "system { preset: \"h100:8\" }\n"
           "train {\n"
           "  model { custom { base: \"mixtral-8x7b\" layers: 2 top_k: 1 } }\n"
           "  layout { dp: 8 ep: 8 }\n"
           "  batch_tokens: 65536\n"
           "  seq: 4096\n"
           "}\n";
  }
  Outcome scenario = Podsim({"run", path, "--json"});
  ASSERT_EQ(scenario.code, 0) << scenario.err;
  Outcome flags =
      Podsim({"train", "--system", "h100:8", "--model", "mixtral-8x7b:layers=2,top_k=1", "--layout",
              "dp=8,ep=8", "--batch-tokens", "64Ki", "--seq", "4096", "--json"});
  ASSERT_EQ(flags.code, 0) << flags.err;
  EXPECT_EQ(nlohmann::json::parse(scenario.out)["step_time_s"],
            nlohmann::json::parse(flags.out)["step_time_s"]);
}

// The issue's long-sequence case: cp=8 with tp=2 on a 128K sequence, the ring attention's
// key/value shifts over cp in the trace (and the keys' and values' gathers with
// cp_comm=all-gather).
TEST_F(Issue15CliTest, ContextParallelLongSequenceRuns) {
  Outcome run =
      Podsim({"train", "--system", "h100:16", "--model", "llama3-8b", "--layout", "cp=8,tp=2",
              "--batch-tokens", "128Ki", "--seq", "131072", "--json", "--trace", Path("cp.json")});
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_GT(j["breakdown"]["exposed_cp"].get<double>(), 0) << run.out;
  const std::string trace = ReadFile(Path("cp.json"));
  EXPECT_NE(trace.find("cp.shift.kv"), std::string::npos);
  EXPECT_NE(trace.find("cp.shift.kv.dx"), std::string::npos);
  EXPECT_NE(trace.find("cp.shift.dkv"), std::string::npos);
  EXPECT_EQ(trace.find("cp.all-gather.kv"), std::string::npos);
  Outcome gather = Podsim({"train", "--system", "h100:16", "--model", "llama3-8b:layers=2",
                           "--layout", "cp=8,tp=2,cp_comm=all-gather", "--batch-tokens", "128Ki",
                           "--seq", "131072", "--trace", Path("cp_gather.json")});
  ASSERT_EQ(gather.code, 0) << gather.err;
  const std::string gathered = ReadFile(Path("cp_gather.json"));
  EXPECT_NE(gathered.find("cp.all-gather.kv"), std::string::npos);
  EXPECT_NE(gathered.find("cp.reduce-scatter.dkv"), std::string::npos);
  EXPECT_EQ(gathered.find("cp.shift.kv"), std::string::npos);
  Outcome odd = Podsim({"train", "--system", "h100:16", "--model", "llama3-8b", "--layout",
                        "cp=8,tp=2", "--batch-tokens", "131080", "--seq", "131080"});
  EXPECT_EQ(odd.code, 1);
  EXPECT_EQ(odd.err,
            "podsim: error: --layout: layout dp=1,fsdp=1,tp=2,pp=1,cp=8: cp=8 needs 2*cp = 16 to "
            "divide seq=131080 (each chip holds two of 2*cp equal chunks of every sequence)\n");
}

// Sequence sharding on the data axes: 32 fsdp chips for 16 sequences split each sequence over
// two of them, which gather its keys and values (the cp group) and shard the weights over all 32.
TEST_F(Issue15CliTest, FewerSequencesThanDataChipsShardTheSequences) {
  const std::vector<std::string> train = {
      "train",    "--system",     "tpu-v5p:4x4x4",  "--model", "llama3-8b:layers=2",
      "--layout", "fsdp=32,tp=2", "--batch-tokens", "64Ki",    "--seq",
      "4096"};
  Outcome run = Podsim(With(train, {"--json", "--trace", Path("seq.json")}));
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["layout"], "dp=1,fsdp=32,tp=2,pp=1,seq_shards=2");
  EXPECT_GT(j["breakdown"]["exposed_cp"].get<double>(), 0) << run.out;
  EXPECT_NE(ReadFile(Path("seq.json")).find("cp.all-gather.kv"), std::string::npos);
  // The same step as the layout that states its shards.
  Outcome stated =
      Podsim({"train", "--system", "tpu-v5p:4x4x4", "--model", "llama3-8b:layers=2", "--layout",
              "fsdp=32,tp=2,seq_shards=2", "--batch-tokens", "64Ki", "--seq", "4096", "--json"});
  ASSERT_EQ(stated.code, 0) << stated.err;
  EXPECT_EQ(nlohmann::json::parse(stated.out)["step_time_s"], j["step_time_s"]);
  // A sequence that does not split into the shards' chunks is one error naming the key.
  Outcome odd = Podsim({"train", "--system", "tpu-v5p:4x4x4", "--model", "llama3-8b:layers=2",
                        "--layout", "fsdp=64", "--batch-tokens", "16404", "--seq", "1367"});
  EXPECT_EQ(odd.code, 1);
  EXPECT_EQ(odd.err,
            "podsim: error: --layout: layout dp=1,fsdp=64,tp=1,pp=1,seq_shards=16: seq_shards=16 "
            "(dp*fsdp = 64 chips share 12 sequences a microbatch) needs 2*seq_shards = 32 to "
            "divide seq=1367 (each chip holds two of 2*seq_shards equal chunks of its "
            "sequences)\n");
}

// The book's sweep (1,024 sequences on a v5p pod) in small: 16 sequences on 4x4x6 = 96 chips
// have no layout (the factor 3 fits neither tp nor pp), so the sweep runs on the largest slice
// that has one, 4x4x4, and says so; its layouts include sequence-sharded ones.
TEST_F(Issue15CliTest, SweepRunsOnTheLargestSliceWithALayout) {
  Outcome run = Podsim({"sweep", "--system", "tpu-v5p:4x4x6", "--model",
                        "custom:layers=4,d_model=1024,ffn=4096,heads=16,kv_heads=8,head_dim=64,"
                        "vocab=4096",
                        "--batch-tokens", "64Ki", "--seq", "4096", "--top", "200", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["system"], "tpu-v5p:4x4x4");
  EXPECT_EQ(j["slice_of"],
            "tpu-v5p:4x4x6 (no layout of custom:layers=4,d_model=1024,ffn=4096,heads=16,"
            "kv_heads=8,head_dim=64,vocab=4096 splits 16 sequences of 4096 tokens over the 96 "
            "chips of tpu-v5p:4x4x6)");
  EXPECT_EQ(
      run.err,
      "podsim: warning: no layout of custom:layers=4,d_model=1024,ffn=4096,heads=16,"
      "kv_heads=8,head_dim=64,vocab=4096 splits 16 sequences of 4096 tokens over the 96 chips "
      "of tpu-v5p:4x4x6; the sweep runs on its largest slice with a layout, tpu-v5p:4x4x4 "
      "(64 chips)\n");
  int sharded = 0;
  for (const nlohmann::json& row : j["layouts"]) {
    sharded += row["layout"].get<std::string>().find(",seq_shards=") != std::string::npos;
  }
  EXPECT_GT(sharded, 0) << run.out.substr(0, 2000);
}

}  // namespace
}  // namespace podsim::cli
