// The layouts a sweep considers for a model on a system and a batch, and a lower bound on each
// one's step time that needs no simulation (so a sweep can skip layouts that cannot win).
//
// Enumerated (every combination that ValidateLayout accepts):
//   tp      powers of two up to the chips of one NVLink node on GPU systems (Megatron keeps tp
//           inside the node) and up to 16 on TPUs, dividing the heads;
//   sp      0 and 1 when tp > 1 (only 1 for a model with experts, which needs it);
//   ep, etp a model with experts: every ep dividing the experts, with etp = tp and (ep > 1, tp >
//           1) etp = 1, wherever the layout's data axes (and tp) can hold it (layout.h);
//   pp      1, the divisors of the layers up to 16 and the powers of two up to 16 that leave
//           every stage two layers or more (uneven stages, as torchtitan splits Llama 3.1 405B's
//           126 layers over 8 stages: layout.h, LayersOfChunk), with microbatches 2 pp and 4 pp
//           (1F1B), and the interleaved schedule with 2 chunks a stage where they are equal or
//           hold two layers or more each;
//   cp      1, and for sequences of kContextParallelMinSeq tokens or more (Megatron-Core's
//           parallelism guide: context parallelism is for sequences of 8K tokens and more) every
//           cp dividing the chips left by tp and pp whose 2 cp chunks divide the sequence
//           (layout.h), placed right after tp (Megatron-Core's rank order tp-cp-ep-dp-pp);
//   dp x fsdp  every split of the remaining chips where both divide the batch, and where dp*fsdp
//           is more than the sequences, sequence sharding on the data axes (layout.h,
//           seq_shards) wherever it splits them;
//   recompute  none and full (with flash attention, selective recomputes nothing: layer_ops.h).
//   mapping  each distinct placement of the mesh on the physical axes (MappingOrders).

#ifndef PODSIM_WORKLOADS_LAYOUT_SEARCH_H_
#define PODSIM_WORKLOADS_LAYOUT_SEARCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {

// The shortest sequence for which a sweep tries context parallelism (header comment).
inline constexpr int64_t kContextParallelMinSeq = 8192;

struct LayoutCandidate {
  Layout layout;
  RecomputePolicy recompute = RecomputePolicy::kNone;
  // "dp=..,fsdp=..,tp=..,pp=..[,..] recompute=..": unique per candidate, used to order ties.
  std::string Name() const;
};

// The placements a sweep tries for `layout` on `system`, as Layout::order values: the automatic
// one (an empty order) when it places the mesh, then tp first (tensor parallelism talks every
// layer, so it keeps the fastest links, as Megatron and the scaling book place it) followed by
// every permutation of the other axes larger than 1 (fsdp, dp, pp; ep keeps its automatic place
// after tp), each kept only when it places the mesh contiguously and differently from every order
// before it. Empty when nothing places it.
std::vector<std::vector<std::string>> MappingOrders(const topology::System& system,
                                                    const Layout& layout);

// Every valid candidate, in a deterministic order.
std::vector<LayoutCandidate> EnumerateLayouts(const topology::System& system,
                                              const ModelSpec& model, const BatchSpec& batch);

std::string_view RecomputeName(RecomputePolicy policy);

// A smaller system of the same family and its candidates.
struct SliceChoice {
  topology::System system;
  std::vector<LayoutCandidate> candidates;
};

// For a batch that no layout splits over all of `system`'s chips (LLaMA 3 70B's 1,024 sequences
// on the 8,960 chips of a v5p pod: 2^22 tokens leave the factor 35 to tp or pp, which cannot take
// it): the largest slice with candidates, as a user would reserve it -- a TPU box inside the
// shape (its wraparound as ParseSystem gives a slice of that shape), or fewer GPUs (whole nodes
// beyond one), each with the system's other keys; among equal chip counts the one with the
// larger leading dimensions. Multi-slice TPU systems and generic fabrics are not searched.
// InvalidArgument when nothing smaller has a candidate either.
sim::StatusOr<SliceChoice> LargestSliceWithLayouts(const topology::System& system,
                                                   const ModelSpec& model, const BatchSpec& batch);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_LAYOUT_SEARCH_H_
