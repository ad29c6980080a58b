#include "workloads/fp8_training.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::workloads {

namespace {

// FLOPs per element of a cast: compare for the maximum, scale, convert (vector units; not timed,
// compute_model.h).
constexpr double kCastFlops = 3;
// MX formats' block: one E8M0 scale of a byte per 32 elements (OCP Microscaling Formats (MX)
// v1.0, as Transformer Engine's MXFP8 kernels read and write it, common/util/cast_kernels.cuh).
constexpr double kMxBlockElements = 32;

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

std::string_view Fp8LibraryName(Fp8Library library) {
  return library == Fp8Library::kTransformerEngine ? "te" : "torchao";
}

std::vector<std::string> Fp8LibraryNames() { return {"torchao", "te"}; }

std::string_view Fp8RecipeName(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::kMxfp8 ? "mxfp8" : "tensorwise";
}

std::vector<std::string> Fp8RecipeNames() { return {"tensorwise", "mxfp8"}; }

sim::StatusOr<Fp8Recipe> Fp8RecipeNamed(std::string_view name) {
  if (name == "tensorwise") return Fp8Recipe::kTensorwise;
  if (name == "mxfp8") return Fp8Recipe::kMxfp8;
  std::string message = "unknown fp8 recipe '";
  message.append(name);
  message += "'; expected tensorwise or mxfp8";
  return sim::Status::InvalidArgument(message);
}

double Fp8ElementBytes(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::kMxfp8 ? 1 + 1 / kMxBlockElements : 1;
}

sim::StatusOr<Fp8Library> Fp8LibraryNamed(std::string_view name) {
  if (name == "torchao") return Fp8Library::kTorchao;
  if (name == "te") return Fp8Library::kTransformerEngine;
  std::string message = "unknown fp8 library '";
  message.append(name);
  message += "'; expected torchao or te";
  return sim::Status::InvalidArgument(message);
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
  std::set<std::string> weights_cast;
  // Transformer Engine: the cast of each GEMM's output gradient, by base name, which the weight
  // gradient reads.
  std::map<std::string, int> gradient_casts;
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
    };
    const bool forward = op.phase == Phase::kForward || op.phase == Phase::kRecompute;
    if (te && HasPart(op.name, ".dw")) {
      // Reads the saved input and the output gradient's cast: no cast of its own.
      const auto cast = gradient_casts.find(base);
      if (cast != gradient_casts.end()) casts.push_back(cast->second);
    } else {
      add_cast(Cast(op, op.name + ".fp8_cast", rows * k, e, element_bytes, copies, passes));
      if (te && HasPart(op.name, ".dx")) gradient_casts[base] = casts.back();
    }
    const std::string weight = base + (op.phase == Phase::kRecompute ? ".re" : "");
    if (rewrite.cast_weights && forward && weights_cast.insert(weight).second) {
      add_cast(Cast(op, base + ".fp8_cast.weight", groups * k * n / rewrite.weight_shards, e,
                    element_bytes, copies, passes));
    }
    if (rewrite.transpose_weights && HasPart(op.name, ".dx") &&
        weights_cast.insert(base + ".transposed").second) {
      // Reads the gathered fp8 weights once and writes their transpose.
      Op transpose = Cast(op, base + ".fp8_transpose.weight", groups * k * n, element_bytes,
                          element_bytes, 1, 1);
      transpose.flops = 0;
      add_cast(std::move(transpose));
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
