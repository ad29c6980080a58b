// The HBM-bound kernels a chip family calibrates by name: an HBM-bound op (norm, elementwise)
// whose Op::kernel names one of these streams at the family's own rate for it
// (ComputeEfficiency::hbm_kernel_bytes_per_s), where the family has one; every other HBM-bound op
// at the family's streaming fraction (hbm_fraction).
//
// Each name is a kernel algorithm, the way the frameworks' kernels implement it, with a ".dx"
// sibling for its backward:
//   softmax       a warp per row of the T x T attention scores, read once and written once
//                 (PyTorch's softmax_warp_forward, and Megatron-LM's fused scale-mask-softmax,
//                 which extends it); softmax.dx its backward (dY and the output in, dX out).
//   dropout       dropout with its random numbers drawn in the kernel (Philox), writing the
//                 output and a one-byte mask; dropout.dx scales dY by the saved mask.
//   layernorm     PyTorch's LayerNorm over rows of d_model (mean and variance per row);
//                 layernorm.dx its two backward kernels, the input gradient and the reduction over
//                 tokens for the gain and bias gradients. Under eager kernels only (--kernels
//                 eager, eager_kernels.h): Transformer Engine's, apex's and compiled LayerNorms
//                 organise the reduction their own way and are not measured.
//   gelu          the tanh GeLU; gelu.dx its backward.
// The softmax, dropout and GeLU classes hold under fused kernels too (an assumption): the
// softmax's algorithm is the same kernel's, and dropout's and GeLU's cost is their per-element
// arithmetic (Philox, tanh), which a fused kernel also pays.
// RMSNorm, SwiGLU, rotary and residual adds are not classes: their fused kernels stream at the
// family's hbm_fraction (QuACK's RMSNorm reaches ~0.90 on H100, calibration.md G3).

#ifndef PODSIM_WORKLOADS_HBM_KERNEL_H_
#define PODSIM_WORKLOADS_HBM_KERNEL_H_

#include <span>
#include <string>
#include <string_view>

namespace podsim::workloads {

inline constexpr std::string_view kSoftmaxKernel = "softmax";
inline constexpr std::string_view kDropoutKernel = "dropout";
inline constexpr std::string_view kLayerNormKernel = "layernorm";
inline constexpr std::string_view kGeluKernel = "gelu";

// The kernel of an op's backward: "<kernel>.dx" ("" for "").
std::string BackwardKernel(std::string_view kernel);

// Every class above, forward and backward, in a fixed order.
std::span<const std::string_view> HbmKernelClasses();
bool IsHbmKernelClass(std::string_view name);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_HBM_KERNEL_H_
