#include "workloads/loss_kernel.h"

#include <algorithm>
#include <span>

#include "workloads/named_choice.h"

namespace podsim::workloads {

namespace {

constexpr double kFp32Bytes = 4;

constexpr NamedChoice<LossKernel> kLossChoices[] = {
    {LossKernel::kVocabParallel, "vocab-parallel"},
    {LossKernel::kVocabParallelEager, "vocab-parallel-eager"},
    {LossKernel::kTransformerEngine, "vocab-parallel-te"},
    {LossKernel::kUpcast, "upcast"},
    {LossKernel::kCompiled, "compiled"}};
constexpr std::span<const NamedChoice<LossKernel>> kLosses = kLossChoices;

}  // namespace

std::string_view LossKernelName(LossKernel loss) { return ChoiceName(kLosses, loss); }

std::vector<std::string> LossKernelNames() { return ChoiceNames(kLosses); }

std::string_view LossKernelDescription(LossKernel loss) {
  switch (loss) {
    case LossKernel::kVocabParallel:
      return "vocab-parallel cross-entropy, one fused kernel each way";
    case LossKernel::kVocabParallelEager:
      return "Megatron's vocab-parallel cross-entropy unfused (PyTorch's eager kernels)";
    case LossKernel::kTransformerEngine:
      return "Transformer Engine's fused cross-entropy, the gradient written over the logits";
    case LossKernel::kUpcast:
      return "PyTorch's eager cross-entropy over fp32 logits";
    case LossKernel::kCompiled:
      return "cross-entropy under torch.compile";
  }
  return "";
}

sim::StatusOr<LossKernel> LossKernelNamed(std::string_view name) {
  return ChoiceNamed(kLosses, name, "loss");
}

double LossSavedBytesPerLogit(LossKernel loss, double activation_bytes) {
  return loss == LossKernel::kCompiled || loss == LossKernel::kTransformerEngine ? activation_bytes
                                                                                 : kFp32Bytes;
}

double LossTransientBytesPerLogit(LossKernel loss, double activation_bytes, int vocab_shards) {
  if (loss == LossKernel::kTransformerEngine) return 0;  // In place over the logits.
  if (loss != LossKernel::kUpcast) return activation_bytes;
  // The forward: the fp32 copy while the log-softmax is written. The backward: the NLL's
  // gradient and the log-softmax's input gradient, or under loss_parallel (vocab_shards > 1) its
  // fused backward's zeros_like(x), exp(x) and their sum at once. Both with the e-byte logits'
  // block (loss_kernel.h).
  const double backward = (vocab_shards > 1 ? 3 : 2) * kFp32Bytes;
  return std::max(kFp32Bytes, backward) + activation_bytes;
}

}  // namespace podsim::workloads
