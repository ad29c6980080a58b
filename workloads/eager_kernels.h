// The non-GEMM kernels a framework runs: one fused kernel per op (the default), or PyTorch eager
// as Hugging Face transformers writes its Llama-family models (--kernels eager), as a rewrite of
// an op list. Each eager kernel reads and writes HBM on its own and pays its own launch, at the
// family's HBM roofline and per-kernel overhead (compute_model.h); the kernels are those of the
// modules' PyTorch code (transformers' models/llama/modeling_llama.py and loss_utils.py), not
// fitted to any run:
//   * RMSNorm (LlamaRMSNorm): the input cast to fp32, squared, averaged per row, eps added and
//     rsqrt taken per row, scaled, cast back and multiplied by the weight: 8 kernels, 36 bytes an
//     element in bf16 where one fused kernel moves 4; its autograd backward 16 kernels, 92 bytes.
//     LayerNorm (nn.LayerNorm) is one native kernel either way.
//   * rotary embedding (apply_rotary_pos_emb): q * cos, rotate_half as a negation and a
//     concatenation of the two halves, * sin and the sum, for q and for k: 20 bytes an element;
//     backward 30 (the halves' slice gradients fill a zero tensor each). Launches are counted once
//     for q and k together (about half of them).
//   * SwiGLU (LlamaMLP: act_fn(gate) * up): SiLU and the product, 2 kernels; backward 3.
//   * the loss (ForCausalLMLoss, torchtitan's cross_entropy_loss): the logits cast to fp32,
//     log-softmax, NLL; backward the NLL's scatter into a zero tensor, the log-softmax gradient
//     and the cast back (one pass a row each: a lower bound for rows wider than on-chip memory).
//     The loss is chosen on its own (loss_kernel.h's kUpcast, LossKernels below): eager
//     kernels leave it as it is, and compiled blocks may call an eager loss.
//   * Megatron-LM's unfused vocab-parallel loss (kVocabParallelEager): the cast, the row max,
//     the max's subtraction, exp, the row sum and the division, 38 bytes a logit in bf16 where
//     one fused kernel moves 6; backward the product and the cast back, 14 where one moves 6.
// Residual adds, GeLU and dropout are one kernel either way, as are Megatron-LM's and Transformer
// Engine's fused kernels, torch.compile's and Liger-Kernel's, which `kFused` stands for.
// Not modelled: the tensors eager autograd keeps for these backwards (RMSNorm's fp32 input and
// bf16 normalized tensor, SwiGLU's SiLU output), which add activation memory -- about 16 GB per
// GPU for Llama 3 8B at 8K tokens (the memory estimate is the fused one's).

#ifndef PODSIM_WORKLOADS_EAGER_KERNELS_H_
#define PODSIM_WORKLOADS_EAGER_KERNELS_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "workloads/loss_kernel.h"
#include "workloads/model_spec.h"
#include "workloads/op.h"

namespace podsim::workloads {

enum class KernelLibrary { kFused, kEager };

std::string_view KernelLibraryName(KernelLibrary library);
// "fused" or "eager"; InvalidArgument naming the known ones otherwise.
sim::StatusOr<KernelLibrary> KernelLibraryNamed(std::string_view name);
std::vector<std::string> KernelLibraryNames();

// `ops` (a layer's or the head's forward or backward list, deps pointing backwards) with each
// RMSNorm, rotary and SwiGLU op -- forward, recomputed and backward -- replaced by its chain of
// eager kernels as above, named "<op>.<kernel>"; `activation_bytes` is the working precision's
// element size. An op that depended on a replaced op depends on its chain's last kernel, which
// keeps the op's saved and output bytes.
OpList EagerKernels(const OpList& ops, const ModelSpec& model, double activation_bytes);

// The same for the loss ops alone, under `loss`: PyTorch's cross-entropy over fp32 logits
// (LossKernel::kUpcast) or Megatron-LM's unfused vocab-parallel one (kVocabParallelEager; its
// kernels in eager_kernels.cc); `ops` unchanged under the one-kernel losses.
OpList LossKernels(const OpList& ops, double activation_bytes, LossKernel loss);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_EAGER_KERNELS_H_
