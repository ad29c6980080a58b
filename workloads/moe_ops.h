// The mixture-of-experts block of an MoE layer (model_spec.h) on one chip, for one microbatch, as
// Megatron-Core's MoELayer runs it with the all-to-all token dispatcher
// (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher) and grouped
// GEMMs for the local experts. Forward, after mlp.norm:
//   moe.router         [t, D] x [D, E] logits (replicated weight), t = the chip's tokens (T/tp
//                      of them under sp: Megatron requires sp with MoE and tp);
//   moe.router.topk    softmax and top-k over the E logits;
//   moe.permute        copies each token once per chosen expert, grouped by expert: t k rows;
//   ep.all-to-all.dispatch   over the ep group (Layout::GroupAxes): every chip keeps 1/ep of its
//                      rows and sends 1/ep to each other member; V = ep t k D bytes;
//   etp.all-gather.moe with etp > 1: each tp rank gathers its group's rows (tp t k);
//   moe.sort           with several local experts and rows from other chips: the rows sorted by
//                      local expert (Megatron's sort_chunks_by_idxs), and moe.unsort back;
//   moe.experts.gate/.up/.act/.down  the experts/ep local experts as grouped GEMMs over the
//                      received rows, each expert's ffn split over etp;
//   etp.reduce-scatter.moe, ep.all-to-all.combine  the way back;
//   moe.unpermute      the top-k outputs weighted by their router probabilities and summed;
//   moe.shared.*       shared experts, as a dense tp-sharded MLP of width shared_ffn (with its
//                      sp all-gather and reduce-scatter), after the routed experts: Megatron-
//                      Core's default (--moe-shared-expert-overlap off);
//   moe.sum            routed plus shared output.
// The backward mirrors it: the combine's all-to-all carries the output gradients to the experts,
// the dispatch's carries the input gradients back. Routing is balanced: each chip sends and
// receives t k rows and each local expert gets the same share (model_spec.h). Not modelled:
// the router's auxiliary load-balancing loss (O(t E) elementwise work) and the tp all-reduce of
// the router's weight gradient (E D values).

#ifndef PODSIM_WORKLOADS_MOE_OPS_H_
#define PODSIM_WORKLOADS_MOE_OPS_H_

#include <vector>

#include "workloads/layer_build.h"

namespace podsim::workloads::layer_build {

// Appends the forward block from b.last() (mlp.norm's output) to moe.sum. The router and shared
// experts wait for `dense_gather`, the routed experts for `expert_gather` (-1: none).
void AppendMoeForward(Builder& b, const ModelSpec& model, const Layout& layout, const Dims& d,
                      Phase phase, int dense_gather, int expert_gather);

// Appends its backward from b.last() (the gradient of moe.sum's output) to the gradient of
// mlp.norm's output; the routed experts' weight gradients go to `expert_dws`, the router's and
// the shared experts' to `dense_dws`. `fwd` is the layer's forward list.
void AppendMoeBackward(Builder& b, const OpList& fwd, const ModelSpec& model, const Layout& layout,
                       const Dims& d, std::vector<int>* dense_dws, std::vector<int>* expert_dws);

// Whether `op` computes with the routed experts' weights (their GEMMs and weight gradients).
bool IsRoutedExpertOp(const Op& op);

}  // namespace podsim::workloads::layer_build

#endif  // PODSIM_WORKLOADS_MOE_OPS_H_
