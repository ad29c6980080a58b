// FP8 training of the transformer layers' linear layers, as torchtitan runs it (--model.converters
// float8: torchao's Float8Linear with tensorwise dynamic scaling; pytorch/ao torchao/float8) and
// as Transformer Engine's fp8 recipes do in spirit, as a rewrite of a layer's op list:
//   * every GEMM of a linear layer (forward, input gradient, weight gradient; recomputed ones
//     too) reads its two operands in fp8 (1 byte) and runs at the chip's fp8 peak with the
//     family's fp8 GEMM curve (compute_model.h); it writes its output in the working precision.
//     The attention core, the router of a mixture of experts and the layers outside the
//     transformer blocks (embedding, output head) stay in bf16, as torchtitan's float8 filter
//     leaves the output layer;
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
//     unchanged. Weights are all-gathered in the working precision, or in fp8 with
//     OpOptions::fp8_all_gather (torchao's fp8 all-gather for FSDP).

// The library that runs them (OpOptions::fp8_library) decides what the backward keeps:
//   kTorchao            torchtitan's float8 converter: the high-precision inputs, as above.
//   kTransformerEngine  Transformer Engine as Megatron-Core runs it: each fp8 linear layer keeps
//                       the fp8 copy of its input that its weight gradient reads (TE's Linear,
//                       LayerNormLinear and GroupedLinear save the quantized input for the
//                       backward), one byte an element, a scale aside. And it casts the weights
//                       once a step, not once a forward (training_schedule.cc, memory.h):
//                       Megatron-Core marks each model chunk's first microbatch of a step
//                       (pipeline_parallel/schedules.py, set_is_first_microbatch), TE casts the
//                       weights then and keeps the fp8 copies for the step's other forwards,
//                       recomputed ones included (TELinear passes is_first_microbatch, false
//                       after the first call; the cache's opt-out,
//                       disable_parameter_transpose_cache, is off by default). With fp8
//                       parameters (OpOptions::fp8_all_gather) nothing is cast in a forward:
//                       the optimizer step writes the parameters in fp8 (OptimizerOps counts that
//                       write at the recipe's parameter bytes). Its fusion of the input casts
//                       into the norms is not modelled: those casts stay as above.

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

// Whether `op` is a GEMM of a linear layer that fp8 training runs in fp8: not the router's, nor
// materialized attention's batched products.
bool IsFp8LinearGemm(const Op& op);

// `ops` (a transformer layer's forward or backward list, deps pointing backwards) with its linear
// layers' GEMMs in fp8 and their casts before them, as above; `activation_bytes` is the working
// precision's element size. `weight_shards` > 1: the weights are cast on the chip's shard before
// an fp8 all-gather over that many chips (OpOptions::fp8_all_gather), a 1/weight_shards share of
// the cast. `cast_weights` false: no weight casts at all, the GEMMs read fp8 weights cast
// before (Transformer Engine's cache, above). An op that depended on a GEMM still does.
OpList Float8Linears(const OpList& ops, double activation_bytes, int weight_shards = 1,
                     bool cast_weights = true);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_FP8_TRAINING_H_
