// End-to-end tests of `podsim infer`: the stable JSON keys of design.md, the latency-throughput
// points, the disaggregated deployment and its cost, determinism, exit codes, and one clear error
// line naming the flag for bad input.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
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

const std::vector<std::string> kInfer = {"infer",      "--system", "tpu-v5e:4x4", "--model",
                                         "llama3-70b", "--layout", "tp=16"};

TEST(InferCliTest, JsonHasTheStableKeys) {
  // Counts take the suffixes of train's (2Ki = 2048).
  Outcome run = Podsim(With(kInfer, {"--phase", "decode", "--batch", "8", "--context", "2Ki",
                                     "--weights", "int8", "--kv", "int8", "--json"}));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(run.err.empty());
  nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["context"], 2048);
  EXPECT_EQ(j["collective_dtype"], "bf16");
  for (const char* key :
       {"step_time_s", "tokens_per_s", "tokens_per_s_per_chip", "memory_per_chip_bytes"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_EQ(j["phase"], "decode");
  EXPECT_EQ(j["weights"], "int8");
  EXPECT_EQ(j["tokens_per_step"], 8);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 8 / j["step_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["tokens_per_s_per_chip"].get<double>(), j["tokens_per_s"].get<double>() / 16);
  // The breakdown's categories add up to the step; the bottleneck is the largest resource.
  double sum = 0;
  for (const char* key : {"compute_hbm", "compute_mxu", "compute_overhead", "interference",
                          "exposed_tp", "exposed_tp2", "exposed_ep", "idle"}) {
    ASSERT_TRUE(j["breakdown"].contains(key)) << key;
    sum += j["breakdown"][key].get<double>();
  }
  EXPECT_NEAR(sum / j["step_time_s"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(j["bottleneck"]["resource"], "hbm");
  EXPECT_NEAR(j["bottleneck"]["share"].get<double>(),
              j["breakdown"]["compute_hbm"].get<double>() / j["step_time_s"].get<double>(), 1e-12);
  EXPECT_FALSE(j.contains("usd_per_million_tokens"));
}

TEST(InferCliTest, TextReportNamesTheBottleneck) {
  Outcome run = Podsim(With(kInfer, {"--phase", "prefill", "--batch", "1", "--context", "4096"}));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("step time   "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("bottleneck  "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fits        yes"), std::string::npos) << run.out;
}

// Price per chip-hour: dollars per million of the step's tokens, 16 chips at $1.2 (AI1's v5e).
TEST(InferCliTest, CostPerMillionTokens) {
  Outcome run = Podsim(With(kInfer, {"--phase", "decode", "--batch", "32", "--context", "1024",
                                     "--chip-hour-usd", "1.2", "--json"}));
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_NEAR(j["usd_per_million_tokens"].get<double>(),
              16 * 1.2 / 3600 / j["tokens_per_s"].get<double>() * 1e6, 1e-9);
}

// --batch with a list: one point per batch; latency and throughput both grow, so every point that
// fits is Pareto-optimal, and one that does not fit is not.
TEST(InferCliTest, BatchListPrintsTheLatencyThroughputPoints) {
  Outcome run = Podsim(With(
      kInfer, {"--phase", "decode", "--batch", "1,16,64,1024", "--context", "8192", "--json"}));
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["points"].size(), 4u);
  EXPECT_EQ(j["points"][0]["batch"], 1);
  double latency = 0, throughput = 0;
  for (const auto& p : j["points"]) {
    for (const char* key : {"step_time_s", "tokens_per_s", "tokens_per_s_per_chip",
                            "memory_per_chip_bytes", "fits", "breakdown", "bottleneck"}) {
      EXPECT_TRUE(p.contains(key)) << key;
    }
    EXPECT_GT(p["step_time_s"].get<double>(), latency);
    EXPECT_GT(p["tokens_per_s"].get<double>(), throughput);
    latency = p["step_time_s"].get<double>();
    throughput = p["tokens_per_s"].get<double>();
    EXPECT_EQ(p["pareto_optimal"].get<bool>(), p["fits"].get<bool>());
  }
  EXPECT_FALSE(j["points"][3]["fits"].get<bool>());  // 1024 x 8k tokens of bf16 KV: 2.7 TB.

  Outcome text =
      Podsim(With(kInfer, {"--phase", "decode", "--batch", "1,16", "--context", "8192"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("step time"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("pareto"), std::string::npos) << text.out;
}

// AI12's deployment: prefill servers per decode server from the two simulated steps.
TEST(InferCliTest, DisaggregatedDeployment) {
  Outcome run = Podsim({"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b", "--layout",
                        "tp=16,kv_shard=batch", "--prefill-len", "8192", "--decode-len", "512",
                        "--batch", "32", "--chip-hour-usd", "1.2", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["prefill"]["batch"], 1);
  EXPECT_EQ(j["prefill"]["context"], 8192);
  EXPECT_EQ(j["prefill_layout"], "tp=16,tp2=1,dp=1");
  EXPECT_EQ(j["decode"]["batch"], 32);
  EXPECT_EQ(j["decode"]["context"], 8192 + 256);
  const double prefill = j["prefill"]["step_time_s"].get<double>();
  const double decode = j["decode"]["step_time_s"].get<double>();
  const double ratio = j["prefill_chips_per_decode_chip"].get<double>();
  // The prefill makes each request's first token, 511 decode steps the rest (serving.h).
  EXPECT_NEAR(ratio, (32 / (decode * 511)) / (1 / prefill), 1e-9);
  EXPECT_GT(ratio, 2);  // The book's 3 (AI12); podsim's decode step is relatively slower.
  EXPECT_LT(ratio, 3);
  const double tokens_per_s = 32 * 512 / (32 * prefill + 511 * decode);
  EXPECT_NEAR(j["generated_tokens_per_s"].get<double>(), tokens_per_s, 1e-9 * tokens_per_s);
  EXPECT_NEAR(j["usd_per_million_tokens"].get<double>(), 16 * 1.2 / 3600 / tokens_per_s * 1e6,
              1e-9);
  EXPECT_TRUE(j["decode"]["fits"].get<bool>());
}

TEST(InferCliTest, OutputIsByteForByteDeterministic) {
  for (const std::vector<std::string>& args :
       {With(kInfer, {"--phase", "decode", "--batch", "1,8,64", "--context", "2048", "--json"}),
        std::vector<std::string>{"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b",
                                 "--layout", "tp=8,tp2=2", "--phase", "decode", "--batch", "32",
                                 "--context", "4096"}}) {
    Outcome a = Podsim(args);
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, Podsim(args).out);
  }
}

TEST(InferCliTest, BadInputIsOneErrorLineNamingTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {With(kInfer, {"--phase", "decode", "--batch", "0", "--context", "10"}),
       "podsim: error: --batch: expected sequences from 1 to 16777216, one number or a list like "
       "1,8,16 (got '0')\n"},
      {With(kInfer, {"--phase", "decode", "--batch", "1,x", "--context", "10"}),
       "podsim: error: --batch: expected sequences from 1 to 16777216, one number or a list like "
       "1,8,16 (got 'x')\n"},
      {With(kInfer, {"--phase", "decoed", "--batch", "1", "--context", "10"}),
       "podsim: error: --phase: unknown phase 'decoed' (did you mean 'decode'?); known: prefill, "
       "decode\n"},
      {With(kInfer, {"--phase", "prefill", "--batch", "1", "--context", "0"}),
       "podsim: error: --context: expected prompt tokens from 1 to 16777216 (got '0')\n"},
      {With(kInfer, {"--phase", "decode", "--batch", "1", "--context", "-5"}),
       "podsim: error: --context: expected cached tokens from 0 to 16777216 (got '-5')\n"},
      {With(kInfer, {"--phase", "decode", "--batch", "1", "--context", "10", "--weights", "in8"}),
       "podsim: error: --weights: unknown dtype 'in8' (did you mean 'int8'?); known: bf16, int8, "
       "int4, fp8\n"},
      {With(kInfer, {"--phase", "decode", "--batch", "1", "--context", "10", "--kv", "fp4"}),
       "podsim: error: --kv: unknown dtype 'fp4' (did you mean 'fp8'?); known: bf16, int8, int4, "
       "fp8\n"},
      {With(kInfer,
            {"--phase", "decode", "--batch", "1", "--context", "10", "--chip-hour-usd", "-1"}),
       "podsim: error: --chip-hour-usd: expected a price per chip-hour in dollars > 0 and <= 1e6, "
       "like 1.2 (got '-1')\n"},
      // issue 16 D12: a price that would make the cost infinite.
      {With(kInfer,
            {"--phase", "decode", "--batch", "1", "--context", "10", "--chip-hour-usd", "1e308"}),
       "podsim: error: --chip-hour-usd: expected a price per chip-hour in dollars > 0 and <= 1e6, "
       "like 1.2 (got '1e308')\n"},
      {With(kInfer, {"--prefill-len", "100", "--decode-len", "0", "--batch", "1"}),
       "podsim: error: --decode-len: expected tokens from 1 to 16777216 (got '0')\n"},
      // The prefill makes the first token: with one, no decode step runs (nor may it be printed).
      {With(kInfer, {"--prefill-len", "100", "--decode-len", "1", "--batch", "1"}),
       "podsim: error: --decode-len: 1 generated token is the prefill's own and no decode step "
       "runs; give 2 or more, or simulate the prefill alone (phase PREFILL, podsim infer --phase "
       "prefill)\n"},
      // A batch size twice would print the same row twice.
      {With(kInfer, {"--phase", "decode", "--batch", "4,2,4", "--context", "10"}),
       "podsim: error: --batch: batch 4 is given twice\n"},
      {With(kInfer, {"--phase", "decode", "--batch", "1", "--context", "10.5"}),
       "podsim: error: --context: expected cached tokens from 0 to 16777216 (got '10.5')\n"},
      {With(kInfer, {"--prefill-len", "100", "--decode-len", "10", "--batch", "1,2"}),
       "podsim: error: --batch: give one decode batch with --prefill-len (got 2)\n"},
      {With(kInfer,
            {"--prefill-len", "100", "--decode-len", "10", "--batch", "8", "--prefill-batch", "0"}),
       "podsim: error: --prefill-batch: expected prompts from 1 to 16777216 (got '0')\n"},
      {{"infer", "--system", "tpu-v5e:2x4", "--model", "llama3-8b", "--layout", "tp=4,dp=2",
        "--prefill-len", "100", "--decode-len", "10", "--batch", "8", "--prefill-batch",
        "16777216"},
       "podsim: error: --prefill-batch: prompts per prefill step times dp=2 must be at most "
       "16777216 (got 16777216)\n"},
      {With(kInfer,
            {"--prefill-len", "100", "--decode-len", "10", "--batch", "8", "--weights", "fp8"}),
       "podsim: error: --weights: FP8 weights multiply in fp8, and tpu-v5e has no fp8 peak; use "
       "int8 for 1-byte weights read narrow\n"},
      {{"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b", "--layout", "tp=8", "--phase",
        "decode", "--batch", "1", "--context", "10"},
       "podsim: error: --layout: layout tp=8,tp2=1,dp=1: tp*tp2*dp = 8 must equal the 16 chips of "
       "the system\n"},
      {{"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b", "--layout",
        "tp=16,kv_shard=batch", "--phase", "decode", "--batch", "8", "--context", "10"},
       "podsim: error: --layout: layout tp=16,tp2=1,dp=1,kv_shard=batch: kv_shard=batch needs the "
       "8 sequences of each replica to be divisible by tp=16\n"},
      {{"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-70b", "--layout", "tq=16", "--phase",
        "decode", "--batch", "1", "--context", "10"},
       "podsim: error: --layout: layout 'tq=16': unknown key 'tq' (did you mean 'tp'?); form: "
       "tp=..[,tp2=..][,dp=..][,kv_shard=heads|batch][,ep=..]\n"},
      {{"infer", "--system", "tpu-v5e:4x4", "--model", "llama3-7b", "--layout", "tp=16", "--phase",
        "decode", "--batch", "1", "--context", "10"},
       "podsim: error: --model: unknown model 'llama3-7b' (did you mean 'llama3-8b'?); known: "
       "llama2-13b, llama3-8b, llama3-70b, llama3-405b, gpt3-175b, mixtral-8x7b, mixtral-8x22b, "
       "qwen2-57b-a14b, qwen3-30b-a3b, qwen3-235b-a22b, deepseek-v2, deepseek-v3, or "
       "custom:layers=..,d_model=..,ffn=..,heads=..,kv_heads=..,head_dim=..,vocab=..[,gated=true|"
       "false]"
       "[,tied=true|false][,bias=true|false][,norm=rms|layer][,positions=N][,dropout=true|false]"
       "[,experts=E,top_k=K[,expert_ffn=F][,shared_ffn=F][,dense_layers=N]]"
       "[,kv_lora=..,rope_dim=..,v_head_dim=..[,q_lora=..]]\n"},
      {{"infer", "--system", "h100:8", "--model", "deepseek-v2", "--layout", "tp=8,kv_shard=batch",
        "--phase", "decode", "--batch", "8", "--context", "10"},
       "podsim: error: --layout: layout tp=8,tp2=1,dp=1,kv_shard=batch: model 'deepseek-v2' has "
       "latent attention: its inference runs 1D tensor parallelism with the cache by heads "
       "(tp2=1, kv_shard=heads)\n"},
      {{"infer", "--system", "h100:16", "--model", "mixtral-8x7b", "--layout", "tp=4,tp2=4",
        "--phase", "decode", "--batch", "1", "--context", "10"},
       "podsim: error: --layout: layout tp=4,tp2=4,dp=1: model 'mixtral-8x7b' has experts: its "
       "inference runs 1D tensor parallelism (tp2=1), not tp2=4\n"},
      {{"infer", "--system", "ring:16", "--model", "llama3-70b", "--layout", "tp=16", "--phase",
        "decode", "--batch", "1", "--context", "10"},
       "podsim: error: --system: 'ring:16' has no compute or HBM figures to simulate a step on "
       "(generic fabrics are for collectives)\n"},
  };
  for (const Case& c : cases) {
    Outcome run = Podsim(c.args);
    EXPECT_EQ(run.code, 1) << c.message;
    EXPECT_EQ(run.err, c.message);
    EXPECT_TRUE(run.out.empty()) << run.out;
  }
}

// Missing or conflicting flags are usage errors (exit 2), as CLI11 reports them.
TEST(InferCliTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      With(kInfer, {"--phase", "decode", "--batch", "1"}),    // --phase needs --context.
      With(kInfer, {"--batch", "1", "--context", "5"}),       // Neither --phase nor --prefill-len.
      With(kInfer, {"--phase", "decode", "--context", "5"}),  // No --batch.
      With(kInfer, {"--prefill-len", "5", "--batch", "1"}),   // --prefill-len needs --decode-len.
      With(kInfer, {"--phase", "decode", "--context", "5", "--batch", "1", "--prefill-len", "5",
                    "--decode-len", "5"}),  // Both modes.
      {"infer", "--model", "llama3-70b", "--layout", "tp=16", "--phase", "decode", "--batch", "1",
       "--context", "5"},  // No --system.
  };
  for (const std::vector<std::string>& args : cases) {
    Outcome run = Podsim(args);
    EXPECT_EQ(run.code, 2) << args[args.size() - 1];
    EXPECT_FALSE(run.err.empty());
    EXPECT_TRUE(run.out.empty()) << run.out;
  }
}

}  // namespace
}  // namespace podsim::cli
