// Validation of inference serving against published measurements (calibration.md G7): every row is
// simulated with SimulateServing (workloads/serving.h) on the system, model, layout and datatypes
// its source ran, with the concurrency its benchmark chose, and recorded
// (tests/testing/validation_record.h) so that docs/validation.md shows predicted against measured.
// Nothing here is tuned per row; the compute and collective models are the families' defaults.
//
// G7.1, TensorRT-LLM's performance overview (NVIDIA/TensorRT-LLM docs/source/performance/
// perf-overview.md, commit 00f37686): total output tokens/s of `trtllm-bench throughput`, an
// offline benchmark of requests that all share one prompt length (ISL) and output length (OSL),
// fed at once, with in-flight batching, ModelOpt FP8 weights and an FP8 KV cache on H100 and
// H200. trtllm-bench sizes the engine from the dataset (tensorrt_llm/bench/build/tuning.py,
// calc_engine_setting and finetune_setting): the requests whose ISL + OSL tokens of KV cache fit
// in 0.95 of the memory the weights leave (one KV head per GPU at least), capped at 4096 and
// rounded up (to 32 below 256, 128 below 1024, else 256; at least 64) as the maximum batch; and
// max_num_tokens = that batch x (1 + ISL / OSL), capped at 32768 and rounded up (to 256 below
// 4096, at least 2048; 512 below 8192; else 1024), raised to ISL + the batch when a prompt does
// not fit in it (chunked context off, trtllm-bench's default). The memory is the device's as
// NVML reports it (H100 SXM 81,559 MiB, H200 143,771 MiB), not podsim's nominal 80 and 141 GB.
// In steady state every iteration carries the running requests' next tokens and admits
// prompts in the rest of max_num_tokens: c = max_num_tokens / (ISL + OSL) prompts an iteration
// (at least one), each request staying OSL iterations, so at most c x OSL run at once, besides
// the KV limit. podsim runs that many requests and prefills c prompts a step (workloads/serving.h).
// Not modelled: CUDA-graph padding of decode batches, and iterations mixing prompts and tokens
// (their shared weight reads). The B200 and GB200 rows use FP4, which podsim does not model. The
// MoE models' rows give no row: the document runs them with attention data parallelism and an
// expert-parallel degree it does not state (docs/validation.md says what that decides).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/validation_record.h"
#include "topology/system.h"
#include "workloads/model_spec.h"
#include "workloads/serving.h"

namespace podsim::workloads {
namespace {

// Issue 5's 10% target, as for the training rows.
constexpr double kTargetTolerance = 0.10;

// trtllm-bench's engine settings (header comment): the concurrent requests that fit, and the
// prompts a prefill step takes.
struct BenchSettings {
  int64_t batch = 0;
  int64_t prefill_batch = 0;
};

int64_t RoundUp(double value, int64_t step) {
  return step * static_cast<int64_t>(std::ceil(value / static_cast<double>(step)));
}

// finetune_setting's rounding: up to the step of the first tier whose bound exceeds the value
// (`last_step` past them), and `floor` at least. The floor holds below the first bound only.
int64_t RoundUpTiered(double value, std::initializer_list<std::pair<double, int64_t>> tiers,
                      int64_t last_step, int64_t floor) {
  for (const auto& [bound, step] : tiers) {
    if (value < bound) {
      return std::max(floor, RoundUp(value, step));
    }
    floor = 0;
  }
  return RoundUp(value, last_step);
}

BenchSettings TrtllmBenchSettings(const ModelSpec& model, const topology::ChipSpec& chip, int tp,
                                  int64_t isl, int64_t osl) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double kv_heads = std::max<double>(tp, static_cast<double>(model.kv_heads));
  const double kv_per_token_gib = 2.0 * static_cast<double>(model.layers) * kv_heads *
                                  static_cast<double>(model.head_dim) * 1.0 / gib;  // FP8.
  const double engine_gib = static_cast<double>(model.TotalParams()) * 1.0 / gib;   // FP8.
  const double device_gib = (chip.name == "h200" ? 143771.0 : 81559.0) / 1024;      // NVML.
  const double available_gib = device_gib * tp - engine_gib;
  const double kv_requests =
      available_gib * 0.95 / (kv_per_token_gib * static_cast<double>(isl + osl));
  const double raw_bs = std::min(kv_requests, 4096.0);
  const double raw_tokens =
      std::min(raw_bs * (1 + static_cast<double>(isl) / static_cast<double>(osl)), 32768.0);
  const int64_t max_bs = RoundUpTiered(raw_bs, {{256, 32}, {1024, 128}}, 256, 64);
  const int64_t max_tokens = RoundUpTiered(raw_tokens, {{4096, 256}, {8192, 512}}, 1024, 2048);
  const int64_t budget = std::max(max_tokens, isl + max_bs);
  BenchSettings s;
  s.prefill_batch = std::max<int64_t>(1, budget / (isl + osl));
  s.batch =
      std::min({max_bs, static_cast<int64_t>(std::floor(kv_requests)), s.prefill_batch * osl});
  s.prefill_batch = std::min(s.prefill_batch, s.batch);
  return s;
}

struct Row {
  const char* model;  // podsim preset.
  const char* label;  // The source's model name.
  const char* chip;
  int tp;
  int64_t isl, osl;
  double tokens_per_s;  // Total output throughput of the TP group.
};

// calibration.md G7.1: Llama 3.1 8B (TP1), Llama 3.3 70B (H200 TP1, H100 TP2) and Llama 3.1 405B
// (TP8), FP8, on H100 and H200.
const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = [] {
    struct Lengths {
      int64_t isl, osl;
    };
    const Lengths lengths[] = {{128, 128},   {128, 2048}, {128, 4096},  {500, 2000}, {1000, 1000},
                               {1000, 2000}, {2048, 128}, {2048, 2048}, {5000, 500}, {20000, 2000}};
    const double llama8_h200[] = {27911, 26221, 18027, 20770, 17744,
                                  16828, 3538,  12194, 3902,  1804};
    const double llama8_h100[] = {28312, 22714, 14325, 17660, 15220, 13899, 3450, 9305, 3459, 1351};
    const double llama70_h200[] = {3803, 4336, 2872, 3666, 2909, 2994, 442, 2003, 566, 283};
    const double llama70_h100[] = {6378, 6651, 4199, 5222, 4205, 4146, 762, 3082, 898, 437};
    const double llama405_h200[] = {3814, 5348, 4741, 4724, 3330, 3722, 456, 2948, 650, 505};
    const double llama405_h100[] = {3627, 4340, 3116, 3994, 2919, 2895, 453, 2296, 610, 345};
    std::vector<Row> out;
    for (int i = 0; i < 10; ++i) {
      const int64_t isl = lengths[i].isl, osl = lengths[i].osl;
      out.push_back({"llama3-8b", "Llama 3.1 8B", "h200", 1, isl, osl, llama8_h200[i]});
      out.push_back({"llama3-8b", "Llama 3.1 8B", "h100", 1, isl, osl, llama8_h100[i]});
      out.push_back({"llama3-70b", "Llama 3.3 70B", "h200", 1, isl, osl, llama70_h200[i]});
      out.push_back({"llama3-70b", "Llama 3.3 70B", "h100", 2, isl, osl, llama70_h100[i]});
      out.push_back({"llama3-405b", "Llama 3.1 405B", "h200", 8, isl, osl, llama405_h200[i]});
      out.push_back({"llama3-405b", "Llama 3.1 405B", "h100", 8, isl, osl, llama405_h100[i]});
    }
    return out;
  }();
  return rows;
}

TEST(InferenceValidationTest, G71TensorRtLlmOfflineThroughput) {
  double sum = 0, worst = 0, bias = 0;
  for (const Row& row : Rows()) {
    const std::string system_text = std::string(row.chip) + ":" + std::to_string(row.tp);
    sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
    sim::StatusOr<ModelSpec> model = ParseModel(row.model);
    ASSERT_TRUE(system.ok() && model.ok());
    const std::string layout_text = "tp=" + std::to_string(row.tp);
    const BenchSettings bench = TrtllmBenchSettings(*model, system->chip, row.tp, row.isl, row.osl);
    ASSERT_GT(bench.batch, 0) << row.label;
    InferenceOptions options;
    options.weights = DType::kFp8;
    options.kv_cache = DType::kFp8;
    const ServingOptions serving{.prompt_len = row.isl,
                                 .generated_len = row.osl,
                                 .batch = bench.batch,
                                 .prefill_batch = bench.prefill_batch};
    sim::StatusOr<ServingResult> r =
        SimulateServing(*system, *model, *ParseInferenceLayout(layout_text), options, serving);
    ASSERT_TRUE(r.ok()) << r.status();
    const double predicted =
        r->generated_tokens_per_s_per_chip * static_cast<double>(system->fabric.chip_count());
    const std::string lengths = std::to_string(row.isl) + "/" + std::to_string(row.osl);
    const std::string what = std::string("output tokens/s of ") + row.label + " FP8 on " +
                             system_text + " (TP" + std::to_string(row.tp) + "), ISL/OSL " +
                             lengths + ", " + std::to_string(bench.batch) + " concurrent, " +
                             std::to_string(bench.prefill_batch) + " prompts a prefill step";
    const std::string command =
        "infer --system " + system_text + " --model " + row.model + " --layout " + layout_text +
        " --prefill-len " + std::to_string(row.isl) + " --decode-len " + std::to_string(row.osl) +
        " --batch " + std::to_string(bench.batch) + " --prefill-batch " +
        std::to_string(bench.prefill_batch) + " --weights fp8 --kv fp8";
    char note[320];
    std::snprintf(note, sizeof note,
                  "decode step %.2f ms (bottleneck %s %.0f%%), prefill step %.2f ms (%s %.0f%%), "
                  "%.2f prefill per decode chip; podsim's memory at the longest %.1f GiB per chip "
                  "(fits: %s)",
                  r->decode.step_time_s * 1e3, r->decode.bottleneck.c_str(),
                  100 * r->decode.bottleneck_share, r->prefill.step_time_s * 1e3,
                  r->prefill.bottleneck.c_str(), 100 * r->prefill.bottleneck_share,
                  r->prefill_chips_per_decode_chip, r->decode_memory.total_bytes / 1073741824.0,
                  r->decode_memory.fits ? "yes" : "no");
    testing::RecordValidation({.case_id = "G7.1 " + std::string(row.label) + " " + row.chip,
                               .what = what,
                               .predicted = predicted,
                               .published = row.tokens_per_s,
                               .unit = "tokens/s",
                               .tolerance = kTargetTolerance,
                               .kind = testing::RowKind::kValidation,
                               .family = "hopper",
                               .command = command,
                               .note = note});
    // The error of the time the rate implies (docs/validation.md): negative is podsim too fast.
    const double signed_error = row.tokens_per_s / predicted - 1;
    const double error = std::abs(signed_error);
    bias += signed_error;
    std::printf("G7.1 %s %s %s: measured %.0f, podsim %.0f (%+.1f%%)\n", row.label, row.chip,
                lengths.c_str(), row.tokens_per_s, predicted, 100 * signed_error);
    sum += error;
    worst = std::max(worst, error);
  }
  const double mean = sum / static_cast<double>(Rows().size());
  bias /= static_cast<double>(Rows().size());
  std::printf("G7.1: %zu rows, mean absolute error %.1f%%, bias %+.1f%%, worst %.1f%%\n",
              Rows().size(), 100 * mean, 100 * bias, 100 * worst);
  // One-sided guards, no worse than the figures of 2026-12-05 by more than a little (README's
  // accuracy section): a model that improves the rows passes.
  EXPECT_LE(mean, 0.10);            // 9.0%.
  EXPECT_LE(std::abs(bias), 0.10);  // -8.1%.
  EXPECT_LE(worst, 0.34);           // 31.3%.
}

}  // namespace
}  // namespace podsim::workloads
