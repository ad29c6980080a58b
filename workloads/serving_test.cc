// A deployment's throughput from its prefill and decode steps (serving.h).

#include "workloads/serving.h"

#include <gtest/gtest.h>

namespace podsim::workloads {
namespace {

ServingResult Serve(const std::string& system_text, const std::string& model_text,
                    const std::string& layout_text, const ServingOptions& serving,
                    DType dtype = DType::kBf16) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  sim::StatusOr<ModelSpec> model = ParseModel(model_text);
  sim::StatusOr<InferenceLayout> layout = ParseInferenceLayout(layout_text);
  PODSIM_CHECK(system.ok() && model.ok() && layout.ok()) << "bad test input";
  InferenceOptions options;
  options.weights = dtype;
  options.kv_cache = dtype;
  sim::StatusOr<ServingResult> r = SimulateServing(*system, *model, *layout, options, serving);
  PODSIM_CHECK(r.ok()) << r.status();
  return std::move(r).value();
}

// Per batch of requests: their prompts prefilled prefill_batch x dp at a time, and G - 1 decode
// steps (the prefill makes the first token); the chips make batch x G tokens in that time.
TEST(ServingTest, ThroughputIsOneWaveOfPrefillsThenDecodes) {
  const ServingOptions o{.prompt_len = 512, .generated_len = 256, .batch = 64, .prefill_batch = 4};
  const ServingResult r = Serve("h100:2", "llama3-8b", "tp=1,dp=2", o);
  EXPECT_EQ(r.prefill_options.batch, 8);  // 4 prompts on each of 2 replicas.
  EXPECT_EQ(r.prefill_options.context, 512);
  EXPECT_EQ(r.decode_options.context, 512 + 128);  // The mean cache length.
  const double wave = 255 * r.decode.step_time_s + 64.0 / 8 * r.prefill.step_time_s;
  EXPECT_NEAR(r.generated_tokens_per_s_per_chip * 2 * wave / (64 * 256), 1, 1e-12);
  // Memory with every sequence at its longest: one more token than the decode step caches.
  InferenceOptions longest = r.decode_options;
  longest.context = 512 + 256 - 1;
  EXPECT_EQ(r.decode_memory.kv_cache_bytes,
            InferenceMemory(*ParseModel("llama3-8b"), *ParseInferenceLayout("tp=1,dp=2"), longest,
                            topology::ParseSystem("h100:2")->chip)
                .kv_cache_bytes);
}

// A prefill of one short prompt reads every weight for 128 rows; batching 64 prompts turns it
// compute-bound, and the deployment makes a third more tokens.
TEST(ServingTest, BatchedPrefillsOfShortPromptsRaiseThroughput) {
  ServingOptions o{.prompt_len = 128, .generated_len = 128, .batch = 512, .prefill_batch = 1};
  const ServingResult one = Serve("h100:1", "llama3-8b", "tp=1", o, DType::kFp8);
  o.prefill_batch = 64;
  const ServingResult many = Serve("h100:1", "llama3-8b", "tp=1", o, DType::kFp8);
  EXPECT_GT(many.generated_tokens_per_s_per_chip, 1.3 * one.generated_tokens_per_s_per_chip);
  EXPECT_LT(many.prefill_chips_per_decode_chip, one.prefill_chips_per_decode_chip / 2);
}

// fp8 weights multiply at the fp8 peak: a compute-bound prefill runs faster than with int8
// weights of the same bytes, which multiply in bf16.
TEST(ServingTest, Fp8WeightsMultiplyAtTheFp8Peak) {
  const ServingOptions o{.prompt_len = 4096, .generated_len = 16, .batch = 16, .prefill_batch = 4};
  const ServingResult fp8 = Serve("h100:1", "llama3-8b", "tp=1", o, DType::kFp8);
  const ServingResult int8 = Serve("h100:1", "llama3-8b", "tp=1", o, DType::kInt8);
  EXPECT_EQ(fp8.prefill.memory.weight_bytes, int8.prefill.memory.weight_bytes);
  EXPECT_LT(fp8.prefill.step_time_s, 0.8 * int8.prefill.step_time_s);
}

}  // namespace
}  // namespace podsim::workloads
