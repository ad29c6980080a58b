// The options of a training step as train's and sweep's JSON state them, with the same keys in
// the same order in both (design.md: stable keys).

#ifndef PODSIM_CLI_TRAINING_OPTIONS_JSON_H_
#define PODSIM_CLI_TRAINING_OPTIONS_JSON_H_

#include <nlohmann/json.hpp>

#include "workloads/layer_ops.h"
#include "workloads/layout.h"

namespace podsim::cli {

// precision, grad_reduce_in_bf16, distributed_optimizer, tp_comm_overlap, ep_comm_overlap, fp8,
// fp8_library, fp8_recipe, framework, kernels, fp8_all_gather, fp8_dispatch and loss, as given
// (the flags and their framework's defaults).
nlohmann::ordered_json TrainingOptionsJson(const workloads::OpOptions& options);

// What the options become under `layout` (`laid_out`: WithLayoutDefaults): overlap_grad_reduce
// and overlap_param_gather (on with fsdp), then what fsdp does, reshard_after_forward and
// fsdp_sync_last_microbatch (torchtitan under pp gathers once a step), both null when the layout
// has no fsdp, where neither means anything.
nlohmann::ordered_json LayoutOptionsJson(const workloads::OpOptions& laid_out,
                                         const workloads::Layout& layout);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_TRAINING_OPTIONS_JSON_H_
