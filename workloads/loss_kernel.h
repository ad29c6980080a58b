// How the loss's cross-entropy over the logits (tokens x the chip's vocabulary shard) runs, and
// the memory it holds, per logit, with e the working precision's element size:
//   kVocabParallel  Megatron-LM's vocab-parallel cross-entropy (megatron/core/tensor_parallel/
//                   cross_entropy.py) as one fused kernel each way (XLA's fusion of it), the
//                   default: the logits cast to fp32 and the softmax computed in place, kept for
//                   the backward (Korthikanti et al.'s 4sbv/t), which writes the gradient over it;
//                   with tp, the row max all-reduced, then the target logit and the sum of
//                   exponentials together (Megatron's fused path). It keeps 4 bytes; beyond them
//                   it holds the e-byte logits while they are cast, and the e-byte gradient while
//                   the fp32 one is cast back. Megatron-Core's native fusion
//                   (cross_entropy_fusion_impl "native", megatron/core/fusions/
//                   fused_cross_entropy.py) moves more than this, about 26 bytes a logit forward
//                   in four compiled kernels: not modelled apart.
//   kVocabParallelEager  the same function unfused, as Megatron-LM runs it by default
//                   (--cross-entropy-loss-fusion is off): PyTorch's eager kernels
//                   (eager_kernels.h's vocab-parallel chain; in 2021 the cast was its caller's
//                   output.float(), the same kernels) and the three tp all-reduces of the row max,
//                   the target logit and the sum of exponentials, one at a time. The same bytes
//                   held. Not counted: its dozen small per-token kernels (masks, the target's
//                   gather, the log).
//   kTransformerEngine  Transformer Engine's fused cross-entropy (Megatron-Core's
//                   cross_entropy_fusion_impl "te", transformer_engine/pytorch/triton/
//                   cross_entropy.py), which Megatron-Bridge's recipes run: one Triton kernel reads
//                   the logits twice (an online softmax, then the gradient) and writes the
//                   gradient over them in the forward; the backward scales it in place. It keeps e
//                   bytes (the logits' own) and holds nothing beyond; with tp, one all-gather of
//                   each rank's row max, sum and target logit.
//   kUpcast         PyTorch's F.cross_entropy over logits.float(), in eager mode: torchtitan's
//                   cross_entropy_loss before it compiled the loss (its train.py of December 2024
//                   left the loss uncompiled) and Hugging Face transformers' ForCausalLMLoss. Its
//                   kernels are eager_kernels.h's loss chain (with fused kernels too). It keeps the
//                   log-softmax output (4 bytes); the backward holds with it the NLL's gradient, a
//                   dense fp32 tensor, and the log-softmax's input gradient: 8 bytes beyond (the
//                   forward's fp32 copy, 4). With tp > 1 it is DTensor's loss_parallel, which
//                   torchtitan turns on with tp (torch/distributed/tensor/parallel/loss.py,
//                   _nll_loss_and_log_softmax_backward: (zeros_like(x), scattered, + exp(x)) x
//                   grad_output): 12 bytes beyond. Either way e bytes more stay reserved:
//                   torchtitan frees the e-byte logits after the cast (the model's output is
//                   self.output(h).float(); in 2025 at `del pred`), and PyTorch's caching allocator
//                   cannot place the loss's later 4-byte-a-logit requests in that block: with
//                   fixed segments it is its own (requests over 10 MiB get their own segment,
//                   c10/cuda/CUDACachingAllocator.cpp), with expandable segments it merges with the
//                   freed fp32 copy into 4 + e bytes, of which the first 4-byte gradient takes 4
//                   and leaves e that no later request fits. Hugging Face's caller keeps the logits
//                   alive. So e more, as the allocator reserves.
//   kCompiled       the same function under torch.compile (Inductor): one kernel each way, the
//                   forward reads the logits and keeps them (e bytes) with a log-sum-exp per
//                   token, the backward writes the e-byte gradient from them: e bytes beyond.
// The byte counts hold for a loss over the chip's own logits. Not modelled: losses that never hold
// the whole logits (Liger-Kernel's fused linear cross-entropy, chunked losses); with tp > 1 under
// kUpcast, a gather of the
// logits (Hugging Face's replicated lm_head output): podsim counts loss_parallel over the chip's
// vocabulary shard.

#ifndef PODSIM_WORKLOADS_LOSS_KERNEL_H_
#define PODSIM_WORKLOADS_LOSS_KERNEL_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace podsim::workloads {

enum class LossKernel {
  kVocabParallel,
  kVocabParallelEager,
  kTransformerEngine,
  kUpcast,
  kCompiled
};

// "vocab-parallel", "vocab-parallel-eager", "vocab-parallel-te", "upcast", "compiled".
std::string_view LossKernelName(LossKernel loss);
// What the loss is, in a phrase for a report line.
std::string_view LossKernelDescription(LossKernel loss);
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
