// The book's closed form of an inference step (formulas.md 2.6) and the simulated step's excess
// over it, part by part.

#include "workloads/inference_roofline.h"

#include <gtest/gtest.h>

#include "workloads/inference_schedule.h"

namespace podsim::workloads {
namespace {

constexpr double kV5eHbm = 8.2e11, kV5ePeak = 1.97e14;  // hardware.md, tpu-v5e.

InferenceResult Simulate(const std::string& system_text, const std::string& model_text,
                         const std::string& layout_text, const InferenceOptions& options,
                         const StepOptions& step_options = {}) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  sim::StatusOr<ModelSpec> model = ParseModel(model_text);
  sim::StatusOr<InferenceLayout> layout = ParseInferenceLayout(layout_text);
  PODSIM_CHECK(system.ok() && model.ok() && layout.ok()) << "bad test input";
  sim::StatusOr<InferenceResult> r =
      SimulateInference(*system, *model, *layout, options, step_options);
  PODSIM_CHECK(r.ok()) << r.status();
  return std::move(r).value();
}

InferenceOptions Decode(int64_t batch, int64_t context, DType dtype = DType::kBf16) {
  InferenceOptions o;
  o.phase = InferencePhase::kDecode;
  o.batch = batch;
  o.context = context;
  o.weights = dtype;
  o.kv_cache = dtype;
  return o;
}

double Excess(const InferenceRoofline& r) {
  return r.chip_counts_s + r.other_work_s + r.efficiency_s + r.communication_s;
}

constexpr char kGqa[] =
    "custom:layers=40,d_model=5120,ffn=16560,heads=40,kv_heads=8,head_dim=128,vocab=32000";

TEST(InferenceRooflineTest, IsTheBooksFormulaWithTheModelsCounts) {
  const InferenceResult r = Simulate("tpu-v5e:2x4", kGqa, "tp=8", Decode(16, 8191));
  const ModelSpec model = *ParseModel(kGqa);
  const double cache = 16.0 * 8192 * model.KvCacheBytesPerToken(2) / (8 * kV5eHbm);
  const double weights = 2.0 * static_cast<double>(model.TotalParams()) / (8 * kV5eHbm);
  const double flops = 2.0 * 16 * static_cast<double>(model.MatmulParams()) / (8 * kV5ePeak);
  EXPECT_EQ(r.roofline.chips, 8);
  EXPECT_DOUBLE_EQ(r.roofline.cache_s, cache);
  EXPECT_DOUBLE_EQ(r.roofline.weights_s, weights);
  EXPECT_DOUBLE_EQ(r.roofline.flops_s, flops);
  EXPECT_DOUBLE_EQ(r.roofline.step_s, cache + weights);  // HBM-bound at batch 16.
}

TEST(InferenceRooflineTest, PartsAddUpToTheStep) {
  for (const char* layout : {"tp=8", "tp=4,tp2=2", "tp=4,dp=2", "tp=8,kv_shard=batch"}) {
    const InferenceResult r = Simulate("tpu-v5e:2x4", kGqa, layout, Decode(32, 2047));
    EXPECT_NEAR(r.roofline.step_s + Excess(r.roofline), r.step_time_s, 1e-12) << layout;
    EXPECT_GE(r.roofline.efficiency_s, 0) << layout;
    EXPECT_GE(r.roofline.communication_s, 0) << layout;
    EXPECT_GT(r.roofline.communication_s, 0) << layout;  // Blocking tp collectives.
  }
}

// At full rates the compute stream is the chip's own roofline, so nothing is left to efficiency;
// with even shards, nothing to this chip's counts.
TEST(InferenceRooflineTest, TheIdealRooflineLeavesNoEfficiencyPart) {
  StepOptions ideal;
  ideal.compute = IdealRoofline();
  ideal.calibrated = false;
  const InferenceResult r = Simulate("tpu-v5e:2x4", kGqa, "tp=8", Decode(1, 8191), ideal);
  EXPECT_NEAR(r.roofline.efficiency_s, 0, 1e-6 * r.step_time_s);
  EXPECT_NEAR(r.roofline.chip_counts_s, 0, 1e-3 * r.roofline.step_s);
  // At batch 1 the activations' bytes are less than the input embedding's table, which the
  // closed form counts and a step reads one row of: the part is small, and negative.
  EXPECT_LT(r.roofline.other_work_s, 0);
  EXPECT_GT(r.roofline.other_work_s, -0.02 * r.roofline.step_s);
}

// tp = 16 over 8 kv heads keeps each kv head (and its projection) on two chips: this chip reads
// twice its even share of the cache, which this chip's counts show.
TEST(InferenceRooflineTest, ReplicatedKvHeadsAreThisChipsCounts) {
  const InferenceResult r =
      Simulate("tpu-v5e:4x4", "llama3-70b", "tp=16", Decode(64, 4095, DType::kInt8));
  EXPECT_GT(r.roofline.chip_counts_s, 0.9 * r.roofline.cache_s);
  EXPECT_LT(r.roofline.chip_counts_s, 1.1 * r.roofline.cache_s + 0.1 * r.roofline.weights_s);
}

// The closed form is per replica: dp splits the batch, not the weights; int8 halves the bytes of
// the weights and the cache.
TEST(InferenceRooflineTest, PerReplicaAndPerDtype) {
  const InferenceResult one = Simulate("tpu-v5e:2x2", kGqa, "tp=4", Decode(16, 2047));
  const InferenceResult two = Simulate("tpu-v5e:2x4", kGqa, "tp=4,dp=2", Decode(32, 2047));
  EXPECT_EQ(two.roofline.chips, 4);
  EXPECT_EQ(two.roofline.sequences, 16);
  EXPECT_DOUBLE_EQ(two.roofline.cache_s, one.roofline.cache_s);
  EXPECT_DOUBLE_EQ(two.roofline.weights_s, one.roofline.weights_s);
  EXPECT_DOUBLE_EQ(two.roofline.flops_s, one.roofline.flops_s);
  const InferenceResult int8 =
      Simulate("tpu-v5e:2x2", kGqa, "tp=4", Decode(16, 2047, DType::kInt8));
  EXPECT_DOUBLE_EQ(int8.roofline.cache_s, one.roofline.cache_s / 2);
  EXPECT_DOUBLE_EQ(int8.roofline.weights_s, one.roofline.weights_s / 2);
  EXPECT_DOUBLE_EQ(int8.roofline.flops_s, one.roofline.flops_s);  // The book's bf16 peak.
}

// With expert parallelism across replicas the weights spread over the ep group's chips; each
// replica still holds its dense layers whole, which this chip's counts show.
TEST(InferenceRooflineTest, ExpertParallelWeightsSpreadOverTheEpGroup) {
  const InferenceResult r = Simulate("h100:16", "mixtral-8x7b", "tp=2,dp=8,ep=8", Decode(64, 1023));
  EXPECT_EQ(r.roofline.chips, 2);
  EXPECT_EQ(r.roofline.weight_chips, 8);
  const ModelSpec model = *ParseModel("mixtral-8x7b");
  const double hbm = topology::ParseSystem("h100:16")->chip.hbm_bytes_per_s;
  EXPECT_DOUBLE_EQ(r.roofline.weights_s,
                   2.0 * static_cast<double>(model.TotalParams()) / (8 * hbm));
  EXPECT_GT(r.roofline.chip_counts_s, 0);
}

// A prefill reads no cache, and its matmuls' FLOPs bound it.
TEST(InferenceRooflineTest, PrefillIsBoundByFlops) {
  InferenceOptions o = Decode(1, 4096);
  o.phase = InferencePhase::kPrefill;
  const InferenceResult r = Simulate("tpu-v5e:2x4", kGqa, "tp=8", o);
  EXPECT_EQ(r.roofline.cache_s, 0);
  EXPECT_GT(r.roofline.flops_s, r.roofline.weights_s);
  EXPECT_DOUBLE_EQ(r.roofline.step_s, r.roofline.flops_s);
  EXPECT_NEAR(r.roofline.step_s + Excess(r.roofline), r.step_time_s, 1e-12);
}

}  // namespace
}  // namespace podsim::workloads
