// The options of a training step that train and sweep share, defined once: the flags
// (--framework, --precision, --distributed-optimizer, --tp-comm-overlap, --fp8, --kernels,
// --no-reshard-after-forward, --fp8-all-gather, --loss, ...), their checks and their scenario
// fields.

#ifndef PODSIM_CLI_TRAINING_FLAGS_H_
#define PODSIM_CLI_TRAINING_FLAGS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "scenario/source_map.h"
#include "sim/status.h"

namespace CLI {
class App;
}

namespace podsim::cli {

// --model's help, for train and sweep.
inline constexpr const char* kTrainingModelHelp =
    "A preset (podsim list models: llama3-70b, mixtral-8x7b, ...), a preset with overrides "
    "(mixtral-8x22b:layers=4), or custom:layers=..,d_model=..[,experts=..,top_k=..]";

struct TrainingFlags {
  std::string precision;  // "": the default recipe.
  bool distributed_optimizer = false;
  bool tp_comm_overlap = false;
  bool ep_comm_overlap = false;
  bool fp8 = false;
  std::string kernels;  // "": fused.
  bool no_reshard_after_forward = false;
  bool fp8_all_gather = false;
  bool fp8_dispatch = false;
  std::string loss;  // "": vocab-parallel.
  bool grad_reduce_in_bf16 = false;
  std::string fp8_library;            // "": torchao.
  std::string fp8_recipe;             // "": tensorwise.
  std::string framework;              // "": book.
  bool overlap_grad_reduce = false;   // false: the framework's default.
  bool overlap_param_gather = false;  // false: the framework's default.
};

// `tp_overlap_note` is appended to --tp-comm-overlap's help (what a command does with layouts
// that have no sp).
void AddTrainingFlags(CLI::App* sub, TrainingFlags* flags, std::string_view tp_overlap_note = "");

// One of `names` (its index), or InvalidArgument naming the flag, the value and the names, with
// the nearest name as a suggestion.
sim::StatusOr<size_t> ChooseFlagValue(std::string_view flag, const std::string& text,
                                      const std::vector<std::string_view>& names);

// InvalidArgument naming --framework unless it is a framework, --precision unless it is a recipe,
// --kernels unless it is a kernel library, --fp8-library or --fp8-recipe unless it is one, or
// --loss unless it is a loss (any empty: the default).
sim::Status CheckTrainingFlags(const TrainingFlags& flags);

// Sets the scenario fields of the flags on `message` (scenario::Train or scenario::Sweep, which
// name them alike).
template <typename Message>
void SetTrainingFields(const TrainingFlags& flags, Message* message) {
  if (!flags.precision.empty()) message->set_precision(flags.precision);
  if (flags.distributed_optimizer) message->set_distributed_optimizer(true);
  if (flags.overlap_grad_reduce) message->set_overlap_grad_reduce(true);
  if (flags.overlap_param_gather) message->set_overlap_param_gather(true);
  if (flags.tp_comm_overlap) message->set_tp_comm_overlap(true);
  if (flags.ep_comm_overlap) message->set_ep_comm_overlap(true);
  if (flags.fp8) message->set_fp8(true);
  if (!flags.kernels.empty()) message->set_kernels(flags.kernels);
  if (flags.no_reshard_after_forward) message->set_no_reshard_after_forward(true);
  if (flags.fp8_all_gather) message->set_fp8_all_gather(true);
  if (flags.fp8_dispatch) message->set_fp8_dispatch(true);
  if (!flags.loss.empty()) message->set_loss(flags.loss);
  if (flags.grad_reduce_in_bf16) message->set_grad_reduce_in_bf16(true);
  if (!flags.fp8_library.empty()) message->set_fp8_library(flags.fp8_library);
  if (!flags.fp8_recipe.empty()) message->set_fp8_recipe(flags.fp8_recipe);
  if (!flags.framework.empty()) message->set_framework(flags.framework);
}
// Records which flag each of those fields of `prefix` ("train", "sweep") comes from.
void AddTrainingFlagSources(std::string_view prefix, scenario::SourceMap* sources);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_TRAINING_FLAGS_H_
