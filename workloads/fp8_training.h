// FP8 training of the transformer layers' linear layers, as torchtitan runs it (--model.converters
// float8: torchao's Float8Linear with tensorwise dynamic scaling; pytorch/ao torchao/float8) and
// as Transformer Engine's fp8 recipes do in spirit, as a rewrite of a layer's op list:
//   * every GEMM of a linear layer (forward, input gradient, weight gradient; recomputed ones
//     too) reads its two operands in fp8 (a byte an element; MXFP8's scales aside, below) and runs
//     at the chip's fp8 peak with the family's fp8 GEMM curve (compute_model.h); it writes its
//     output in the working precision. The attention core, the router of a mixture of experts and
//     the layers outside the transformer blocks (embedding, output head) stay in bf16, as
//     torchtitan's float8 filter leaves the output layer;
//   * operands are cast before their GEMM by elementwise kernels: each GEMM casts its left
//     operand (the forward's input, the input gradient's output gradient, the weight gradient's
//     transposed input, which torchao casts again), and each forward GEMM its weights once per
//     list (chunks of one GEMM, tp_comm_overlap.h, share them; the input gradient reuses them).
//     Dynamic scaling costs a cast two passes over the tensor: one for the absolute maximum (the
//     amax bookkeeping) and one to scale and cast, reading the working precision twice and
//     writing one byte per element (an assumption: torch.compile can fuse the amax into the op
//     that produced the tensor);
//   * activations saved for the backward stay in the working precision (torchao saves the
//     high-precision input and casts it again), and the fp8 copies are transient: memory is
//     unchanged (torchao; Transformer Engine keeps fp8 copies, below). Weights are all-gathered in
//     the working precision, or in fp8 with OpOptions::fp8_all_gather (torchao's fp8 all-gather for
//     FSDP).

// The library that runs them (OpOptions::fp8_library) decides what the backward keeps:
//   kTorchao            torchtitan's float8 converter: the high-precision inputs, as above.
//   kTransformerEngine  Transformer Engine as Megatron-Core runs it:
//     * each fp8 linear layer keeps the quantized copy of its input that its weight gradient
//       reads (TE's Linear, LayerNormLinear and GroupedLinear save it for the backward, column-
//       wise only), and the weight gradient casts nothing: it reads that copy and the column-wise
//       copy of the output gradient that the input gradient's cast wrote. A cast writes that
//       second, column-wise copy where the chip's fp8 GEMMs take only the TN layout (Hopper: the
//       transpose, TE's cast_transpose) and under MXFP8 (scaled along the other dimension);
//       Blackwell's per-tensor GEMMs read the one copy either way (topology/chip_spec.h).
//     * it casts the weights once a step, not once a forward (training_schedule.cc, memory.h):
//       Megatron-Core marks each model chunk's first microbatch of a step
//       (pipeline_parallel/schedules.py, set_is_first_microbatch), TE casts the weights then,
//       with their column-wise copy where a cast writes one, and keeps them for the step's other
//       forwards, recomputed ones included (TELinear passes is_first_microbatch, false after the
//       first call; the cache's opt-out, disable_parameter_transpose_cache, is off by default).
//       With fp8 parameters (OpOptions::fp8_all_gather) nothing is cast in a forward: the
//       optimizer step writes the parameters in fp8 (OptimizerOps counts that write at the
//       recipe's parameter bytes); gathered over fsdp on a chip that needs the column-wise copy,
//       each input gradient transposes the gathered weights again (Megatron-FSDP's
//       keep_fp8_transpose_cache, off by default). Under fsdp with bf16 parameters the weights
//       are gathered for each forward, and each forward and recomputed forward casts them, as
//       torchao does, with no cache (an assumption: Megatron-FSDP's handling of TE's cache is
//       not in the sources read).
//     * GEMMs on one input (the gate and up projections: Megatron-Core's fused fc1) share its
//       cast, and under current scaling a norm computes the amax of what it writes, so the cast
//       after it reads its input once (TE's normalization extension, create_hp_tensor_with_amax).
//     * not modelled: under sequence parallelism TE casts a column-parallel layer's input shard
//       before the tp all-gather, gathers fp8 (row-wise only on Hopper) and keeps the shard,
//       gathering it again and transposing it for the weight gradient: podsim gathers bf16 and
//       casts after the gather, and under --framework megatron gathers the shard again in bf16
//       (framework.h). Under fsdp with bf16 parameters, the fp8 weights each forward
//       saves for its backward are not counted in memory. With fp8 parameters over the
//       distributed optimizer, the transpose Hopper builds once a step after the gather is not
//       costed. Delayed scaling (one pass a cast, the norms writing fp8) is not a recipe apart.

// The scaling recipe (OpOptions::fp8_recipe) decides an element's bytes:
//   kTensorwise  one scale a tensor, computed from the tensor before its cast (torchao's
//                tensorwise; TE's current scaling): a byte an element.
//   kMxfp8       OCP MX: one E8M0 (one-byte) scale per 32 consecutive elements, 1 + 1/32 bytes an
//                element, as Blackwell's tensor cores read it (TE's MXFP8BlockScaling; TE only).
//                Its GEMMs run on the family's fp8 curve, which per-tensor GEMMs set (an
//                assumption: no reference times an MXFP8 GEMM).

#ifndef PODSIM_WORKLOADS_FP8_TRAINING_H_
#define PODSIM_WORKLOADS_FP8_TRAINING_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "workloads/op.h"

namespace podsim::workloads {

enum class Fp8Library { kTorchao, kTransformerEngine };
// "torchao", "te".
std::string_view Fp8LibraryName(Fp8Library library);
std::vector<std::string> Fp8LibraryNames();
sim::StatusOr<Fp8Library> Fp8LibraryNamed(std::string_view name);

enum class Fp8Recipe { kTensorwise, kMxfp8 };
// "tensorwise", "mxfp8".
std::string_view Fp8RecipeName(Fp8Recipe recipe);
std::vector<std::string> Fp8RecipeNames();
sim::StatusOr<Fp8Recipe> Fp8RecipeNamed(std::string_view name);

// Bytes of one quantized element, its share of the scales included (above).
double Fp8ElementBytes(Fp8Recipe recipe);

// How Float8Linears rewrites a list.
struct Fp8Rewrite {
  Fp8Library library = Fp8Library::kTorchao;
  Fp8Recipe recipe = Fp8Recipe::kTensorwise;
  // Transformer Engine: each cast also writes a column-wise copy (above).
  bool columnwise_copies = false;
  // False: no weight casts, the GEMMs read fp8 weights cast before (Transformer Engine's cache).
  bool cast_weights = true;
  // > 1: the weights are cast on the chip's shard before an fp8 all-gather over that many chips
  // (OpOptions::fp8_all_gather), a 1/weight_shards share of the cast; the routed experts' over
  // expert_weight_shards (layout.h expert_fsdp).
  int weight_shards = 1;
  int expert_weight_shards = 1;
  // Each input gradient's GEMM first transposes the fp8 weights it reads (Transformer Engine on
  // fp8 parameters gathered by Megatron-FSDP, which drops their transpose after each use).
  bool transpose_weights = false;
};

// Whether `op` is a GEMM of a linear layer that fp8 training runs in fp8: not the router's, nor
// materialized attention's batched products.
bool IsFp8LinearGemm(const Op& op);

// `ops` (a transformer layer's forward or backward list, deps pointing backwards) with its linear
// layers' GEMMs in fp8 and their casts before them, as above; `activation_bytes` is the working
// precision's element size. An op that depended on a GEMM still does.
OpList Float8Linears(const OpList& ops, double activation_bytes, const Fp8Rewrite& rewrite = {});

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_FP8_TRAINING_H_
