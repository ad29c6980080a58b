#include "workloads/fp8_training.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::workloads {

namespace {

// Bytes per element of an fp8 operand.
constexpr double kFp8Bytes = 1;
// FLOPs per element of a cast: compare for the maximum, scale, convert (vector units; not timed,
// compute_model.h).
constexpr double kCastFlops = 3;

// The name of the forward GEMM an op list entry derives from: without ".recompute", ".dx",
// ".dw" and ".chunkN" suffixes.
std::string BaseName(std::string name) {
  for (std::string_view suffix : {".recompute", ".chunk", ".dx", ".dw"}) {
    const size_t at = name.rfind(suffix);
    if (at != std::string::npos && at > 0) name.erase(at);
  }
  return name;
}

Op Cast(const Op& gemm, std::string name, double elements, double e) {
  Op cast;
  cast.name = std::move(name);
  cast.kind = OpKind::kElementwise;
  cast.phase = gemm.phase;
  cast.flops = kCastFlops * elements;
  cast.hbm_read_bytes = 2 * e * elements;  // The amax pass and the cast pass.
  cast.hbm_write_bytes = kFp8Bytes * elements;
  cast.output_bytes = kFp8Bytes * elements;
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

sim::StatusOr<Fp8Library> Fp8LibraryNamed(std::string_view name) {
  if (name == "torchao") return Fp8Library::kTorchao;
  if (name == "te") return Fp8Library::kTransformerEngine;
  std::string message = "unknown fp8 library '";
  message.append(name);
  message += "'; expected torchao or te";
  return sim::Status::InvalidArgument(message);
}

OpList Float8Linears(const OpList& ops, double activation_bytes, int weight_shards,
                     bool cast_weights) {
  const double e = activation_bytes;
  OpList out;
  out.reserve(ops.size() * 2);
  std::vector<int> moved(ops.size(), -1);
  std::set<std::string> weights_cast;
  for (size_t i = 0; i < ops.size(); ++i) {
    Op op = ops[i];
    for (int& dep : op.deps) dep = moved[dep];
    if (!IsFp8LinearGemm(op)) {
      out.push_back(std::move(op));
      moved[i] = static_cast<int>(out.size()) - 1;
      continue;
    }
    const double groups = op.shape.batch > 1 ? static_cast<double>(op.shape.batch) : 1;
    const double k = static_cast<double>(op.shape.k), n = static_cast<double>(op.shape.n);
    const double rows = op.flops / (2 * k * n);  // Every group's rows (grouped GEMMs).
    std::vector<int> casts;
    auto add_cast = [&](Op cast) {
      cast.deps = op.deps;
      out.push_back(std::move(cast));
      casts.push_back(static_cast<int>(out.size()) - 1);
    };
    add_cast(Cast(op, op.name + ".fp8_cast", rows * k, e));
    const bool forward = op.phase == Phase::kForward || op.phase == Phase::kRecompute;
    const std::string weight = BaseName(op.name) + (op.phase == Phase::kRecompute ? ".re" : "");
    if (cast_weights && forward && weights_cast.insert(weight).second) {
      add_cast(Cast(op, BaseName(op.name) + ".fp8_cast.weight", groups * k * n / weight_shards, e));
    }
    op.fp8 = true;
    op.hbm_read_bytes = kFp8Bytes * (rows * k + groups * k * n);
    op.deps.insert(op.deps.end(), casts.begin(), casts.end());
    out.push_back(std::move(op));
    moved[i] = static_cast<int>(out.size()) - 1;
  }
  return out;
}

}  // namespace podsim::workloads
