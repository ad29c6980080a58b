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
//                   forward's fp32 copy, 4). With tp > 1 it is DTensor's loss_parallel, which
//                   torchtitan turns on with tp (torch/distributed/tensor/parallel/loss.py,
//                   _nll_loss_and_log_softmax_backward: (zeros_like(x), scattered, + exp(x)) x
//                   grad_output): 12 bytes beyond. Either way the e-byte logits' block stays too:
//                   torchtitan frees the logits after the cast (the model's output is
//                   self.output(h).float()), and PyTorch's caching allocator keeps the freed block
//                   reserved, as no later request of the loss, 4 bytes a logit, fits in it (blocks
//                   over 10 MiB are their own segments, c10/cuda/CUDACachingAllocator.cpp); Hugging
//                   Face's caller keeps the logits alive. So e more, as the allocator reserves.
//   kCompiled       the same function under torch.compile (Inductor): one kernel each way, the
//                   forward reads the logits and keeps them (e bytes) with a log-sum-exp per
//                   token, the backward writes the e-byte gradient from them: e bytes beyond.
// The byte counts hold for a loss over the chip's own logits. Not modelled: losses that never hold
// the whole logits (Liger-Kernel's fused linear cross-entropy, chunked losses); Transformer
// Engine's fused cross-entropy (Megatron-Bridge's cross_entropy_fusion_impl "te"), which writes
// the gradient in the forward and keeps e bytes, not 4; with tp > 1 under kUpcast, a gather of the
// logits (Hugging Face's replicated lm_head output): podsim counts loss_parallel over the chip's
// vocabulary shard.

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
// The most bytes per logit the loss holds at once beyond those it keeps (forward or backward),
// with the vocabulary split `vocab_shards` ways (tp).
double LossTransientBytesPerLogit(LossKernel loss, double activation_bytes, int vocab_shards);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_LOSS_KERNEL_H_
