// Issue 13: the symmetric quotient (SimulatedChips::kOrbits, --exact) against the brute-force
// reference (every chip, every transfer) on randomly generated steps, deterministic by seed:
// small tori with and without wraparound, GPU fat trees and NVL72, training layouts over every
// axis with every `order=` permutation and inference layouts, prefill and decode. The quotient
// must give the reference's step time and mean breakdown; it does, to rounding, because it is
// exact (docs/architecture.md, "The symmetric quotient"), so the tolerance is far tighter than
// the issue's 0.5% of the step.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "topology/system.h"
#include "workloads/inference_schedule.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"
#include "workloads/step_simulator.h"
#include "workloads/training.h"

namespace podsim {
namespace {

using workloads::SimulatedChips;
using workloads::StepOptions;
using workloads::StepResult;

// Relative agreement asked of the quotient: rounding of completions to whole picoseconds and
// the order of floating-point sums are all that may differ.
constexpr double kTolerance = 1e-6;

// PODSIM_DIFFERENTIAL_SYSTEMS, for a campaign run by hand: systems separated by ';' drawn
// instead of the list below (and of the multi-slice one), e.g. "h100:512;a100:768,oversub=2"
// for fat trees of several scalable units, whose every-chip reference is too slow for CI.
std::optional<std::vector<std::string>> CampaignSystems() {
  const char* text = std::getenv("PODSIM_DIFFERENTIAL_SYSTEMS");
  if (text == nullptr) return std::nullopt;
  std::vector<std::string> systems;
  std::string rest = text;
  for (size_t end; !rest.empty(); rest = end == std::string::npos ? "" : rest.substr(end + 1)) {
    end = rest.find(';');
    systems.push_back(rest.substr(0, end));
  }
  return systems;
}

const std::vector<std::string>& Systems() {
  static const std::optional<std::vector<std::string>> kCampaign = CampaignSystems();
  if (kCampaign) return *kCampaign;
  static const std::vector<std::string> kSystems = {"tpu-v5p:16x1x1,wrap=all",
                                                    "tpu-v5p:8x4x1,wrap=all",
                                                    "tpu-v5e:8x4",
                                                    "tpu-v5p:4x4x4",
                                                    "tpu-v5p:8x8x1,wrap=all",
                                                    "tpu-v5e:16x16",
                                                    "tpu-v5p:16x4x4",
                                                    "h100:16",
                                                    "h100:32,oversub=4",
                                                    "h100:64,oversub=16",
                                                    "gb200:72",
                                                    "a100:16",
                                                    "b200:16"};
  return kSystems;
}

// Tori of two and four slices joined over DCN (hosts of 4 chips on v5p, 8 on v5e), drawn
// instead of the system above in one case of five, from a stream of their own (the other draws
// stay).
const std::vector<std::string>& MultiSliceSystems() {
  static const std::vector<std::string> kSystems = {"tpu-v5p:8x4x1,wrap=all,slices=2",
                                                    "tpu-v5e:16x4,wrap=all,slices=2",
                                                    "tpu-v5p:4x4x1,wrap=all,slices=4"};
  return kSystems;
}

// A tiny decoder, so that a case is its communication pattern more than its compute; one in
// three has experts (8 or 16, top 1 or 2, sometimes shared experts and a dense first layer),
// one in four latent attention; both drawn from `moe_rng`, so that the other draws stay those of
// the dense cases.
std::string TinyModel(std::mt19937& rng, std::mt19937& moe_rng) {
  const int heads = 8;
  const int kv = (rng() % 2 == 0) ? 8 : 4;
  const int head_dim = 32 << (rng() % 2);
  const int layers = 1 + static_cast<int>(rng() % 2);
  std::string moe;
  if (moe_rng() % 3 == 0) {
    moe += ",experts=" + std::to_string(8 << (moe_rng() % 2)) +
           ",top_k=" + std::to_string(1 + moe_rng() % 2) +
           ",expert_ffn=" + std::to_string(heads * head_dim);
    if (moe_rng() % 2 == 0) moe += ",shared_ffn=" + std::to_string(2 * heads * head_dim);
    if (layers > 1 && moe_rng() % 2 == 0) moe += ",dense_layers=1";
  }
  // One in four has latent attention (kv heads = heads), half of them a query latent too.
  const bool mla = moe_rng() % 4 == 0;
  std::string text =
      "custom:layers=" + std::to_string(layers) + ",d_model=" + std::to_string(heads * head_dim) +
      ",ffn=" + std::to_string(4 * heads * head_dim) + ",heads=" + std::to_string(heads) +
      ",kv_heads=" + std::to_string(mla ? heads : kv) + ",head_dim=" + std::to_string(head_dim) +
      ",vocab=4096" + moe;
  if (mla) {
    text += ",kv_lora=" + std::to_string(2 * head_dim) +
            ",rope_dim=16,v_head_dim=" + std::to_string(head_dim);
    if (moe_rng() % 2 == 0) text += ",q_lora=" + std::to_string(3 * head_dim);
  }
  return text;
}

// A random factor of n (a power-of-two part or n's other divisors), at most `most`.
int Factor(int n, int most, std::mt19937& rng) {
  std::vector<int> divisors;
  for (int d = 1; d <= n && d <= most; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return divisors[rng() % divisors.size()];
}

struct Outcome {
  bool ran = false;
  std::string what;
  StepResult quotient, reference;
  // The quotient without replays (collective_network.h): every launch its transfers.
  StepResult unreplayed;
  // The default approximation (one chip per program, whole collectives), when it runs: its
  // error is measured here, not bounded (what the CLI's "approximate" line quotes).
  std::optional<StepResult> approximate;
  // The default (kAuto): the quotient where it is cheap, else the approximation.
  std::optional<StepResult> by_default;
};

// The approximation: one chip per program, whole-collective flows.
StepOptions Approximation() {
  StepOptions options;
  options.chips = SimulatedChips::kOnePerProgram;
  return options;
}

StepOptions Options(SimulatedChips chips) {
  StepOptions options;
  options.chips = chips;
  options.network = collectives::NetworkMode::kFlows;
  options.max_transfers = 50'000'000;
  options.verify_translated_replays = true;  // Checked on every case.
  return options;
}

// One generated case; `ran` false when the drawn layout is not valid for the drawn model.
Outcome RunCase(uint32_t seed) {
  std::mt19937 rng(seed);
  std::mt19937 moe_rng(seed ^ 0x9e3779b9u);
  std::mt19937 sharding_rng(seed ^ 0x5bd1e995u);
  // Eager kernels and FSDP without resharding, from a stream of their own (the other draws stay).
  std::mt19937 framework_rng(seed ^ 0x27d4eb2fu);
  // The loss's implementation, from a stream of its own too.
  std::mt19937 loss_rng(seed ^ 0x165667b1u);
  std::mt19937 overlap_rng(seed ^ 0x3c6ef372u);
  // A framework's tensor-parallel backward, from a stream of its own too.
  std::mt19937 tp_backward_rng(seed ^ 0x6a09e667u);
  std::mt19937 slices_rng(seed ^ 0x7feb352du);
  Outcome out;
  std::string system_text = Systems()[rng() % Systems().size()];
  if (slices_rng() % 5 == 0 && !CampaignSystems()) {
    system_text = MultiSliceSystems()[slices_rng() % MultiSliceSystems().size()];
  }
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  EXPECT_TRUE(system.ok()) << system.status();
  if (!system.ok()) return out;
  const int chips = static_cast<int>(system->fabric.chip_count());
  sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(TinyModel(rng, moe_rng));
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return out;
  const bool training = rng() % 3 != 0;
  if (training) {
    // One in four splits the sequences over cp = 2 or 4 (drawn from moe_rng, like the models'
    // experts, so that the other draws stay those of the cases without).
    const int cp = moe_rng() % 4 == 0 && chips % 4 == 0 ? 2 << (moe_rng() % 2) : 1;
    const int tp = Factor(chips / cp, 8, rng);
    const int pp = Factor(chips / cp / tp, model->layers, rng);
    const int fsdp = Factor(chips / cp / tp / pp, chips, rng);
    const int dp = chips / cp / tp / pp / fsdp;
    std::vector<std::string> order;
    for (auto [name, size] :
         {std::pair<const char*, int>{"dp", dp}, {"fsdp", fsdp}, {"tp", tp}, {"pp", pp}}) {
      if (size > 1 && rng() % 2 == 0) order.push_back(name);
    }
    std::shuffle(order.begin(), order.end(), rng);
    std::string text = "dp=" + std::to_string(dp) + ",fsdp=" + std::to_string(fsdp) +
                       ",tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp);
    if (pp > 1) text += ",microbatches=" + std::to_string(pp * (1 + rng() % 2));
    if (cp > 1) text += ",cp=" + std::to_string(cp);
    // Models with experts need sp with tp (Megatron-LM); their ep takes a factor of dp or
    // fsdp (with cp, cp's chips first), and with etp=1 spans tp too.
    const bool sp = rng() % 3 == 0;
    if (tp > 1 && (model->moe() || sp)) text += ",sp=1";
    if (model->moe()) {
      // etp=1 spans tp: the rest of ep must still divide the experts.
      const int etp = tp > 1 && tp < model->experts && moe_rng() % 2 == 0 ? 1 : tp;
      const int most = static_cast<int>(model->experts) / (etp == 1 ? tp : 1);
      int data = Factor(moe_rng() % 2 == 0 ? dp : fsdp, most, moe_rng);
      if (cp > 1) {
        // With cp, ep takes cp's chips first (layout.h): part of them, or all of them and a
        // factor of dp or fsdp (from a stream of its own, so that the other draws stay).
        std::mt19937 ep_cp_rng(seed ^ 0x68e31da4u);
        data = ep_cp_rng() % 2 == 0 || most < cp ? Factor(cp, most, ep_cp_rng)
                                                 : cp * Factor(ep_cp_rng() % 2 == 0 ? dp : fsdp,
                                                               std::max(1, most / cp), ep_cp_rng);
      }
      const int ep = etp == 1 ? data * tp : data;
      if (ep > 1) text += ",ep=" + std::to_string(ep) + ",etp=" + std::to_string(etp);
    }
    if (!order.empty()) {
      text += ",order=";
      for (size_t i = 0; i < order.size(); ++i) text += (i ? "/" : "") + order[i];
    }
    sim::StatusOr<workloads::Layout> layout = workloads::ParseLayout(text);
    EXPECT_TRUE(layout.ok()) << text << ": " << layout.status();
    if (!layout.ok()) return out;
    const int64_t seq = 256;
    // One in four of the layouts without cp or experts gets half as many sequences as data chips,
    // which split each sequence over two of them (sequence sharding on the data axes; drawn from
    // its own stream, so that the other draws stay those of the cases without).
    const bool halve = cp == 1 && !model->moe() && (dp * fsdp) % 2 == 0 && sharding_rng() % 4 == 0;
    const workloads::BatchSpec batch{
        int64_t{dp} * fsdp * layout->microbatch_count() / (halve ? 2 : 1), seq};
    layout = workloads::ResolveLayout(*layout, batch);
    if (!layout.ok()) return out;
    if (!workloads::ValidateLayout(*layout, *model, chips, batch).ok()) return out;
    out.what = "train --system " + system_text + " --model " + model->name + " --layout " +
               layout->ToString() + " --batch-tokens " + std::to_string(batch.tokens()) +
               " --seq 256";
    workloads::OpOptions ops;
    // The frameworks' options whose collectives differ: the distributed optimizer's dp gathers
    // and reduce-scatters, and the chunked tp collectives of the tp overlap.
    ops.distributed_optimizer = dp > 1 && rng() % 2 == 0;
    ops.tp_comm_overlap = layout->sp && rng() % 2 == 0;
    if (ops.distributed_optimizer) out.what += " --distributed-optimizer";
    if (ops.tp_comm_overlap) out.what += " --tp-comm-overlap";
    // PyTorch eager's kernel chains (no collectives of their own) and FSDP without the backward's
    // gathers.
    if (framework_rng() % 4 == 0) {
      ops.kernels = workloads::KernelLibrary::kEager;
      out.what += " --kernels eager";
    }
    if (fsdp > 1 && framework_rng() % 3 == 0) {
      ops.fsdp_reshard_after_forward = false;
      out.what += " --no-reshard-after-forward";
    }
    // PyTorch's eager loss over fp32 logits (its own kernel chain on the last stage) or a
    // compiled one: no collectives of their own either.
    const int loss = static_cast<int>(loss_rng() % 4);
    if (loss >= 2) {
      ops.loss = loss == 2 ? workloads::LossKernel::kUpcast : workloads::LossKernel::kCompiled;
      out.what += " --loss " + std::string(workloads::LossKernelName(ops.loss));
    }
    // Half the pipelines with ep on 1F1B run their expert all-to-alls overlapped across
    // microbatches (its own stream: the other draws stay).
    workloads::OpOptions overlap;
    overlap.ep_comm_overlap = true;
    if (layout->pp > 1 && workloads::ValidateEpCommOverlap(overlap, *layout).ok() &&
        overlap_rng() % 2 == 0) {
      ops.ep_comm_overlap = true;
      out.what += " --ep-comm-overlap";
    }
    // Half the layouts with ep on chips with fp8 train in fp8 and dispatch in fp8.
    if (layout->ep > 1 && system->chip.fp8_flops_per_s > 0 && overlap_rng() % 2 == 0) {
      ops.fp8 = true;
      ops.fp8_dispatch = true;
      out.what += " --fp8 --fp8-dispatch";
    }
    // A framework's tensor-parallel backward (framework.h: Megatron's sp re-gathers, non-blocking
    // tp collectives, and each framework's order), its defaults left to the draws above (the
    // command names the flags that differ from them).
    constexpr workloads::Framework kFrameworks[] = {
        workloads::Framework::kBook, workloads::Framework::kMegatron,
        workloads::Framework::kTorchtitan, workloads::Framework::kMaxtext};
    ops.framework = kFrameworks[tp_backward_rng() % 4];
    if (!workloads::ValidateFrameworkLayout(ops, *layout).ok()) {
      ops.framework = workloads::Framework::kBook;
    }
    if (ops.framework != workloads::Framework::kBook) {
      const workloads::FrameworkDefaults defaults = workloads::DefaultsOf(ops.framework);
      out.what += " --framework " + std::string(workloads::FrameworkName(ops.framework));
      if (defaults.precision.name != ops.precision.name) {
        out.what += " --precision " + std::string(ops.precision.name);
      }
      if (defaults.kernels != ops.kernels) {
        out.what += " --kernels " + std::string(workloads::KernelLibraryName(ops.kernels));
      }
      if (defaults.loss != ops.loss) {
        out.what += " --loss " + std::string(workloads::LossKernelName(ops.loss));
      }
      if (ops.fp8 && defaults.fp8_library != ops.fp8_library) {
        out.what += " --fp8-library " + std::string(workloads::Fp8LibraryName(ops.fp8_library));
      }
    }
    auto run = [&](SimulatedChips mode) {
      return workloads::SimulateTraining(*system, *model, *layout, batch, ops, Options(mode));
    };
    sim::StatusOr<workloads::TrainingResult> q = run(SimulatedChips::kOrbits);
    sim::StatusOr<workloads::TrainingResult> r = run(SimulatedChips::kEveryChip);
    StepOptions unreplayed = Options(SimulatedChips::kOrbits);
    unreplayed.replays = false;
    sim::StatusOr<workloads::TrainingResult> u =
        workloads::SimulateTraining(*system, *model, *layout, batch, ops, unreplayed);
    // A campaign's systems (PODSIM_DIFFERENTIAL_SYSTEMS) may not place a drawn mesh (an axis of 3
    // on a100:768's nodes of 8): no case, when all three refuse it alike. CI's systems place all.
    if (CampaignSystems() && !q.ok() && q.status() == r.status() && q.status() == u.status() &&
        q.status().message().find("cannot be placed") != std::string::npos) {
      return out;
    }
    EXPECT_TRUE(q.ok() && r.ok() && u.ok())
        << out.what << ": " << q.status() << " / " << r.status() << " / " << u.status();
    if (!q.ok() || !r.ok() || !u.ok()) return out;
    out.quotient = q->step;
    out.reference = r->step;
    out.unreplayed = u->step;
    sim::StatusOr<workloads::TrainingResult> a =
        workloads::SimulateTraining(*system, *model, *layout, batch, ops, Approximation());
    if (a.ok()) out.approximate = a->step;
    sim::StatusOr<workloads::TrainingResult> d =
        workloads::SimulateTraining(*system, *model, *layout, batch, ops, StepOptions{});
    if (d.ok()) out.by_default = d->step;
  } else {
    workloads::InferenceLayout layout;
    layout.tp = Factor(chips, 8, rng);
    layout.dp = chips / layout.tp;
    workloads::InferenceOptions options;
    options.phase =
        rng() % 2 == 0 ? workloads::InferencePhase::kDecode : workloads::InferencePhase::kPrefill;
    options.batch = layout.dp * (1 + static_cast<int64_t>(rng() % 4));
    options.context = 128 << (rng() % 3);
    if (!workloads::ValidateInferenceLayout(layout, *model, chips, options).ok()) return out;
    out.what = "infer --system " + system_text + " --model " + model->name +
               " tp=" + std::to_string(layout.tp) + " dp=" + std::to_string(layout.dp) +
               (options.phase == workloads::InferencePhase::kDecode ? " decode" : " prefill");
    auto run = [&](SimulatedChips mode) {
      return workloads::SimulateInference(*system, *model, layout, options, Options(mode));
    };
    sim::StatusOr<workloads::InferenceResult> q = run(SimulatedChips::kOrbits);
    sim::StatusOr<workloads::InferenceResult> r = run(SimulatedChips::kEveryChip);
    StepOptions unreplayed = Options(SimulatedChips::kOrbits);
    unreplayed.replays = false;
    sim::StatusOr<workloads::InferenceResult> u =
        workloads::SimulateInference(*system, *model, layout, options, unreplayed);
    EXPECT_TRUE(q.ok() && r.ok() && u.ok())
        << out.what << ": " << q.status() << " / " << r.status() << " / " << u.status();
    if (!q.ok() || !r.ok() || !u.ok()) return out;
    out.quotient = q->step;
    out.reference = r->step;
    out.unreplayed = u->step;
    sim::StatusOr<workloads::InferenceResult> a =
        workloads::SimulateInference(*system, *model, layout, options, Approximation());
    if (a.ok()) out.approximate = a->step;
    sim::StatusOr<workloads::InferenceResult> d =
        workloads::SimulateInference(*system, *model, layout, options, StepOptions{});
    if (d.ok()) out.by_default = d->step;
  }
  out.ran = true;
  return out;
}

void ExpectSame(const Outcome& c) {
  const StepResult& q = c.quotient;
  const StepResult& r = c.reference;
  const double step = r.step_time.ToSeconds();
  const double tolerance = kTolerance * step + 2e-12;
  EXPECT_NEAR(q.step_time.ToSeconds(), step, tolerance) << c.what;
  EXPECT_NEAR(q.mean_compute_s, r.mean_compute_s, tolerance) << c.what;
  EXPECT_NEAR(q.mean_bubble_s, r.mean_bubble_s, tolerance) << c.what;
  EXPECT_NEAR(q.mean_idle_s, r.mean_idle_s, tolerance) << c.what;
  EXPECT_NEAR(q.mean_interference_s, r.mean_interference_s, tolerance) << c.what;
  for (const auto& [stream, s] : r.mean_exposed_s) {
    const double mine = q.mean_exposed_s.count(stream) ? q.mean_exposed_s.at(stream) : 0;
    EXPECT_NEAR(mine, s, tolerance) << c.what << " exposed " << stream;
  }
  EXPECT_LE(q.simulated_chips, r.simulated_chips) << c.what;
  // Replays change nothing, to the picosecond.
  const StepResult& u = c.unreplayed;
  EXPECT_EQ(q.step_time, u.step_time) << c.what;
  EXPECT_EQ(q.mean_compute_s, u.mean_compute_s) << c.what;
  EXPECT_EQ(q.mean_bubble_s, u.mean_bubble_s) << c.what;
  EXPECT_EQ(q.mean_idle_s, u.mean_idle_s) << c.what;
  EXPECT_EQ(q.mean_interference_s, u.mean_interference_s) << c.what;
  EXPECT_EQ(q.mean_exposed_s, u.mean_exposed_s) << c.what;
  EXPECT_EQ(u.replayed_collectives, 0u) << c.what;
}

// 20 shards of 16 seeds: 320 drawn cases, of which the valid ones run (at least 200).
constexpr uint32_t kShards = 20;
constexpr uint32_t kSeedsPerShard = 16;

// The approximation's error on CI's cases (seeds 1-320), with a little room: a guard against its
// getting worse there, where the range the output quotes is a campaign's, far wider.
constexpr double kCiApproximationErrorLow = -0.42;
constexpr double kCiApproximationErrorHigh = 0.06;

// The first seed: 1, or PODSIM_DIFFERENTIAL_FIRST_SEED for a longer campaign run by hand over
// other cases (e.g. 321, 641, ...: each run of the 20 shards draws the next 320).
uint32_t FirstSeed() {
  const char* text = std::getenv("PODSIM_DIFFERENTIAL_FIRST_SEED");
  return text == nullptr ? 1 : static_cast<uint32_t>(std::strtoul(text, nullptr, 10));
}

class Issue13DifferentialTest : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Issue13DifferentialTest, QuotientEqualsTheReference) {
  int ran = 0, reduced = 0, exact_by_default = 0, over_dcn = 0, ep_overlap = 0, fp8_dispatch = 0;
  int sp_backward = 0;  // Steps with sp under a framework's own tp backward (framework.h).
  int replayed = 0, discarded = 0;  // Steps with replays, and with discarded runs.
  std::string discarded_case;
  double fastest = 0, slowest = 0;  // The approximation's error, relative to the step.
  std::string fastest_case;
  for (uint32_t i = 0; i < kSeedsPerShard; ++i) {
    const Outcome outcome = RunCase(FirstSeed() + GetParam() * kSeedsPerShard + i);
    if (!outcome.ran) continue;
    ++ran;
    over_dcn += outcome.what.find(",slices=") != std::string::npos ? 1 : 0;
    ep_overlap += outcome.what.find("--ep-comm-overlap") != std::string::npos ? 1 : 0;
    fp8_dispatch += outcome.what.find("--fp8-dispatch") != std::string::npos ? 1 : 0;
    sp_backward += outcome.what.find("--framework") != std::string::npos &&
                           outcome.what.find("sp=1") != std::string::npos
                       ? 1
                       : 0;
    reduced += outcome.quotient.simulated_chips < outcome.reference.simulated_chips ? 1 : 0;
    replayed += outcome.quotient.replayed_collectives > 0 ? 1 : 0;
    discarded += outcome.quotient.discarded_runs > 0 ? 1 : 0;
    if (outcome.quotient.discarded_runs > 0 && discarded_case.empty()) {
      discarded_case = outcome.what;
    }
    ExpectSame(outcome);
    EXPECT_TRUE(outcome.quotient.exact && outcome.reference.exact) << outcome.what;
    if (outcome.approximate) {
      EXPECT_FALSE(outcome.approximate->exact);
      const double error =
          outcome.approximate->step_time.ToSeconds() / outcome.reference.step_time.ToSeconds() - 1;
      // What the accuracy line quotes (step_simulator.h) must hold on every case; on CI's
      // cases, a guard near their own range (-39.2% to +4.5% on 2026-12-05), which the quoted
      // campaign range is too wide to be: the approximation may improve, not get worse there.
      EXPECT_GE(error, workloads::kApproximationErrorLow) << outcome.what;
      EXPECT_LE(error, workloads::kApproximationErrorHigh) << outcome.what;
      if (FirstSeed() == 1 && !CampaignSystems()) {  // CI's cases: its seeds on its systems.
        EXPECT_GE(error, kCiApproximationErrorLow) << outcome.what;
        EXPECT_LE(error, kCiApproximationErrorHigh) << outcome.what;
      }
      if (error < fastest) fastest_case = outcome.what;
      fastest = std::min(fastest, error);
      slowest = std::max(slowest, error);
    }
    // The default is the quotient's answer wherever it says it is exact.
    if (outcome.by_default && outcome.by_default->exact) {
      ++exact_by_default;
      EXPECT_NEAR(outcome.by_default->step_time.ToSeconds(),
                  outcome.reference.step_time.ToSeconds(),
                  kTolerance * outcome.reference.step_time.ToSeconds() + 2e-12)
          << outcome.what;
    } else if (outcome.by_default) {
      // Elsewhere it is the approximation, and says why.
      EXPECT_FALSE(outcome.by_default->approximate_reason.empty()) << outcome.what;
      ASSERT_TRUE(outcome.approximate.has_value()) << outcome.what;
      EXPECT_EQ(outcome.by_default->step_time, outcome.approximate->step_time) << outcome.what;
    }
  }
  std::printf(
      "shard %u: %d cases (%d over DCN slices, %d with expert all-to-all overlap, %d with fp8 "
      "dispatch, %d with sp under a framework's tp backward), %d with fewer simulated chips, %d "
      "with replayed collectives (%d with discarded runs), %d exact by default; the "
      "approximation %+.1f%% to %+.1f%% (fastest: %s; first with a discarded run: %s)\n",
      GetParam(), ran, over_dcn, ep_overlap, fp8_dispatch, sp_backward, reduced, replayed,
      discarded, exact_by_default, 100 * fastest, 100 * slowest, fastest_case.c_str(),
      discarded_case.c_str());
  // Most drawn layouts are valid, and many steps have symmetry to use; a shard where few do
  // would not test much. A campaign's systems place fewer of the drawn meshes.
  EXPECT_GE(ran, CampaignSystems() ? 1 : 10);
  EXPECT_GE(reduced, 2);
}

INSTANTIATE_TEST_SUITE_P(Shards, Issue13DifferentialTest, ::testing::Range(0u, kShards));

// One fixed training step (the tests below) as the quotient, the reference and the quotient
// without replays, compared by ExpectSame; `ran` false after a failure. `quotient` gets the
// quotient's result. The step has dp x fsdp x microbatches sequences of 256 tokens.
Outcome RunFixedStep(const std::string& system_text, const std::string& model_text,
                     const std::string& layout_text, const workloads::OpOptions& ops,
                     const std::string& flags, workloads::TrainingResult* quotient) {
  Outcome out;
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  sim::StatusOr<workloads::ModelSpec> model = workloads::ParseModel(model_text);
  sim::StatusOr<workloads::Layout> layout = workloads::ParseLayout(layout_text);
  if (!system.ok() || !model.ok() || !layout.ok()) {
    ADD_FAILURE() << system.status() << " / " << model.status() << " / " << layout.status();
    return out;
  }
  const workloads::BatchSpec batch{int64_t{layout->dp} * layout->fsdp * layout->microbatch_count(),
                                   256};
  out.what = "train --system " + system_text + " --model " + model_text + " --layout " +
             layout_text + " --batch-tokens " + std::to_string(batch.tokens()) + " --seq 256" +
             flags;
  auto run = [&](const StepOptions& options) {
    return workloads::SimulateTraining(*system, *model, *layout, batch, ops, options);
  };
  sim::StatusOr<workloads::TrainingResult> q = run(Options(SimulatedChips::kOrbits));
  sim::StatusOr<workloads::TrainingResult> r = run(Options(SimulatedChips::kEveryChip));
  StepOptions unreplayed = Options(SimulatedChips::kOrbits);
  unreplayed.replays = false;
  sim::StatusOr<workloads::TrainingResult> u = run(unreplayed);
  if (!q.ok() || !r.ok() || !u.ok()) {
    ADD_FAILURE() << out.what << ": " << q.status() << " / " << r.status() << " / " << u.status();
    return out;
  }
  out.ran = true;
  out.quotient = q->step;
  out.reference = r->step;
  out.unreplayed = u->step;
  ExpectSame(out);
  *quotient = *std::move(q);
  return out;
}

// The generated cases rarely pipeline a model with experts (their models have one or two
// layers), so expert all-to-all overlap (OpOptions::ep_comm_overlap) gets cases of its own:
// pipelines of a four-layer MoE model whose ep spans nodes or stays inside one, with and without
// fp8 dispatch, on fat trees with and without oversubscription.
TEST(Issue13DifferentialTest, EpCommOverlapQuotientEqualsTheReference) {
  const std::string model =
      "custom:layers=4,d_model=256,ffn=1024,heads=8,kv_heads=4,head_dim=32,vocab=4096,"
      "experts=8,top_k=2,expert_ffn=256,shared_ffn=512,dense_layers=1";
  struct Case {
    const char* system;
    const char* layout;
    bool fp8_dispatch;
  };
  int reduced = 0;
  for (const Case& c : {Case{"h100:16", "dp=8,pp=2,ep=8,microbatches=4", false},
                        Case{"h100:16", "dp=4,pp=4,ep=4,microbatches=8", true},
                        Case{"h100:32,oversub=2", "dp=8,pp=4,ep=8,microbatches=8", false},
                        Case{"h100:32", "fsdp=16,pp=2,ep=8,microbatches=4", true},
                        Case{"h100:16", "dp=2,tp=2,sp=1,pp=4,ep=2,microbatches=6", false}}) {
    workloads::OpOptions ops;
    ops.ep_comm_overlap = true;
    ops.fp8 = ops.fp8_dispatch = c.fp8_dispatch;
    const std::string flags =
        std::string(" --ep-comm-overlap") + (c.fp8_dispatch ? " --fp8 --fp8-dispatch" : "");
    workloads::TrainingResult overlapped, plain;
    const Outcome out = RunFixedStep(c.system, model, c.layout, ops, flags, &overlapped);
    ASSERT_TRUE(out.ran);
    reduced += out.quotient.simulated_chips < out.reference.simulated_chips ? 1 : 0;
    // The overlap is exercised: the step has exposed ep below what it has without it.
    workloads::OpOptions without = ops;
    without.ep_comm_overlap = false;
    ASSERT_TRUE(RunFixedStep(c.system, model, c.layout, without, "", &plain).ran);
    EXPECT_LE(overlapped.breakdown["exposed_ep"], plain.breakdown["exposed_ep"]) << out.what;
  }
  EXPECT_GE(reduced, 1);  // At least one case where the quotient drops chips.
}

// Two-level fat trees of several whole scalable units (h100:512, a100:768): the node rotates
// within its SU, or within its block of the SU's nodes (collectives/fabric_symmetry.h, node
// digits), which leaves pipelines whose stages are SUs, or blocks of one, few orbits where
// whole-SU shifts (which move a stage onto another) left every node apart. The generated cases draw
// single-SU fabrics only; the reference here simulates every one of the 512 or 768 chips.
TEST(Issue13DifferentialTest, ScalableUnitRotationsQuotientEqualsTheReference) {
  const std::string model =
      "custom:layers=24,d_model=256,ffn=1024,heads=8,kv_heads=4,head_dim=32,vocab=4096";
  struct Case {
    const char* system;
    const char* layout;
    uint64_t most_orbits;  // What the quotient may simulate at most.
  };
  for (const Case& c : {Case{"h100:512", "tp=8,pp=2,dp=32,microbatches=4", 2},
                        Case{"h100:512", "tp=4,pp=2,fsdp=64,microbatches=2", 4},
                        Case{"a100:768,oversub=2", "tp=8,pp=3,dp=32,microbatches=3", 3},
                        // Stages of half and a quarter of an SU: the node rotates within its
                        // block of 16 or 8 (node digits).
                        Case{"h100:512", "tp=8,pp=4,dp=16,microbatches=4", 4},
                        Case{"h100:512", "tp=8,pp=8,dp=8,microbatches=8", 8}}) {
    workloads::TrainingResult quotient;
    const Outcome out = RunFixedStep(c.system, model, c.layout, {}, "", &quotient);
    ASSERT_TRUE(out.ran);
    EXPECT_LE(out.quotient.simulated_chips, c.most_orbits) << out.what;
    // The default takes the quotient: exact, with its answer.
    const topology::System system = topology::ParseSystem(c.system).value();
    const workloads::Layout layout = workloads::ParseLayout(c.layout).value();
    sim::StatusOr<workloads::TrainingResult> by_default = workloads::SimulateTraining(
        system, workloads::ParseModel(model).value(), layout,
        {int64_t{layout.dp} * layout.fsdp * layout.microbatch_count(), 256}, {}, StepOptions{});
    ASSERT_TRUE(by_default.ok()) << by_default.status();
    EXPECT_TRUE(by_default->step.exact) << out.what << ": " << by_default->step.approximate_reason;
    EXPECT_NEAR(by_default->step.step_time.ToSeconds(), out.reference.step_time.ToSeconds(),
                kTolerance * out.reference.step_time.ToSeconds())
        << out.what;
  }
}

// The work bound counts a replayed collective as the one event it is (collective_network.h): a
// step whose launches would run more transfers than the bound fits it with replays, and gives the
// same answer as with a bound large enough for every transfer. Traced, each link usage change a
// replay echoes counts too.
TEST(Issue13DifferentialTest, WorkBoundCountsReplaysAsTheWorkTheyAre) {
  const topology::System system = topology::ParseSystem("h100:512").value();
  const workloads::ModelSpec model =
      workloads::ParseModel(
          "custom:layers=24,d_model=256,ffn=1024,heads=8,kv_heads=4,head_dim=32,vocab=4096")
          .value();
  const workloads::Layout layout = workloads::ParseLayout("tp=8,pp=8,dp=8,microbatches=8").value();
  const workloads::BatchSpec batch{64, 256};
  constexpr uint64_t kBound = 2'500;  // Between what runs with replays and without (2-4 k).
  auto run = [&](bool replays, uint64_t bound, sim::FlowObserver* observer) {
    StepOptions options = Options(SimulatedChips::kOrbits);
    options.replays = replays;
    options.max_transfers = bound;
    options.flow_observer = observer;
    return workloads::SimulateTraining(system, model, layout, batch, {}, options);
  };
  sim::StatusOr<workloads::TrainingResult> replayed = run(true, kBound, nullptr);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_GT(replayed->step.replayed_collectives, 500u);
  sim::StatusOr<workloads::TrainingResult> unreplayed = run(false, kBound, nullptr);
  ASSERT_FALSE(unreplayed.ok());
  EXPECT_EQ(unreplayed.status().code(), sim::Status::Code::kOutOfRange) << unreplayed.status();
  sim::StatusOr<workloads::TrainingResult> unbounded = run(false, 50'000'000, nullptr);
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_EQ(replayed->step.step_time, unbounded->step.step_time);
  // Observed, the replays' echoes of their links' usage count: past the bound, a clear error.
  sim::FlowObserver link_usage;
  sim::StatusOr<workloads::TrainingResult> traced = run(true, kBound, &link_usage);
  ASSERT_FALSE(traced.ok());
  EXPECT_EQ(traced.status().code(), sim::Status::Code::kOutOfRange);
  EXPECT_NE(traced.status().message().find("tracing the links of a replayed"), std::string::npos)
      << traced.status();
  traced = run(true, 50'000'000, &link_usage);
  ASSERT_TRUE(traced.ok()) << traced.status();
  EXPECT_EQ(traced->step.step_time, replayed->step.step_time);
}

}  // namespace
}  // namespace podsim
