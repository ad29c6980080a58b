// Framework: the training framework whose semantics a step follows, where frameworks differ in
// what they keep, what they communicate again and in which order a backward runs.
//
//   book        podsim's own defaults (the default): each flag's default below, and the book's
//               tensor-parallel traffic (formulas.md 2.5): with sequence parallelism the input of
//               a column-parallel matmul (qkv, the MLP's first matmuls, the unembedding) is kept
//               sharded and never gathered again; each matmul's input gradient is reduced over tp
//               as soon as the input gradients are summed. A mix no framework runs: name one for
//               its semantics.
//   megatron    Megatron-LM / Megatron-Core with Transformer Engine:
//               * precision megatron (with --bf16 Megatron-LM accumulates and reduces gradients
//                 in fp32 main grads: arguments.py sets accumulate_allreduce_grads_in_fp32),
//                 fused kernels, the vocab-parallel loss unfused (--cross-entropy-loss-fusion
//                 is off by default; Megatron-Bridge's recipes turn it on: --loss
//                 vocab-parallel), fp8 by Transformer Engine;
//               * data-parallel gradient reductions after the backward and the distributed
//                 optimizer's parameter gathers after its step, both exposed, unless
//                 --overlap-grad-reduce and --overlap-param-gather say otherwise (Megatron-Core's
//                 DistributedDataParallelConfig defaults both to false; the other frameworks
//                 overlap them: PyTorch DDP's buckets, FSDP, XLA);
//               * with sp, a column-parallel linear keeps its input sharded and all-gathers it
//                 again in its backward, asynchronously behind its input gradient's GEMM, for its
//                 weight gradient (tensor_parallel/layers.py,
//                 LinearWithGradAccumulationAndAsyncCommunication.backward; Korthikanti et al.
//                 2022, section 4.2.2);
//               * the input gradient's tp reduction is issued before the weight gradients, which
//                 it overlaps; a gated MLP's gate and up projections are one fused fc1 GEMM, so
//                 both input gradients come before either weight gradient, the second
//                 accumulating into the first's output (no separate sum), as one GEMM over both
//                 halves writes one input gradient (megatron/core/transformer/mlp.py; Transformer
//                 Engine's layernorm_linear.py for the re-gather behind the input gradient).
//   torchtitan  PyTorch's DTensor tensor parallelism and FSDP2 as torchtitan runs them, eager
//               (ValidateFrameworkLayout refuses what torchtitan does not run in bf16: tp without
//               sp, tp or pp without fsdp or cp):
//               * precision mixed (FSDP2's MixedPrecisionPolicy: bf16 parameters, fp32 reduction),
//                 eager kernels (compile off, torchtitan's default), the upcast loss
//                 (F.cross_entropy over logits.float()), fp8 by torchao;
//               * with sp, autograd keeps the all-gathered input of a ColwiseParallel linear for
//                 its weight gradient (the full [tokens, D], not the shard);
//               * autograd computes a linear's input and weight gradients in one node
//                 (MmBackward), and the reduce-scatter of their input's gradient (the backward of
//                 the input's redistribution) waits for every linear that read that input: it is
//                 exposed behind the weight gradients instead of overlapping them;
//               * with pp > 1, FSDP2 as torch.distributed.pipelining runs it: the weights
//                 gathered once a step, in the first microbatch's forward, and kept all step; the
//                 gradients accumulated unsharded in fp32 and reduce-scattered after the last
//                 microbatch's backward (WithLayoutDefaults, layer_ops.h).
//   maxtext     MaxText on XLA: fused kernels (XLA fusion), the loss's fp32 softmax kept (its
//               cross_entropy_with_logits saves fp32 residuals: the vocab-parallel loss's bytes);
//               with sp the gathered input is kept (XLA keeps the all-gather's result for the
//               weight gradient unless a remat policy drops it: MaxText's default remat policy,
//               full, keeps only each layer's input, so this counts only under --recompute none
//               or a policy that saves it), and the input gradient's
//               reduction comes before the weight gradients, as Megatron's does (podsim's reading
//               of XLA's latency-hiding scheduler, not a measured trace: docs/sources.md). Its
//               fp32 parameters (weight_dtype float32) are not a recipe here: precision stays
//               mixed; fp8 runs as --fp8's default library does.
//
// An explicit flag (--precision, --kernels, --loss, --fp8-library) overrides its framework's
// default. Not modelled: MLA's projections follow the book's order under every framework;
// Transformer Engine's fp8 all-gather of sp inputs (fp8_training.h) and the transient buffer
// Megatron's re-gather writes; torchtitan's Float8 tensor parallelism, which gathers and keeps
// the input in fp8 (podsim keeps it in bf16); torchtitan's MoE under tp, which gathers the whole
// MoE input once and routes every token on every tp rank (podsim routes the shard, Megatron's
// way); torchtitan's eager kernels are Hugging Face transformers' counts (eager_kernels.h).

#ifndef PODSIM_WORKLOADS_FRAMEWORK_H_
#define PODSIM_WORKLOADS_FRAMEWORK_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "workloads/eager_kernels.h"
#include "workloads/fp8_training.h"
#include "workloads/loss_kernel.h"
#include "workloads/precision.h"

namespace podsim::workloads {

enum class Framework { kBook, kMegatron, kTorchtitan, kMaxtext };

// "book", "megatron", "torchtitan", "maxtext".
std::string_view FrameworkName(Framework framework);
std::vector<std::string> FrameworkNames();
// InvalidArgument naming the known ones unless `name` is one of them.
sim::StatusOr<Framework> FrameworkNamed(std::string_view name);

// The options a framework sets unless a flag says otherwise.
struct FrameworkDefaults {
  PrecisionRecipe precision;
  KernelLibrary kernels;
  LossKernel loss;
  Fp8Library fp8_library;
  // Data-parallel reductions and the distributed optimizer's gathers overlapped (layer_ops.h).
  bool overlap_grad_reduce;
  bool overlap_param_gather;
};
FrameworkDefaults DefaultsOf(Framework framework);

// How a framework runs the backward of column-parallel matmuls that read a tp-gathered input.
struct TpBackward {
  // With sp, the input is all-gathered again for the weight gradients (Megatron).
  bool regather_sp_input = false;
  // With sp, the gathered input is kept for the weight gradients, not its shard.
  bool keep_gathered_input = false;
  // The input gradients (summed) and their tp reduction come before the weight gradients.
  bool input_gradients_first = false;
  // The tp reduction of the input gradient waits for the weight gradients too.
  bool reduction_after_weight_gradients = false;
  // Matmuls on one input run their input gradients as one GEMM (Megatron's fused fc1): the
  // second accumulates into the first's output, with no separate sum.
  bool fused_input_gradient = false;
};
TpBackward TpBackwardOf(Framework framework);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_FRAMEWORK_H_
