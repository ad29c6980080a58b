// Which transformer layers run the recompute policy (layer_ops.h RecomputePolicy); the others
// keep every activation their backward reads, as with RecomputePolicy::kNone.
//   kAll    every layer (default).
//   kEvery  every n-th layer a chip holds, counted in model order over all its chunks: the n-th,
//           the 2n-th, ... (torchtitan's selective layer checkpointing, activation_checkpoint
//           mode "selective" with selective_ac_option "n": its wrapper counts the blocks it
//           wraps from 1 and checkpoints those whose count is a multiple of n).
//   kFirst  the first n layers of each model chunk, each pipeline stage's and each virtual
//           stage's (Megatron-LM's --recompute-method block --recompute-num-layers n, which
//           Megatron allows with full recomputation only).
// Named "all", "every:N" and "first:N" (podsim train --recompute-layers, scenario
// train.recompute_layers). All layers with full recomputation is Megatron's uniform method with
// one layer per checkpoint; uniform over several layers (one input kept per group of layers) is
// not modelled. A selection past the chip's layers is allowed (every:N with N above them
// recomputes none, as torchtitan does).

#ifndef PODSIM_WORKLOADS_RECOMPUTE_LAYERS_H_
#define PODSIM_WORKLOADS_RECOMPUTE_LAYERS_H_

#include <string>
#include <string_view>

#include "sim/status.h"

namespace podsim::workloads {

struct RecomputeLayers {
  enum class Kind { kAll, kEvery, kFirst };
  Kind kind = Kind::kAll;
  int n = 1;  // kEvery, kFirst: >= 1.

  // Whether the layer at `chip_index` among the chip's layers (model order, over all its chunks)
  // and at `chunk_index` within its chunk runs the policy.
  bool Recomputes(int chip_index, int chunk_index) const;
  bool operator==(const RecomputeLayers&) const = default;
};

// Parses "all", "every:N" or "first:N" (N >= 1); InvalidArgument naming the accepted forms.
sim::StatusOr<RecomputeLayers> RecomputeLayersNamed(std::string_view text);
// The name RecomputeLayersNamed reads back.
std::string RecomputeLayersName(const RecomputeLayers& layers);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_RECOMPUTE_LAYERS_H_
