// Memory per chip of a training step: parameters, gradients, optimizer states, activations and
// collective buffers, for one pipeline stage, and whether they fit in the chip's HBM.
//
// Model (each term documented where computed, memory.cc):
//   * Parameters of the stage (layers, plus the embedding on the first stage and the final norm
//     and unembedding on the last; with tied embeddings and pp > 1 the last stage keeps its own
//     copy, as Megatron does), sharded by tp (norm gains replicated) and by fsdp; the routed
//     experts of MoE layers by ep, etp and expert-fsdp instead (layout.h), their optimizer
//     shards under the distributed optimizer over expert-dp.
//   * Per parameter: PrecisionRecipe bytes (precision.h) for params, grads, master, moments; a
//     gradient buffer whenever the step has several microbatches (GradBufferBytes). Where fsdp
//     reduces in the last microbatch only (OpOptions::fsdp_sync_last_microbatch, torchtitan
//     under pp), also the stage's unsharded gradients in fp32, accumulated until then.
//   * The options as WithLayoutDefaults completes them for the layout (layer_ops.h).
//   * Activations: LayerActivationBytes per layer and microbatch (layer_ops.h) x layers per
//     chunk x the chunk-microbatches a stage holds at its peak (InFlightChunks), plus the
//     embedding's (first stage) or the head's (last stage) saved tensors for each microbatch
//     whose forward of that chunk the stage's order runs ahead of its backward
//     (MostForwardsInFlight: one under 1F1B, every microbatch under GPipe).
//   * Collective buffers: with fsdp, the gathered weights of the current and the prefetched layer
//     and one layer's unreduced gradients; under torchtitan's FSDP2 also the root module's
//     gathered weights (the embedding and the head, not resharded after the forward, as
//     torchtitan wrapped them until mid-2025) and the pool of the all-gather copy-in stream,
//     reserved at two groups' flat outputs, a layer's and the larger of the root's and the
//     next layer's (memory.cc); with tp, one gathered [tokens, D] activation; with
//     pp, one send and one receive buffer of [tokens, D]; with ep, the dispatch's send and
//     receive buffers of the chip's routed token copies.
//   * The loss's peak (last stage): what the loss holds beyond its saved tensors at its peak
//     (loss_kernel.h), while every activation is still kept; for PyTorch's eager loss, with the
//     freed logits' block its caching allocator keeps reserved.
//   * The optimizer step's transient: the distributed optimizer's fp32 copy of a 16-bit gradient
//     shard, held while it updates and after every activation is released; it counts only where
//     it exceeds the activations' peak.
//   * Under recomputation (full, selective or save-named), the peak of a layer's backward: it
//     first re-runs the layer's forward and holds every activation that forward saves until the
//     backward has used it (PyTorch's checkpoint, Megatron-LM's recompute), on top of what every
//     in-flight microbatch keeps; the largest layer of the stage sets it.
//   * Where only some layers recompute (OpOptions::recompute_layers), or a stage's chunks are of
//     unequal lengths (LayersOfChunk), chunks and layers differ: the activations, the recompute
//     peak and the offloaded bytes come from walking the stage's units in order (StageOrder)
//     and holding and releasing each layer's activations as the schedule does
//     (WalkActivations), not from the closed forms above.
//
// Where PyTorch's caching allocator keeps blocks that no later request can use (the copy-in
// pool, the loss's logits block), the figure is what the allocator reserves
// (torch.cuda.max_memory_reserved, which torchtitan reports), not only the tensors alive. Not
// counted: the rest of its fragmentation.

#ifndef PODSIM_WORKLOADS_MEMORY_H_
#define PODSIM_WORKLOADS_MEMORY_H_

#include <cstdint>
#include <vector>

#include "topology/chip_spec.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"
#include "workloads/stage_order.h"

namespace podsim::workloads {

// Parameters held by one chip of pipeline stage `stage` (0-based). `layer_params` (optional)
// receives the part that belongs to transformer layers, `expert_params` (optional) the routed
// experts' part of it (sharded by ep, etp and expert-fsdp instead of tp and fsdp).
double ParamsPerChip(const ModelSpec& model, const Layout& layout, int stage,
                     double* layer_params = nullptr, double* expert_params = nullptr);

// Chunk-microbatches whose activations stage `stage` holds at once at its peak:
//   GPipe: all microbatches; 1F1B: min(pp - stage, m) (PipeDream-Flush warm-up + 1), with
//   `ep_comm_overlap` min(2 (pp - stage) - 1, m) (training_schedule.h: the 2 (pp - stage - 1) + 1
//   forwards before the first backward; in an overlapped pair the backward frees each layer
//   before the forward holds the next, so a pair adds about one layer's worth);
//   interleaved: min(2(pp - stage - 1) + (v - 1) pp + 1, m v) chunks (Megatron-LM's interleaved
//   warm-up, schedules.py), which for stage 0 gives Korthikanti's factor 1 + (pp - 1)/(pp v) on
//   L layers' worth; with v = 1 it runs, and holds, as 1F1B (StageOrder).
int64_t InFlightChunks(const Layout& layout, int stage, bool ep_comm_overlap = false);

// The forwards 1F1B runs on stage `stage` before its steady state (not capped at the microbatch
// count): pp - stage - 1 (PipeDream-Flush), twice that with `ep_comm_overlap` (training_schedule.h:
// an overlapped pair hands its outputs on only at its end). The schedule runs one more forward
// before its first backward, so a stage holds this + 1 microbatches (InFlightChunks).
int64_t OneFOneBWarmup(const Layout& layout, int stage, bool ep_comm_overlap);

// A layer's activations beyond what options.recompute keeps, held while its backward recomputes
// its forward: LayerActivationBytes without recomputation minus with it (0 without).
double RecomputeTransientBytes(const OpList& forward, const OpOptions& options);

// A transformer layer's activations as the schedule holds them (training_schedule.cc): `saved`
// from the end of its forward to the end of its backward, `transient` on top of them while its
// backward runs (what a recomputing layer's re-run forward holds).
struct LayerHold {
  double saved = 0;
  double transient = 0;
};
// The most a stage's layers hold at once: `held` without transients, `with_transient` counting
// the running backward's transient too.
struct ActivationPeak {
  double held = 0;
  double with_transient = 0;
};
// Walks `units` (StageOrder) in order, each forward holding its chunk's layers one by one and each
// backward releasing them in reverse after their transient; chunks[c][l] is chunk c's l-th layer.
ActivationPeak WalkActivations(const std::vector<StageUnit>& units,
                               const std::vector<std::vector<LayerHold>>& chunks);

struct MemoryBreakdown {
  int stage = 0;
  double params = 0;  // Parameter count on the chip (not bytes).
  double layer_params = 0;
  double expert_params = 0;  // The routed experts' part of layer_params.
  double param_bytes = 0;
  double grad_bytes = 0;
  double optimizer_bytes = 0;  // Master copy and Adam moments.
  double activation_bytes = 0;
  double layer_activation_bytes = 0;  // The transformer layers' part of activation_bytes.
  // Activations the layers keep in host memory (OpOptions::offloaded_ops): not in total_bytes.
  // PeakMemory gives the largest stage's, whichever stage peaks in HBM.
  double host_offload_bytes = 0;
  // The bytes a step copies to the host (and back, as many) for them: every microbatch's.
  double host_offload_traffic_bytes = 0;
  double buffer_bytes = 0;
  // Transformer Engine's fp8 copies of the stage's linear weights, cast in a step's first forward
  // and kept (fp8_training.h): with bf16 parameters only.
  double fp8_weight_cache_bytes = 0;
  double loss_peak_bytes = 0;  // The loss's transient beyond its saved tensors (last stage).
  // Under recomputation, what a layer's backward holds while it recomputes that layer's forward:
  // the layer's activations beyond what the policy keeps (RecomputeTransientBytes), counted
  // beyond loss_peak_bytes, since the two never coincide (the loss's peak is over before the
  // first layer's backward starts).
  double recompute_peak_bytes = 0;
  // What the optimizer step holds beyond the rest, after the backward has released every
  // activation: the distributed optimizer's fp32 copy of a 16-bit gradient shard (memory.cc).
  // The peak is the larger of the activations' part (the three terms above) and this.
  double optimizer_step_bytes = 0;
  double total_bytes = 0;
  double hbm_bytes = 0;
  bool fits = false;
  double headroom_bytes = 0;  // hbm_bytes - total_bytes: negative is the shortfall.

  // Held all step: parameters, gradients, optimizer state, collective buffers and cached fp8
  // weights.
  double StaticBytes() const {
    return param_bytes + grad_bytes + optimizer_bytes + buffer_bytes + fp8_weight_cache_bytes;
  }
};

// Memory of one chip in stage `stage`. REQUIRES: ValidateLayout(layout, model, ..., batch) ok,
// 0 <= stage < pp.
MemoryBreakdown StageMemory(const ModelSpec& model, const Layout& layout, const BatchSpec& batch,
                            const OpOptions& options, const topology::ChipSpec& chip, int stage);

// The stage with the largest total (ties: the earliest).
MemoryBreakdown PeakMemory(const ModelSpec& model, const Layout& layout, const BatchSpec& batch,
                           const OpOptions& options, const topology::ChipSpec& chip);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_MEMORY_H_
