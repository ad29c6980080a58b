#include "workloads/hbm_kernel.h"

#include <algorithm>
#include <array>

namespace podsim::workloads {

namespace {

constexpr std::array<std::string_view, 8> kClasses = {
    "softmax",   "softmax.dx",   "dropout", "dropout.dx",
    "layernorm", "layernorm.dx", "gelu",    "gelu.dx",
};

}  // namespace

std::string BackwardKernel(std::string_view kernel) {
  return kernel.empty() ? std::string() : std::string(kernel) + ".dx";
}

std::span<const std::string_view> HbmKernelClasses() { return kClasses; }

bool IsHbmKernelClass(std::string_view name) {
  return std::find(kClasses.begin(), kClasses.end(), name) != kClasses.end();
}

}  // namespace podsim::workloads
