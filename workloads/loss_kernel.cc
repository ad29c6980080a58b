#include "workloads/loss_kernel.h"

#include <algorithm>

namespace podsim::workloads {

namespace {

constexpr double kFp32Bytes = 4;

}  // namespace

std::string_view LossKernelName(LossKernel loss) {
  switch (loss) {
    case LossKernel::kVocabParallel:
      return "vocab-parallel";
    case LossKernel::kUpcast:
      return "upcast";
    case LossKernel::kCompiled:
      return "compiled";
  }
  return "vocab-parallel";
}

std::vector<std::string> LossKernelNames() { return {"vocab-parallel", "upcast", "compiled"}; }

sim::StatusOr<LossKernel> LossKernelNamed(std::string_view name) {
  for (LossKernel loss : {LossKernel::kVocabParallel, LossKernel::kUpcast, LossKernel::kCompiled}) {
    if (name == LossKernelName(loss)) return loss;
  }
  return sim::Status::InvalidArgument("unknown loss '" + std::string(name) +
                                      "'; expected vocab-parallel, upcast or compiled");
}

double LossSavedBytesPerLogit(LossKernel loss, double activation_bytes) {
  return loss == LossKernel::kCompiled ? activation_bytes : kFp32Bytes;
}

double LossTransientBytesPerLogit(LossKernel loss, double activation_bytes) {
  if (loss == LossKernel::kUpcast) return std::max(2 * kFp32Bytes, activation_bytes + kFp32Bytes);
  return activation_bytes;
}

}  // namespace podsim::workloads
