// PrecisionRecipe: bytes per parameter that training keeps on a chip, by role.
//
// Three recipes, because the references count differently (reference/formulas.md 2.4 and
// measured.md V3):
//   Book()      bf16 params (2) + fp32 Adam moments (4 + 4) = 10 bytes/param: formulas.md "2 + 8 =
//               10 bytes/param" and Ch5 Q2's "(2 + 4 + 4)" are the same recipe written two ways.
//               Gradients are not held (the book's accounting: reduced and consumed layer by
//               layer), nor an fp32 master copy.
//   Zero()      Rajbhandari et al. 2020 (ZeRO) mixed precision: fp16 params and grads (2 + 2) +
//               fp32 master params, momentum and variance (4 + 4 + 4) = 16 bytes/param.
//   Megatron()  Megatron-LM mixed precision with fp32 main gradients: 2 + 4 + 4 + 4 + 4 = 18
//               bytes/param; reproduces the params+optimizer memory of Korthikanti et al. 2022,
//               Figure 1 (measured.md V3: 45.56 GiB for 22B and 175B). The weight-gradient GEMMs
//               accumulate straight into the fp32 main gradients (Megatron-LM's
//               gradient_accumulation_fusion, fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32,
//               on by default since 2022); with Zero() (and Megatron-LM 2021's local DDP, whose
//               hook runs param.main_grad.add_(param.grad)) each microbatch's gradients are added
//               into the buffer by a separate pass (layer_ops.cc).

#ifndef PODSIM_WORKLOADS_PRECISION_H_
#define PODSIM_WORKLOADS_PRECISION_H_

#include <string_view>

namespace podsim::workloads {

struct PrecisionRecipe {
  std::string_view name;
  double param_bytes = 2;       // The working copy matmuls read (bf16).
  double grad_bytes = 0;        // Gradient accumulation buffer.
  double master_bytes = 0;      // fp32 master weights.
  double optimizer_bytes = 8;   // Adam first and second moments.
  double activation_bytes = 2;  // Bytes per activation element (bf16).
  // With grad_bytes > 0: weight-gradient matmuls accumulate into the gradient buffer themselves
  // (true), or a separate pass adds each microbatch's gradients into it (false).
  bool fused_grad_accumulation = false;

  double total_bytes_per_param() const {
    return param_bytes + grad_bytes + master_bytes + optimizer_bytes;
  }

  static constexpr PrecisionRecipe Book() { return {"book", 2, 0, 0, 8, 2}; }
  static constexpr PrecisionRecipe Zero() { return {"zero", 2, 2, 4, 8, 2}; }
  static constexpr PrecisionRecipe Megatron() { return {"megatron", 2, 4, 4, 8, 2, true}; }
};

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_PRECISION_H_
