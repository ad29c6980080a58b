#include "workloads/framework.h"

#include <span>

#include "workloads/named_choice.h"

namespace podsim::workloads {

namespace {

constexpr NamedChoice<Framework> kFrameworkChoices[] = {{Framework::kBook, "book"},
                                                        {Framework::kMegatron, "megatron"},
                                                        {Framework::kTorchtitan, "torchtitan"},
                                                        {Framework::kMaxtext, "maxtext"}};
constexpr std::span<const NamedChoice<Framework>> kFrameworks = kFrameworkChoices;

}  // namespace

std::string_view FrameworkName(Framework framework) { return ChoiceName(kFrameworks, framework); }

std::vector<std::string> FrameworkNames() { return ChoiceNames(kFrameworks); }

sim::StatusOr<Framework> FrameworkNamed(std::string_view name) {
  return ChoiceNamed(kFrameworks, name, "framework");
}

FrameworkDefaults DefaultsOf(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      // megatron/core/distributed/distributed_data_parallel_config.py: overlap_grad_reduce and
      // overlap_param_gather default to False; arguments.py: --cross-entropy-loss-fusion is
      // off unless given.
      return {PrecisionRecipe::Megatron(),     KernelLibrary::kFused,
              LossKernel::kVocabParallelEager, Fp8Library::kTransformerEngine,
              /*overlap_grad_reduce=*/false,
              /*overlap_param_gather=*/false};
    case Framework::kTorchtitan:
      return {PrecisionRecipe::Mixed(),
              KernelLibrary::kEager,
              LossKernel::kUpcast,
              Fp8Library::kTorchao,
              true,
              true};
    case Framework::kMaxtext:
    case Framework::kBook:
      break;
  }
  return {PrecisionRecipe::Mixed(),
          KernelLibrary::kFused,
          LossKernel::kVocabParallel,
          Fp8Library::kTorchao,
          true,
          true};
}

TpBackward TpBackwardOf(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return {
          .regather_sp_input = true, .input_gradients_first = true, .fused_input_gradient = true};
    case Framework::kTorchtitan:
      return {.keep_gathered_input = true, .reduction_after_weight_gradients = true};
    case Framework::kMaxtext:
      return {.keep_gathered_input = true, .input_gradients_first = true};
    case Framework::kBook:
      break;
  }
  return {};
}

}  // namespace podsim::workloads
