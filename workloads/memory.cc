#include "workloads/memory.h"

#include <algorithm>
#include <vector>

namespace podsim::workloads {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

constexpr double kFp32Bytes = 4;
constexpr double kFp8Bytes = 1;

// The layers of `stage` with a dense MLP and with experts.
struct StageLayers {
  int64_t dense = 0;
  int64_t moe = 0;
};

// Calls visit(chunk, index in the stage, index in the chunk, model layer) for each layer of
// `stage`: one contiguous run, or with interleaving virtual_stages chunks, chunk c the
// (c pp + stage)-th (LayersOfChunk; as training_schedule.cc runs them).
template <typename Visit>
void ForEachStageLayer(const ModelSpec& model, const Layout& layout, int stage, Visit visit) {
  int in_stage = 0;
  for (int c = 0; c < layout.virtual_stages; ++c) {
    const int chunk = c * layout.pp + stage;
    const int64_t first = FirstLayerOfChunk(layout, model, chunk);
    const int64_t layers = LayersOfChunk(layout, model, chunk);
    for (int64_t l = 0; l < layers; ++l) visit(c, in_stage++, static_cast<int>(l), first + l);
  }
}

// Whether every chunk of `stage` has as many layers.
bool EqualChunks(const ModelSpec& model, const Layout& layout, int stage) {
  for (int c = 1; c < layout.virtual_stages; ++c) {
    if (LayersOfChunk(layout, model, c * layout.pp + stage) !=
        LayersOfChunk(layout, model, stage)) {
      return false;
    }
  }
  return true;
}

StageLayers LayersOf(const ModelSpec& model, const Layout& layout, int stage) {
  StageLayers layers;
  ForEachStageLayer(model, layout, stage, [&](int, int, int, int64_t layer) {
    (model.IsMoeLayer(layer) ? layers.moe : layers.dense) += 1;
  });
  return layers;
}

}  // namespace

double ParamsPerChip(const ModelSpec& model, const Layout& layout, int stage, double* layer_params,
                     double* expert_params) {
  PODSIM_CHECK(stage >= 0 && stage < layout.pp) << "stage " << stage;
  const StageLayers layers = LayersOf(model, layout, stage);
  const double experts =
      layers.moe > 0 ? D(layers.moe) * ExpertParamsPerChip(model, layout) / layout.expert_fsdp()
                     : 0;
  const double layer = D(layers.dense) * LayerParamsPerTpShard(model, layout) +
                       D(layers.moe) * LayerParamsPerTpShard(model, layout, MlpKind::kMoe);
  // The vocabulary is padded to a multiple of tp and split (vocab-parallel embedding).
  const double vocab_rows = D((model.vocab + layout.tp - 1) / layout.tp);
  double other = 0;
  if (stage == 0) {
    other += vocab_rows * D(model.d_model) + D(model.learned_positions * model.d_model) / layout.tp;
  }
  if (stage == layout.pp - 1) {
    other += D(model.FinalNormParams());
    // Untied: the unembedding. Tied across stages: Megatron keeps a copy on the last stage and
    // all-reduces the two gradients.
    if (!model.tied_embeddings || layout.pp > 1) other += vocab_rows * D(model.d_model);
  }
  if (layer_params != nullptr) *layer_params = layer / layout.fsdp + experts;
  if (expert_params != nullptr) *expert_params = experts;
  return (layer + other) / layout.fsdp + experts;
}

double RecomputeTransientBytes(const OpList& forward, const OpOptions& options) {
  OpOptions none = options;
  none.recompute = RecomputePolicy::kNone;
  return std::max(0.0,
                  LayerActivationBytes(forward, none) - LayerActivationBytes(forward, options));
}

ActivationPeak WalkActivations(const std::vector<StageUnit>& units,
                               const std::vector<std::vector<LayerHold>>& chunks) {
  ActivationPeak peak;
  double held = 0;
  for (const StageUnit& unit : units) {
    const std::vector<LayerHold>& layers = chunks[unit.chunk];
    if (unit.forward) {
      for (const LayerHold& layer : layers) held += layer.saved;
      peak.held = std::max(peak.held, held);
      peak.with_transient = std::max(peak.with_transient, held);
      continue;
    }
    for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
      peak.with_transient = std::max(peak.with_transient, held + layer->transient);
      held -= layer->saved;
    }
  }
  return peak;
}

int64_t OneFOneBWarmup(const Layout& layout, int stage, bool ep_comm_overlap) {
  const int64_t plain = layout.pp - stage - 1;
  return ep_comm_overlap ? 2 * plain : plain;
}

int64_t InFlightChunks(const Layout& layout, int stage, bool ep_comm_overlap) {
  const int64_t p = layout.pp, m = layout.microbatch_count(), v = layout.virtual_stages;
  switch (layout.schedule) {
    case PipelineSchedule::kGpipe:
      return m;
    case PipelineSchedule::kInterleavedOneFOneB:
      if (v > 1) return std::min<int64_t>(2 * (p - stage - 1) + (v - 1) * p + 1, m * v);
      [[fallthrough]];  // One chunk per stage runs as 1F1B (StageOrder).
    case PipelineSchedule::kOneFOneB:
      return std::min<int64_t>(OneFOneBWarmup(layout, stage, ep_comm_overlap) + 1, m);
  }
  return m;
}

MemoryBreakdown StageMemory(const ModelSpec& model, const Layout& layout, const BatchSpec& batch,
                            const OpOptions& stated_options, const topology::ChipSpec& chip,
                            int stage) {
  const OpOptions options = WithLayoutDefaults(stated_options, layout);
  const ShardShape shape = ShapeOf(layout, model, batch);
  const PrecisionRecipe& p = options.precision;
  MemoryBreakdown m;
  m.stage = stage;
  m.params = ParamsPerChip(model, layout, stage, &m.layer_params, &m.expert_params);
  m.param_bytes = m.params * p.param_bytes;
  m.grad_bytes = m.params * p.GradBufferBytes(layout.microbatch_count());
  m.optimizer_bytes = m.params * (p.master_bytes + p.optimizer_bytes);
  // The distributed optimizer shards the master copy and the moments over dp; the gradient buffer
  // stays whole, and where it is narrower than fp32 the optimizer step works on an fp32 copy of its
  // shard (Megatron-LM docs/distrib_optimizer.md, bytes per parameter: 6 + 12/d with bf16
  // parameters and fp32 gradients, 4 + 16/d with 16-bit gradients, against 18 and 20). That copy
  // exists only during the step: Megatron-Core's DistributedOptimizer makes it with .float() before
  // the step and drops it at zero_grad (DeepSpeed's ZeRO-1/2 likewise), when the activations are
  // gone (optimizer_step_bytes).
  if (options.distributed_optimizer) {
    const bool fp32_shard =
        p.master_bytes > 0 && p.GradBufferBytes(layout.microbatch_count()) < kFp32Bytes;
    // The routed experts' shards are over the expert data parallelism (layout.h, ep).
    const double shard_params = (m.params - m.expert_params) / D(layout.grad_dp()) +
                                m.expert_params / D(layout.expert_grad_dp());
    m.optimizer_bytes = shard_params * (p.master_bytes + p.optimizer_bytes);
    // Under autocast (Amp) the fp32 copy is the model's own parameters, which every rank keeps
    // whole: PyTorch's ZeroRedundancyOptimizer shards the moments only.
    if (p.casts_weights) {
      m.optimizer_bytes = m.params * p.master_bytes + shard_params * p.optimizer_bytes;
    }
    if (fp32_shard) m.optimizer_step_bytes = shard_params * kFp32Bytes;
  }

  // Each kind of layer's holds: [moe][recomputes] (1: runs options.recompute; 0: keeps everything,
  // for the layers options.recompute_layers leaves out).
  const StageLayers layers = LayersOf(model, layout, stage);
  // The stage's units in order: what its walks of held activations follow.
  const std::vector<StageUnit> units = StageOrder(layout, stage, options.ep_comm_overlap);
  OpOptions keep_all = options;
  keep_all.recompute = RecomputePolicy::kNone;
  LayerHold holds[2][2];
  // Each kind of layer's bytes offloaded to host memory (OpOptions::offloaded_ops; every layer
  // recomputes then: ValidateOpOptions), and the stage's.
  double offloaded_of[2] = {0, 0};
  for (const bool moe : {false, true}) {
    if ((moe ? layers.moe : layers.dense) == 0) continue;
    const OpList fwd =
        LayerForwardOps(model, layout, shape, options, moe ? MlpKind::kMoe : MlpKind::kDense);
    holds[moe][0] = {LayerActivationBytes(fwd, keep_all), 0};
    holds[moe][1] = {LayerActivationBytes(fwd, options), RecomputeTransientBytes(fwd, options)};
    offloaded_of[moe] = LayerOffloadedBytes(fwd, options);
  }
  const double offloaded = D(layers.dense) * offloaded_of[0] + D(layers.moe) * offloaded_of[1];
  // Every microbatch's layers copy theirs out in the forward and back in the backward.
  m.host_offload_traffic_bytes = offloaded * D(layout.microbatch_count());
  double transient = 0;
  if (options.recompute_layers.kind == RecomputeLayers::Kind::kAll &&
      EqualChunks(model, layout, stage)) {
    // Every layer alike: a chunk's layers hold the stage's mix of dense and MoE layers in
    // proportion, times the chunk-microbatches in flight; the largest layer sets the transient.
    const double per_layer =
        (D(layers.dense) * holds[0][1].saved + D(layers.moe) * holds[1][1].saved) /
        D(layers.dense + layers.moe);
    const double layers_held = D(LayersOfStage(layout, model, stage) / layout.virtual_stages) *
                               D(InFlightChunks(layout, stage, options.ep_comm_overlap));
    m.layer_activation_bytes = per_layer * layers_held;
    // The same layers' offloaded bytes, likewise.
    m.host_offload_bytes = offloaded / D(layers.dense + layers.moe) * layers_held;
    if (layers.dense > 0) transient = holds[0][1].transient;
    if (layers.moe > 0) transient = std::max(transient, holds[1][1].transient);
  } else {
    // Some layers keep everything, or the stage's chunks are of unequal lengths: chunks differ,
    // and which layer's backward recomputes first decides the transient (memory.h).
    std::vector<std::vector<LayerHold>> chunks(layout.virtual_stages);
    ForEachStageLayer(model, layout, stage, [&](int c, int in_stage, int l, int64_t layer) {
      const bool re = options.recompute_layers.Recomputes(in_stage, l);
      chunks[c].push_back(holds[model.IsMoeLayer(layer)][re]);
    });
    if (offloaded > 0) {
      // The offloaded bytes, walked as the activations are.
      std::vector<std::vector<LayerHold>> offloads(layout.virtual_stages);
      ForEachStageLayer(model, layout, stage, [&](int c, int, int, int64_t layer) {
        offloads[c].push_back({offloaded_of[model.IsMoeLayer(layer)], 0});
      });
      m.host_offload_bytes = WalkActivations(units, offloads).held;
    }
    const ActivationPeak peak = WalkActivations(units, chunks);
    m.layer_activation_bytes = peak.held;
    transient = peak.with_transient - peak.held;
  }
  m.activation_bytes = m.layer_activation_bytes;
  // The embedding's saved tensors live from its forward to its backward, on chunk 0 of stage 0;
  // the head's (the unembedding's input and the logits) on the last chunk of the last stage: as
  // many microbatches as the stage's order runs those forwards ahead of their backwards.
  if (stage == 0) {
    double embed = 0;
    for (const Op& op : EmbeddingForwardOps(model, layout, shape, options)) embed += op.saved_bytes;
    m.activation_bytes += embed * D(MostForwardsInFlight(units, 0, options.ep_comm_overlap));
  }
  if (stage == layout.pp - 1) {
    const double heads = D(MostForwardsInFlight(units, layout.virtual_stages - 1));
    for (const Op& op : HeadForwardOps(model, layout, shape, options)) {
      m.activation_bytes += op.saved_bytes * heads;
      // What the loss holds beyond its saved bytes at its peak (its elements are the logits),
      // with every activation still kept.
      if (op.kind == OpKind::kLoss) {
        m.loss_peak_bytes =
            LossTransientBytesPerLogit(options.loss, p.activation_bytes, layout.tp) * op.elements;
      }
    }
  }

  const double e = p.activation_bytes;
  const double act = e * D(shape.tokens) * D(model.d_model);
  if (layout.fsdp > 1 || layout.expert_fsdp() > 1) {
    // Current and prefetched layer gathered, minus the chip's own shard (already counted), plus
    // one layer's gradients before the reduce-scatter, in its precision: of the stage's largest
    // layer.
    const double grad = p.GradWireBytes(layout.microbatch_count());
    // The shards other chips hold, of a layer's `params` over `shards`.
    // Gathered in fp8 under OpOptions::fp8_all_gather.
    const double gathered_bytes = options.fp8_all_gather ? kFp8Bytes : p.param_bytes;
    auto others = [&](double params, int shards) {
      return shards <= 1 ? 0.0 : params * gathered_bytes * (1 - 1.0 / shards);
    };
    auto grads = [&](double params, int shards) { return shards <= 1 ? 0.0 : params * grad; };
    const double dense = LayerParamsPerTpShard(model, layout);
    const double moe_dense = LayerParamsPerTpShard(model, layout, MlpKind::kMoe);
    const double experts = ExpertParamsPerChip(model, layout);
    const int fsdp = layout.fsdp, expert_fsdp = layout.expert_fsdp();
    // Without resharding after the forward, nothing is prefetched at the turn from forward to
    // backward, where every layer of the stage is held gathered (all of them: an upper bound under
    // pipelining, where fewer chunks may be in flight); plus one layer's gradients. The embedding's
    // and the head's gathered weights count only under fsdp_sync_last_microbatch and torchtitan's
    // FSDP2 (below).
    const bool held = !options.fsdp_reshard_after_forward;
    const double copies = held ? 0 : 2;
    double buffer = 0;
    if (layers.dense > 0) buffer = copies * others(dense, fsdp) + grads(dense, fsdp);
    if (layers.moe > 0) {
      buffer = std::max(buffer, copies * (others(moe_dense, fsdp) + others(experts, expert_fsdp)) +
                                    grads(moe_dense, fsdp) + grads(experts, expert_fsdp));
    }
    if (held) {
      buffer += D(layers.dense) * others(dense, fsdp) +
                D(layers.moe) * (others(moe_dense, fsdp) + others(experts, expert_fsdp));
    }
    // The stage's parameters outside its layers (the embedding, the final norm, the head), over
    // all fsdp shards: gathered in the parameters' dtype even where the layers' are gathered in
    // fp8 (torchao's float8 all-gather converts linear layers only, and torchtitan leaves the
    // head out; Transformer Engine's fp8 weights are the layers').
    const double root = (m.params - m.layer_params) * D(fsdp);
    const double root_others = fsdp <= 1 ? 0.0 : root * p.param_bytes * (1 - 1.0 / fsdp);
    if (options.fsdp_sync_last_microbatch) {
      // Every parameter of the stage (its layers', and the embedding's and the head's in FSDP2's
      // root module) is gathered in the first microbatch's forward and stays gathered all step,
      // and its gradients accumulate unsharded until the reduce-scatters after the last
      // backward: in fp32 with several microbatches (FSDP2 upcasts them to its reduce dtype), in
      // the working precision with one. They take the place of the shards' gradients, which
      // exist only after those reduce-scatters, when the unsharded ones are freed (torchtitan's
      // zero_grad drops the gradients). Plus one layer's fresh gradients, in the parameters'
      // dtype; they accumulate in the reduce dtype, fp32 unless the gradients are reduced in
      // bf16 (FSDP2 upcasts only where the two differ).
      const double unsharded =
          (m.params - m.expert_params) * D(fsdp) + m.expert_params * D(std::max(expert_fsdp, 1));
      double fresh = layers.dense > 0 ? dense : 0;
      if (layers.moe > 0) fresh = std::max(fresh, moe_dense + experts);
      buffer = (unsharded - root - m.layer_params) * gathered_bytes + root_others +
               fresh * p.param_bytes;
      const double accumulated = p.bf16_gradients ? p.param_bytes : kFp32Bytes;
      m.grad_bytes = unsharded * (layout.microbatch_count() > 1 ? accumulated : p.activation_bytes);
    }
    if (options.framework == Framework::kTorchtitan) {
      // FSDP2 as torchtitan wrapped it for the measured runs (until mid-2025): the root module
      // held the embedding, the final norm and the head, and PyTorch kept a root gathered from
      // its forward to the end of its backward (_fsdp_state.py, _lazy_init, before PyTorch's
      // #154704 honoured an explicit reshard_after_forward; torchtitan's #1094 then gave the
      // embedding and the head groups of their own), through the loss's peak (with
      // fsdp_sync_last_microbatch they are counted above). And each all-gather writes its flat
      // output in the all-gather copy-in stream's pool before copying it out to the parameters
      // (_fsdp_collectives.py, foreach_all_gather); blocks freed there are not reused by the
      // default stream. A group's output is freed only once the next group's is allocated
      // (_fsdp_param_group.py, wait_for_unshard), so the pool holds a layer's and the next one's,
      // the root's among them: a layer's plus the larger of the root's and a layer's.
      if (!options.fsdp_sync_last_microbatch) buffer += root_others;
      double layer = 0;  // A layer's flat outputs: its dense group's and its experts'.
      if (layers.dense > 0 && fsdp > 1) layer = dense;
      if (layers.moe > 0) {
        layer = std::max(layer, (fsdp > 1 ? moe_dense : 0) + (expert_fsdp > 1 ? experts : 0));
      }
      const double root_flat = fsdp > 1 ? root * p.param_bytes : 0;
      buffer += gathered_bytes * layer + std::max(root_flat, gathered_bytes * layer);
    }
    m.buffer_bytes += buffer;
  }
  if (Fp8WeightCache(options, layout)) {
    // The stage's transformer layers' weights as their forwards read them (a tp and ep shard),
    // quantized, with the column-wise copy the input gradient's GEMM reads
    // where Transformer Engine's casts write one (Fp8ColumnwiseCopies: Hopper's transpose,
    // MXFP8's other scaling). Counted too: the norms' and the router's few weights, which stay
    // in bf16 (under 0.1% of a layer's).
    const double copies = Fp8ColumnwiseCopies(options, chip) ? 2 : 1;
    m.fp8_weight_cache_bytes =
        copies * Fp8ElementBytes(options.fp8_recipe) *
        (D(layers.dense) * LayerParamsPerTpShard(model, layout) +
         D(layers.moe) * (LayerParamsPerTpShard(model, layout, MlpKind::kMoe) +
                          ExpertParamsPerChip(model, layout)));
  }
  if (layout.tp > 1) m.buffer_bytes += act;
  if (layout.context_shards() > 1) {
    // All-gathered: the sequence's keys and values gathered over cp (or its sequence shards) for
    // one layer's attention, and in its backward also their whole-sequence gradients before the
    // reduce-scatter: twice that. Ring attention (ring_attention_ops.h): two blocks of the
    // chip's size in flight, and in the backward two of their gradients too: four blocks.
    const double blocks = layout.ring_attention() ? 4 : 2 * D(layout.context_shards());
    m.buffer_bytes += blocks * e * D(shape.tokens) * D(shape.kv_heads) *
                      D(model.qk_head_dim() + model.value_head_dim());
  }
  if (layers.moe > 0 && layout.ep > 1) {
    // The dispatch's send and receive buffers: the chip's routed copies of its tokens.
    m.buffer_bytes += 2 * e * D(shape.sp_tokens) * D(model.top_k) * D(model.d_model);
  }
  if (layout.pp > 1) m.buffer_bytes += 2 * act;

  m.recompute_peak_bytes = std::max(0.0, transient - m.loss_peak_bytes);
  m.total_bytes =
      m.StaticBytes() + std::max(m.activation_bytes + m.loss_peak_bytes + m.recompute_peak_bytes,
                                 m.optimizer_step_bytes);
  m.hbm_bytes = chip.hbm_bytes;
  m.headroom_bytes = m.hbm_bytes - m.total_bytes;
  m.fits = m.headroom_bytes >= 0;
  return m;
}

MemoryBreakdown PeakMemory(const ModelSpec& model, const Layout& layout, const BatchSpec& batch,
                           const OpOptions& options, const topology::ChipSpec& chip) {
  MemoryBreakdown peak = StageMemory(model, layout, batch, options, chip, 0);
  double host = peak.host_offload_bytes, traffic = peak.host_offload_traffic_bytes;
  for (int stage = 1; stage < layout.pp; ++stage) {
    MemoryBreakdown m = StageMemory(model, layout, batch, options, chip, stage);
    host = std::max(host, m.host_offload_bytes);
    traffic = std::max(traffic, m.host_offload_traffic_bytes);
    if (m.total_bytes > peak.total_bytes) peak = m;
  }
  // Host memory and its traffic are not HBM: their largest stage, whichever stage peaks in HBM.
  peak.host_offload_bytes = host;
  peak.host_offload_traffic_bytes = traffic;
  return peak;
}

}  // namespace podsim::workloads
