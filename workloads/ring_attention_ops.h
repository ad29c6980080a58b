// Ring attention (layout.h, cp_comm=ring): context parallelism's attention core as Megatron-Core
// runs it with cp_comm_type "p2p" (Transformer Engine's AttnFuncWithCPAndKVP2P; Liu et al. 2023,
// "Ring Attention with Blockwise Transformers"). Each of the cp chips holds its 2 load-balanced
// chunks of every sequence (layout.h); the flash core runs in cp steps, step s against the
// key/value block that started s chips back along the cp ring:
//   forward, for s = 0 .. cp-1:
//     cp.shift.kv   (s < cp-1) the block in hand goes to the next chip while the next block
//                   arrives: a shift over the cp group (collectives::CollectiveOp::kShift), after
//                   the previous shift (the block has arrived) and the previous step's core (its
//                   receive buffer is free: two buffers, as Transformer Engine double-buffers);
//     attn.core     the chip's queries against the block in hand, after the previous shift.
//   backward, for s = 0 .. cp-1, the blocks again, each with the gradient of its keys and values
//   accumulated by the chips it has visited:
//     cp.shift.kv.dx  the next block, and (s > 0) the gradient of the block of step s-1 after its
//                     core, in one exchange, as Transformer Engine batches them;
//     attn.core.dx    the chip's queries against the block in hand;
//   and last cp.shift.dkv, the gradient of the last block home (the activation path waits).
// Work per step: with load-balanced chunks every step holds the same number of query-key pairs
// (step 0: the two chunks' causal diagonals and one full chunk pair; any other step: two full
// chunk pairs), 1/cp of the chip's, so a step's kernel has 1/cp of the core's FLOPs and reads the
// queries and one block. Its flash kernel shape is T/cp queries against T/cp keys, causal at
// step 0 only (compute_model.h reads the efficiency off the curve at T/cp). Steps after the
// first also read the running output and its softmax statistics to rescale them (the online
// softmax correction, Transformer Engine's out correction), counted in their HBM bytes. The
// gradients travel in the working precision (an assumption: Transformer Engine's dkv buffers
// take the activations' dtype).

#ifndef PODSIM_WORKLOADS_RING_ATTENTION_OPS_H_
#define PODSIM_WORKLOADS_RING_ATTENTION_OPS_H_

#include "workloads/layer_build.h"

namespace podsim::workloads::layer_build {

// Appends the forward ring from b.last() (the keys and values computed): `core` is the whole
// core on the chip as one flash kernel over the gathered sequence (its FLOPs, model FLOPs,
// outputs and saved bytes), which the steps split. REQUIRES: d.cp > 1.
void AppendRingAttention(Builder& b, const Dims& d, const Op& core, Phase phase);

// Appends the backward ring from b.last() (the output gradient): `bwd` is the whole core's
// backward kernel over the gathered sequence, which the steps split. REQUIRES: d.cp > 1.
void AppendRingAttentionBackward(Builder& b, const Dims& d, const Op& bwd);

}  // namespace podsim::workloads::layer_build

#endif  // PODSIM_WORKLOADS_RING_ATTENTION_OPS_H_
