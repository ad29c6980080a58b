#include "workloads/fp8_training.h"

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "workloads/moe_ops.h"
#include "workloads/named_choice.h"

namespace podsim::workloads {

namespace {

// FLOPs per element of a cast: compare for the maximum, scale, convert (vector units; not timed,
// compute_model.h).
constexpr double kCastFlops = 3;
// MX formats' block: one E8M0 scale of a byte per 32 elements (OCP Microscaling Formats (MX)
// v1.0, as Transformer Engine's MXFP8 kernels read and write it, common/util/cast_kernels.cuh).
constexpr double kMxBlockElements = 32;

constexpr NamedChoice<Fp8Library> kLibraryChoices[] = {{Fp8Library::kTorchao, "torchao"},
                                                       {Fp8Library::kTransformerEngine, "te"}};
constexpr std::span<const NamedChoice<Fp8Library>> kLibraries = kLibraryChoices;
constexpr NamedChoice<Fp8Recipe> kRecipeChoices[] = {{Fp8Recipe::kTensorwise, "tensorwise"},
                                                     {Fp8Recipe::kMxfp8, "mxfp8"}};
constexpr std::span<const NamedChoice<Fp8Recipe>> kRecipes = kRecipeChoices;

// The name of the forward GEMM an op list entry derives from: without ".recompute", ".dx",
// ".dw" and ".chunkN" suffixes.
std::string BaseName(std::string name) {
  for (std::string_view suffix : {".recompute", ".chunk", ".dx", ".dw"}) {
    const size_t at = name.rfind(suffix);
    if (at != std::string::npos && at > 0) name.erase(at);
  }
  return name;
}

// Whether the name carries the part `part` (".dx", ".dw") whole.
bool HasPart(const std::string& name, std::string_view part) {
  const size_t at = name.find(part);
  return at != std::string::npos &&
         (at + part.size() == name.size() || name[at + part.size()] == '.');
}

// A cast of `elements` from the working precision (`e` bytes), in `passes` reads (dynamic
// tensorwise scaling reads twice: the amax, then the cast; MXFP8's block scales come from the
// block the kernel holds), writing `copies` quantized copies of `element_bytes` an element.
Op Cast(const Op& gemm, std::string name, double elements, double e, double element_bytes,
        int copies, int passes) {
  Op cast;
  cast.name = std::move(name);
  cast.kind = OpKind::kElementwise;
  cast.phase = gemm.phase;
  cast.flops = kCastFlops * elements;
  cast.hbm_read_bytes = passes * e * elements;
  cast.hbm_write_bytes = copies * element_bytes * elements;
  cast.output_bytes = cast.hbm_write_bytes;
  return cast;
}

}  // namespace

// Materialized attention's batched products (attn.core.*, layer_ops.h) stay bf16 as the flash
// kernel does.
bool IsFp8LinearGemm(const Op& op) {
  const std::string base = BaseName(op.name);
  return op.kind == OpKind::kMatmul && !base.starts_with("moe.router") &&
         !base.starts_with("attn.core");
}

std::string_view Fp8LibraryName(Fp8Library library) { return ChoiceName(kLibraries, library); }

std::vector<std::string> Fp8LibraryNames() { return ChoiceNames(kLibraries); }

sim::StatusOr<Fp8Library> Fp8LibraryNamed(std::string_view name) {
  return ChoiceNamed(kLibraries, name, "fp8 library");
}

std::string_view Fp8RecipeName(Fp8Recipe recipe) { return ChoiceName(kRecipes, recipe); }

std::vector<std::string> Fp8RecipeNames() { return ChoiceNames(kRecipes); }

sim::StatusOr<Fp8Recipe> Fp8RecipeNamed(std::string_view name) {
  return ChoiceNamed(kRecipes, name, "fp8 recipe");
}

double Fp8ElementBytes(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::kMxfp8 ? 1 + 1 / kMxBlockElements : 1;
}

OpList Float8Linears(const OpList& ops, double activation_bytes, const Fp8Rewrite& rewrite) {
  const double e = activation_bytes;
  const double element_bytes = Fp8ElementBytes(rewrite.recipe);
  const int passes = rewrite.recipe == Fp8Recipe::kMxfp8 ? 1 : 2;
  const bool te = rewrite.library == Fp8Library::kTransformerEngine;
  const int copies = te && rewrite.columnwise_copies ? 2 : 1;
  OpList out;
  out.reserve(ops.size() * 2);
  std::vector<int> moved(ops.size(), -1);
  // The ops cast for a weight ("<base>", "<base>.re" in a recomputed forward, "<base>.transposed"),
  // which every chunk of its GEMMs waits for.
  std::map<std::string, int> weight_casts;
  // Transformer Engine: the casts of each GEMM's output gradient (one a chunk), by base name,
  // which its weight gradient reads.
  std::map<std::string, std::vector<int>> gradient_casts;
  // Transformer Engine: a forward's input casts by what they cast (the GEMM's deps and elements):
  // GEMMs on one input share it, as Megatron-Core's fused fc1 runs the gate and up projections as
  // one GEMM on one cast.
  std::map<std::pair<std::vector<int>, double>, int> input_casts;
  for (size_t i = 0; i < ops.size(); ++i) {
    Op op = ops[i];
    for (int& dep : op.deps) dep = moved[dep];
    if (!IsFp8LinearGemm(op)) {
      out.push_back(std::move(op));
      moved[i] = static_cast<int>(out.size()) - 1;
      continue;
    }
    const std::string base = BaseName(op.name);
    const double groups = op.shape.batch > 1 ? static_cast<double>(op.shape.batch) : 1;
    const double k = static_cast<double>(op.shape.k), n = static_cast<double>(op.shape.n);
    const double rows = op.flops / (2 * k * n);  // Every group's rows (grouped GEMMs).
    std::vector<int> casts;
    auto add_cast = [&](Op cast) {
      cast.deps = op.deps;
      out.push_back(std::move(cast));
      casts.push_back(static_cast<int>(out.size()) - 1);
      return casts.back();
    };
    const bool forward = op.phase == Phase::kForward || op.phase == Phase::kRecompute;
    if (te && HasPart(op.name, ".dw")) {
      // Reads the saved input and the output gradient's casts: no cast of its own.
      const auto cast = gradient_casts.find(base);
      if (cast != gradient_casts.end()) {
        casts.insert(casts.end(), cast->second.begin(), cast->second.end());
      }
    } else if (te && forward) {
      std::vector<int> input = op.deps;
      std::sort(input.begin(), input.end());
      const auto [shared, added] = input_casts.try_emplace({std::move(input), rows * k}, -1);
      if (added) {
        // Under current scaling a norm before the GEMM computes the amax as it writes its
        // output, so the cast reads that output once.
        const bool after_norm = std::any_of(op.deps.begin(), op.deps.end(), [&](int dep) {
          return dep >= 0 && out[dep].kind == OpKind::kNorm;
        });
        shared->second = add_cast(Cast(op, op.name + ".fp8_cast", rows * k, e, element_bytes,
                                       copies, after_norm ? 1 : passes));
      } else {
        casts.push_back(shared->second);
      }
    } else {
      add_cast(Cast(op, op.name + ".fp8_cast", rows * k, e, element_bytes, copies, passes));
      if (te) gradient_casts[base].push_back(casts.back());
    }
    auto cast_once = [&](const std::string& key, auto make) {
      const auto [cast, added] = weight_casts.try_emplace(key, -1);
      if (added) {
        cast->second = add_cast(make());
      } else {
        casts.push_back(cast->second);
      }
    };
    if (rewrite.cast_weights && forward) {
      cast_once(base + (op.phase == Phase::kRecompute ? ".re" : ""), [&] {
        const int shards = layer_build::IsRoutedExpertOp(op) ? rewrite.expert_weight_shards
                                                             : rewrite.weight_shards;
        return Cast(op, base + ".fp8_cast.weight", groups * k * n / shards, e, element_bytes,
                    copies, passes);
      });
    }
    if (rewrite.transpose_weights && HasPart(op.name, ".dx")) {
      cast_once(base + ".transposed", [&] {
        // Reads the gathered fp8 weights once and writes their transpose.
        Op transpose = Cast(op, base + ".fp8_transpose.weight", groups * k * n, element_bytes,
                            element_bytes, 1, 1);
        transpose.flops = 0;
        return transpose;
      });
    }
    op.fp8 = true;
    op.hbm_read_bytes = element_bytes * (rows * k + groups * k * n);
    op.deps.insert(op.deps.end(), casts.begin(), casts.end());
    out.push_back(std::move(op));
    moved[i] = static_cast<int>(out.size()) - 1;
  }
  return out;
}

}  // namespace podsim::workloads
