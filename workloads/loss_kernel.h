// How the loss's cross-entropy over the logits (tokens x the chip's vocabulary shard) runs, and
// the memory it holds, per logit, with e the working precision's element size:
//   kVocabParallel  Megatron-LM's vocab-parallel cross-entropy (megatron/core/tensor_parallel/
//                   cross_entropy.py) and fused losses like it, the default: the logits cast to
//                   fp32 and the softmax computed in place, kept for the backward (Korthikanti
//                   et al.'s 4sbv/t), which writes the gradient over it; one kernel each way. It
//                   keeps 4 bytes; beyond them it holds the e-byte logits while they are cast,
//                   and the e-byte gradient while the fp32 one is cast back.
//   kUpcast         PyTorch's F.cross_entropy over logits.float(), in eager mode: torchtitan's
//                   cross_entropy_loss before it compiled the loss (its train.py of December 2024
//                   left the loss uncompiled) and Hugging Face transformers' ForCausalLMLoss. Its
//                   kernels are eager_kernels.h's loss chain (with fused kernels too). It keeps the
//                   log-softmax output (4 bytes); the backward holds with it the NLL's gradient, a
//                   dense fp32 tensor, and the log-softmax's input gradient: 8 bytes beyond (the
//                   forward's e-byte logits, fp32 copy and output are e + 4 beyond).
//   kCompiled       the same function under torch.compile (Inductor): one kernel each way, the
//                   forward reads the logits and keeps them (e bytes) with a log-sum-exp per
//                   token, the backward writes the e-byte gradient from them: e bytes beyond.
// The byte counts hold for a loss over the chip's own logits. Not modelled: losses that never hold
// the whole logits (Liger-Kernel's fused linear cross-entropy, chunked losses); Transformer
// Engine's fused cross-entropy (Megatron-Bridge's cross_entropy_fusion_impl "te"), which writes
// the gradient in the forward and keeps e bytes, not 4; with tp > 1 under kUpcast, PyTorch's own
// vocab-parallel loss (DTensor's loss_parallel, a few more fp32 temporaries than F.cross_entropy)
// or a gather of the logits (Hugging Face's replicated lm_head output): podsim counts the eager
// loss over the chip's vocabulary shard; and callers that keep the logits alive through the
// backward (2 more bytes; torchtitan deletes them first).

#ifndef PODSIM_WORKLOADS_LOSS_KERNEL_H_
#define PODSIM_WORKLOADS_LOSS_KERNEL_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace podsim::workloads {

enum class LossKernel { kVocabParallel, kUpcast, kCompiled };

// "vocab-parallel", "upcast", "compiled".
std::string_view LossKernelName(LossKernel loss);
// InvalidArgument naming the known ones unless `name` is one of them.
sim::StatusOr<LossKernel> LossKernelNamed(std::string_view name);
std::vector<std::string> LossKernelNames();

// Bytes per logit kept from the loss's forward to its backward.
double LossSavedBytesPerLogit(LossKernel loss, double activation_bytes);
// The most bytes per logit the loss holds at once beyond those it keeps (forward or backward).
double LossTransientBytesPerLogit(LossKernel loss, double activation_bytes);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_LOSS_KERNEL_H_
