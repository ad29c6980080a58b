// Validation of whole training steps against published measurements (docs/reference/measured.md
// V1, V3, V7) and the book's training verdicts (book-cases.yaml TR-, G2x): every row is simulated
// with SimulateTraining on the system, model and layout its source used, and recorded
// (tests/testing/validation_record.h) so that docs/validation.md shows predicted against measured.
//
// Nothing here is tuned per row. The compute and collective models are the families' defaults
// (workloads/compute_model.h, collectives/efficiency_model.h); what differs between rows is what
// the sources say they ran: model dimensions, layout, micro-batch, pipeline schedule,
// recomputation, attention kernel and precision recipe. Measured throughputs are turned into step
// times with each source's own FLOP count (measured.md "Formulas the sources use"), so the error of
// a row is the error of the simulated step time.
//
// Runtime: one chip per program and whole-collective flows (the defaults). The 530B and 1T
// pipelines (35 and 64 stages, 280 and 512 micro-batches, up to 4M ops) take 4-10 s each in
// Release, so their tests are DISABLED_ for ctest (twice, once under the sanitizers);
// tools/validation.py runs them (--gtest_also_run_disabled_tests), with their assertions, when it
// regenerates or checks docs/validation.md. The same code runs on the smaller rows under ctest.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/validation_record.h"
#include "topology/system.h"
#include "workloads/model_spec.h"
#include "workloads/remat_policy.h"
#include "workloads/training.h"
#include "workloads/training_schedule.h"

namespace podsim::workloads {
namespace {

constexpr int64_t kSeq = 2048;
// Each measured row's tolerance in docs/validation.md: issue 5's 10% target (kTarget below).
constexpr double kTargetTolerance = 0.10;  // Every source here trains at sequence length 2048.

topology::System System(const std::string& text) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(text);
  EXPECT_TRUE(system.ok()) << system.status();
  return std::move(*system);
}

Layout ParsedLayout(const std::string& text) {
  sim::StatusOr<Layout> layout = ParseLayout(text);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

TrainingResult Train(const std::string& system_text, const ModelSpec& model,
                     const std::string& layout_text, int64_t sequences, const OpOptions& options,
                     const StepOptions& step_options = {}, int64_t seq = kSeq) {
  const topology::System system = System(system_text);
  sim::StatusOr<TrainingResult> result = SimulateTraining(
      system, model, ParsedLayout(layout_text), BatchSpec{sequences, seq}, options, step_options);
  EXPECT_TRUE(result.ok()) << system_text << " " << layout_text << ": " << result.status();
  return result.ok() ? std::move(*result) : TrainingResult{};
}

// The --model text of a model: its custom:... form, every field written (ParseModel reads it
// back as the same model: ModelTextReadsBack).
std::string ModelText(const ModelSpec& m) {
  auto n = [](int64_t v) { return std::to_string(v); };
  return "custom:layers=" + n(m.layers) + ",d_model=" + n(m.d_model) + ",ffn=" + n(m.ffn) +
         ",heads=" + n(m.heads) + ",kv_heads=" + n(m.kv_heads) + ",head_dim=" + n(m.head_dim) +
         ",vocab=" + n(m.vocab) + ",gated=" + n(m.gated_mlp) + ",tied=" + n(m.tied_embeddings) +
         ",bias=" + n(m.linear_biases) + ",norm=" + (m.norm == NormKind::kLayer ? "layer" : "rms") +
         ",positions=" + n(m.learned_positions) + ",dropout=" + n(m.dropout);
}

// The podsim command of a training row (validation_record.h).
std::string TrainCommand(const std::string& system, const ModelSpec& model,
                         const std::string& layout, int64_t sequences, const OpOptions& options,
                         int64_t seq = kSeq) {
  std::string command = "train --system " + system + " --model " + ModelText(model) + " --layout " +
                        layout + " --batch-tokens " + std::to_string(sequences * seq) + " --seq " +
                        std::to_string(seq);
  // A MaxText policy by its name, where the ops are one's (remat_policy.h).
  std::string policy;
  for (const std::string& name : MaxTextRematPolicyNames()) {
    const RematPolicy p = *MaxTextRematPolicy(name);
    if (!options.offloaded_ops.empty() && p.saved == options.saved_ops &&
        p.offloaded == options.offloaded_ops) {
      policy = name;
    }
  }
  if (!policy.empty()) {
    command += " --recompute maxtext:" + policy;
  } else if (options.recompute == RecomputePolicy::kSaveNamed) {
    std::string saved;
    for (const std::string& op : options.saved_ops) saved += (saved.empty() ? "" : ",") + op;
    command += " --recompute save:" + saved;
  } else if (options.recompute != RecomputePolicy::kNone) {
    command += options.recompute == RecomputePolicy::kFull ? " --recompute full"
                                                           : " --recompute selective";
  }
  if (options.recompute_layers != RecomputeLayers{}) {
    command += " --recompute-layers " + RecomputeLayersName(options.recompute_layers);
  }
  const std::string_view kernel = AttentionKernelName(options.attention);
  if (options.attention == AttentionKernel::kMaterialized) command += " --attention materialized";
  if (!kernel.empty()) command += " --attention " + std::string(kernel);
  // Options at their framework's defaults are not written (framework.h).
  const FrameworkDefaults defaults = DefaultsOf(options.framework);
  if (options.framework != Framework::kBook) {
    command += " --framework " + std::string(FrameworkName(options.framework));
  }
  if (options.precision.name != defaults.precision.name) {
    command += " --precision " + std::string(options.precision.name);
  }
  if (options.precision.bf16_gradients) command += " --grad-reduce-in-bf16";
  if (options.distributed_optimizer) command += " --distributed-optimizer";
  if (options.overlap_grad_reduce && !defaults.overlap_grad_reduce) {
    command += " --overlap-grad-reduce";
  }
  if (options.distributed_optimizer && options.overlap_param_gather &&
      !defaults.overlap_param_gather) {
    command += " --overlap-param-gather";
  }
  if (options.tp_comm_overlap) command += " --tp-comm-overlap";
  if (options.fp8) command += " --fp8";
  if (options.fp8 && options.fp8_library != defaults.fp8_library) {
    command += " --fp8-library " + std::string(Fp8LibraryName(options.fp8_library));
  }
  if (options.fp8 && options.fp8_recipe != Fp8Recipe::kTensorwise) {
    command += " --fp8-recipe " + std::string(Fp8RecipeName(options.fp8_recipe));
  }
  if (options.kernels != defaults.kernels) {
    command += " --kernels " + std::string(KernelLibraryName(options.kernels));
  }
  if (options.fp8_all_gather) command += " --fp8-all-gather";
  if (options.loss != defaults.loss) {
    command += " --loss " + std::string(LossKernelName(options.loss));
  }
  return command;
}

// A measured row: an independent measurement that sets nothing (a time in seconds unless `unit`
// says otherwise).
void RecordMeasured(const std::string& id, const std::string& what, double predicted,
                    double measured, const std::string& family, const std::string& command,
                    const std::string& note = "", const std::string& unit = "s",
                    double tolerance = kTargetTolerance) {
  testing::RecordValidation({.case_id = id,
                             .what = what,
                             .predicted = predicted,
                             .published = measured,
                             .unit = unit,
                             .tolerance = tolerance,
                             .kind = testing::RowKind::kValidation,
                             .family = family,
                             .command = command,
                             .note = note});
}

// The book's tags (book-cases.yaml "tol"): exact < 1%, rounded 5%, approx 15%.
constexpr double kBookExact = 0.01;
constexpr double kBookRounded = 0.05;
constexpr double kBookApprox = 0.15;

// A book verdict against the simulated steps that decide it (the book's rates, podsim's fabric
// and schedule): a simulation row (validation_record.h), with what the closed form leaves out.
// Crossovers come from several simulated steps, which no single command prints.
void RecordBook(const std::string& id, const std::string& what, double predicted, double book,
                double tag, const std::string& family, const std::string& unit,
                const std::string& note) {
  testing::RecordValidation({.case_id = id,
                             .what = what,
                             .predicted = predicted,
                             .published = book,
                             .unit = unit,
                             .tolerance = tag,
                             .kind = testing::RowKind::kSimulation,
                             .family = family,
                             .note = note});
}

// What a row needs from a simulated step (the schedule itself is dropped at once: the 1T
// pipeline's is 4M ops).
struct Outcome {
  double step_time_s = 0;
  double mfu = 0;
};

// Runs the simulations one after the other, keeping only their outcomes.
std::vector<Outcome> RunAll(const std::vector<std::function<Outcome()>>& jobs) {
  std::vector<Outcome> outcomes;
  for (const auto& job : jobs) outcomes.push_back(job());
  return outcomes;
}

Outcome OutcomeOf(const TrainingResult& result) { return {result.step_time_s, result.mfu}; }

// Relative errors of one source's rows, for its mean absolute error.
class ErrorSummary {
 public:
  explicit ErrorSummary(std::string source) : source_(std::move(source)) {}
  void Add(double predicted, double measured) {
    errors_.push_back(std::abs(predicted / measured - 1));
  }
  double Mean() const {
    double sum = 0;
    for (double e : errors_) sum += e;
    return errors_.empty() ? 0 : sum / static_cast<double>(errors_.size());
  }
  double Worst() const {
    return errors_.empty() ? 0 : *std::max_element(errors_.begin(), errors_.end());
  }
  void Print() const {
    std::printf("%s: %zu rows, mean absolute error %.1f%%, worst %.1f%%\n", source_.c_str(),
                errors_.size(), 100 * Mean(), 100 * Worst());
  }

 private:
  std::string source_;
  std::vector<double> errors_;
};

// A measured row of `summary`'s source: recorded for docs/validation.md, printed, and added to
// the source's error summary.
void RecordSourceRow(ErrorSummary& summary, const std::string& id, const std::string& what,
                     double predicted, double measured, const std::string& family,
                     const std::string& command, const std::string& note) {
  RecordMeasured(id, what, predicted, measured, family, command, note);
  std::printf("%s: measured %.4g s, podsim %.4g s (%+.1f%%)\n", id.c_str(), measured, predicted,
              100 * (predicted / measured - 1));
  summary.Add(predicted, measured);
}

// A measured memory row: the peak memory per chip a run states, against podsim's memory per chip
// (`podsim train` prints it), in GiB; issue 14's tolerance for memory, 10%. docs/validation.md
// summarizes memory rows apart from the step-time rows.
void RecordMeasuredMemory(ErrorSummary& summary, const std::string& id, const std::string& what,
                          double predicted_bytes, double measured_gib, const std::string& family,
                          const std::string& command, const std::string& note) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  constexpr double kMemoryTolerance = 0.10;
  const double predicted = predicted_bytes / kGiB;
  RecordMeasured(id, what, predicted, measured_gib, family, command, note, "GiB", kMemoryTolerance);
  std::printf("%s: measured %.4g GiB, podsim %.4g GiB (%+.1f%%)\n", id.c_str(), measured_gib,
              predicted, 100 * (predicted / measured_gib - 1));
  summary.Add(predicted, measured_gib);
}

// The target of issue 5, kTargetTolerance: mean absolute error of step time at most 10% over a
// source's rows. It is each row's tolerance in docs/validation.md (within or not); the tests
// below assert one-sided "no worse than" guards instead, at what the model achieves today plus a
// margin, so that a change that makes the rows worse fails and one that makes them better never
// does (issue 14's protocol).
// The A100 rows (V1, V3) are 15-25% too fast since the GEMM plateau is fitted on microbenchmarks
// (isolated A100 GEMMs, tools/fit_calibration.py) rather than borrowed from a power-capped H200:
// what the old plateau compensated for -- non-GEMM kernels slower than their roofline, compute
// slowed by concurrent communication -- is not modelled yet.
// Guards: the worst row and the mean of each source on 2026-12-02 (after the distributed
// optimizer, tp communication overlap and interference), plus about 2 points.
constexpr double kV1RowGuard = 0.25;     // Worst row 22.5%.
constexpr double kV1MeanGuard = 0.23;    // Mean 20.3% (the 8 rows ctest runs).
constexpr double kV3T4MeanGuard = 0.17;  // Mean 14.9%.
constexpr double kV3T5RowGuard = 0.24;   // Worst row 21.4%.
constexpr double kV3T5MeanGuard = 0.21;  // Mean 18.4%.
constexpr double kG61MeanGuard = 0.20;   // Mean 17.8%.
// Worst 35.2% (the 32B row at tp=8, cuDNN attention) on 2026-12-02; a point or two more since
// hopper's attention runs at the power cap (2026-12-05).
constexpr double kG61RowGuard = 0.38;
// Mean 18.3%, worst 29.3% (the 256K row) with the rows' Float8 linear layers (--fp8), SDPA's FA2
// kernel (--attention fa2) and hopper's attention and fp8 GEMMs at the power cap (2026-12-05;
// 35.6% and 44.4% before the cap). The rest: blockwise attention, the 500 W H100.
constexpr double kG62CpMeanGuard = 0.20;
constexpr double kG62CpRowGuard = 0.32;
// torchtitan's FSDP rows: worst 34.0% before hopper's attention and fp8 GEMMs ran at the power
// cap, less since (2026-12-05; see docs/validation.md); the H200 rows closer than the H100 ones.
constexpr double kG62FsdpRowGuard = 0.28;
// torchtitan's H100s (calibration.md G6.2): Grand Teton hosts of 8 H100s with 96 GB of HBM2e at
// 2.4 TB/s and a 500 W power limit, "between SXM and NVL". The memory runs as stated; the power
// limit does not (no hopper GEMM is measured at 500 W).
constexpr const char* kGrandTetonH100 = ",hbm=96e9,hbm_bw=2.4e12";
// torchtitan's per-op activation checkpointing (selective_ac_option "op"): its policy saves
// every matmul's output but every second one of each layer's seven (wq, wv, w1 and w2 kept; wk, wo
// and w3 recomputed) and SDPA's, recomputing the rest: podsim keeps attn.qkv (wq, wk and wv are one
// matmul), attn.core, mlp.gate and mlp.down, and the layer's input, recomputing attn.out, mlp.up
// and the vector ops.
void SetTorchtitanOpCheckpointing(OpOptions& options) {
  options.recompute = RecomputePolicy::kSaveNamed;
  options.saved_ops = {"input", "attn.qkv", "attn.core", "mlp.gate", "mlp.down"};
}
// What torchtitan's memory column measures and podsim does not count.
constexpr const char* kTorchtitanMemoryNote =
    "torchtitan reports the caching allocator's max reserved bytes; podsim counts the tensors "
    "alive at the peak with FSDP2's gathered root (embedding and head), its all-gather copy-in "
    "pool and, under the eager loss, the logits' block the allocator keeps reserved; not "
    "counted: the rest of the allocator's fragmentation (eager's unfused temporaries: the FSDP "
    "runs reserved 5.0-5.4 GiB more eager than compiled, where podsim counts both alike)";
// Memory rows on 2026-12-08, with FSDP2's root, its all-gather pool and the loss's reserved
// logits block: -2.7% to +7.6%, the compiled rows over by 0.6-7.6% (podsim counts something those
// runs did not hold, which the eager rows' uncounted fragmentation hides in theirs); a guard,
// not a target.
constexpr double kG62MemoryRowGuard = 0.10;
// MoE Parallel Folding rows: worst 16% (the fine-grained G8T8 with folding); a guard, not a target.
constexpr double kG6FoldingRowGuard = 0.25;
// Its context-scaling rows: a guard at today's worst (see the test) plus a margin, not a target.
constexpr double kG6FoldingContextRowGuard = 0.40;
// torchtitan on 64 A100s: mean 17.6%, worst 24.8% (Llama 2 70B at local batch 1) on 2026-12-05,
// every row too fast, as V1's and V3's Megatron rows of 2021-22 are; a guard, not a target.
constexpr double kG62A100RowGuard = 0.27;
// torchtitan's 2D-4D rows (T4-T6) on 2026-12-07: every step too fast, mean 17.7%, worst 30.1%
// (the 256K row: the CP rows' sequence scaling), AsyncTP 10.8% (podsim hides tp's traffic as
// Transformer Engine's userbuffers do, and gains 14% where torchtitan measured 5.4%); memory on
// 2026-12-08 all under, worst 20.3% (T6 at 256K; the pipelined rows -10.5% to -20.3%, T4 -9.1%
// with loss_parallel's temporaries). Guards, not targets.
constexpr double kG62MultiDimRowGuard = 0.33;
constexpr double kG62MultiDimMemoryRowGuard = 0.22;
// Lambda's GPT3-2.7B rows on 2026-12-07: all too fast, A100 -10.8% and -13.8%, H100 -18.0% and
// -19.0% (with --precision amp's casts; -16% to -26% without them); a guard, not a target.
constexpr double kG63Gpt3RowGuard = 0.22;
constexpr double kG63RowGuard = 0.46;  // Worst 43.4%, the B200 row (BLOOM -23%, H200 -23%).
// Megatron-Bridge 25.11: worst 70.7% (Qwen3-30B-A3B on 8 B200s); the dense H100 rows are +2.4% and
// +0.3%, the MoE rows -43% to -71%. Raised from 0.70 on 2026-12-05 when Transformer Engine's
// casts were modelled as it runs them (weights cast once a step, the weight gradient reading the
// casts before it, MXFP8's scales: fp8_training.h), which made every row faster and the MoE
// rows, already too fast for the costs Megatron-Core's MoE layers pay that podsim does not model,
// further off.
constexpr double kMegatronBridgeRowGuard = 0.72;

// --- Megatron-LM GPT models (measured.md V1 and V3) -------------------------------------------
// GPT-3 architecture as Megatron-LM trains it: plain GeLU MLP of 4h, LayerNorm, biases, learned
// positions (2048), dropout, tied embeddings, the vocabulary padded to 51,200, head dim h / heads.
ModelSpec Gpt(int64_t layers, int64_t hidden, int64_t heads) {
  ModelSpec m;
  m.name = "gpt-" + std::to_string(layers) + "x" + std::to_string(hidden);
  m.layers = layers;
  m.d_model = hidden;
  m.ffn = 4 * hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.vocab = 51200;
  m.gated_mlp = false;
  m.tied_embeddings = true;
  m.linear_biases = true;
  m.norm = NormKind::kLayer;
  m.learned_positions = 2048;
  m.dropout = true;
  return m;
}

// Megatron-LM's attention of 2021-2022 materializes the scores (baddbmm, fused softmax, dropout,
// bmm); Korthikanti et al. count its activations that way (Table 2).
// Megatron-LM of 2021-22 as the framework's defaults run it: its local DDP reduced the gradients
// after the backward (train_step's allreduce_gradients once forward_backward_func returned;
// megatron/model/distributed.py), as Megatron-Core does without --overlap-grad-reduce.
OpOptions Megatron(RecomputePolicy recompute, PrecisionRecipe precision) {
  OpOptions o = FrameworkOptions(Framework::kMegatron);
  o.recompute = recompute;
  o.attention = AttentionKernel::kMaterialized;
  o.precision = precision;
  return o;
}

// V1: Narayanan et al. 2021 (SC'21) Table 1, weak scaling on Selene (A100-80GB DGX SuperPOD).
// Micro-batch sizes and interleaving from Megatron-LM's examples/sc21/run_table_1.sh (MBS;
// --num-layers-per-virtual-pipeline-stage 5/5/3/1 for 76B/145B/310B/530B, none for 39B and 1T).
// fp16 mixed precision with fp16 gradients (2021: main grads in the parameter dtype), fp32 master
// weights and Adam moments: PrecisionRecipe::Zero(); full recomputation (--checkpoint-activations,
// one layer per checkpoint). Published: TFLOP/s per GPU counted by eq. (3),
// F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), so the measured iteration time is F / (n X).
struct V1Row {
  const char* name;
  int64_t heads, hidden, layers, tp, pp, gpus, batch;
  double tflops_per_gpu;
  int64_t micro_batch, virtual_stages;
  bool large;  // In the DISABLED_ test (header comment).
};

const std::vector<V1Row>& V1Rows() {
  static const std::vector<V1Row> rows = {
      {"1.7B", 24, 2304, 24, 1, 1, 32, 512, 137, 16, 1, false},
      {"3.6B", 32, 3072, 30, 2, 1, 64, 512, 138, 16, 1, false},
      {"7.5B", 32, 4096, 36, 4, 1, 128, 512, 142, 16, 1, false},
      {"18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1, false},
      {"39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1, false},
      {"76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3, false},
      {"145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2, false},
      {"310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2, false},
      {"529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3, true},
      {"1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1, true},
  };
  return rows;
}

double MegatronEq3Flops(const V1Row& r) {
  const double B = static_cast<double>(r.batch), s = kSeq, l = static_cast<double>(r.layers),
               h = static_cast<double>(r.hidden), V = 51200;
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

void RunV1(bool large) {
  ErrorSummary summary(large ? "V1 (large rows)" : "V1");
  std::vector<const V1Row*> rows;
  std::vector<std::string> systems, layouts;
  std::vector<std::function<Outcome()>> jobs;
  for (const V1Row& r : V1Rows()) {
    if (r.large != large) continue;
    const int64_t dp = r.gpus / (r.tp * r.pp);
    const int64_t microbatches = r.batch / dp / r.micro_batch;
    std::string layout = "dp=" + std::to_string(dp) + ",tp=" + std::to_string(r.tp) +
                         ",pp=" + std::to_string(r.pp) +
                         ",microbatches=" + std::to_string(microbatches);
    if (r.virtual_stages > 1) {
      layout += ",schedule=interleaved,virtual_stages=" + std::to_string(r.virtual_stages);
    }
    const std::string system = "a100:" + std::to_string(r.gpus);
    rows.push_back(&r);
    systems.push_back(system);
    layouts.push_back(layout);
    jobs.push_back([&r, system, layout] {
      return OutcomeOf(Train(system, Gpt(r.layers, r.hidden, r.heads), layout, r.batch,
                             Megatron(RecomputePolicy::kFull, PrecisionRecipe::Zero())));
    });
  }
  const std::vector<Outcome> outcomes = RunAll(jobs);
  for (size_t i = 0; i < rows.size(); ++i) {
    const V1Row& r = *rows[i];
    const double measured =
        MegatronEq3Flops(r) / (static_cast<double>(r.gpus) * r.tflops_per_gpu * 1e12);
    const double predicted = outcomes[i].step_time_s;
    RecordMeasured(std::string("V1 row ") + r.name,
                   "iteration time on " + systems[i] + ", " + layouts[i] + " (published " +
                       std::to_string(int(r.tflops_per_gpu)) + " TFLOP/s/GPU by eq. 3)",
                   predicted, measured, "a100",
                   TrainCommand(systems[i], Gpt(r.layers, r.hidden, r.heads), layouts[i], r.batch,
                                Megatron(RecomputePolicy::kFull, PrecisionRecipe::Zero())));
    std::printf("V1 %-8s measured %8.3f s podsim %8.3f s (%+.1f%%); eq.3 TFLOP/s/GPU %.1f\n",
                r.name, measured, predicted, 100 * (predicted / measured - 1),
                MegatronEq3Flops(r) / static_cast<double>(r.gpus) / predicted / 1e12);
    summary.Add(predicted, measured);
    EXPECT_LT(std::abs(predicted / measured - 1), kV1RowGuard) << r.name;
  }
  summary.Print();
  EXPECT_LE(summary.Mean(), kV1MeanGuard);
}

// The rows' commands name their models as ModelText writes them: read back, the same model.
TEST(TrainingValidationTest, ModelTextReadsBack) {
  for (const ModelSpec& m : {Gpt(24, 2304, 24), Gpt(96, 12288, 96)}) {
    sim::StatusOr<ModelSpec> back = ParseModel(ModelText(m));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(ModelText(*back), ModelText(m));
    EXPECT_EQ(back->TotalParams(), m.TotalParams());
    EXPECT_EQ(back->TrainingFlopsPerToken(kSeq, AttentionCount::kFull),
              m.TrainingFlopsPerToken(kSeq, AttentionCount::kFull));
  }
}

TEST(TrainingValidationTest, V1MegatronTable1) { RunV1(false); }

TEST(TrainingValidationTest, DISABLED_V1MegatronTable1LargestPipelines) { RunV1(true); }

// --- V3: Korthikanti et al. 2022, "Reducing Activation Recomputation" (arXiv 2205.05198) ------
// Selene A100-80GB, no data parallelism, Megatron-LM of 2022: PrecisionRecipe::Megatron() (fp32
// main gradients, accumulated by the weight-gradient GEMMs), materialized attention. Table 3's
// configurations; interleaving with 3 chunks per stage for 175B and 530B, none for 22B and 1T.
ModelSpec Gpt22B() { return Gpt(48, 6144, 64); }

// Table 4: one layer of the 22B model (tp=8, micro-batch 4, 8 GPUs), forward and backward in ms.
TEST(TrainingValidationTest, V3KorthikantiTable4LayerTimes) {
  struct Row {
    const char* name;
    const char* layout;
    RecomputePolicy recompute;
    double forward_ms, backward_ms;
  };
  const std::vector<Row> rows = {
      {"baseline", "tp=8", RecomputePolicy::kNone, 7.7, 11.9},
      {"sequence parallel", "tp=8,sp=1", RecomputePolicy::kNone, 7.2, 11.8},
      {"full recompute", "tp=8", RecomputePolicy::kFull, 7.7, 19.5},
      {"selective recompute", "tp=8", RecomputePolicy::kSelective, 7.7, 13.2},
      {"selective + sequence", "tp=8,sp=1", RecomputePolicy::kSelective, 7.2, 13.1},
  };
  ErrorSummary summary("V3 Table 4");
  for (const Row& r : rows) {
    const ModelSpec model = Gpt22B();
    const OpOptions options = Megatron(r.recompute, PrecisionRecipe::Megatron());
    StepOptions step;
    step.time_layers = true;
    const TrainingResult result = Train("a100:8", model, r.layout, 4, options, step);
    // A middle layer's times, as the command's JSON gives them (layer_times; layer_times.h
    // times a layer as Table 4 does).
    constexpr size_t kLayer = 24;
    ASSERT_GT(result.layer_times.size(), kLayer);
    const LayerTime& t = result.layer_times[kLayer];
    ASSERT_EQ(t.layer, static_cast<int>(kLayer));
    const std::string id = std::string("V3 T4 ") + r.name;
    const std::string command =
        TrainCommand("a100:8", model, r.layout, 4, options) + " --layer-times --json";
    RecordMeasured(id,
                   "22B layer forward on a100:8, " + std::string(r.layout) +
                       " (JSON layer_times[24].forward_s)",
                   t.forward_s, r.forward_ms * 1e-3, "a100", command);
    RecordMeasured(id,
                   "22B layer backward on a100:8, " + std::string(r.layout) +
                       " (JSON layer_times[24].backward_s)",
                   t.backward_s, r.backward_ms * 1e-3, "a100", command);
    std::printf("V3 T4 %-22s fwd %.2f ms (measured %.1f)  bwd %.2f ms (measured %.1f)\n", r.name,
                t.forward_s * 1e3, r.forward_ms, t.backward_s * 1e3, r.backward_ms);
    summary.Add(t.forward_s, r.forward_ms * 1e-3);
    summary.Add(t.backward_s, r.backward_ms * 1e-3);
  }
  summary.Print();
  EXPECT_LE(summary.Mean(), kV3T4MeanGuard);
}

// Table 5: end-to-end iteration time with full recomputation and with the paper's sequence
// parallelism + selective recomputation (global batch = micro-batches of 1 sequence, except 22B:
// one micro-batch of 4).
struct V3Row {
  const char* name;
  int64_t heads, hidden, layers, pp, gpus, batch, micro_batch, virtual_stages;
  double full_s, selective_s;
};

void RunV3Table5(const std::vector<V3Row>& rows, const std::string& source) {
  ErrorSummary summary(source);
  std::vector<std::function<Outcome()>> jobs;
  std::vector<std::string> systems, layouts;
  for (const V3Row& r : rows) {
    for (bool present : {false, true}) {
      std::string layout = "tp=8,pp=" + std::to_string(r.pp) +
                           ",microbatches=" + std::to_string(r.batch / r.micro_batch);
      if (present) layout += ",sp=1";
      if (r.virtual_stages > 1) {
        layout += ",schedule=interleaved,virtual_stages=" + std::to_string(r.virtual_stages);
      }
      const std::string system = "a100:" + std::to_string(r.gpus);
      systems.push_back(system);
      layouts.push_back(layout);
      jobs.push_back([&r, present, system, layout] {
        return OutcomeOf(
            Train(system, Gpt(r.layers, r.hidden, r.heads), layout, r.batch,
                  Megatron(present ? RecomputePolicy::kSelective : RecomputePolicy::kFull,
                           PrecisionRecipe::Megatron())));
      });
    }
  }
  const std::vector<Outcome> outcomes = RunAll(jobs);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const V3Row& r = rows[i / 2];
    const bool present = i % 2 == 1;
    const double predicted = outcomes[i].step_time_s;
    const double measured = present ? r.selective_s : r.full_s;
    const char* what = present ? "sequence parallel + selective recompute" : "full recompute";
    RecordMeasured(
        std::string("V3 T5 ") + r.name + (present ? " SP+selective" : " full"),
        std::string("iteration time on ") + systems[i] + ", " + what, predicted, measured, "a100",
        TrainCommand(systems[i], Gpt(r.layers, r.hidden, r.heads), layouts[i], r.batch,
                     Megatron(present ? RecomputePolicy::kSelective : RecomputePolicy::kFull,
                              PrecisionRecipe::Megatron())));
    std::printf("V3 T5 %-5s %-40s measured %6.2f s podsim %6.2f s (%+.1f%%), MFU %.1f%%\n", r.name,
                what, measured, predicted, 100 * (predicted / measured - 1), 100 * outcomes[i].mfu);
    summary.Add(predicted, measured);
    EXPECT_LT(std::abs(predicted / measured - 1), kV3T5RowGuard) << r.name << " " << what;
  }
  summary.Print();
  EXPECT_LE(summary.Mean(), kV3T5MeanGuard);
}

TEST(TrainingValidationTest, V3KorthikantiTable5) {
  RunV3Table5({{"22B", 64, 6144, 48, 1, 8, 4, 4, 1, 1.42, 1.10},
               {"175B", 96, 12288, 96, 8, 64, 64, 1, 3, 18.13, 13.75}},
              "V3 Table 5");
}

TEST(TrainingValidationTest, DISABLED_V3KorthikantiTable5LargestPipelines) {
  RunV3Table5({{"530B", 128, 20480, 105, 35, 280, 280, 1, 3, 49.05, 37.83},
               {"1T", 160, 25600, 128, 64, 512, 512, 1, 1, 94.42, 71.49}},
              "V3 Table 5 (large rows)");
}

// --- G6.1: Megatron-Core weak scaling on H100 (calibration.md G6.1) ----------------------------
// NVIDIA/Megatron-LM README model table (Megatron-Core r0.8.0): GPT models with a vocabulary of
// 131,072 and sequences of 4096 on H100, each row's TP, PP, DP and global batch;
// --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap and PP overlap on; throughput
// end to end (data loading, optimizer, logging included). Published: TFLOP/s per GPU by
// Megatron-LM's num_floating_point_operations (megatron/training/training.py), which for this GPT
// (MHA, ffn 4h, no gating) is Narayanan et al.'s count without recomputation,
// F = 72 B s L h^2 (1 + s/(6h) + V/(12 L h)); the measured iteration time is F / (GPUs x TFLOP/s).
// Not stated, so assumed here (and visible in each row's command): Megatron-Core's GPT block
// defaults (LayerNorm, GeLU, biases, learned positions, dropout), Megatron's bf16 recipe with fp32
// main gradients, no recomputation, micro-batches of one sequence, and Megatron-LM's unfused loss
// (--cross-entropy-loss-fusion off, its default). Attention is Transformer
// Engine's, which on Hopper picks its FusedAttention (cuDNN) over FlashAttention whenever both
// can run ("Disabling FlashAttention to give FusedAttention preference on Hopper+", TE's
// get_attention_backend): --attention cudnn. What the stated flags imply is modelled as stated:
// --overlap-param-gather requires Megatron's distributed optimizer (--use-distributed-optimizer),
// so the rows run with it (--distributed-optimizer: gradients reduce-scattered over dp in fp32
// during the last backward, parameters all-gathered in bf16 during the first forward, optimizer
// state sharded over dp); --tp-comm-overlap requires sequence parallelism, so the rows with tp > 1
// run with sp=1 and --tp-comm-overlap (Transformer Engine's userbuffers overlap,
// workloads/tp_comm_overlap.h).
struct G61Row {
  const char* name;
  int64_t heads, hidden, layers, tp, pp, dp, batch;
  double tflops_per_gpu;
};

// A breakdown category's share of the step, in percent (0 when absent).
double SharePercent(const TrainingResult& result, const char* name) {
  auto it = result.breakdown.find(name);
  return it == result.breakdown.end() ? 0.0 : 100 * it->second / result.step_time_s;
}

// Why a G6.1 row misses, from its simulated breakdown.
std::string G61Note(const TrainingResult& result, int64_t tp) {
  auto share = [&](const char* name) { return SharePercent(result, name); };
  char note[600];
  std::snprintf(note, sizeof note,
                "compute %.0f%% of the step, exposed dp %.0f%%, tp %.0f%%, pipeline %.0f%%, "
                "interference %.0f%%; %s",
                share("compute"), share("exposed_dp"), share("exposed_tp"),
                share("bubble") + share("idle"), share("interference"),
                tp > 1 ? "the dp reduce-scatter of the fp32 gradients hides only behind the last "
                         "of the microbatches (one sequence each, assumed: the table does not "
                         "state the micro-batch size) and the bf16 parameter gather only behind "
                         "the first"
                       : "tp=1: Transformer Engine's LayerNorm and the other fused kernels "
                         "stream at 0.90 of the HBM bandwidth (only dropout and GeLU at the "
                         "rates of our H200 layer profile, hbm_kernel.h), and the published "
                         "throughput is end to end (data loading, optimizer, logging)");
  return note;
}

void RunG61(const std::vector<G61Row>& rows, const std::string& source) {
  constexpr int64_t kG61Seq = 4096;
  constexpr uint64_t kG61MaxTransfers = 50'000'000;
  ErrorSummary summary(source);
  for (const G61Row& r : rows) {
    ModelSpec model = Gpt(r.layers, r.hidden, r.heads);
    model.vocab = 131072;
    model.learned_positions = kG61Seq;
    OpOptions options = FrameworkOptions(Framework::kMegatron);
    options.distributed_optimizer = true;
    // Megatron-LM's README ("Training Speed and Scalability"): data-parallel communication
    // overlapped, --overlap-grad-reduce --overlap-param-gather.
    options.overlap_grad_reduce = true;
    options.overlap_param_gather = true;
    options.tp_comm_overlap = r.tp > 1;
    options.attention = AttentionKernel::kCudnn;
    const int64_t microbatches = r.batch / r.dp;  // One sequence each (assumed).
    const std::string layout = "dp=" + std::to_string(r.dp) + ",tp=" + std::to_string(r.tp) +
                               ",pp=" + std::to_string(r.pp) + (r.tp > 1 ? ",sp=1" : "") +
                               ",microbatches=" + std::to_string(microbatches);
    const int64_t gpus = r.tp * r.pp * r.dp;
    const std::string system = "h100:" + std::to_string(gpus);
    // The pipelined rows reduce each stage's gradients over 48 ranks per layer chunk: more
    // transfers than the default work bound allows (--max-transfers).
    StepOptions step;
    step.max_transfers = kG61MaxTransfers;
    const TrainingResult result = Train(system, model, layout, r.batch, options, step, kG61Seq);
    const double B = static_cast<double>(r.batch), s = kG61Seq, L = static_cast<double>(r.layers),
                 h = static_cast<double>(r.hidden), V = static_cast<double>(model.vocab);
    const double flops = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
    const double measured = flops / (static_cast<double>(gpus) * r.tflops_per_gpu * 1e12);
    char what[200];
    std::snprintf(what, sizeof what,
                  "iteration time on %s, %s (published %.1f TFLOP/s/GPU by Megatron's count)",
                  system.c_str(), layout.c_str(), r.tflops_per_gpu);
    RecordMeasured(std::string("G6.1 Megatron-Core ") + r.name, what, result.step_time_s, measured,
                   "hopper",
                   TrainCommand(system, model, layout, r.batch, options, kG61Seq) +
                       " --max-transfers " + std::to_string(kG61MaxTransfers),
                   G61Note(result, r.tp));
    std::printf("G6.1 %-5s measured %7.3f s podsim %7.3f s (%+.1f%%), MFU %.1f%%\n", r.name,
                measured, result.step_time_s, 100 * (result.step_time_s / measured - 1),
                100 * result.mfu);
    summary.Add(result.step_time_s, measured);
  }
  summary.Print();
  EXPECT_LE(summary.Mean(), kG61MeanGuard);
  EXPECT_LE(summary.Worst(), kG61RowGuard);
}

TEST(TrainingValidationTest, DISABLED_G61MegatronCoreH100WeakScaling) {
  RunG61({{"1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8},
          {"7.1B", 32, 4096, 30, 2, 1, 48, 192, 465.9},
          {"16B", 48, 6144, 32, 4, 1, 48, 192, 489.1},
          {"32B", 56, 7168, 48, 8, 1, 48, 192, 459.6},
          {"70B", 64, 8192, 84, 8, 2, 48, 384, 419.7},
          {"119B", 80, 10240, 92, 8, 4, 48, 768, 420.5},
          {"177B", 96, 12288, 96, 8, 6, 48, 1152, 432.8},
          {"314B", 128, 16384, 96, 8, 8, 48, 1536, 474.4},
          {"462B", 144, 18432, 112, 8, 16, 48, 3072, 459.9}},
         "G6.1 Megatron-Core H100");
}

// --- G6.2: torchtitan context parallelism, Llama 3.1 8B on 8 H100s (calibration.md G6.2 Table 2,
// pytorch/torchtitan docs/performance.md before commit 820504e2, Dec 2024) -----------------------
// One Grand Teton host (8 H100s), FSDP x CP = 8, local batch 1 per data-parallel rank, so 262,144
// tokens a step at every length; full activation checkpointing, torch.compile and Float8 linear
// layers. torchtitan shards FSDP over dp_shard x cp, which is podsim's sequence sharding on fsdp:
// fsdp=8 with 8 / cp sequences puts each sequence on cp of the fsdp chips (layout.h, seq_shards).
// The Float8 linear layers run as --fp8 (torchao's tensorwise casts, fp8_training.h), and attention
// as --attention fa2: torchtitan calls PyTorch's SDPA, whose default on H100 in December 2024 was
// the flash backend (FlashAttention-2's kernels): cuDNN attention became opt-in in PyTorch 2.5.1
// (pytorch/pytorch#138522), and a December 2024 nightly's SDPA ran at FA2's rate on H100, 329 TF
// against cuDNN's 631 (pytorch/pytorch#142132). What podsim does not run as measured: PyTorch's
// blockwise context-parallel attention (podsim gathers keys and values and runs one kernel over
// them, torchtitan's default "allgather" rotation) and the Grand Teton H100's 500 W power limit
// (the hopper GEMM plateau is the 700 W SXM part's); its memory, 96 GB of HBM2e at 2.4 TB/s, is
// the source's and runs as kGrandTetonH100's hbm= and hbm_bw=. Its loss is PyTorch's eager
// cross-entropy over fp32 logits (--loss upcast: train.py of December 2024 left the loss
// uncompiled, "compiling loss function causes CUDA errors"). Measured: TPS/GPU; the step time is
// the step's tokens / (8 x TPS/GPU); and the peak memory per GPU, torchtitan's max reserved by
// PyTorch's caching allocator, which holds more than the tensors podsim counts (memory.h says
// which of its reserved blocks podsim counts; the rest of its fragmentation is not modelled).
TEST(TrainingValidationTest, G62TorchtitanContextParallel) {
  struct Row {
    int cp;
    int64_t seq;
    double tokens_per_s_per_gpu;
    double memory_gib;
  };
  constexpr int64_t kTokens = 262144;
  sim::StatusOr<ModelSpec> model = ParseModel("llama3-8b");
  ASSERT_TRUE(model.ok());
  OpOptions options = FrameworkOptions(Framework::kTorchtitan);
  options.kernels = KernelLibrary::kFused;
  options.recompute = RecomputePolicy::kFull;
  options.fp8 = true;
  options.attention = AttentionKernel::kFlash2;
  ErrorSummary summary("G6.2 torchtitan CP"), memory("G6.2 torchtitan CP memory");
  for (const Row& r : {Row{1, 32768, 3890, 83.9}, Row{2, 65536, 2540, 84.2},
                       Row{4, 131072, 1071, 84.0}, Row{8, 262144, 548, 84.5}}) {
    const int64_t sequences = kTokens / r.seq;
    const std::string system = std::string("h100:8") + kGrandTetonH100, layout = "fsdp=8";
    const TrainingResult result = Train(system, *model, layout, sequences, options, {}, r.seq);
    const double measured = static_cast<double>(kTokens) / (8 * r.tokens_per_s_per_gpu);
    char what[200];
    std::snprintf(what, sizeof what,
                  "step time on %s, torchtitan FSDP %d x CP %d (fsdp=8, each sequence on %d "
                  "chip%s), seq %lld (published %.0f TPS/GPU)",
                  system.c_str(), 8 / r.cp, r.cp, r.cp, r.cp > 1 ? "s" : "",
                  static_cast<long long>(r.seq), r.tokens_per_s_per_gpu);
    char note[600];
    std::snprintf(note, sizeof note,
                  "exposed cp %.1f%% of the step; measured throughput falls 7.1x from 32K to "
                  "256K, podsim's 5.7x: podsim runs one FA2 kernel over the gathered keys where "
                  "PyTorch runs SDPA blockwise, and the Grand Teton H100's 500 W limit is not "
                  "modelled",
                  SharePercent(result, "exposed_cp"));
    const std::string id =
        "G6.2 torchtitan CP" + std::to_string(r.cp) + " " + std::to_string(r.seq / 1024) + "K";
    const std::string command = "train --system " + system + " --model llama3-8b --layout fsdp=8 " +
                                std::string("--batch-tokens ") + std::to_string(kTokens) +
                                " --seq " + std::to_string(r.seq) +
                                " --recompute full --fp8 --attention fa2 --framework torchtitan "
                                "--kernels fused";
    RecordSourceRow(summary, id, what, result.step_time_s, measured, "hopper", command, note);
    RecordMeasuredMemory(memory, id + " memory",
                         "peak memory per GPU, torchtitan FSDP " + std::to_string(8 / r.cp) +
                             " x CP " + std::to_string(r.cp) + " at seq " +
                             std::to_string(r.seq / 1024) + "K (published, max reserved)",
                         result.memory.total_bytes, r.memory_gib, "hopper", command,
                         kTorchtitanMemoryNote);
  }
  summary.Print();
  memory.Print();
  // Guards at today's figures plus a margin (mean 36%, worst 44%), not targets.
  EXPECT_LE(summary.Mean(), kG62CpMeanGuard);
  EXPECT_LE(summary.Worst(), kG62CpRowGuard);
  EXPECT_LE(memory.Worst(), kG62MemoryRowGuard);
}

// --- G6.3: other dense runs (calibration.md G6.3) ----------------------------------------------
// BLOOM-176B (bigscience-workshop/bigscience, train/tr11-176B-ml/README.md): 384 A100 80GB on
// Jean Zay, 48 nodes of 8 with NVLink inside and 4 x 100 Gb/s Omni-Path per node (nic=6.25e9: a
// GPU's share, 50 GB/s a node); Megatron-DeepSpeed with TP 4, PP 12, DP 8, micro-batch 2, global
// batch 2,048 sequences of 2,048, bf16 with DeepSpeed's BF16_Optimizer (fp32 gradient
// accumulation and master weights: --precision megatron) under ZeRO-1 (the optimizer sharded over
// dp: --distributed-optimizer), full activation checkpointing, Megatron's fused (materialized)
// softmax attention. The model: 70 layers, h 14,336, 112 heads of 128, a 4h GeLU MLP, LayerNorm,
// biases, ALiBi (no position table), tied embeddings over the 250,880-token padded vocabulary;
// no dropout (an assumption: the README does not state it). 70 layers over 12 stages: podsim's
// stages 0 and 11 take 5 layers, as Megatron-DeepSpeed's partition puts the embeddings there.
// Published: 104.70 s per iteration at iteration 85,376 (the README's log line).
TEST(TrainingValidationTest, DISABLED_G63Bloom176B) {
  constexpr int64_t kSequences = 2048;
  ModelSpec model = Gpt(70, 14336, 112);
  model.name = "bloom-176b";
  model.vocab = 250880;
  model.learned_positions = 0;
  model.dropout = false;
  OpOptions options = Megatron(RecomputePolicy::kFull, PrecisionRecipe::Megatron());
  options.distributed_optimizer = true;
  const std::string system = "a100:384,nic=6.25e9", layout = "dp=8,tp=4,pp=12,mbs=2";
  const TrainingResult result = Train(system, model, layout, kSequences, options);
  constexpr double kMeasured = 104.70;
  auto share = [&](const char* name) { return SharePercent(result, name); };
  char note[500];
  std::snprintf(note, sizeof note,
                "compute %.0f%% of the step, exposed dp %.0f%%, tp %.0f%%, pipeline %.0f%%: "
                "the A100 GEMM plateau is isolated GEMMs' (no A100 power-capped measurement), "
                "and Megatron-DeepSpeed's pipeline engine of 2022 is not Megatron-LM's 1F1B",
                share("compute"), share("exposed_dp"), share("exposed_tp"),
                share("bubble") + share("idle"));
  RecordMeasured(
      "G6.3 BLOOM-176B",
      "iteration time on " + system + ", " + layout + " (published 104.70 s per iteration)",
      result.step_time_s, kMeasured, "a100",
      TrainCommand(system, model, layout, kSequences, options), note);
  std::printf("G6.3 BLOOM-176B measured %.2f s podsim %.2f s (%+.1f%%)\n", kMeasured,
              result.step_time_s, 100 * (result.step_time_s / kMeasured - 1));
  // A guard at today's figure plus a margin, not a target.
  EXPECT_LE(std::abs(result.step_time_s / kMeasured - 1), kG63RowGuard);
}

// Llama-3.1-8B on one node of 8 H200s and of 8 B200s (stas00/ml-engineering,
// insights/when-to-upgrade-gpus: the "right-sized 8k" step decomposition, bench_decompose.py):
// DeepSpeed ZeRO-2 with overlap_comm, no activation checkpointing, no offload, micro-batch 1 of
// 8,192 tokens per GPU, no gradient accumulation, bf16 with fp32 master weights and AdamW, its
// gradients reduced in bf16 (DeepSpeed's communication_data_type defaults to the gradients' own):
// ZeRO's recipe, --precision zero, 16 bytes a parameter as the mixed one. Hugging Face
// transformers' Llama with FlashAttention-3 on the H200 and FlashAttention-4 on the B200 (podsim's
// flash kernel on each family). Its non-GEMM kernels run as fused ones (the default), not as
// --kernels eager: the source's own A/B, Liger-Kernel's fused RMSNorm, RoPE, SwiGLU and loss on and
// off in this same configuration, left the step "within noise (<= 1.5% on either box)", where
// podsim's eager chains and loss would add 12.5% (H200) and 17% (B200): transformers 5 may already
// run fused kernels there (its kernel hub), so eager's cost is not what this stack paid. ZeRO-2
// runs as the distributed optimizer: gradients reduce-scattered during the backward; DeepSpeed
// gathers the updated bf16 parameters after the optimizer step, where podsim gathers each layer's
// before its forward (a declared difference: the gather is a few percent of the step on NVLink).
// Published: TFLOP/s per GPU by the script's count, 6 x (dense parameters, the output head's
// included) x tokens + 6 s^2 x head_dim x heads x layers (causal), over the measured step.
TEST(TrainingValidationTest, G63Llama8bH200B200) {
  struct Row {
    const char* system;
    const char* family;
    double tflops_per_gpu;
  };
  constexpr int64_t kSeq8k = 8192;
  sim::StatusOr<ModelSpec> model = ParseModel("llama3-8b");
  ASSERT_TRUE(model.ok());
  const ModelSpec& m = *model;
  OpOptions options;
  options.distributed_optimizer = true;
  options.precision = PrecisionRecipe::Zero();
  const double h = static_cast<double>(m.d_model), s = kSeq8k;
  const double q = static_cast<double>(m.heads * m.head_dim),
               kv = static_cast<double>(m.kv_heads * m.head_dim);
  const double dense =
      (h * static_cast<double>(m.ffn) * 3 + h * (2 * q + 2 * kv)) * static_cast<double>(m.layers) +
      static_cast<double>(m.vocab) * h;
  const double flops = 6 * dense * s + 6 * s * s * static_cast<double>(m.head_dim * m.heads) *
                                           static_cast<double>(m.layers);
  for (const Row& r : {Row{"h200:8", "hopper", 461}, Row{"b200:8", "blackwell", 778}}) {
    const std::string layout = "dp=8";
    const TrainingResult result = Train(r.system, m, layout, 8, options, {}, kSeq8k);
    const double measured = flops / (r.tflops_per_gpu * 1e12);
    char what[200];
    std::snprintf(what, sizeof what,
                  "step time on %s, DeepSpeed ZeRO-2 (dp=8, distributed optimizer), Llama-3.1-8B "
                  "at seq 8192, one sequence per GPU (published %.0f TFLOP/s/GPU)",
                  r.system, r.tflops_per_gpu);
    char note[600];
    std::snprintf(note, sizeof note,
                  "compute %.0f%% of the step, exposed dp %.0f%%; podsim's GEMMs and attention "
                  "account for the measured attention time but not for the rest of the step "
                  "(the source's dense bucket, 463 and 771 TFLOP/s); not modelled: the host's "
                  "launch gaps between eager PyTorch's kernels; on the B200 the GEMMs run at "
                  "the power cap by one FA4 kernel's measured ratio (0.853), not by a GEMM's",
                  SharePercent(result, "compute"), SharePercent(result, "exposed_dp"));
    RecordMeasured(std::string("G6.3 Llama-3.1-8B ") + r.system, what, result.step_time_s, measured,
                   r.family,
                   std::string("train --system ") + r.system + " --model llama3-8b --layout " +
                       layout + " --batch-tokens " + std::to_string(8 * kSeq8k) + " --seq " +
                       std::to_string(kSeq8k) + " --distributed-optimizer --precision zero",
                   note);
    std::printf("G6.3 %s measured %.3f s podsim %.3f s (%+.1f%%)\n", r.system, measured,
                result.step_time_s, 100 * (result.step_time_s / measured - 1));
    EXPECT_LE(std::abs(result.step_time_s / measured - 1), kG63RowGuard) << r.system;
  }
}

// --- G6.3: GPT3-2.7B with FlashAttention-2 on 1 and 8 A100s and H100s (calibration.md G6.3;
// LambdaLabsML/examples flash-attention-2/README.md, 2023) ---------------------------------------
// Lambda's runs of the flash-attention repository's training code (its fork LambdaLabsML/
// flash-attention, experiment owt/gpt3-2.7B-flash): a GPT-2-style 2.7B model (32 layers, d_model
// 2,560, 32 heads of 80, 4h GeLU MLP, LayerNorm, biases, learned positions, tied embeddings over
// GPT-2's vocabulary padded to a multiple of 8, 50,264; GPT2Config's dropout), OpenWebText at
// sequence length 1,024, 4 sequences per GPU a microbatch and a global batch of 512 sequences
// (gradient accumulation: 128 microbatches on one GPU, 16 on eight); PyTorch Lightning's
// precision 16, torch.autocast with fp32 parameters (--precision amp); the repository's fused
// kernels (FlashAttention-2, fused dense + GeLU, fused dropout + residual + LayerNorm, apex's
// cross-entropy: --kernels fused, --attention fa2 on the H100, the A100's flash kernel, FA2, by
// default); on 8 GPUs DDP with PyTorch's ZeroRedundancyOptimizer (the optimizer sharded:
// --distributed-optimizer, whose reduce-scatter and gather podsim runs where DDP all-reduces
// the gradients and the shards are broadcast after the step, under 2% of these steps on
// NVLink). Measured: iterations per second, an iteration one microbatch (tokens/s = it/s x 4 x
// 1,024 x GPUs), so the step time is the microbatches over it/s. Not rows: the memory per GPU
// (73 and 56 GB), nvidia-smi's reading by its unit and scope unstated; the repository's own
// GPT3 table (calibration.md G6.3, 2022), which ran FlashAttention 1, a kernel podsim has no
// curve for.
TEST(TrainingValidationTest, G63Gpt3FlashAttention2) {
  struct Row {
    const char* chip;
    const char* family;
    int gpus;
    double iterations_per_s;
  };
  constexpr const char* kGpt3_2_7b =
      "custom:layers=32,d_model=2560,ffn=10240,heads=32,kv_heads=32,head_dim=80,vocab=50264,"
      "gated=0,tied=1,bias=1,norm=layer,positions=1024,dropout=1";
  constexpr int64_t kSeq1k = 1024, kGlobalBatch = 512, kPerGpu = 4;
  sim::StatusOr<ModelSpec> model = ParseModel(kGpt3_2_7b);
  ASSERT_TRUE(model.ok()) << model.status();
  ErrorSummary summary("G6.3 GPT3-2.7B FA2");
  for (const Row& r : {Row{"a100", "a100", 1, 2.6}, Row{"a100", "a100", 8, 2.5},
                       Row{"h100", "hopper", 1, 5.44}, Row{"h100", "hopper", 8, 5.34}}) {
    OpOptions options;
    options.precision = PrecisionRecipe::Amp();
    options.distributed_optimizer = r.gpus > 1;
    if (std::string(r.chip) == "h100") options.attention = AttentionKernel::kFlash2;
    const int64_t microbatches = kGlobalBatch / (kPerGpu * r.gpus);
    const std::string system = std::string(r.chip) + ":" + std::to_string(r.gpus);
    const std::string layout = (r.gpus > 1 ? "dp=" + std::to_string(r.gpus) + "," : "") +
                               "microbatches=" + std::to_string(microbatches);
    const TrainingResult result = Train(system, *model, layout, kGlobalBatch, options, {}, kSeq1k);
    const double measured = static_cast<double>(microbatches) / r.iterations_per_s;
    char what[240];
    std::snprintf(what, sizeof what,
                  "step time on %s, GPT3-2.7B (head dim 80) with FlashAttention-2, %lld "
                  "microbatches of %lld x 1024 tokens per GPU, autocast fp16%s (published %.2f "
                  "it/s)",
                  system.c_str(), static_cast<long long>(microbatches),
                  static_cast<long long>(kPerGpu), r.gpus > 1 ? ", ZeRO-1" : "",
                  r.iterations_per_s);
    char note[400];
    std::snprintf(note, sizeof note,
                  "compute %.0f%% of the step, exposed dp %.1f%%; podsim's MFU %.1f%%; "
                  "%s",
                  SharePercent(result, "compute"), SharePercent(result, "exposed_dp"),
                  100 * result.mfu,
                  std::string(r.chip) == "a100"
                      ? "the A100 GEMM plateau is isolated GEMMs' (no A100 power-capped "
                        "measurement)"
                      : "the run's H100 power and clocks are not stated");
    RecordSourceRow(summary, std::string("G6.3 GPT3-2.7B FA2 ") + system, what, result.step_time_s,
                    measured, r.family,
                    TrainCommand(system, *model, layout, kGlobalBatch, options, kSeq1k), note);
  }
  summary.Print();
  EXPECT_LE(summary.Worst(), kG63Gpt3RowGuard);
}

// --- G6.2 T1 and T3: torchtitan's Llama 3.1 8B with FSDP on 8 and 128 H100s (calibration.md G6.2,
// pytorch/torchtitan docs/performance.md before commit 820504e2, Dec 2024) ---------------------
// Local batch 2 of 8,192 tokens per GPU, one microbatch, FSDP2 over every GPU, torchtitan's
// selective per-op activation checkpointing, three stacks: eager PyTorch (--kernels eager:
// torchtitan's RMSNorm through fp32 and its loss over fp32 logits are the kernels of
// eager_kernels.h; its complex-number rotary moves the same 20 bytes an element forward as
// transformers' in 3 kernels instead of 5), torch.compile (fused kernels, the default) and
// compile + Float8 linear layers (--fp8). Attention: SDPA's flash backend, FlashAttention-2
// (--attention fa2, as G6.2's CP rows). The op policy: SetTorchtitanOpCheckpointing. Not
// modelled: the Grand Teton H100's 500 W power limit (the hopper GEMM plateau is the 700 W SXM
// part's; its 96 GB of HBM2e at 2.4 TB/s run as kGrandTetonH100) and FSDP2's fp32 gradient
// reduce-scatter (podsim reduces bf16 gradients). Measured: TPS/GPU; the
// step time is 2 x 8,192 / TPS. With them, the community submission of calibration.md G6.2
// (torchtitan benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md, June 2025): the same model,
// batch and checkpointing on 4 and 8 nodes of 8 H200s (400 Gb/s per GPU) with compile and Float8,
// its FSDP all-gathers in fp8 (--fp8-all-gather).
TEST(TrainingValidationTest, G62TorchtitanFsdp) {
  struct Row {
    int gpus;
    const char* stack;
    double tokens_per_s_per_gpu;
    double memory_gib;
    const char* chip = "h100";
  };
  constexpr int64_t kSeq8k = 8192, kLocalBatch = 2;
  sim::StatusOr<ModelSpec> model = ParseModel("llama3-8b");
  ASSERT_TRUE(model.ok());
  ErrorSummary summary("G6.2 torchtitan FSDP"), memory("G6.2 torchtitan FSDP memory");
  for (const Row& r : {Row{8, "eager", 5762, 82.4}, Row{8, "compile", 6667, 77.0},
                       Row{8, "compile+fp8", 8532, 76.8}, Row{128, "eager", 5605, 67.0},
                       Row{128, "compile", 6514, 62.0}, Row{128, "compile+fp8", 8380, 61.8},
                       Row{32, "compile+fp8", 10938, 47.96, "h200"},
                       Row{64, "compile+fp8", 10753, 46.97, "h200"}}) {
    OpOptions options = FrameworkOptions(Framework::kTorchtitan);
    SetTorchtitanOpCheckpointing(options);
    options.attention = AttentionKernel::kFlash2;
    const std::string stack = r.stack;
    if (stack != "eager") options.kernels = KernelLibrary::kFused;
    options.fp8 = stack == "compile+fp8";
    const std::string chip = r.chip;
    options.fp8_all_gather = chip == "h200";  // --float8.enable_fsdp_float8_all_gather.
    // December 2024: the loss uncompiled; June 2025: compiled with the model.
    options.loss = chip == "h200" ? LossKernel::kCompiled : LossKernel::kUpcast;
    const std::string system =
        chip + ":" + std::to_string(r.gpus) + (chip == "h100" ? kGrandTetonH100 : "");
    const std::string layout = "fsdp=" + std::to_string(r.gpus);
    const int64_t sequences = kLocalBatch * r.gpus;
    const TrainingResult result = Train(system, *model, layout, sequences, options, {}, kSeq8k);
    const double measured = static_cast<double>(kLocalBatch * kSeq8k) / r.tokens_per_s_per_gpu;
    char what[200];
    std::snprintf(what, sizeof what,
                  "step time on %s, torchtitan FSDP %d, local batch 2 at seq 8192, %s (published "
                  "%.0f TPS/GPU)",
                  system.c_str(), r.gpus, r.stack, r.tokens_per_s_per_gpu);
    char note[600];
    std::snprintf(note, sizeof note,
                  "compute %.0f%% of the step, exposed fsdp %.0f%%, interference %.0f%%; %s",
                  SharePercent(result, "compute"), SharePercent(result, "exposed_fsdp"),
                  SharePercent(result, "interference"),
                  chip == "h100" ? "the Grand Teton H100's 500 W limit is not modelled"
                                 : "the FSDP all-gathers in fp8 (--fp8-all-gather)");
    const std::string command = TrainCommand(system, *model, layout, sequences, options, kSeq8k);
    const std::string id = "G6.2 torchtitan FSDP" + std::to_string(r.gpus) + " " + r.stack +
                           (chip == "h100" ? "" : " " + chip);
    RecordSourceRow(summary, id, what, result.step_time_s, measured, "hopper", command, note);
    RecordMeasuredMemory(memory, id + " memory",
                         "peak memory per GPU on " + system + ", torchtitan FSDP " +
                             std::to_string(r.gpus) + ", " + r.stack + " (published, max reserved)",
                         result.memory.total_bytes, r.memory_gib, "hopper", command,
                         kTorchtitanMemoryNote);
  }
  summary.Print();
  memory.Print();
  EXPECT_LE(summary.Worst(), kG62FsdpRowGuard);
  EXPECT_LE(memory.Worst(), kG62MemoryRowGuard);
}

// --- G6.2: torchtitan's first performance table, FSDP2 on 64 A100s (calibration.md G6.2,
// pytorch/torchtitan docs/performance.md at commit 04133643, mid 2024) -------------------------
// Llama 3 8B and 70B at seq 8192, local batch 1; Llama 2 13B at seq 4096, local batch 2, and 70B
// at local batch 1 and 2; FSDP2 over all 64 GPUs (one microbatch), bf16 with fp32 gradient
// reduction (podsim's mixed recipe), torchtitan of that time uncompiled: eager kernels
// (--kernels eager, --loss upcast) and SDPA's flash backend, FlashAttention-2 on the A100 (the
// family's flash kernel). Checkpointing as the rows state: none, full, the per-op policy of the
// H100 rows above (--recompute save:...), or "selective layer", every second block checkpointed
// whole (--recompute full --recompute-layers every:2: torchtitan's selective_ac_option, whose
// default is "2"; the table does not name it). The table names 64
// A100 80GB GPUs and not their network: run on podsim's a100 preset (DGX A100, 8 x 200 Gb/s per
// node), an assumption; FSDP's gathers are at most a few percent of these steps there. Measured:
// WPS per GPU; the step time is local batch x seq / WPS. Independent of the Megatron rows (V1,
// V3) of 2021-22: a framework, kernels and a software stack three years later, on the same chip.
TEST(TrainingValidationTest, G62TorchtitanA100) {
  struct Row {
    const char* name;
    const char* model;
    int64_t local_batch, seq;
    const char* checkpointing;  // "none", "full", "op" or "layer".
    double tokens_per_s_per_gpu;
  };
  constexpr const char* kLlama2_70b =
      "custom:layers=80,d_model=8192,ffn=28672,heads=64,kv_heads=8,head_dim=128,vocab=32000";
  constexpr int kGpus = 64;
  auto torchtitan_a100_options = [](const std::string& checkpointing) {
    OpOptions options = FrameworkOptions(Framework::kTorchtitan);
    if (checkpointing == "full") options.recompute = RecomputePolicy::kFull;
    if (checkpointing == "op") SetTorchtitanOpCheckpointing(options);
    if (checkpointing == "layer") {
      options.recompute = RecomputePolicy::kFull;
      options.recompute_layers = {RecomputeLayers::Kind::kEvery, 2};
    }
    return options;
  };
  ErrorSummary summary("G6.2 torchtitan A100");
  for (const Row& r : {Row{"Llama 3 8B layer", "llama3-8b", 1, 8192, "layer", 2904},
                       Row{"Llama 3 8B op", "llama3-8b", 1, 8192, "op", 2973},
                       Row{"Llama 3 70B full", "llama3-70b", 1, 8192, "full", 331},
                       Row{"Llama 2 13B none", "llama2-13b", 2, 4096, "none", 2162},
                       Row{"Llama 2 13B layer", "llama2-13b", 2, 4096, "layer", 1914},
                       Row{"Llama 2 13B op", "llama2-13b", 2, 4096, "op", 1904},
                       Row{"Llama 2 70B op", kLlama2_70b, 1, 4096, "op", 355},
                       Row{"Llama 2 70B full", kLlama2_70b, 2, 4096, "full", 353}}) {
    sim::StatusOr<ModelSpec> model = ParseModel(r.model);
    ASSERT_TRUE(model.ok()) << model.status();
    const OpOptions options = torchtitan_a100_options(r.checkpointing);
    const std::string system = "a100:" + std::to_string(kGpus);
    const std::string layout = "fsdp=" + std::to_string(kGpus);
    const int64_t sequences = r.local_batch * kGpus;
    const TrainingResult result = Train(system, *model, layout, sequences, options, {}, r.seq);
    const double measured = static_cast<double>(r.local_batch * r.seq) / r.tokens_per_s_per_gpu;
    char what[200];
    std::snprintf(what, sizeof what,
                  "step time on %s, torchtitan FSDP 64, %s, local batch %lld at seq %lld, "
                  "checkpointing %s (published %.0f WPS per GPU)",
                  system.c_str(), r.name, static_cast<long long>(r.local_batch),
                  static_cast<long long>(r.seq), r.checkpointing, r.tokens_per_s_per_gpu);
    char note[400];
    std::snprintf(note, sizeof note,
                  "compute %.0f%% of the step, exposed fsdp %.0f%%, interference %.0f%%; the "
                  "A100 GEMM plateau is isolated GEMMs' (no A100 power-capped measurement), and "
                  "the cluster's network is not stated",
                  SharePercent(result, "compute"), SharePercent(result, "exposed_fsdp"),
                  SharePercent(result, "interference"));
    RecordSourceRow(summary, std::string("G6.2 torchtitan A100 ") + r.name, what,
                    result.step_time_s, measured, "a100",
                    TrainCommand(system, *model, layout, sequences, options, r.seq), note);
  }
  summary.Print();
  EXPECT_LE(summary.Worst(), kG62A100RowGuard);
  // The table's footnote: Llama 2 70B with per-op checkpointing at local batch 2 ran out of memory,
  // which is why its row is at local batch 1.
  sim::StatusOr<ModelSpec> llama2_70b = ParseModel(kLlama2_70b);
  ASSERT_TRUE(llama2_70b.ok());
  const TrainingResult oom =
      Train("a100:64", *llama2_70b, "fsdp=64", 2 * kGpus, torchtitan_a100_options("op"), {}, 4096);
  EXPECT_GT(oom.memory.total_bytes, oom.memory.hbm_bytes);
}

// --- G6.2 T4, T5 and T6: torchtitan's Llama 3.1 70B and 405B in 2D, 3D and 4D on 256 and 512
// H100s (calibration.md G6.2; pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md,
// December 2024) ---------------------------------------------------------------------------------
// The Grand Teton H100s of the T1-T3 rows above (kGrandTetonH100; 400 Gb/s per GPU between
// hosts: podsim's h100 preset), torch.compile (fused kernels, the loss uncompiled: --loss
// upcast), Float8 linear layers (--fp8), SDPA's flash backend (--attention fa2), full activation
// checkpointing and sequence parallelism with every TP (torchtitan's plan). T4: Llama 3.1 70B on
// 256 GPUs, FSDP 32 x TP 8, local batch 16 (global 512) at seq 8192, without and with AsyncTP
// (torchtitan's micro-pipelined all-gather matmul and matmul reduce-scatter: --tp-comm-overlap).
// T5: Llama 3.1 405B on 512 GPUs, FSDP 8 x TP 8 x PP 8, local batch 32 (global 256), AsyncTP,
// 1F1B, and interleaved 1F1B with torchtitan's default split, two stages a rank
// (generate_split_points: 126 layers over 16 chunks, 7, 8 x 14, 7, as podsim spreads these); the
// pipeline's microbatches are not stated and run at torchtitan's default of that time, the
// number of stages (build_pipeline_schedule: pp degree x stages a rank), 8 under 1F1B and 16
// interleaved.
// T6: the same with CP, local batch 8 at 32K to 256K: FSDP x CP = 8 runs as fsdp=8 with each
// sequence on cp chips, as the CP rows above do. Under pp, torchtitan runs FSDP2 as pipelining
// does (framework.h): the weights gathered once a step, the gradients accumulated in fp32 and
// reduce-scattered after the last microbatch's backward. Measured: TPS/GPU, torchtitan's tokens of
// a data-parallel rank over the step time and its non-data-parallel GPUs, so the step time is the
// step's tokens / (GPUs x TPS/GPU); and the peak memory per GPU (max reserved, the largest over the
// pipeline's ranks).
TEST(TrainingValidationTest, G62TorchtitanMultiDimensional) {
  struct Row {
    const char* name;
    const char* model;
    int gpus;
    const char* parallelism;  // The source's.
    const char* layout;
    int64_t sequences, seq;
    bool async_tp;
    double tokens_per_s_per_gpu;
    double memory_gib;
  };
  ErrorSummary summary("G6.2 torchtitan 2D-4D"), memory("G6.2 torchtitan 2D-4D memory");
  constexpr const char* k3d = "fsdp=8,tp=8,sp=1,pp=8,microbatches=8";
  for (const Row& r :
       {Row{"T4 70B 2D", "llama3-70b", 256, "FSDP 32 x TP 8", "fsdp=32,tp=8,sp=1", 512, 8192, false,
            829, 71.9},
        Row{"T4 70B 2D AsyncTP", "llama3-70b", 256, "FSDP 32 x TP 8", "fsdp=32,tp=8,sp=1", 512,
            8192, true, 876, 67.6},
        Row{"T5 405B 3D 1F1B", "llama3-405b", 512, "FSDP 8 x TP 8 x PP 8", k3d, 256, 8192, true,
            100, 82.5},
        Row{"T5 405B 3D interleaved", "llama3-405b", 512, "FSDP 8 x TP 8 x PP 8, interleaved",
            "fsdp=8,tp=8,sp=1,pp=8,microbatches=16,schedule=interleaved,"
            "virtual_stages=2",
            256, 8192, true, 128, 72.7},
        Row{"T6 405B 4D 32K", "llama3-405b", 512, "FSDP 8 x CP 1 x TP 8 x PP 8", k3d, 64, 32768,
            true, 76, 75.3},
        Row{"T6 405B 4D 64K", "llama3-405b", 512, "FSDP 4 x CP 2 x TP 8 x PP 8", k3d, 32, 65536,
            true, 47, 75.9},
        Row{"T6 405B 4D 128K", "llama3-405b", 512, "FSDP 2 x CP 4 x TP 8 x PP 8", k3d, 16, 131072,
            true, 31, 77.1},
        Row{"T6 405B 4D 256K", "llama3-405b", 512, "FSDP 1 x CP 8 x TP 8 x PP 8", k3d, 8, 262144,
            true, 16, 84.9}}) {
    sim::StatusOr<ModelSpec> model = ParseModel(r.model);
    ASSERT_TRUE(model.ok()) << model.status();
    OpOptions options = FrameworkOptions(Framework::kTorchtitan);
    options.kernels = KernelLibrary::kFused;
    options.recompute = RecomputePolicy::kFull;
    options.fp8 = true;
    options.attention = AttentionKernel::kFlash2;
    options.tp_comm_overlap = r.async_tp;
    const std::string system = "h100:" + std::to_string(r.gpus) + kGrandTetonH100;
    const TrainingResult result = Train(system, *model, r.layout, r.sequences, options, {}, r.seq);
    const double tokens = static_cast<double>(r.sequences * r.seq);
    const double measured = tokens / (r.gpus * r.tokens_per_s_per_gpu);
    char what[320];
    std::snprintf(what, sizeof what,
                  "step time on %s, torchtitan %s (%s), %lld x %lld tokens, full "
                  "checkpointing, compile, Float8%s (published %.0f TPS/GPU)",
                  system.c_str(), r.parallelism, r.layout, static_cast<long long>(r.sequences),
                  static_cast<long long>(r.seq), r.async_tp ? ", AsyncTP" : "",
                  r.tokens_per_s_per_gpu);
    char note[400];
    std::snprintf(note, sizeof note,
                  "compute %.0f%% of the step, bubble and idle %.0f%%, exposed tp %.0f%%, cp "
                  "%.0f%%, fsdp %.0f%%; the Grand Teton H100's 500 W limit is not modelled",
                  SharePercent(result, "compute"),
                  SharePercent(result, "bubble") + SharePercent(result, "idle"),
                  SharePercent(result, "exposed_tp"), SharePercent(result, "exposed_cp"),
                  SharePercent(result, "exposed_fsdp"));
    const std::string command = TrainCommand(system, *model, r.layout, r.sequences, options, r.seq);
    const std::string id = std::string("G6.2 torchtitan ") + r.name;
    RecordSourceRow(summary, id, what, result.step_time_s, measured, "hopper", command, note);
    RecordMeasuredMemory(memory, id + " memory",
                         "peak memory per GPU on " + system + ", torchtitan " + r.parallelism +
                             " (published, max reserved over the ranks)",
                         result.memory.total_bytes, r.memory_gib, "hopper", command,
                         kTorchtitanMemoryNote);
  }
  summary.Print();
  memory.Print();
  EXPECT_LE(summary.Worst(), kG62MultiDimRowGuard);
  EXPECT_LE(memory.Worst(), kG62MultiDimMemoryRowGuard);
}

// --- Megatron-Bridge's performance summary, 25.11 NeMo container (NVIDIA-NeMo/Megatron-Bridge
// docs/performance-summary.md at commit 00b7660b; docs/sources.md) ------------------------------
// NVIDIA's own pre-training benchmarks of Megatron-Core through Megatron-Bridge on DGX-H100 and
// DGX-B200 nodes, each row with its GPUs, precision, global and micro batch, sequence and
// parallelism: independent of podsim's calibration, with the layouts the table states. What the
// rows run as: Transformer Engine's FP8 with current (tensorwise) scaling -- the B200 rows' MXFP8
// block scaling as well, whose per-block scales podsim does not distinguish -- as --fp8;
// Megatron's fp32 main gradients (--precision megatron) and distributed optimizer; TE's attention
// (cuDNN's fused attention, --attention cudnn on Hopper; Blackwell has only FA4's curve in podsim,
// the family's flash kernel); sequence parallelism and TE's tp overlap wherever tp > 1; the
// interleaved schedule wherever the table gives VP; Megatron-FSDP as fsdp (podsim gathers the
// weights every microbatch). MoE rows: experts folded over dp (ep=8 within a node), balanced
// routing (the table forces it), dropless. Measured: tokens/s per GPU; the step time is
// GBS x seq / (GPUs x tokens/s/GPU).
TEST(TrainingValidationTest, DISABLED_MegatronBridgePerformanceSummary) {
  struct Row {
    const char* name;
    const char* system;
    const char* model;
    const char* layout;
    int64_t sequences, seq;
    double tokens_per_s_per_gpu;
    const char* family;
    bool exact = false;  // --exact --max-transfers 1e8: 256 orbits, past the default's 64.
    // FP8-MX (MXFP8): Megatron gathers MXFP8 parameters in bf16 (through the gradient buffer
    // where reuse_grad_buf_for_mxfp8_param_ag is set); FP8-CS gathers fp8 (fp8_param_gather).
    bool mxfp8 = false;
    // MoE rows: the same system and layout in the 25.09 container's table, with token dropping
    // (capacity factor 1, padded: fixed shapes; docs/performance-summary-archive.md), tokens/s
    // per GPU, of the same fp8 recipe where the table tells (it has no precision column; the
    // DeepSeek-V3 row's parenthesised figure is its 32 x 32 block scaling). 0: none.
    double tokendrop_2509 = 0;
    const char* note = "";  // What else the row ran that bears on its error.
  };
  ErrorSummary summary("Megatron-Bridge 25.11");
  for (const Row& r : {
           Row{"Llama3 8B FSDP", "h100:8", "llama3-8b", "fsdp=8,mbs=1", 128, 8192, 14451, "hopper"},
           Row{"Llama3 70B", "h100:64", "llama3-70b",
               "dp=2,tp=4,pp=8,sp=1,mbs=1,schedule=interleaved,virtual_stages=5", 128, 8192, 1602,
               "hopper"},
           Row{"Qwen3 30B-A3B", "h100:16", "qwen3-30b-a3b",
               "dp=8,pp=2,ep=8,mbs=2,schedule=interleaved,virtual_stages=24", 512, 4096, 5275,
               "hopper", false, false, 10494},
           // 126 layers over 8 x 8 chunks, one on the first and the last and two elsewhere:
           // Megatron-Bridge's 405B recipe counts the embedding and the loss as layers
           // (account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split), as
           // podsim's uneven chunks split them (LayersOfChunk).
           Row{"Llama3.1 405B", "h100:1024", "llama3-405b",
               "dp=8,tp=8,pp=8,cp=2,sp=1,mbs=1,schedule=interleaved,virtual_stages=8", 512, 8192,
               292, "hopper"},
           Row{"Llama3 8B", "b200:8", "llama3-8b", "dp=8,mbs=2", 128, 8192, 30624, "blackwell"},
           Row{"Llama3.1 405B", "b200:128", "llama3-405b",
               "dp=2,tp=4,pp=8,cp=2,sp=1,mbs=1,schedule=interleaved,virtual_stages=8", 64, 8192,
               661, "blackwell"},
           Row{"Qwen3 30B-A3B", "b200:8", "qwen3-30b-a3b", "dp=8,ep=8,mbs=1", 512, 4096, 9299,
               "blackwell", false, true, 18066,
               "; the release's scripts ask for a whole-iteration CUDA graph, which the dropless "
               "dispatcher's host wait cannot be captured in, so its MoE layers ran eagerly; the "
               "H100 row, with no graph in either release, halved too, and Megatron-Bridge "
               "#1998 reports the dropless schedule 2x slower on both (docs/sources.md)"},
           // 61 layers over 16 stages: stages 0, 1 and 15 take 3, the other 13 take 4 (the
           // multi-token prediction layer is not modelled).
           Row{"DeepSeek-V3", "b200:256", "deepseek-v3", "dp=16,pp=16,ep=8,mbs=1", 2048, 4096, 2139,
               "blackwell", true, true, 2159,
               "; not modelled either: the run's multi-token prediction module, and Megatron-"
               "Bridge's layout of its stages (4 layers on each of the first 15, the last holding "
               "1 with the prediction module and the loss; podsim splits 3, 3, 4 x 13, 3)"},
       }) {
    sim::StatusOr<ModelSpec> model = ParseModel(r.model);
    ASSERT_TRUE(model.ok());
    const std::string system = r.system, layout = r.layout;
    OpOptions options = FrameworkOptions(Framework::kMegatron);
    options.fp8 = true;
    // Megatron-Bridge's performance recipes reduce the gradients in bf16 (grad_reduce_in_fp32 =
    // False, scripts/performance/utils/helpers.py of that release; docs/sources.md).
    options.precision.bf16_gradients = true;
    options.fp8_library = Fp8Library::kTransformerEngine;
    // And gather the layers' weights in fp8 (fp8_param_gather = True) under current scaling.
    options.fp8_all_gather = !r.mxfp8;
    options.fp8_recipe = r.mxfp8 ? Fp8Recipe::kMxfp8 : Fp8Recipe::kTensorwise;
    // Megatron-Bridge's recipes run Transformer Engine's fused cross-entropy
    // (cross_entropy_loss_fusion = True, cross_entropy_fusion_impl = "te"), where Megatron-LM's
    // arguments leave the fusion off.
    options.loss = LossKernel::kTransformerEngine;
    options.distributed_optimizer = layout.find("fsdp") == std::string::npos;
    // The recipes' DistributedDataParallelConfig (overlap_grad_reduce and overlap_param_gather
    // True), as Megatron-Bridge's CommOverlapConfig sets them with dp > 1 and the distributed
    // optimizer (src/megatron/bridge/training/comm_overlap.py).
    options.overlap_grad_reduce = true;
    options.overlap_param_gather = true;
    options.tp_comm_overlap = layout.find("tp=") != std::string::npos;
    if (std::string(r.family) == "hopper") options.attention = AttentionKernel::kCudnn;
    StepOptions step;
    if (r.exact) {
      step.chips = SimulatedChips::kOrbits;
      step.max_transfers = 100'000'000;
    }
    const TrainingResult result = Train(system, *model, layout, r.sequences, options, step, r.seq);
    const int64_t gpus = std::stoll(system.substr(system.find(':') + 1));
    const double measured = static_cast<double>(r.sequences * r.seq) /
                            (static_cast<double>(gpus) * r.tokens_per_s_per_gpu);
    auto share = [&](const char* name) { return SharePercent(result, name); };
    char what[240];
    std::snprintf(what, sizeof what, "step time on %s, %s %s, FP8 (published %.0f tokens/s/GPU)",
                  r.system, r.model, r.layout, r.tokens_per_s_per_gpu);
    char why[900];
    if (model->moe()) {
      // Megatron-LM's MoEAlltoAllTokenDispatcher (dropless, ep > 1) copies the token counts to
      // the host and waits for them before the dispatch; Transformer Engine's GroupedLinear
      // launches its kernels per local expert (dropless or not).
      char tokendrop[300] = "";
      if (r.tokendrop_2509 > 0) {
        const double ratio = r.tokendrop_2509 / r.tokens_per_s_per_gpu;
        std::snprintf(tokendrop, sizeof tokendrop,
                      "; the 25.09 container's run of this layout with token dropping (capacity "
                      "1, padded) made %.0f tokens/s/GPU, %.2fx this row's%s",
                      r.tokendrop_2509, ratio,
                      ratio < 1.2 ? ", so the dropless path does not explain this row's miss"
                                  : " (another release: not all of that need be the dropless "
                                    "path)");
      }
      std::snprintf(why, sizeof why,
                    "podsim does not model what Megatron-Core's dropless MoE layers cost beyond "
                    "their kernels' FLOPs and bytes (the all-to-all dispatcher's wait for the "
                    "token counts on the host, the launches of per-expert kernels)%s%s",
                    tokendrop, r.note);
    } else {
      std::snprintf(why, sizeof why, "%s",
                    std::string(r.family) == "blackwell"
                        ? "on the B200 the GEMMs run at the power cap by one FA4 kernel's measured "
                          "ratio (0.853), not by a GEMM's"
                        : "the H100's GEMMs at the sustained fit of our H200's GEMMs at its 700 W "
                          "cap");
    }
    char note[1400];
    std::snprintf(note, sizeof note,
                  "compute %.0f%% of the step, interference %.0f%%, exposed ep %.0f%%, tp %.0f%%, "
                  "cp %.0f%%, dp %.0f%%, fsdp %.0f%%, pipeline %.0f%%; podsim's memory %.1f GiB "
                  "per chip (the run fit in %.0f GiB); %s",
                  share("compute"), share("interference"), share("exposed_ep"), share("exposed_tp"),
                  share("exposed_cp"), share("exposed_dp"), share("exposed_fsdp"),
                  share("bubble") + share("idle"), result.memory.total_bytes / (1u << 30),
                  result.memory.hbm_bytes / (1u << 30), why);
    RecordSourceRow(
        summary, std::string("MB25.11 ") + r.name + " " + r.system, what, result.step_time_s,
        measured, r.family,
        "train --system " + system + " --model " + r.model + " --layout " + layout +
            " --batch-tokens " + std::to_string(r.sequences * r.seq) + " --seq " +
            std::to_string(r.seq) + " --framework megatron --loss vocab-parallel-te --fp8" +
            (r.mxfp8 ? " --fp8-recipe mxfp8" : "") +
            (options.fp8_all_gather ? " --fp8-all-gather" : "") + " --grad-reduce-in-bf16" +
            (options.distributed_optimizer ? " --distributed-optimizer --overlap-grad-reduce "
                                             "--overlap-param-gather"
                                           : " --overlap-grad-reduce") +
            (options.tp_comm_overlap ? " --tp-comm-overlap" : "") +
            (options.attention == AttentionKernel::kCudnn ? " --attention cudnn" : "") +
            (r.exact ? " --exact --max-transfers 1e8" : ""),
        note);
  }
  summary.Print();
  EXPECT_LE(summary.Worst(), kMegatronBridgeRowGuard);
}

// --- G6: MoE Parallel Folding on H100 (Liu et al. 2025, arXiv 2504.14960, Table 3; calibration.md
// G6; docs/sources.md) --------------------------------------------------------------------------
// Megatron-Core's best layouts with and without parallel folding on the Eos cluster (DGX H100,
// NVLink in a node, 400 Gb/s InfiniBand), global batch 256 sequences of 4,096, bf16, token
// dropping at capacity factor 1. What the table gives: GPUs, TP, EP, PP and, with folding, ETP 1
// (ETP = TP without it, Megatron's default); DP = GPUs / (TP x PP). What it does not, and podsim
// assumes: one sequence a microbatch with 1F1B (no virtual stages: 56 and 28 layers over 8 and 4
// stages), Megatron's fp32 main gradients and distributed optimizer, no recomputation, Transformer
// Engine's attention (cuDNN's on Hopper), no tp overlap, Megatron-LM's unfused loss (its default);
// balanced routing, under which capacity factor 1 drops nothing (podsim's experts are balanced and
// dropless). Mixtral-8x22B-G8T8 is the paper's fine-grained Mixtral: 64 experts, top 8, each
// expert's ffn 1/8 of Mixtral's. Its Llama3-8x70B rows are left out (the upcycled model's top-k is
// not given), and so is Table 4 (its strong-scaling rows need virtual stages the paper does not
// state to bring 16 microbatches' bubble down); Table 5 is the next test's. Published: MFU,
// achieved over 989.5 TFLOP/s, FLOPs by Megatron-LM's count of late 2024
// (num_floating_point_operations: every T^2 attention pair,
// --flops-convention full); the step time is podsim's times podsim's MFU over the published one,
// both counting the same FLOPs (FoldingMeasuredStep).
// The paper states no data-parallel overlap flags (calibration.md G6.4: per-table configs not
// captured), so its rows run with Megatron-Core's defaults: dp reductions and parameter gathers
// exposed (framework.h).
OpOptions FoldingOptions() {
  OpOptions options = FrameworkOptions(Framework::kMegatron);
  options.distributed_optimizer = true;
  options.attention = AttentionKernel::kCudnn;
  options.model_flops_count = AttentionCount::kFull;
  return options;
}

// The published step time of a Parallel Folding row: podsim's step at the published MFU, over the
// paper's 989.5 TFLOP/s peak.
double FoldingMeasuredStep(const TrainingResult& result, const std::string& system, double mfu) {
  constexpr double kPaperPeak = 989.5e12;
  return result.step_time_s * result.mfu * System(system).chip.bf16_flops_per_s /
         (mfu * kPaperPeak);
}

// The flags of FoldingOptions() on the command line.
constexpr char kFoldingFlags[] =
    " --framework megatron --distributed-optimizer --attention cudnn --flops-convention full";

TEST(TrainingValidationTest, DISABLED_G6ParallelFoldingH100) {
  struct Row {
    const char* name;
    const char* model;
    int gpus, tp, ep, etp, pp;
    double mfu;
  };
  constexpr int64_t kSequences = 256, kSeq4k = 4096;
  ErrorSummary summary("G6 MoE Parallel Folding on H100");
  for (const Row& r :
       {Row{"Mixtral-8x22B MCore", "mixtral-8x22b", 128, 2, 4, 2, 8, 0.463},
        Row{"Mixtral-8x22B folding", "mixtral-8x22b", 128, 2, 8, 1, 8, 0.493},
        Row{"Qwen2-57B-A14B MCore", "qwen2-57b-a14b", 64, 2, 4, 2, 4, 0.353},
        Row{"Qwen2-57B-A14B folding", "qwen2-57b-a14b", 64, 2, 4, 1, 4, 0.390},
        Row{"Mixtral-8x22B-G8T8 MCore", "mixtral-8x22b:experts=64,top_k=8,expert_ffn=2048", 128, 2,
            8, 2, 8, 0.171},
        Row{"Mixtral-8x22B-G8T8 folding", "mixtral-8x22b:experts=64,top_k=8,expert_ffn=2048", 128,
            4, 8, 1, 8, 0.288}}) {
    sim::StatusOr<ModelSpec> model = ParseModel(r.model);
    ASSERT_TRUE(model.ok()) << model.status();
    const int dp = r.gpus / (r.tp * r.pp);
    const std::string system = "h100:" + std::to_string(r.gpus);
    const std::string layout = "dp=" + std::to_string(dp) + ",tp=" + std::to_string(r.tp) +
                               ",sp=1,pp=" + std::to_string(r.pp) + ",ep=" + std::to_string(r.ep) +
                               ",etp=" + std::to_string(r.etp) + ",mbs=1";
    StepOptions step;
    step.chips = SimulatedChips::kOrbits;  // --exact: 128 and 64 orbits, past the default's 64.
    const TrainingResult result =
        Train(system, *model, layout, kSequences, FoldingOptions(), step, kSeq4k);
    const double measured = FoldingMeasuredStep(result, system, r.mfu);
    auto share = [&](const char* name) { return SharePercent(result, name); };
    char what[240];
    std::snprintf(what, sizeof what, "step time on %s, %s %s (published MFU %.1f%%)",
                  system.c_str(), r.model, layout.c_str(), 100 * r.mfu);
    char note[600];
    std::snprintf(note, sizeof note,
                  "podsim's MFU %.1f%%: compute %.0f%% of the step, exposed ep %.0f%%, "
                  "expert-dp %.0f%%, tp %.0f%%, pipeline %.0f%%; podsim's memory %.1f GiB per chip",
                  100 * result.mfu, share("compute"), share("exposed_ep"),
                  share("exposed_expert-dp"), share("exposed_tp"), share("bubble") + share("idle"),
                  result.memory.total_bytes / (1u << 30));
    RecordSourceRow(summary, std::string("G6 Parallel Folding ") + r.name, what, result.step_time_s,
                    measured, "hopper",
                    "train --system " + system + " --model " + r.model + " --layout " + layout +
                        " --batch-tokens " + std::to_string(kSequences * kSeq4k) + " --seq " +
                        std::to_string(kSeq4k) + kFoldingFlags + " --exact",
                    note);
  }
  summary.Print();
  EXPECT_LE(summary.Worst(), kG6FoldingRowGuard);
}

// Table 5 of the same paper: context scaling of Mixtral 8x22B, the tokens of a step held at
// 16,777,216 while the sequence grows from 16K to 128K tokens and the GPUs from 128 to 1,024, each
// row with its CP, TP, EP, PP and (with folding) ETP 1; DP 2 in every row. The ep group takes cp's
// chips first (layout.h, ep), as Megatron-Core's rank order does. Assumed as for Table 3, and
// attention's keys and values passed round the cp ring (Megatron-Core's default p2p). Table 5's
// Qwen2-57B-A14B rows are left out: in the copy read they repeat Mixtral's, digit for digit.
// Hundreds of microbatches a step: the rows run podsim's default, whose approximation gave
// --exact's step time within 0.01% on the 128- and 1,024-GPU folding rows (2026-12-04; --exact
// takes 20 and 48 s there).
TEST(TrainingValidationTest, DISABLED_G6ParallelFoldingContextScalingH100) {
  struct Row {
    const char* method;
    int gpus, cp, tp, ep, etp;
    int64_t seq;
    double mfu;
  };
  constexpr int64_t kTokens = 16'777'216;
  constexpr int kPp = 8;
  sim::StatusOr<ModelSpec> model = ParseModel("mixtral-8x22b");
  ASSERT_TRUE(model.ok());
  ErrorSummary summary("G6 MoE Parallel Folding context scaling on H100");
  for (const Row& r :
       {Row{"MCore", 128, 4, 2, 4, 2, 16384, 0.453}, Row{"MCore", 256, 8, 2, 4, 2, 32768, 0.432},
        Row{"MCore", 512, 16, 2, 4, 2, 65536, 0.426},
        Row{"MCore", 1024, 16, 4, 8, 4, 131072, 0.382},
        Row{"folding", 128, 4, 2, 8, 1, 16384, 0.476},
        Row{"folding", 256, 8, 2, 8, 1, 32768, 0.451},
        Row{"folding", 512, 8, 4, 8, 1, 65536, 0.445},
        Row{"folding", 1024, 8, 8, 8, 1, 131072, 0.429}}) {
    const int dp = r.gpus / (r.tp * r.cp * kPp);
    const std::string system = "h100:" + std::to_string(r.gpus);
    const std::string layout = "dp=" + std::to_string(dp) + ",tp=" + std::to_string(r.tp) +
                               ",sp=1,pp=" + std::to_string(kPp) + ",cp=" + std::to_string(r.cp) +
                               ",ep=" + std::to_string(r.ep) + ",etp=" + std::to_string(r.etp) +
                               ",mbs=1";
    const TrainingResult result =
        Train(system, *model, layout, kTokens / r.seq, FoldingOptions(), {}, r.seq);
    const double measured = FoldingMeasuredStep(result, system, r.mfu);
    auto share = [&](const char* name) { return SharePercent(result, name); };
    char what[240];
    std::snprintf(what, sizeof what,
                  "step time on %s, mixtral-8x22b %s at seq %lld (published "
                  "MFU %.1f%%)",
                  system.c_str(), layout.c_str(), static_cast<long long>(r.seq), 100 * r.mfu);
    char note[600];
    std::snprintf(note, sizeof note,
                  "podsim's MFU %.1f%%: compute %.0f%% of the step, exposed cp %.0f%%, ep %.0f%%, "
                  "pipeline %.0f%%; the published MFU falls from 16K to 128K, podsim's does not: "
                  "podsim's ring attention overlaps every block's transfer with the block in hand "
                  "and times its kernels on the causal curve at T/cp queries",
                  100 * result.mfu, share("compute"), share("exposed_cp"), share("exposed_ep"),
                  share("bubble") + share("idle"));
    RecordSourceRow(summary,
                    std::string("G6 Parallel Folding Mixtral-8x22B ") + r.method + " " +
                        std::to_string(r.seq / 1024) + "K",
                    what, result.step_time_s, measured, "hopper",
                    "train --system " + system + " --model mixtral-8x22b --layout " + layout +
                        " --batch-tokens " + std::to_string(kTokens) + " --seq " +
                        std::to_string(r.seq) + kFoldingFlags,
                    note);
  }
  summary.Print();
  EXPECT_LE(summary.Worst(), kG6FoldingContextRowGuard);
}

// --- G6.4: DeepSeek-V3's pretraining cost (calibration.md G6.4: 180K H800 GPU-hours per trillion
// tokens, DeepSeek-V3 report; layout and batch from book-cases.yaml G28) ----------------------
// 2,048 H800s, 16-way pipeline, 64-way expert parallelism over 8 nodes, ZeRO-1 data parallelism,
// 15,360 sequences of 4,096 tokens a step. podsim runs it on h100:2048 (an H800 is an H100 with
// slower NVLink; its InfiniBand NIC is the same) with one sequence a microbatch (the report does
// not say) and the distributed optimizer, and with what the report states it does: fp8 GEMMs
// (--fp8; the report's tile-wise scaling is not torchao's tensorwise one podsim times), fp8
// dispatch (--fp8-dispatch: the experts' inputs and the output gradients, section 3.3.2) and
// DualPipe's overlap of one microbatch's all-to-alls with another's compute (--ep-comm-overlap,
// on 1F1B: DualPipe's bidirectional pipeline and its smaller bubble are not modelled). The
// published cost is a step time: 180,000 GPU-hours x 3,600 s / 1e12 tokens x 62,914,560 tokens
// / 2,048 GPUs = 19.9 s. Mechanisms podsim lacks are in the row's note. The step has 2,048
// orbits: the default approximates and says so.
TEST(TrainingValidationTest, DISABLED_G64DeepSeekV3PretrainingCost) {
  constexpr int64_t kSequences = 15360, kSeq = 4096;
  constexpr uint64_t kMaxTransfers = 1'000'000'000;
  sim::StatusOr<ModelSpec> model = ParseModel("deepseek-v3");
  ASSERT_TRUE(model.ok());
  OpOptions options;
  options.distributed_optimizer = true;
  options.fp8 = true;
  options.fp8_dispatch = true;
  options.ep_comm_overlap = true;
  const std::string system = "h100:2048", layout = "dp=128,pp=16,ep=64,microbatches=120";
  StepOptions step;
  step.max_transfers = kMaxTransfers;
  const TrainingResult result = Train(system, *model, layout, kSequences, options, step, kSeq);
  const double tokens = static_cast<double>(kSequences * kSeq);
  const double measured = 180000.0 * 3600 / 1e12 * tokens / 2048;
  auto share = [&](const char* name) { return SharePercent(result, name); };
  char note[1200];
  std::snprintf(note, sizeof note,
                "compute %.0f%% of the step, exposed ep %.0f%%, pipeline %.0f%%, interference "
                "%.0f%%; not modelled, each of which would move the figure: node-limited "
                "routing with DeepEP sending each token once per node and forwarding it over "
                "NVLink (less InfiniBand traffic), DualPipe's bidirectional pipeline (a smaller "
                "bubble), the H800's slower NVLink, tile-wise fp8 scaling; podsim's memory "
                "%.0f GiB per chip does not fit the 80 GB the run used (the overlap on 1F1B holds "
                "twice its warm-up's activations, DualPipe PP + 1 microbatches, and the run "
                "recomputed and compressed what podsim keeps); the simulation is the default "
                "approximation (2,048 orbits; its band is printed by the command)",
                share("compute"), share("exposed_ep"), share("bubble") + share("idle"),
                share("interference"), result.memory.total_bytes / (1u << 30));
  RecordMeasured("G6.4 DeepSeek-V3",
                 "step time on h100:2048 for 2,048 H800s, " + layout +
                     ", fp8 with fp8 dispatch, all-to-alls overlapped across microbatches "
                     "(published 180K GPU-hours per trillion tokens)",
                 result.step_time_s, measured, "hopper",
                 "train --system " + system + " --model deepseek-v3 --layout " + layout +
                     " --batch-tokens " + std::to_string(kSequences * kSeq) + " --seq " +
                     std::to_string(kSeq) +
                     " --distributed-optimizer --fp8 --fp8-dispatch --ep-comm-overlap "
                     "--max-transfers " +
                     std::to_string(kMaxTransfers),
                 note);
  std::printf("G6.4 DeepSeek-V3 measured %.3f s podsim %.3f s (%+.1f%%)\n", measured,
              result.step_time_s, 100 * (result.step_time_s / measured - 1));
  // A guard at today's figure plus a margin, not a target: +84% before the fp8 and overlap
  // mechanisms, -0.2% with them, +6.1% since hopper's fp8 GEMMs and attention run at the cap.
  EXPECT_LE(std::abs(result.step_time_s / measured - 1), 0.25);
}

// --- V7: MaxText on TPU v5e (AI-Hypercomputer/maxtext, MaxText/configs/v5e/*.sh) -------------
// Base model scaled by global_parameter_scale: SwiGLU MLP, RMSNorm, rotary positions, no biases,
// no dropout, untied embeddings, head dim 128, MHA, vocabulary 32,000. One v5e-256 slice is a
// 16x16 torus; N slices add data parallelism over DCN. Per-device batch 6/4/2/1 for 16/32/64/128B;
// ici_fsdp over the whole slice with remat_policy=full for 16-64B; 128B fsdp 16 x tensor 16
// (MaxText shards activations on embed over `tensor`: Megatron sequence parallelism's
// all-gather / reduce-scatter) with remat qkv_proj_offloaded (the QKV projections are kept, in
// host memory, whose copies podsim does not simulate; the rest is recomputed from each layer's
// input: --recompute maxtext:qkv_proj_offloaded). Published: MFU by MaxText's model FLOPs before PR
// #1988 (attention counted in full, as ModelSpec's kFull) at 197 TFLOP/s per chip; the measured
// step time is the model FLOPs of the step / (chips x 197e12 x MFU).
struct V7Model {
  const char* name;
  int64_t emb, heads, mlp, layers, per_device_batch;
  const char* ici_layout;
  std::vector<double> mfu;  // 1, 2, 4, 8, 16, 32 slices.
};

ModelSpec MaxText(const V7Model& m) {
  ModelSpec spec;
  spec.name = std::string("maxtext-") + m.name;
  spec.layers = m.layers;
  spec.d_model = m.emb;
  spec.ffn = m.mlp;
  spec.heads = m.heads;
  spec.kv_heads = m.heads;
  spec.head_dim = 128;
  spec.vocab = 32000;
  return spec;  // Gated MLP, RMSNorm, rotary, untied, no biases, no dropout: ModelSpec defaults.
}

TEST(TrainingValidationTest, V7MaxTextV5e) {
  const std::vector<V7Model> models = {
      {"16B", 4096, 64, 28672, 32, 6, "fsdp=256", {61.10, 59.37, 59.14, 58.27, 56.56, 54.65}},
      {"32B", 8192, 64, 28672, 32, 4, "fsdp=256", {66.86, 64.81, 64.10, 63.67, 62.26, 60.40}},
      {"64B", 8192, 64, 28672, 64, 2, "fsdp=256", {59.90, 56.66, 55.85, 54.96, 53.29, 50.18}},
      {"128B",
       8192,
       128,
       57344,
       64,
       1,
       "fsdp=16,tp=16,sp=1",
       {56.06, 55.82, 54.93, 52.93, 50.86, 46.25}},
  };
  const std::vector<int> slices = {1, 2, 4, 8, 16, 32};
  ErrorSummary summary("V7 v5e");
  for (const V7Model& m : models) {
    const ModelSpec model = MaxText(m);
    OpOptions options = FrameworkOptions(Framework::kMaxtext);
    if (std::string(m.name) == "128B") {
      const sim::StatusOr<RematPolicy> policy = MaxTextRematPolicy("qkv_proj_offloaded");
      ASSERT_TRUE(policy.ok());
      options.recompute = RecomputePolicy::kSaveNamed;
      options.saved_ops = policy->saved;
      options.offloaded_ops = policy->offloaded;
    } else {
      options.recompute = RecomputePolicy::kFull;
    }
    for (size_t i = 0; i < slices.size(); ++i) {
      const int n = slices[i];
      const int64_t chips = 256 * n;
      const int64_t sequences = chips * m.per_device_batch;
      const std::string system = "tpu-v5e:16x16,slices=" + std::to_string(n);
      const std::string layout = "dp=" + std::to_string(n) + "," + m.ici_layout;
      const TrainingResult result = Train(system, model, layout, sequences, options);
      const double flops = model.TrainingFlopsPerToken(kSeq, AttentionCount::kFull) *
                           static_cast<double>(sequences * kSeq);
      const double measured = flops / (static_cast<double>(chips) * 197e12 * m.mfu[i] / 100);
      char what[160];
      std::snprintf(what, sizeof what, "step time on %s, %s (published MFU %.2f%%)", system.c_str(),
                    layout.c_str(), m.mfu[i]);
      RecordMeasured(std::string("V7 v5e ") + m.name + " " + std::to_string(n) + "x", what,
                     result.step_time_s, measured, "tpu-v5e",
                     TrainCommand(system, model, layout, sequences, options));
      std::printf(
          "V7 %-4s %2dx measured MFU %.2f%% podsim %.2f%%: step %.3f s vs %.3f s (%+.1f%%)\n",
          m.name, n, m.mfu[i], 100 * result.mfu, measured, result.step_time_s,
          100 * (result.step_time_s / measured - 1));
      summary.Add(result.step_time_s, measured);
      EXPECT_LT(std::abs(result.step_time_s / measured - 1), 0.3) << m.name << " " << n << "x";
    }
  }
  summary.Print();
  // MISSES the 10% target (docs/validation.md; the report of issue 5 explains why).
  EXPECT_LE(summary.Mean(), 0.15);
}

// --- The book's training verdicts (book-cases.yaml TR2, TR5, G21, G23, G26, G27) ----------------
// The book's rooflines are idealized (peak FLOPs, line-rate links), so these runs use the pure
// roofline (IdealRoofline) and the pure fabric: what is left between the book's closed form and
// the simulation is what the simulation adds -- the ring's (X - 1) / X, the elementwise ops, the
// first gather and last reduction that nothing hides, and the ops' real dependencies.
StepOptions BookStep() {
  StepOptions options;
  options.compute = IdealRoofline();
  options.calibrated = false;
  return options;
}

// An MLP-dominated model like the book's (formulas.md 2.5: In[B,D] W_in[D,F] W_out[F,D]): plain
// MLP, attention 1/16 of the MLP's weights, a small vocabulary; short sequences so that attention
// scores are negligible and the per-chip batch can be set in steps of 128 tokens.
constexpr int64_t kBookSeq = 128;

ModelSpec BookMlpModel(int64_t d, int64_t f, int64_t layers) {
  ModelSpec m;
  m.name = "book-mlp";
  m.layers = layers;
  m.d_model = d;
  m.ffn = f;
  m.heads = 16;
  m.kv_heads = 16;
  m.head_dim = d / 128;
  m.vocab = 1024;
  m.gated_mlp = false;
  return m;
}

struct Exposure {
  double step_s = 0;
  double exposed_s = 0;  // On the swept axis.
  double compute_s = 0;
};

Exposure Expose(const topology::System& system, const ModelSpec& model, const std::string& layout,
                int64_t tokens_per_chip, const std::string& axis, int64_t seq = kBookSeq) {
  const Layout parsed = ParsedLayout(layout);
  const int64_t sequences = parsed.data_shards() * tokens_per_chip / seq;
  // The book's arithmetic: bf16 weights gathered and bf16 gradients reduced (its recipe).
  OpOptions options;
  options.precision = PrecisionRecipe::Book();
  sim::StatusOr<TrainingResult> result =
      SimulateTraining(system, model, parsed, BatchSpec{sequences, seq}, options, BookStep());
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return {};
  auto it = result->breakdown.find("exposed_" + axis);
  return {result->step_time_s, it == result->breakdown.end() ? 0 : it->second,
          result->breakdown.at("compute")};
}

// The per-chip batch (tokens) below which communication on `axis` stops hiding behind compute,
// from simulated steps: the exposed time on the axis is a floor (the first gather and the last
// reduction) plus, when comms-bound, a part that shrinks linearly with the batch; the crossover is
// where that part reaches zero, extrapolated from the last two sweep points before it vanishes.
// The sweep starts at half the guess, in steps of an eighth of it.
double Crossover(const std::string& system_text, const ModelSpec& model, const std::string& layout,
                 const std::string& axis, double guess) {
  const topology::System system = System(system_text);
  const int64_t step = std::max<int64_t>(1, std::llround(guess / 8 / kBookSeq)) * kBookSeq;
  const double floor = Expose(system, model, layout, 4 * step * 8, axis).exposed_s;
  // The last two comms-bound points: (batch, exposed time beyond the floor).
  std::pair<int64_t, double> last{0, 0}, before_last{0, 0};
  for (int64_t b = 4 * step; b <= 4 * step * 8; b += step) {
    const Exposure e = Expose(system, model, layout, b, axis);
    const double excess = e.exposed_s - floor;
    if (excess < 0.02 * e.step_s) {
      if (before_last.first == 0) {
        ADD_FAILURE() << system_text << ": the crossover is below half the guess " << guess;
        return static_cast<double>(b);
      }
      // The linear part through the last two comms-bound points, extrapolated to zero.
      const double slope =
          (before_last.second - last.second) / static_cast<double>(last.first - before_last.first);
      return static_cast<double>(last.first) + last.second / slope;
    }
    before_last = last;
    last = {b, excess};
  }
  return 0;
}

// TR2 (Ch5): FSDP is compute-bound iff the per-chip batch B/X > C/W_ici = 4.59e14 / 1.8e11 = 2550
// tokens on one axis of a v5p, and 850 with the three axes of the torus. Swept on a 16-chip ring
// (wrapped x axis) and on an 8x8x8 cube.
TEST(TrainingBookTest, TR2FsdpCrossoverOnV5p) {
  const ModelSpec model = BookMlpModel(8192, 32768, 8);
  const double one_axis = Crossover("tpu-v5p:16x1x1,wrap=all", model, "fsdp=16", "fsdp", 2550);
  const double three_axes = Crossover("tpu-v5p:8x8x8", model, "fsdp=512", "fsdp", 850);
  std::printf("TR2 FSDP crossover: one axis %.0f tokens/chip (book 2550), three axes %.0f (850)\n",
              one_axis, three_axes);
  // Asserted within 15% below (the simulated crossover pays latencies and the ring's (n-1)/n
  // the book rounds away); recorded as a simulation row.
  const std::string why =
      "the closed form C/W counts the whole bytes at the full link rate; the simulated rings move "
      "(n-1)/n of them, each collective pays its launch and hop latencies, and the crossover is "
      "extrapolated from simulated steps an eighth of the guess apart";
  RecordBook("TR2", "FSDP crossover per-chip batch, 1 axis (tpu-v5p:16x1x1 ring)", one_axis, 2550,
             kBookExact, "tpu", "tokens", why + " (on the 16-ring the precise form is 2391)");
  RecordBook("TR2", "FSDP crossover per-chip batch, 3 axes (tpu-v5p:8x8x8)", three_axes, 850,
             kBookExact, "tpu", "tokens", why);
  EXPECT_NEAR(one_axis / 2550, 1, 0.15);
  EXPECT_NEAR(three_axes / 850, 1, 0.15);
  // The verdicts on either side.
  const topology::System ring = System("tpu-v5p:16x1x1,wrap=all");
  const Exposure below = Expose(ring, model, "fsdp=16", 1280, "fsdp");
  const Exposure above = Expose(ring, model, "fsdp=16", 5120, "fsdp");
  EXPECT_GT(below.exposed_s / below.step_s, 0.3);  // Comms-bound.
  EXPECT_LT(above.exposed_s / above.step_s, 0.1);  // Compute-bound.
}

// G21 (Ch12): DP/FSDP on H100 is compute-bound iff the per-GPU batch exceeds C/W: 990e12 / 450e9
// = 2200 inside a node (NVLink egress), 990e12 / 400e9 = 2475 beyond it (a node's 8 x 400 Gb/s
// NICs). G23: across X = 2 nodes the scale-out ring moves (X - 1)/X of the bytes, so the book
// writes B/N > 2475 / 2 = 1237 -- leaving out the NVLink ring inside each node, which its own
// precise form (formulas.md 2.7, bytes x max_i (D_i - 1)/(D_i W_i)) keeps: max(7/8 / 450e9,
// (X - 1)/X / 400e9) x 990e12 = 1925 for one and two nodes, 2166 for eight. The simulation is
// checked against that precise form; the rows show the book's answers.
TEST(TrainingBookTest, G21G23FsdpCrossoverOnH100) {
  const ModelSpec model = BookMlpModel(8192, 32768, 8);
  struct Case {
    const char* id;
    const char* system;
    const char* layout;
    double book;
    double precise;
  };
  for (const Case& c : std::vector<Case>{{"G21", "h100:8", "fsdp=8", 2200, 1925},
                                         {"G23", "h100:16", "fsdp=16", 1237, 1925},
                                         {"G21", "h100:64", "fsdp=64", 2475, 2166}}) {
    const double crossover = Crossover(c.system, model, c.layout, "fsdp", c.precise);
    std::printf("%s FSDP crossover on %s: %.0f tokens/GPU (book %.0f, precise form %.0f)\n", c.id,
                c.system, crossover, c.book, c.precise);
    // Asserted against the precise form below; recorded against the book's answer at its tag.
    RecordBook(c.id,
               std::string("FSDP crossover per-GPU batch on ") + c.system + " (precise form " +
                   std::to_string(int(c.precise)) + ")",
               crossover, c.book, std::string(c.id) == "G23" ? kBookExact : kBookRounded, "hopper",
               "tokens",
               "the book's answer rounds away the rings' (n-1)/n" +
                   std::string(std::string(c.id) == "G23"
                                   ? " and leaves out the NVLink ring inside each node"
                                   : "") +
                   "; its precise form (formulas.md 2.7), the largest (D-1)/(D W) over the "
                   "rings, gives " +
                   std::to_string(int(c.precise)) +
                   " tokens, which the test asserts the simulation within 10% of");
    EXPECT_NEAR(crossover / c.precise, 1, 0.10) << c.system;
  }
}

// G26 (Ch12 Quiz 5 Q2): LLaMA-3 70B with ZeRO-3 over 4096 H100s and a 4M-token batch has 976
// tokens per GPU: comms-bound. G27: Megatron-LM's 70B run has 2048 tokens per GPU (comms-bound
// under pure FSDP, whose threshold the book puts at ~2472), its 16B run 4096 (compute-bound). The
// verdicts from the crossovers of the models' own layers (eight of them: the criterion is per
// layer), simulated with FSDP over eight nodes (the per-GPU criterion does not depend on the node
// count beyond (X - 1)/X).
TEST(TrainingBookTest, G26G27FsdpVerdictsOnH100) {
  sim::StatusOr<ModelSpec> llama70 = ParseModel("llama3-70b");
  ASSERT_TRUE(llama70.ok());
  ModelSpec m70 = *llama70;
  m70.layers = 8;
  m70.vocab = 1024;     // Its 128,256-row embedding and head would dwarf eight layers' gathers.
  ModelSpec m16 = m70;  // A 16B-class layer: D = 6144, 48 heads of 128 (8 kv), F = 16384 gated.
  m16.name = "16b-class";
  m16.d_model = 6144;
  m16.heads = 48;
  m16.ffn = 16384;
  const double c70 = Crossover("h100:64", m70, "fsdp=64", "fsdp", 2166);
  const double c16 = Crossover("h100:64", m16, "fsdp=64", "fsdp", 2166);
  std::printf(
      "G26/G27 FSDP crossover on h100:64: LLaMA-3 70B layers %.0f tokens/GPU, 16B-class "
      "%.0f (book ~2472)\n",
      c70, c16);
  RecordBook("G27", "FSDP crossover per-GPU batch, llama3-70b layers on h100:64", c70, 2472,
             kBookRounded, "hopper", "tokens",
             "the book's ~2472 is C/W at a node's 400 GB/s of NICs with the whole bytes; the "
             "simulated NIC ring across 8 nodes moves 7/8 of them (the precise form: 2166 "
             "tokens), and the model's attention, norms and real dependencies are simulated");
  EXPECT_LT(976, c70);   // G26 ZeRO-3 at 976 tokens/GPU: comms-bound.
  EXPECT_LT(2048, c70);  // G27 70B at 2048: comms-bound.
  EXPECT_GT(4096, c16);  // G27 16B at 4096: compute-bound.
  // And the simulated steps agree: at 976 tokens/GPU most of the step waits for FSDP.
  const Exposure zero3 = Expose(System("h100:64"), m70, "fsdp=64", 976, "fsdp", 122);
  EXPECT_GT(zero3.exposed_s / zero3.step_s, 0.3);
}

// TR5 (Ch5): Megatron tensor parallelism of an MLP is compute-bound iff Y < F / 2550 on one v5p
// axis (the all-gather and reduce-scatter of bf16[B, D] around W_in and W_out against their
// matmuls): LLaMA-3 70B's F = 28672 runs 8-way fine and 16-way comms-bound. The verdict from one
// simulated layer's MLP: its tp collectives' time against its two matmuls' time.
class MlpTimer : public StepObserver {
 public:
  explicit MlpTimer(const schedule::Schedule* schedule) : schedule_(schedule) {}
  void OnOpStart(sim::Time now, uint32_t, int program, int op) override {
    if (program == 0) start_[op] = now;
  }
  void OnOpEnd(sim::Time now, uint32_t, int program, int index) override {
    if (program != 0) return;
    const schedule::Op& op = schedule_->programs(0).ops(index);
    if (op.layer() != 1 || op.phase() != "forward") return;
    const double t = (now - start_[index]).ToSeconds();
    if (op.name() == "mlp.up" || op.name() == "mlp.down") matmul_s += t;
    if (op.name() == "tp.all-gather.mlp" || op.name() == "tp.reduce-scatter.mlp") comm_s += t;
  }
  double matmul_s = 0;
  double comm_s = 0;

 private:
  const schedule::Schedule* schedule_;
  std::map<int, sim::Time> start_;
};

TEST(TrainingBookTest, TR5TensorParallelVerdictOnV5p) {
  const ModelSpec model = BookMlpModel(8192, 28672, 3);
  for (int y : {8, 16}) {
    const topology::System system = System("tpu-v5p:" + std::to_string(y) + "x1x1,wrap=all");
    const Layout layout = ParsedLayout("tp=" + std::to_string(y) + ",sp=1");
    const BatchSpec batch{8, 1024};
    const schedule::Schedule schedule = TrainingSchedule(system, model, layout, batch, OpOptions{});
    MlpTimer timer(&schedule);
    StepOptions options = BookStep();
    options.observer = &timer;
    ASSERT_TRUE(SimulateTraining(system, model, layout, batch, OpOptions{}, options).ok());
    const double ratio = timer.comm_s / timer.matmul_s;
    const double book = y * 2550.0 / 28672;
    std::printf("TR5 %d-way: MLP tp comms / matmuls %.2f (book %.2f)\n", y, ratio, book);
    RecordBook("TR5",
               "MLP tp comms / matmul time, " + std::to_string(y) + "-way on a v5p axis, F=28672",
               ratio, book, kBookApprox, "tpu", "",
               "the book's Y x 2550 / F counts the whole bf16[B, D] per collective; the simulated "
               "rings move (Y-1)/Y of it and pay their launch and hop latencies");
    if (y == 8) {
      EXPECT_LT(ratio, 1);  // Compute-bound.
    } else {
      EXPECT_GT(ratio, 1);  // Comms-bound.
    }
  }
}

}  // namespace
}  // namespace podsim::workloads
