#include "workloads/loss_kernel.h"

#include <algorithm>
#include <span>

#include "workloads/named_choice.h"

namespace podsim::workloads {

namespace {

constexpr double kFp32Bytes = 4;

constexpr NamedChoice<LossKernel> kLossChoices[] = {{LossKernel::kVocabParallel, "vocab-parallel"},
                                                    {LossKernel::kUpcast, "upcast"},
                                                    {LossKernel::kCompiled, "compiled"}};
constexpr std::span<const NamedChoice<LossKernel>> kLosses = kLossChoices;

}  // namespace

std::string_view LossKernelName(LossKernel loss) { return ChoiceName(kLosses, loss); }

std::vector<std::string> LossKernelNames() { return ChoiceNames(kLosses); }

sim::StatusOr<LossKernel> LossKernelNamed(std::string_view name) {
  return ChoiceNamed(kLosses, name, "loss");
}

double LossSavedBytesPerLogit(LossKernel loss, double activation_bytes) {
  return loss == LossKernel::kCompiled ? activation_bytes : kFp32Bytes;
}

double LossTransientBytesPerLogit(LossKernel loss, double activation_bytes) {
  if (loss == LossKernel::kUpcast) return std::max(2 * kFp32Bytes, activation_bytes + kFp32Bytes);
  return activation_bytes;
}

}  // namespace podsim::workloads
