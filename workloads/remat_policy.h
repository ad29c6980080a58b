// MaxText's rematerialization policies by name (remat_policy in its configs), as podsim's
// save-named recomputation: the forward ops whose outputs each keeps on the chip and those it
// offloads to host memory, with the layer's input kept as JAX's scanned checkpoint keeps it.
//
// MaxText's get_remat_policy (AI-Hypercomputer/maxtext, MaxText/layers/decoders.py):
//   full                     nothing but each layer's input;
//   minimal                  every projection's output (checkpoint_dots_with_no_batch_dims:
//                            the dots without batch dimensions; attention's QK^T and PV have one);
//   save_dot_except_mlpwi    query/key/value, out_proj and mlpwo;
//   save_dot_except_mlp      query/key/value and out_proj;
//   save_qkv_proj            query/key/value;
//   save_out_proj            out_proj;
//   qkv_proj_offloaded       query/key/value offloaded to pinned host memory
//                            (save_and_offload_only_these_names, nothing saved on the chip);
//   minimal_offloaded        every projection's output offloaded
//                            (offload_dot_with_no_batch_dims).
// podsim's names: query/key/value is attn.qkv, out_proj attn.out, mlpwi mlp.gate and mlp.up
// (MaxText's wi_0 and wi_1), mlpwo mlp.down. Not mapped: MoE layers' expert projections
// (MaxText's mlpwi_0, mlpwi_1, mlpwo in moe.py) and MLA's (kv_proj): on those layers a policy
// keeps only what its names match there, and on a model without dense layers a policy naming the
// MLP is refused by the op-name check. Not mapped either: none, minimal_with_context,
// save_dot_with_context_except_mlp, minimal_flash, custom. The outputs of attn.out and mlp.down
// are counted as podsim's ops write them (under tp, the partial sums before the reduction), which
// may not be what XLA keeps.

#ifndef PODSIM_WORKLOADS_REMAT_POLICY_H_
#define PODSIM_WORKLOADS_REMAT_POLICY_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace podsim::workloads {

struct RematPolicy {
  std::vector<std::string> saved;      // Kept on the chip ("input": the layer's input).
  std::vector<std::string> offloaded;  // Kept in host memory.
};

// The policy MaxText names `name`; InvalidArgument listing the names otherwise.
sim::StatusOr<RematPolicy> MaxTextRematPolicy(std::string_view name);
std::vector<std::string> MaxTextRematPolicyNames();

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_REMAT_POLICY_H_
