// End-to-end tests of `podsim train` and `podsim replay`: the stable JSON keys of design.md,
// determinism, the schedule file round trip, and one clear error line for bad input.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/main_command.h"
#include "tests/testing/run_podsim.h"
#include "workloads/measured_accuracy.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::With;

const std::vector<std::string> kTrain = {"train",     "--system", "tpu-v5p:2x2x4", "--model",
                                         "llama3-8b", "--layout", "fsdp=8,tp=2",   "--batch-tokens",
                                         "64Ki",      "--seq",    "4096"};

TEST(TrainCliTest, JsonHasTheStableKeys) {
  Outcome run = Podsim(With(kTrain, {"--json"}));
  ASSERT_EQ(run.code, 0) << run.err;
  nlohmann::json j = nlohmann::json::parse(run.out);
  for (const char* key : {"step_time_s", "tokens_per_s", "mfu", "memory_per_chip_bytes"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j[key].get<double>(), 0) << key;
  }
  ASSERT_TRUE(j["fits"].is_boolean());
  // The breakdown adds up to the step time.
  double sum = 0;
  for (const auto& [name, seconds] : j["breakdown"].items()) sum += seconds.get<double>();
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-9 * j["step_time_s"].get<double>());
  EXPECT_TRUE(j["breakdown"].contains("exposed_tp"));
  EXPECT_NEAR(j["tokens_per_s"].get<double>() * j["step_time_s"].get<double>(), 65536, 1e-6);
  EXPECT_LT(j["mfu"].get<double>(), 1);
  EXPECT_FALSE(j.contains("layer_times"));  // Only with --layer-times.
}

// --layer-times: each layer's forward and backward on the first chip (workloads/layer_times.h),
// every layer of the one stage, the backward longer than the forward; the same with a trace on;
// with interleaved pipeline stages, stage 0's layers of every virtual chunk.
TEST(TrainCliTest, LayerTimesAreEachLayersOnTheFirstStage) {
  Outcome run = Podsim(With(kTrain, {"--layer-times", "--json"}));
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["layer_times"].size(), 32u);
  for (size_t l = 0; l < 32; ++l) {
    const nlohmann::json& t = j["layer_times"][l];
    EXPECT_EQ(t["layer"].get<int>(), static_cast<int>(l));
    EXPECT_GT(t["forward_s"].get<double>(), 0) << l;
    EXPECT_GT(t["backward_s"].get<double>(), t["forward_s"].get<double>()) << l;
  }
  // The times do not change with a trace observing the step too.
  const std::filesystem::path trace =
      std::filesystem::temp_directory_path() / "podsim_layer_times_test.json";
  Outcome traced = Podsim(With(kTrain, {"--layer-times", "--json", "--trace", trace.string()}));
  ASSERT_EQ(traced.code, 0) << traced.err;
  std::filesystem::remove(trace);
  EXPECT_EQ(nlohmann::json::parse(traced.out)["layer_times"], j["layer_times"]);
  // Two stages of two virtual chunks each over 8 layers: stage 0 holds layers 0-1 and 4-5.
  Outcome piped =
      Podsim({"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b:layers=8", "--layout",
              "fsdp=8,pp=2,microbatches=4,schedule=interleaved,virtual_stages=2", "--batch-tokens",
              "64Ki", "--seq", "4096", "--layer-times", "--json"});
  ASSERT_EQ(piped.code, 0) << piped.err;
  const nlohmann::json stages = nlohmann::json::parse(piped.out);
  std::vector<int> layers;
  for (const nlohmann::json& t : stages["layer_times"]) {
    layers.push_back(t["layer"].get<int>());
  }
  EXPECT_EQ(layers, (std::vector<int>{0, 1, 4, 5}));
}

// --grad-reduce-in-bf16 halves Megatron's fp32 gradient buffer and says so where the recipe is
// named, in the text and the JSON.
TEST(TrainCliTest, Bf16GradientsAreNamedAndHalveTheBuffer) {
  const std::vector<std::string> megatron = With(kTrain, {"--precision", "megatron", "--json"});
  Outcome fp32 = Podsim(megatron);
  Outcome bf16 = Podsim(With(megatron, {"--grad-reduce-in-bf16"}));
  ASSERT_EQ(fp32.code, 0) << fp32.err;
  ASSERT_EQ(bf16.code, 0) << bf16.err;
  const nlohmann::json a = nlohmann::json::parse(fp32.out), b = nlohmann::json::parse(bf16.out);
  EXPECT_FALSE(a["grad_reduce_in_bf16"].get<bool>());
  EXPECT_TRUE(b["grad_reduce_in_bf16"].get<bool>());
  EXPECT_DOUBLE_EQ(b["memory"]["grads_bytes"].get<double>() * 2,
                   a["memory"]["grads_bytes"].get<double>());
  Outcome text = Podsim(With(kTrain, {"--precision", "megatron", "--grad-reduce-in-bf16"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("precision megatron, gradients in bf16"), std::string::npos) << text.out;
}

// --framework names the framework in the text and the JSON and gives its defaults to the options
// not set (workloads/framework.h); a flag set overrides its framework's default.
TEST(TrainCliTest, FrameworkSetsItsDefaultsUnlessAFlagSaysOtherwise) {
  // kTrain's layout with sp, which torchtitan needs with tp.
  const std::vector<std::string> train = {
      "train",    "--system",         "tpu-v5p:2x2x4",  "--model", "llama3-8b",
      "--layout", "fsdp=8,tp=2,sp=1", "--batch-tokens", "64Ki",    "--seq",
      "4096"};
  auto json = [&train](const std::vector<std::string>& extra) {
    Outcome run = Podsim(With(With(train, extra), {"--json"}));
    EXPECT_EQ(run.code, 0) << run.err;
    return run.code == 0 ? nlohmann::json::parse(run.out) : nlohmann::json::object();
  };
  const nlohmann::json book = json({});
  EXPECT_EQ(book["framework"], "book");
  EXPECT_EQ(book["precision"], "mixed");
  const nlohmann::json megatron = json({"--framework", "megatron"});
  EXPECT_EQ(megatron["framework"], "megatron");
  EXPECT_EQ(megatron["precision"], "megatron");
  EXPECT_EQ(megatron["loss"], "vocab-parallel-eager");
  const nlohmann::json titan = json({"--framework", "torchtitan"});
  EXPECT_EQ(titan["kernels"], "eager");
  EXPECT_EQ(titan["loss"], "upcast");
  EXPECT_EQ(titan["precision"], "mixed");
  const nlohmann::json compiled =
      json({"--framework", "torchtitan", "--kernels", "fused", "--loss", "compiled"});
  EXPECT_EQ(compiled["kernels"], "fused");
  EXPECT_EQ(compiled["loss"], "compiled");
  EXPECT_EQ(json({"--framework", "maxtext"})["kernels"], "fused");
  EXPECT_EQ(json({"--framework", "megatron", "--precision", "zero"})["precision"], "zero");
  Outcome text = Podsim(With(kTrain, {"--framework", "megatron"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("framework   megatron"), std::string::npos) << text.out;
  Outcome bad = Podsim(With(kTrain, {"--framework", "megatronn"}));
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.err,
            "podsim: error: --framework: unknown value 'megatronn' (did you mean 'megatron'?); "
            "expected book, megatron, torchtitan, maxtext\n");
  // What torchtitan does not run in bf16 is refused.
  Outcome no_sp = Podsim(With(kTrain, {"--framework", "torchtitan"}));
  EXPECT_EQ(no_sp.code, 1);
  EXPECT_EQ(no_sp.err,
            "podsim: error: --framework: torchtitan runs tensor parallelism with sequence "
            "parallelism only (its plan shards the norms over tp): add sp=1 to the layout\n");
  Outcome no_fsdp = Podsim({"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b",
                            "--layout", "dp=8,tp=2,sp=1", "--batch-tokens", "64Ki", "--seq", "4096",
                            "--framework", "torchtitan"});
  EXPECT_EQ(no_fsdp.code, 1);
  EXPECT_NE(no_fsdp.err.find("torchtitan trains with tp or pp in bf16 only under fsdp or cp"),
            std::string::npos)
      << no_fsdp.err;
}

// Issue 14: Megatron-Core leaves its data-parallel overlaps off (framework.h): the step says so,
// the flags turn them on, and the combinations Megatron-LM refuses are errors. With fsdp they
// overlap whatever is set (WithLayoutDefaults).
TEST(TrainCliTest, MegatronDataParallelOverlapIsOffUnlessAsked) {
  const std::vector<std::string> train = {"train",
                                          "--system",
                                          "h100:16",
                                          "--model",
                                          "llama3-8b",
                                          "--layout",
                                          "dp=2,tp=8,sp=1,microbatches=2",
                                          "--batch-tokens",
                                          "32Ki",
                                          "--seq",
                                          "4096",
                                          "--framework",
                                          "megatron",
                                          "--distributed-optimizer"};
  auto run = [&train](const std::vector<std::string>& extra) {
    Outcome out = Podsim(With(train, extra));
    EXPECT_EQ(out.code, 0) << out.err;
    return out;
  };
  const Outcome text = run({});
  EXPECT_NE(text.out.find("dp          gradient reductions after the backward, one bucket a "
                          "chunk, exposed; parameter gathers after the optimizer step, exposed"),
            std::string::npos)
      << text.out;
  const nlohmann::json exposed = nlohmann::json::parse(run({"--json"}).out);
  const nlohmann::json overlapped =
      nlohmann::json::parse(run({"--json", "--overlap-grad-reduce", "--overlap-param-gather"}).out);
  EXPECT_EQ(exposed["overlap_grad_reduce"], false);
  EXPECT_EQ(exposed["overlap_param_gather"], false);
  EXPECT_EQ(overlapped["overlap_grad_reduce"], true);
  EXPECT_EQ(overlapped["overlap_param_gather"], true);
  EXPECT_GT(exposed["step_time_s"].get<double>(), overlapped["step_time_s"].get<double>());
  EXPECT_EQ(run({"--overlap-grad-reduce", "--overlap-param-gather"}).out.find("\ndp          "),
            std::string::npos);
  // The book overlaps them.
  Outcome book = Podsim({"train", "--system", "h100:16", "--model", "llama3-8b", "--layout",
                         "dp=2,tp=8,sp=1,microbatches=2", "--batch-tokens", "32Ki", "--seq", "4096",
                         "--json"});
  ASSERT_EQ(book.code, 0) << book.err;
  EXPECT_EQ(nlohmann::json::parse(book.out)["overlap_grad_reduce"], true);
  // Megatron-LM's arguments.py: --overlap-param-gather needs the distributed optimizer and
  // --overlap-grad-reduce.
  std::vector<std::string> plain = train;
  plain.pop_back();
  Outcome no_optimizer = Podsim(With(plain, {"--overlap-param-gather"}));
  EXPECT_EQ(no_optimizer.code, 1);
  EXPECT_EQ(no_optimizer.err,
            "podsim: error: --overlap-param-gather: needs the distributed optimizer "
            "(distributed_optimizer: true, --distributed-optimizer), whose parameter gathers it "
            "overlaps\n");
  Outcome no_grads = Podsim(With(train, {"--overlap-param-gather"}));
  EXPECT_EQ(no_grads.code, 1);
  EXPECT_EQ(no_grads.err,
            "podsim: error: --overlap-param-gather: needs the gradient reductions overlapped too "
            "(overlap_grad_reduce: true, --overlap-grad-reduce), as Megatron-LM requires\n");
}

// A MaxText remat policy by name: the offloaded outputs leave HBM, and the output says how many
// bytes went to the host and that their copies are not simulated.
TEST(TrainCliTest, OffloadedActivationsAreReportedApart) {
  Outcome saved = Podsim(With(kTrain, {"--recompute", "maxtext:save_qkv_proj", "--json"}));
  Outcome offloaded = Podsim(With(kTrain, {"--recompute", "maxtext:qkv_proj_offloaded", "--json"}));
  ASSERT_EQ(saved.code, 0) << saved.err;
  ASSERT_EQ(offloaded.code, 0) << offloaded.err;
  const nlohmann::json a = nlohmann::json::parse(saved.out),
                       b = nlohmann::json::parse(offloaded.out);
  EXPECT_EQ(a["memory"]["host_offload_bytes"].get<double>(), 0);
  const double host = b["memory"]["host_offload_bytes"].get<double>();
  EXPECT_GT(host, 0);
  EXPECT_NEAR(a["memory"]["activations_bytes"].get<double>() - host,
              b["memory"]["activations_bytes"].get<double>(), 1e-6 * host);
  Outcome text = Podsim(With(kTrain, {"--recompute", "maxtext:qkv_proj_offloaded"}));
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("in host memory, not in HBM"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("which are not simulated"), std::string::npos) << text.out;
  EXPECT_EQ(text.err, "");
  // Copies that cannot hide behind the forward are said to be so.
  Outcome heavy = Podsim(With(kTrain, {"--recompute", "maxtext:minimal_offloaded"}));
  ASSERT_EQ(heavy.code, 0) << heavy.err;
  EXPECT_NE(heavy.err.find("podsim: warning: the offloaded activations' host copies take"),
            std::string::npos)
      << heavy.err;
}

TEST(TrainCliTest, OutputIsDeterministic) {
  Outcome a = Podsim(With(kTrain, {"--json"}));
  Outcome b = Podsim(With(kTrain, {"--json"}));
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

// Each prediction states the record of its chip family on the validation rows
// (workloads/measured_accuracy.h): a family with one gives its figures, in text and JSON
// (fractions), with the memory record under training; one without (the uncalibrated v5p) says
// so; a custom chip has no record. Inference (a step, a batch list) and collectives state their
// workload's; collectives on the ideal model (--ideal, generic fabrics) none.
TEST(TrainCliTest, PredictionsStateTheirFamilysValidationRecord) {
  const workloads::MeasuredAccuracy* hopper = workloads::FindMeasuredAccuracy("hopper", "training");
  ASSERT_NE(hopper, nullptr);
  const std::vector<std::string> h100 = {"train",     "--system",       "h100:8", "--model",
                                         "llama3-8b", "--layout",       "fsdp=8", "--seq",
                                         "4096",      "--batch-tokens", "32Ki"};
  Outcome json = Podsim(With(h100, {"--json"}));
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json v = nlohmann::json::parse(json.out)["validation"];
  EXPECT_EQ(v["family"], "hopper");
  EXPECT_EQ(v["workload"], "training");
  EXPECT_EQ(v["rows"].get<int>(), hopper->rows);
  EXPECT_EQ(v["bias"].get<double>(), hopper->bias);
  EXPECT_EQ(v["mean_abs_error"].get<double>(), hopper->mean_abs_error);
  EXPECT_EQ(v["worst"].get<double>(), hopper->worst);
  ASSERT_NE(workloads::FindMeasuredAccuracy("hopper", "memory"), nullptr);
  EXPECT_EQ(v["memory"]["rows"].get<int>(),
            workloads::FindMeasuredAccuracy("hopper", "memory")->rows);
  // The step's framework (here the default, the book's) has its own record among the family's.
  EXPECT_EQ(v["framework"]["name"], "book");
  const workloads::MeasuredAccuracy* book =
      workloads::FindMeasuredAccuracy("hopper", "training", "book");
  EXPECT_EQ(v["framework"]["rows"].get<int>(), book == nullptr ? 0 : book->rows);
  Outcome megatron = Podsim(With(h100, {"--framework", "megatron", "--json"}));
  ASSERT_EQ(megatron.code, 0) << megatron.err;
  ASSERT_NE(workloads::FindMeasuredAccuracy("hopper", "training", "megatron"), nullptr);
  EXPECT_EQ(nlohmann::json::parse(megatron.out)["validation"]["framework"]["rows"].get<int>(),
            workloads::FindMeasuredAccuracy("hopper", "training", "megatron")->rows);
  Outcome text = Podsim(h100);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("\nvalidation  on " + std::to_string(hopper->rows) +
                          " published H100 / H200 training measurements podsim was not fitted "
                          "to: mean |error| "),
            std::string::npos)
      << text.out;

  Outcome v5p = Podsim(With(kTrain, {"--json"}));
  ASSERT_EQ(v5p.code, 0) << v5p.err;
  const nlohmann::json none = nlohmann::json::parse(v5p.out)["validation"];
  EXPECT_EQ(none["family"], "tpu");
  EXPECT_EQ(none["rows"].get<int>(), 0);
  EXPECT_FALSE(none.contains("bias"));
  EXPECT_NE(Podsim(kTrain).out.find("\nvalidation  none: no validation row measures other TPUs"),
            std::string::npos);

  // A custom chip: none, in text and JSON; the same preset renamed keeps its record.
  const std::string custom =
      "system { custom { chip { base: 'a100' name: 'big' %s } fabric { kind: SWITCH shape: 8 } } "
      "}\ntrain { model { preset: 'llama3-8b' } layout { fsdp: 8 } batch_tokens: 32768 "
      "seq: 4096 }\n";
  for (const char* change : {"hbm_bytes: 160e9", ""}) {
    char text[512];
    std::snprintf(text, sizeof text, custom.c_str(), change);
    const std::string path = ::testing::TempDir() + "/custom_chip.textproto";
    std::ofstream(path) << text;
    Outcome out = Podsim({"run", path});
    ASSERT_EQ(out.code, 0) << out.err;
    const bool changed = *change != 0;
    EXPECT_EQ(
        out.out.find("\nvalidation  none: a custom chip built from a100") != std::string::npos,
        changed)
        << out.out;
    EXPECT_EQ(out.out.find("\nvalidation  on ") != std::string::npos, !changed) << out.out;
    Outcome j = Podsim({"run", path, "--json"});
    ASSERT_EQ(j.code, 0) << j.err;
    EXPECT_EQ(nlohmann::json::parse(j.out)["validation"].is_null(), changed);
  }

  const std::vector<std::string> infer = {"infer",     "--system",  "h100:8", "--model",
                                          "llama3-8b", "--layout",  "tp=8",   "--phase",
                                          "decode",    "--context", "1024"};
  Outcome batches = Podsim(With(infer, {"--batch", "1,8", "--json"}));
  ASSERT_EQ(batches.code, 0) << batches.err;
  EXPECT_EQ(nlohmann::json::parse(batches.out)["validation"]["workload"], "inference");
  EXPECT_NE(Podsim(With(infer, {"--batch", "1,8"})).out.find("\nvalidation  on "),
            std::string::npos);

  const std::vector<std::string> collective = {"collective", "--system", "h100:16", "--op",
                                               "all-reduce", "--bytes",  "64MiB"};
  Outcome c = Podsim(With(collective, {"--json"}));
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["validation"]["workload"], "collectives");
  EXPECT_EQ(nlohmann::json::parse(c.out)["validation"]["rows"].get<int>(),
            workloads::FindMeasuredAccuracy("hopper", "collectives")->rows);
  for (const std::vector<std::string>& ideal :
       {With(collective, {"--ideal"}),
        std::vector<std::string>{"collective", "--system", "ring:8", "--op", "all-reduce",
                                 "--bytes", "64MiB"}}) {
    Outcome j = Podsim(With(ideal, {"--json"}));
    ASSERT_EQ(j.code, 0) << j.err;
    EXPECT_TRUE(nlohmann::json::parse(j.out)["validation"].is_null());
    EXPECT_EQ(Podsim(ideal).out.find("validation"), std::string::npos);
  }
}

// A written schedule replays to the same step, in binary and text form.
TEST(TrainCliTest, WrittenScheduleReplaysToTheSameStep) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "podsim_replay_test";
  std::filesystem::create_directories(dir);
  Outcome train = Podsim(With(kTrain, {"--json", "--write-schedule", (dir / "step.pb").string()}));
  ASSERT_EQ(train.code, 0) << train.err;
  const double step = nlohmann::json::parse(train.out)["step_time_s"].get<double>();
  for (const char* name : {"step.pb", "step.textproto"}) {
    if (std::string(name) == "step.textproto") {
      ASSERT_EQ(Podsim(With(kTrain, {"--write-schedule", (dir / name).string()})).code, 0);
    }
    Outcome replay = Podsim({"replay", (dir / name).string(), "--json"});
    ASSERT_EQ(replay.code, 0) << replay.err;
    nlohmann::json j = nlohmann::json::parse(replay.out);
    EXPECT_EQ(j["step_time_s"].get<double>(), step) << name;
    EXPECT_NEAR(j["tokens_per_s"].get<double>() * step, 65536, 1e-6);
  }
  EXPECT_TRUE(podsim::testing::HiddenFiles(dir).empty());
  std::filesystem::remove_all(dir);
}

TEST(TrainCliTest, BadInputGetsOneClearError) {
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  const std::vector<Case> cases = {
      {With(kTrain, {"--recompute", "ful"}),
       "podsim: error: --recompute: unknown value 'ful' (did you mean 'full'?); expected none, "
       "selective, full, or save:OP,OP,... (the forward ops to keep), or maxtext:POLICY\n"},
      {With(kTrain, {"--recompute", "maxtext:qkv_proj_offload"}),
       "podsim: error: --recompute: unknown value 'maxtext:qkv_proj_offload' (did you mean "
       "'maxtext:qkv_proj_offloaded'?); expected maxtext:full, maxtext:minimal, "
       "maxtext:save_dot_except_mlpwi, maxtext:save_dot_except_mlp, maxtext:save_qkv_proj, "
       "maxtext:save_out_proj, maxtext:qkv_proj_offloaded, maxtext:minimal_offloaded\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "dp=8,tp=2",
        "--batch-tokens", "64Ki", "--seq", "4096", "--no-reshard-after-forward"},
       "podsim: error: --no-reshard-after-forward: needs fsdp > 1: layout dp=8,fsdp=1,tp=2,pp=1 "
       "gathers no weights\n"},
      {With(kTrain, {"--fp8-all-gather"}),
       "podsim: error: --fp8-all-gather: needs fp8 training (fp8: true, --fp8)\n"},
      {{"train", "--system", "h100:8", "--model", "llama3-8b", "--layout", "dp=8", "--batch-tokens",
        "64Ki", "--seq", "8192", "--fp8", "--fp8-all-gather"},
       "podsim: error: --fp8-all-gather: needs fsdp > 1, or the distributed optimizer over dp > 1: "
       "layout dp=8,fsdp=1,tp=1,pp=1 gathers no weights\n"},
      {With(kTrain, {"--recompute", "save:attn.qkv,"}),
       "podsim: error: --recompute: save: needs the forward ops to keep, like "
       "save:attn.qkv,attn.core (got 'save:attn.qkv,')\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=4,tp=2",
        "--batch-tokens", "64Ki", "--seq", "4096"},
       "podsim: error: --layout: layout dp=1,fsdp=4,tp=2,pp=1: dp*fsdp*tp*pp = 8 must equal the 16 "
       "chips "
       "of the system\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=8,tp=2",
        "--batch-tokens", "1000", "--seq", "4096"},
       "podsim: error: --batch-tokens: 1000 is not a whole number of sequences of --seq 4096 "
       "tokens\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=8,tp=2",
        "--batch-tokens", "4X", "--seq", "4096"},
       "podsim: error: --batch-tokens: expected a whole number of tokens >= 1 like 4096, 4M "
       "(4,000,000) or 4Mi (4,194,304) (got '4X')\n"},
      {With(kTrain, {"--precision", "fp32"}),
       "podsim: error: --precision: unknown value 'fp32'; expected mixed, zero, megatron, book, "
       "amp\n"},
      {With(kTrain, {"--loss", "upcastt"}),
       "podsim: error: --loss: unknown value 'upcastt' (did you mean 'upcast'?); expected "
       "vocab-parallel, vocab-parallel-eager, vocab-parallel-te, upcast, compiled\n"},
      {With(kTrain, {"--recompute", "save:attn.qkvv"}),
       "podsim: error: --recompute: no forward op 'attn.qkvv' in a layer of this model (did you "
       "mean 'attn.qkv'?); ops: input, attn.norm, attn.qkv, attn.rotary, attn.core, attn.out, "
       "attn.residual, mlp.norm, mlp.gate, mlp.up, mlp.act, mlp.down, mlp.residual\n"},
      {With(kTrain, {"--recompute", "save:attn.qkv,,mlp.down"}),
       "podsim: error: --recompute: save: needs the forward ops to keep, like "
       "save:attn.qkv,attn.core (got 'save:attn.qkv,,mlp.down')\n"},
      {With(kTrain, {"--recompute", "full", "--recompute-layers", "every:0"}),
       "podsim: error: --recompute-layers: 'every:0': every: needs a whole number of layers from "
       "1 to 2147483647\n"},
      {With(kTrain, {"--fp8-library", "te"}),
       "podsim: error: --fp8-library: needs fp8 training (fp8: true, --fp8)\n"},
      {With(kTrain, {"--fp8-library", "transformer-engine"}),
       "podsim: error: --fp8-library: unknown value 'transformer-engine'; expected torchao, te\n"},
      {With(kTrain, {"--recompute-layers", "first:2"}),
       "podsim: error: --recompute-layers: selects the layers that recompute, so it needs a "
       "recompute policy (selective, full or save:...)\n"},
      {With(kTrain, {"--kernels", "compiled"}),
       "podsim: error: --kernels: unknown value 'compiled'; expected fused, eager\n"},
      {With(kTrain, {"--flops-convention", "half"}),
       "podsim: error: --flops-convention: unknown value 'half'; expected causal, full\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=4,pp=4",
        "--batch-tokens", "64Ki", "--seq", "4096"},
       "podsim: error: --layout: layout dp=1,fsdp=4,tp=1,pp=4: pp=4 needs the microbatches per "
       "step: microbatches=N, or mbs=N sequences per microbatch (Megatron-LM's "
       "--micro-batch-size; the batch gives the count)\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout",
        "fsdp=4,pp=4,mbs=3", "--batch-tokens", "64Ki", "--seq", "4096"},
       "podsim: error: --layout: layout dp=1,fsdp=4,tp=1,pp=4,mbs=3: the batch of 16 sequences "
       "must be a multiple of dp*fsdp*mbs = 12\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=8,tp=2",
        "--batch-tokens", "64Ki", "--seq", "4096", "--tp-comm-overlap"},
       "podsim: error: --tp-comm-overlap: tp communication overlap needs sequence parallelism "
       "with tp=2 (add sp=1 to the layout), as Megatron-LM requires\n"},
      {{"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout", "fsdp=16",
        "--batch-tokens", "64Ki", "--seq", "4096", "--ep-comm-overlap"},
       "podsim: error: --ep-comm-overlap: expert all-to-all overlap needs expert parallelism "
       "(ep > 1 in the layout)\n"},
      {{"train", "--system", "h100:16", "--model", "mixtral-8x7b:layers=2", "--layout",
        "dp=16,ep=8", "--batch-tokens", "64Ki", "--seq", "4096", "--fp8-dispatch"},
       "podsim: error: --fp8-dispatch: needs fp8 training (fp8: true, --fp8)\n"},
      {{"train", "--system", "h100:16", "--model", "mixtral-8x7b:layers=2", "--layout", "dp=16",
        "--batch-tokens", "64Ki", "--seq", "4096", "--fp8", "--fp8-dispatch"},
       "podsim: error: --fp8-dispatch: needs ep > 1: layout dp=16,fsdp=1,tp=1,pp=1 dispatches no "
       "tokens\n"},
      // A layout that does not fit warns, but a failure after it is the one line on stderr.
      {{"train", "--system", "h100:8", "--model", "deepseek-v3:layers=4", "--layout", "dp=8,ep=8",
        "--batch-tokens", "64Ki", "--seq", "4096", "--write-schedule", "/nonexistent/x.pb"},
       "podsim: error: --write-schedule: /nonexistent/x.pb: cannot create a file in "
       "/nonexistent/: No such file or directory\n"},
      {{"replay", "/nonexistent/step.pb"},
       "podsim: error: /nonexistent/step.pb: cannot open the schedule file\n"},
  };
  for (const Case& c : cases) {
    Outcome run = Podsim(c.args);
    EXPECT_EQ(run.code, 1);
    EXPECT_EQ(run.err, c.error);
    EXPECT_TRUE(run.out.empty());
  }
  EXPECT_EQ(Podsim({"train", "--system", "h100:8"}).code, 2);  // Missing required flags.
}

// Issue 14: the report states its conventions -- the precision recipe and how MFU and HFU count
// attention -- and mbs= gives the microbatch count from the batch.
TEST(TrainCliTest, ReportsStateTheirConventions) {
  Outcome text = Podsim(kTrain);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("; MFU counts attention over the causal T(T+1)/2 query-key pairs; HFU "
                          "counts the matmul and attention work executed, recomputation "
                          "included)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("(stage 0, precision mixed)"), std::string::npos) << text.out;
  Outcome causal = Podsim(With(kTrain, {"--json"}));
  Outcome full =
      Podsim(With(kTrain, {"--json", "--flops-convention", "full", "--precision", "megatron"}));
  ASSERT_EQ(full.code, 0) << full.err;
  ASSERT_EQ(causal.code, 0) << causal.err;
  const nlohmann::json f = nlohmann::json::parse(full.out);
  const nlohmann::json c = nlohmann::json::parse(causal.out);
  EXPECT_EQ(c["flops_convention"], "causal");
  EXPECT_EQ(c["precision"], "mixed");
  EXPECT_EQ(f["flops_convention"], "full");
  EXPECT_EQ(f["precision"], "megatron");
  // The default convention counts what the causal kernel executes: MFU <= HFU <= 1.
  EXPECT_GE(c["hfu"].get<double>(), c["mfu"].get<double>());
  EXPECT_LE(c["hfu"].get<double>(), 1);
  EXPECT_GT(f["mfu"].get<double>(), c["mfu"].get<double>());  // More pairs counted.
  EXPECT_LE(f["hfu"].get<double>(), 1);
  // PyTorch eager's separate kernels (eager_kernels.h) take longer than the fused ones.
  Outcome eager = Podsim(With(kTrain, {"--json", "--kernels", "eager"}));
  ASSERT_EQ(eager.code, 0) << eager.err;
  const nlohmann::json e = nlohmann::json::parse(eager.out);
  EXPECT_EQ(c["kernels"], "fused");
  EXPECT_EQ(e["kernels"], "eager");
  EXPECT_GT(e["step_time_s"].get<double>(), c["step_time_s"].get<double>());
  // FSDP without resharding after the forward: no backward gathers, more memory.
  Outcome kept = Podsim(With(kTrain, {"--json", "--no-reshard-after-forward"}));
  ASSERT_EQ(kept.code, 0) << kept.err;
  const nlohmann::json k = nlohmann::json::parse(kept.out);
  EXPECT_EQ(c["reshard_after_forward"], true);
  EXPECT_EQ(k["reshard_after_forward"], false);
  EXPECT_GT(k["memory_per_chip_bytes"].get<double>(), c["memory_per_chip_bytes"].get<double>());
  EXPECT_LE(k["step_time_s"].get<double>(), c["step_time_s"].get<double>());
  // PyTorch's eager loss over fp32 logits holds more at its peak than Megatron's, the compiled
  // one less (loss_kernel.h); the eager loss's kernels take longer.
  Outcome upcast = Podsim(With(kTrain, {"--json", "--loss", "upcast"}));
  Outcome compiled = Podsim(With(kTrain, {"--json", "--loss", "compiled"}));
  ASSERT_EQ(upcast.code, 0) << upcast.err;
  ASSERT_EQ(compiled.code, 0) << compiled.err;
  const nlohmann::json u = nlohmann::json::parse(upcast.out);
  const nlohmann::json o = nlohmann::json::parse(compiled.out);
  EXPECT_EQ(c["loss"], "vocab-parallel");
  EXPECT_EQ(u["loss"], "upcast");
  EXPECT_GT(u["memory_per_chip_bytes"].get<double>(), c["memory_per_chip_bytes"].get<double>());
  EXPECT_LT(o["memory_per_chip_bytes"].get<double>(), c["memory_per_chip_bytes"].get<double>());
  EXPECT_GT(u["step_time_s"].get<double>(), c["step_time_s"].get<double>());
  // fp32 main gradients: 2 more bytes per parameter than the default's bf16 ones.
  EXPECT_GT(f["memory"]["grads_bytes"].get<double>(), c["memory"]["grads_bytes"].get<double>());

  Outcome mbs = Podsim({"train", "--system", "tpu-v5p:2x2x4", "--model", "llama3-8b", "--layout",
                        "fsdp=4,pp=4,mbs=2", "--batch-tokens", "64Ki", "--seq", "4096", "--json"});
  ASSERT_EQ(mbs.code, 0) << mbs.err;
  EXPECT_EQ(nlohmann::json::parse(mbs.out)["layout"], "dp=1,fsdp=4,tp=1,pp=4,microbatches=2,mbs=2");
}

TEST(TrainCliTest, BadScheduleNamesTheLine) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "podsim_bad_schedule.textproto";
  {
    std::ofstream out(file);
    out << "system: 'tpu-v5e:2x2'\nmesh { name: 'tp' size: 4 }\nprograms { nme: 'p' }\n";
  }
  Outcome run = Podsim({"replay", file.string()});
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: " + file.string() +
                         ":3:12: unknown field 'nme' in Program (did you mean 'name'?); fields: "
                         "name, where, ops, static_hbm_bytes\n");
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace podsim::cli
