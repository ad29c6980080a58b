// PrecisionRecipe: bytes per parameter that training keeps on a chip, by role.
//
// Five recipes, because the references count differently (reference/formulas.md 2.4 and
// measured.md V3); Mixed() is the default (OpOptions):
//   Mixed()     bf16 mixed precision with fp32 master weights and Adam, as the frameworks run it
//               today: Zero()'s 16 bytes/param, and with several microbatches the gradients
//               accumulate in an fp32 buffer (4) instead of bf16 ones -- Megatron-LM forces fp32
//               accumulation with bf16 (arguments.py: accumulate_allreduce_grads_in_fp32), FSDP
//               reduces in fp32 (MixedPrecisionPolicy reduce_dtype in torchtitan's bf16 runs).
//               Gradients travel in fp32 whatever the microbatch count (reduce_bytes): FSDP2's
//               reduce-scatter casts them to torchtitan's default reduce dtype, float32
//               (training.mixed_precision_reduce), Megatron-LM reduces its fp32 main gradients,
//               and MaxText's gradients are those of its fp32 weights (weight_dtype float32).
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
//   Amp()       PyTorch's automatic mixed precision (torch.autocast with fp16 or bf16, as
//               PyTorch Lightning's precision 16 or bf16 and plain PyTorch loops run it): the
//               parameters and their gradients stay fp32 (4 + 4) with Adam's moments (8), and
//               each forward casts the weights of the linear layers it runs to 16 bits (autocast
//               caches the casts for that forward; the backward reads the copies it saved), a
//               pass reading 4 and writing 2 bytes a parameter, every microbatch: 2 bytes held
//               (param_bytes) at the turn from forward to backward, 18 in all. A weight gradient
//               comes out in 16 bits and autograd casts it to fp32 (reading 2, writing 4) and
//               adds it into .grad (reading 4 + 4, writing 4), every microbatch of a step of
//               several; AccumulateGrad takes the first microbatch's cast gradient as .grad
//               without the add, which podsim counts all the same (12 bytes a parameter once a
//               step: under 1/m of the step's gradient traffic). Gradients travel in fp32.
// Gradient accumulation: a step of several microbatches (pp > 1, or gradient accumulation) must
// hold its gradients from one microbatch to the next, whatever the recipe says; a recipe that
// holds none (the book's, which counts one microbatch) gets a buffer in the working precision
// then (GradBufferBytes).

#ifndef PODSIM_WORKLOADS_PRECISION_H_
#define PODSIM_WORKLOADS_PRECISION_H_

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

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
  // microbatches > 1: the accumulation buffer's bytes per parameter; 0: grad_bytes, or the
  // working precision's when the recipe holds no gradients.
  double accumulation_bytes = 0;
  // Bytes per gradient element on the wire when > 0; 0: the gradient buffer's (GradWireBytes,
  // layer_build.h).
  double reduce_bytes = 0;
  // Megatron-LM's --grad-reduce-in-bf16 (Megatron-Core's grad_reduce_in_fp32 = false, as
  // Megatron-Bridge's performance recipes set it): whatever the recipe keeps otherwise, the
  // gradient buffer accumulates in bf16 and the gradients travel in bf16 (2 bytes each). A
  // recipe that holds no gradients at one microbatch still holds none.
  bool bf16_gradients = false;
  // Amp(): each forward casts the fp32 parameters (master_bytes) of its linear layers to the
  // working precision (param_bytes), and each weight gradient is cast to fp32 before it is added
  // into the buffer (layer_build.cc).
  bool casts_weights = false;

  // Bytes per parameter of the gradient buffer a step of `microbatches` holds: grad_bytes for
  // one microbatch; for several, accumulation_bytes, or grad_bytes, or the working precision's
  // when the recipe holds none.
  double GradBufferBytes(int microbatches) const {
    double bytes = grad_bytes;
    if (microbatches > 1) {
      bytes = accumulation_bytes > 0 ? accumulation_bytes
              : grad_bytes > 0       ? grad_bytes
                                     : param_bytes;
    }
    return bf16_gradients ? std::min(bytes, kBf16GradientBytes) : bytes;
  }
  // Bytes per parameter of the gradients on the wire of a step of `microbatches`: reduce_bytes,
  // else the gradient buffer's, or the working precision's when the recipe holds none. At one
  // microbatch Mixed() holds bf16 gradients and sends fp32 ones: each bucket is cast for its
  // reduction (FSDP2's reduce_dtype), and its fp32 result takes the place of the bf16 gradient
  // (FSDP2's fp32 gradient shard, whose fp32 parameter shard podsim counts as bf16 working copy
  // plus fp32 master: the same 16 bytes); the cast's pass over HBM is not modelled.
  double GradWireBytes(int microbatches) const {
    if (bf16_gradients) return kBf16GradientBytes;
    if (reduce_bytes > 0) return reduce_bytes;
    const double buffer = GradBufferBytes(microbatches);
    return buffer > 0 ? buffer : param_bytes;
  }
  double total_bytes_per_param(int microbatches = 1) const {
    return param_bytes + GradBufferBytes(microbatches) + master_bytes + optimizer_bytes;
  }

  static constexpr double kBf16GradientBytes = 2;
  static constexpr PrecisionRecipe Book() { return {"book", 2, 0, 0, 8, 2}; }
  static constexpr PrecisionRecipe Zero() { return {"zero", 2, 2, 4, 8, 2}; }
  static constexpr PrecisionRecipe Megatron() { return {"megatron", 2, 4, 4, 8, 2, true}; }
  static constexpr PrecisionRecipe Mixed() { return {"mixed", 2, 2, 4, 8, 2, false, 4, 4}; }
  static constexpr PrecisionRecipe Amp() {
    return {"amp", 2, 4, 4, 8, 2, false, 4, 4, false, true};
  }
};

// The recipe as reports name it: its name, and ", gradients in bf16" with bf16_gradients.
std::string PrecisionLabel(const PrecisionRecipe& recipe);

// The recipes by name, in the order of PrecisionRecipeNames(): "mixed" (the default), "zero",
// "megatron", "book", "amp".
std::vector<std::string> PrecisionRecipeNames();
// The recipe named `name`; InvalidArgument listing the names otherwise.
sim::StatusOr<PrecisionRecipe> PrecisionRecipeNamed(std::string_view name);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_PRECISION_H_
