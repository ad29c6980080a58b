#include "workloads/eager_kernels.h"

#include <span>
#include <string>
#include <utility>

#include "sim/check.h"
#include "workloads/named_choice.h"

namespace podsim::workloads {

namespace {

// Bytes of an fp32 element (the upcasts of RMSNorm and the loss).
constexpr double kFp32Bytes = 4;

// One eager kernel over the op's elements: elements read and written per op element, in the
// working precision (e) and in fp32 (f).
struct Kernel {
  const char* name;
  double read_e, read_f, write_e, write_f;
};

// LlamaRMSNorm.forward: hidden.to(float32); .pow(2); .mean(-1); + eps; rsqrt (both per row);
// hidden * rsqrt; .to(dtype); weight * hidden.
constexpr Kernel kRmsNormForward[] = {{"to_fp32", 1, 0, 0, 1},  {"pow", 0, 1, 0, 1},
                                      {"mean", 0, 1, 0, 0},     {"eps", 0, 0, 0, 0},
                                      {"rsqrt", 0, 0, 0, 0},    {"scale", 0, 1, 0, 1},
                                      {"to_dtype", 0, 1, 1, 0}, {"weight", 1, 0, 1, 0}};
// Its autograd backward, last op first: the weight's product (input gradient; weight gradient as
// a product and a sum over tokens), the cast, the scale's two gradients (the one toward rsqrt a
// product and a per-row sum), rsqrt's backward (-0.5 grad result^3: three per-row kernels), the
// mean's broadcast, pow's backward (grad * 2 * x.pow(1): a copy, a doubling and the product), the
// sum of the two paths, the cast back: 16 kernels, 92 bytes an element in bf16.
constexpr Kernel kRmsNormBackward[] = {
    {"weight.dx", 1, 0, 1, 0},      {"weight.dw", 2, 0, 1, 0},    {"weight.dw.sum", 1, 0, 0, 0},
    {"to_dtype.dx", 1, 0, 0, 1},    {"scale.dx", 0, 1, 0, 1},     {"scale.dr", 0, 2, 0, 1},
    {"scale.dr.sum", 0, 1, 0, 0},   {"rsqrt.dx.pow", 0, 0, 0, 0}, {"rsqrt.dx.mul", 0, 0, 0, 0},
    {"rsqrt.dx.scale", 0, 0, 0, 0}, {"mean.dx", 0, 0, 0, 1},      {"pow.dx.copy", 0, 1, 0, 1},
    {"pow.dx.double", 0, 1, 0, 1},  {"pow.dx", 0, 2, 0, 1},       {"accumulate", 0, 2, 0, 1},
    {"to_fp32.dx", 0, 1, 1, 0}};
// apply_rotary_pos_emb over q and k: q * cos; rotate_half's -x2 and cat((-x2, x1)); * sin; sum.
// q and k each run the chain: the bytes are exact over both, one launch a kernel is counted for
// the two (5 of the 10 forward launches).
constexpr Kernel kRotaryForward[] = {{"cos", 1, 0, 1, 0},
                                     {"half.neg", 0.5, 0, 0.5, 0},
                                     {"half.cat", 1, 0, 1, 0},
                                     {"sin", 1, 0, 1, 0},
                                     {"add", 2, 0, 1, 0}};
// Backward: * sin, the negation, the two halves' slice gradients (each fills a zero tensor and
// copies its half: 4 kernels, counted as one), * cos, and the sums of the three paths (2 kernels,
// counted as one).
constexpr Kernel kRotaryBackward[] = {{"sin.dx", 1, 0, 1, 0},
                                      {"half.neg.dx", 0.5, 0, 0.5, 0},
                                      {"half.slice.dx", 1, 0, 3, 0},
                                      {"cos.dx", 1, 0, 1, 0},
                                      {"accumulate", 4, 0, 2, 0}};
// LlamaMLP: act_fn(gate) * up, over the gate's elements.
constexpr Kernel kSwigluForward[] = {{"silu", 1, 0, 1, 0}, {"mul", 2, 0, 1, 0}};
constexpr Kernel kSwigluBackward[] = {
    {"mul.dx", 2, 0, 1, 0}, {"mul.dup", 2, 0, 1, 0}, {"silu.dx", 2, 0, 1, 0}};
// ForCausalLMLoss: logits.float(), then cross_entropy's log-softmax and NLL (the NLL reads one
// logit a token). Backward: the NLL's gradient fills a zero tensor and scatters into it, then the
// log-softmax gradient and the cast back. One pass a row is counted per kernel: a lower bound where
// a vocabulary row is too wide for on-chip memory (PyTorch then reads it two or three times).
constexpr Kernel kLossForward[] = {
    {"to_fp32", 1, 0, 0, 1}, {"log_softmax", 0, 1, 0, 1}, {"nll", 0, 0, 0, 0}};
constexpr Kernel kLossBackward[] = {{"nll.dx.zero", 0, 0, 0, 1},
                                    {"nll.dx", 0, 0, 0, 0},
                                    {"log_softmax.dx", 0, 2, 0, 1},
                                    {"to_fp32.dx", 0, 1, 1, 0}};

// Megatron-LM's vocab_parallel_cross_entropy unfused (megatron/core/tensor_parallel/
// cross_entropy.py, VocabParallelCrossEntropy; in 2021 mpu/cross_entropy.py with its caller's
// output.float(), the same kernels): the logits cast to fp32, the row max, the max subtracted in
// place, exp in place, the row sum, the division in place (the softmax it keeps); the target logit
// and the loss are one value a token. Backward: the target's entries (one a token), the product
// with the loss's gradient in place, and the cast back to the logits' dtype.
constexpr Kernel kVocabParallelForward[] = {{"to_fp32", 1, 0, 0, 1}, {"max", 0, 1, 0, 0},
                                            {"sub_max", 0, 1, 0, 1}, {"exp", 0, 1, 0, 1},
                                            {"sum", 0, 1, 0, 0},     {"div", 0, 1, 0, 1}};
constexpr Kernel kVocabParallelBackward[] = {
    {"target.dx", 0, 0, 0, 0}, {"mul", 0, 1, 0, 1}, {"to_fp32.dx", 0, 1, 1, 0}};

// The chain of `op` under `loss` (kUpcast's or kVocabParallelEager's), or an empty span for any
// other op or loss.
std::span<const Kernel> LossChainOf(const Op& op, LossKernel loss) {
  if (op.kind != OpKind::kLoss) return {};
  const bool backward = op.name.ends_with(".dx");
  switch (loss) {
    case LossKernel::kUpcast:
      return backward ? std::span<const Kernel>(kLossBackward) : kLossForward;
    case LossKernel::kVocabParallelEager:
      return backward ? std::span<const Kernel>(kVocabParallelBackward) : kVocabParallelForward;
    case LossKernel::kVocabParallel:
    case LossKernel::kTransformerEngine:
    case LossKernel::kCompiled:
      break;
  }
  return {};
}

// The eager chain of `op` (the loss aside: LossChainOf), or an empty span when it runs as one
// kernel either way.
std::span<const Kernel> ChainOf(const Op& op, const ModelSpec& model) {
  std::string_view name = op.name;
  if (name.ends_with(".recompute")) name.remove_suffix(std::string_view(".recompute").size());
  const bool backward = name.ends_with(".dx");
  if (backward) name.remove_suffix(std::string_view(".dx").size());
  if (op.kind == OpKind::kNorm && model.norm == NormKind::kRms) {
    return backward ? std::span<const Kernel>(kRmsNormBackward) : kRmsNormForward;
  }
  if (op.kind != OpKind::kElementwise) return {};
  if (name == "attn.rotary") {
    return backward ? std::span<const Kernel>(kRotaryBackward) : kRotaryForward;
  }
  if (name.ends_with(".act") && model.gated_mlp) {
    return backward ? std::span<const Kernel>(kSwigluBackward) : kSwigluForward;
  }
  return {};
}

constexpr NamedChoice<KernelLibrary> kLibraryChoices[] = {{KernelLibrary::kFused, "fused"},
                                                          {KernelLibrary::kEager, "eager"}};
constexpr std::span<const NamedChoice<KernelLibrary>> kLibraries = kLibraryChoices;

}  // namespace

std::string_view KernelLibraryName(KernelLibrary library) {
  return ChoiceName(kLibraries, library);
}

std::vector<std::string> KernelLibraryNames() { return ChoiceNames(kLibraries); }

sim::StatusOr<KernelLibrary> KernelLibraryNamed(std::string_view name) {
  return ChoiceNamed(kLibraries, name, "kernels");
}

namespace {

// `ops` with each op whose `chain_of` is not empty replaced by that chain (EagerKernels).
template <typename ChainOfOp>
OpList Rewrite(const OpList& ops, double activation_bytes, ChainOfOp chain_of) {
  const double e = activation_bytes;
  OpList out;
  out.reserve(ops.size() * 3);
  std::vector<int> moved(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    Op op = ops[i];
    for (int& dep : op.deps) {
      PODSIM_CHECK(dep >= 0 && static_cast<size_t>(dep) < i) << op.name << ": a dep not earlier";
      dep = moved[dep];
    }
    const std::span<const Kernel> chain = chain_of(op);
    if (chain.empty() || op.elements <= 0) {
      out.push_back(std::move(op));
      moved[i] = static_cast<int>(out.size()) - 1;
      continue;
    }
    const double n = op.elements;
    for (size_t k = 0; k < chain.size(); ++k) {
      Op kernel;
      kernel.name = op.name + "." + chain[k].name;
      kernel.kind = op.kind;
      kernel.phase = op.phase;
      kernel.flops = op.flops / static_cast<double>(chain.size());
      kernel.hbm_read_bytes = n * (chain[k].read_e * e + chain[k].read_f * kFp32Bytes);
      kernel.hbm_write_bytes = n * (chain[k].write_e * e + chain[k].write_f * kFp32Bytes);
      kernel.elements = n;
      kernel.deps = k == 0 ? op.deps : std::vector<int>{static_cast<int>(out.size()) - 1};
      if (k + 1 == chain.size()) {
        kernel.saved_bytes = op.saved_bytes;
        kernel.quadratic_saved_bytes = op.quadratic_saved_bytes;
        kernel.output_bytes = op.output_bytes;
      }
      out.push_back(std::move(kernel));
    }
    moved[i] = static_cast<int>(out.size()) - 1;
  }
  return out;
}

}  // namespace

OpList EagerKernels(const OpList& ops, const ModelSpec& model, double activation_bytes) {
  return Rewrite(ops, activation_bytes, [&](const Op& op) { return ChainOf(op, model); });
}

OpList LossKernels(const OpList& ops, double activation_bytes, LossKernel loss) {
  return Rewrite(ops, activation_bytes, [loss](const Op& op) { return LossChainOf(op, loss); });
}

}  // namespace podsim::workloads
