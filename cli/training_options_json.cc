#include "cli/training_options_json.h"

#include "workloads/eager_kernels.h"
#include "workloads/fp8_training.h"
#include "workloads/framework.h"
#include "workloads/loss_kernel.h"

namespace podsim::cli {

nlohmann::ordered_json TrainingOptionsJson(const workloads::OpOptions& options) {
  return {{"precision", options.precision.name},
          {"grad_reduce_in_bf16", options.precision.bf16_gradients},
          {"distributed_optimizer", options.distributed_optimizer},
          {"tp_comm_overlap", options.tp_comm_overlap},
          {"ep_comm_overlap", options.ep_comm_overlap},
          {"fp8", options.fp8},
          {"fp8_library", workloads::Fp8LibraryName(options.fp8_library)},
          {"fp8_recipe", workloads::Fp8RecipeName(options.fp8_recipe)},
          {"framework", workloads::FrameworkName(options.framework)},
          {"kernels", workloads::KernelLibraryName(options.kernels)},
          {"fp8_all_gather", options.fp8_all_gather},
          {"fp8_dispatch", options.fp8_dispatch},
          {"loss", workloads::LossKernelName(options.loss)}};
}

nlohmann::ordered_json LayoutOptionsJson(const workloads::OpOptions& laid_out,
                                         const workloads::Layout& layout) {
  nlohmann::ordered_json j{{"overlap_grad_reduce", laid_out.overlap_grad_reduce},
                           {"overlap_param_gather", laid_out.overlap_param_gather}};
  if (layout.fsdp <= 1) {
    j["reshard_after_forward"] = nullptr;
    j["fsdp_sync_last_microbatch"] = nullptr;
  } else {
    j["reshard_after_forward"] = laid_out.fsdp_reshard_after_forward;
    j["fsdp_sync_last_microbatch"] = laid_out.fsdp_sync_last_microbatch;
  }
  return j;
}

}  // namespace podsim::cli
