// The projections of multi-head latent attention (model_spec.h, MLA) in a layer on one chip, as
// Megatron-Core's MLASelfAttention runs them under tp and sp (megatron/core/transformer/
// multi_latent_attention.py): the down projections, replicated over tp, run on the chip's
// T/tp tokens; the latents (q_lora + kv_lora + rope_dim wide instead of D) are normed and then
// all-gathered over tp; the up projections are column-parallel over the heads. Forward, after
// attn.norm:
//   attn.q_down (with q_lora), attn.kv_down   [T/tp, D] x [D, q_lora], [D, kv_lora + rope_dim];
//   attn.latent.norm                          RMSNorm of the two latents;
//   tp.all-gather.attn                        with sp: the latents (and the input, for q's up
//                                             projection, without q_lora);
//   attn.q_up, attn.kv_up                     [T, q_lora] x [q_lora, N/tp (head_dim + rope)],
//                                             [T, kv_lora] x [kv_lora, N/tp (head_dim + v)];
//   attn.rotary                               on the queries' and the shared key's rotary dims.
// The attention core and output projection follow as for any attention (layer_ops.h), with
// query/key heads of head_dim + rope_dim and value heads of v_head_dim. Backward: the up
// projections' input gradients are reduce-scattered over tp with sp (all-reduced without), then
// the latent norms' and down projections' backward, whose two input gradients are summed.

#ifndef PODSIM_WORKLOADS_LATENT_ATTENTION_OPS_H_
#define PODSIM_WORKLOADS_LATENT_ATTENTION_OPS_H_

#include <vector>

#include "workloads/layer_build.h"

namespace podsim::workloads::layer_build {

// Appends the forward projections from b.last() (attn.norm's output) to attn.rotary; the
// matmuls wait for `gather` too (-1: none). REQUIRES: model.mla().
void AppendLatentProjections(Builder& b, const ModelSpec& model, const Dims& d, Phase phase,
                             int gather);

// Appends their backward from b.last() (attn.rotary's output gradient) to the gradient of
// attn.norm's output; weight gradients go to `dws`.
void AppendLatentProjectionsBackward(Builder& b, const OpList& fwd, const ModelSpec& model,
                                     const Dims& d, std::vector<int>* dws);

}  // namespace podsim::workloads::layer_build

#endif  // PODSIM_WORKLOADS_LATENT_ATTENTION_OPS_H_
