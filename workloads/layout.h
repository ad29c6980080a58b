// Layout: how a training step is spread over the chips -- the logical mesh axes and the pipeline
// schedule -- and the per-chip shard sizes that follow from it for a given model and batch.
//
// Axes (their product is the chip count):
//   dp    data parallelism: replicas of the weights; gradients all-reduced.
//   fsdp  ZeRO-3 / FSDP: the batch is split as for dp, and parameters, gradients and optimizer
//         states are sharded; weights are all-gathered before use, gradients reduce-scattered.
//   tp    Megatron tensor parallelism: heads, kv heads and the MLP's ffn dimension are split.
//   pp    pipeline stages of consecutive layers (LayersOfStage); `microbatches` per step.
//   cp    context parallelism: each sequence is split over cp chips in 2 cp chunks, chip i
//         holding chunks i and 2 cp - 1 - i (Megatron-Core's load balancing of causal work), so
//         every op runs on T/cp of each sequence's tokens. Attention exchanges keys and values
//         as `cp_comm` says (layer_ops.h): `ring` (Megatron-Core's default cp_comm_type "p2p",
//         ring attention: the key/value blocks go round the cp ring one step at a time, each
//         step overlapped with the attention of the block in hand, and in the backward their
//         gradients follow them round), or `all-gather` (Llama 3's variant, Dubey et al. 2024
//         sec. 3.3.2, Megatron's "all_gather": the sequence's keys and values are gathered before
//         the core and their gradients reduce-scattered after it). The weights
//         are replicated over cp and their gradients reduced over dp x cp, as Megatron-Core's
//         data-parallel group includes cp; fsdp shards over fsdp alone (torchtitan shards over
//         its dp_shard x cp, so its parameters, gradients and optimizer states per chip are cp
//         times fewer than this layout's with the same fsdp). The flash kernel's efficiency is
//         read off the causal curve at T/cp queries (compute_model.h), measured on square
//         kernels: an approximation for the two T/(2cp) query chunks against mostly full key
//         blocks that each chip runs.
//   ep    expert parallelism (models with experts): each MoE layer's routed experts are split
//         over ep chips, which exchange the routed tokens by all-to-all. ep folds into the other
//         axes as Megatron-Core's "parallel folding" does (Liu et al. 2025, arXiv 2504.14960):
//         it does not multiply the chip count. The MoE layers see the chips of a stage as
//         etp x ep x expert-data (etp fastest), the attention as tp x data:
//           etp = tp (expert tensor parallelism, Megatron's default): the ep group is ep chips
//                 of the data axes, each expert's ffn is split over tp;
//           etp = 1: the ep group spans the tp group and ep/tp chips of the data axes (ep a
//                 multiple of tp), the experts are whole.
//         The data part (ep_data()) comes, as Megatron-Core orders its ranks (tp, cp, dp), from
//         cp's chips first: with cp > 1 it is a divisor of cp (the mesh axis "ep" is carved out
//         of cp's chips, and "cp" keeps the rest) or a multiple of cp (the ep group spans all of
//         cp, and the rest is carved out of dp or fsdp); with cp = 1 it is taken from dp when
//         it divides dp, else from fsdp. The mesh then has an axis "ep" of what is carved, and
//         dp, fsdp or cp keeps the rest: with what cp keeps, the expert data parallelism, over
//         which the experts' gradients are reduced. With tp > 1
//         a model with experts needs sp (Megatron-LM requires sequence parallelism with MoE
//         and tp).
// Sequence sharding on the data axes (the book's "token-level data parallelism", How to Scale
// Your Model ch. 6): when dp*fsdp is more than the batch's sequences -- LLaMA 3 70B's 1,024
// sequences on 2,048-way FSDP -- each sequence is split over `seq_shards` of the data chips.
// They hold its 2 seq_shards chunks as cp's chips do (the same load balancing and the same
// all-gather of keys and values before attention, over the mesh axis "cp"), but they stay data
// shards: taken from fsdp when seq_shards divides it, the weights are sharded over all fsdp
// chips (torchtitan's dp_shard x cp), else taken from dp, their gradients are reduced over all
// dp chips. `seq_shards` is resolved from the batch (ResolveLayout) when dp*fsdp is more than the
// sequences of a microbatch: dp*fsdp / gcd(dp*fsdp, those sequences); otherwise it stays 0 (none).
// A stated value (1 included) is kept and must split the batch. It does not combine with cp or
// with a model with experts. Its keys and values are all-gathered unless cp_comm=ring says
// otherwise (torchtitan's default rotate method is "allgather", and XLA's sharded attention
// gathers them).
// Microbatches: stated as a count (`microbatches=`) or, as Megatron-LM states it, as the
// sequences per microbatch on one data shard (`mbs=`, its --micro-batch-size; the global batch
// then gives the count, ResolveLayout). Unstated means 1 when pp == 1 (no gradient
// accumulation); with pp > 1 it is an error (ValidateLayout): a pipeline of one microbatch runs
// one stage at a time, which nobody means by leaving it out.
// Flags:
//   sp=1  Megatron sequence parallelism inside the tp group: norms, dropout and residuals run on
//         T/tp tokens; the tp all-reduces become reduce-scatter + all-gather.
// Global batch: `batch` sequences of `seq` tokens per step, split over dp*fsdp and then into
// microbatches (gradient accumulation when pp == 1).

#ifndef PODSIM_WORKLOADS_LAYOUT_H_
#define PODSIM_WORKLOADS_LAYOUT_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "topology/mesh_mapping.h"
#include "workloads/model_spec.h"

namespace podsim::workloads {

enum class PipelineSchedule {
  kGpipe,                // All forwards, then all backwards (Huang et al. 2019).
  kOneFOneB,             // 1F1B, PipeDream-Flush (Narayanan et al. 2021).
  kInterleavedOneFOneB,  // 1F1B over `virtual_stages` model chunks per chip (Narayanan 2021).
};

// "gpipe", "1f1b", "interleaved".
std::string_view PipelineScheduleName(PipelineSchedule schedule);

// How the chips that split a sequence exchange its keys and values (header comment, cp).
enum class ContextComm {
  kDefault,    // Not stated: kRing with cp, kAllGather with seq_shards.
  kRing,       // "ring".
  kAllGather,  // "all-gather".
};

struct Layout {
  int dp = 1;
  int fsdp = 1;
  int tp = 1;
  int pp = 1;
  bool sp = false;
  int microbatches = 0;      // 0: not stated (microbatch_count() is then 1).
  int micro_batch_size = 0;  // mbs=: sequences per microbatch per data shard; 0: not stated.
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int virtual_stages = 1;  // Model chunks per chip; > 1 only with kInterleavedOneFOneB.
  int cp = 1;              // Context parallelism (header comment).
  int ep = 1;              // Expert parallelism (header comment).
  int etp = 0;             // Expert tensor parallelism: 1 or tp; 0: not stated (tp).
  int seq_shards = 0;      // Sequence sharding on the data axes (header); 0: none (as 1).
  ContextComm cp_comm = ContextComm::kDefault;
  // Mesh axes that take the fastest physical axes first, in this order (topology::MapMesh's
  // `order`); the others follow by their need of fast links. Empty: the automatic placement.
  std::vector<std::string> order;

  int64_t chips() const { return int64_t{dp} * fsdp * tp * pp * cp; }
  // The data chips that split one sequence (1: none) and whether they are taken from fsdp.
  int sequence_shards() const { return std::max(1, seq_shards); }
  bool sequence_in_fsdp() const { return fsdp % sequence_shards() == 0; }
  // The chips that split one sequence: cp x sequence_shards() (one of them is 1).
  int context_shards() const { return cp * sequence_shards(); }
  // Whether the context shards pass key/value blocks round a ring (else they all-gather them).
  bool ring_attention() const {
    return cp_comm == ContextComm::kRing || (cp_comm == ContextComm::kDefault && cp > 1);
  }
  // The chips that hold a replica of the same parameter shard and reduce its gradients: dp x cp;
  // of the routed experts: expert_dp() x expert_cp().
  int grad_dp() const { return dp * cp; }
  int expert_grad_dp() const { return expert_dp() * expert_cp(); }
  int expert_tp() const { return etp > 0 ? etp : tp; }
  // The chips of the ep group taken from the data axes (cp, dp, fsdp): ep / tp with etp = 1, else
  // ep (at least 1, so that an unvalidated layout with ep < tp still has mesh axes).
  int ep_data() const { return expert_tp() == 1 && tp > 1 ? std::max(1, ep / tp) : ep; }
  // Whether the ep group spans all of cp's chips (ep_data() a multiple of cp > 1), or is carved
  // out of part of them (a smaller ep_data()).
  bool ep_spans_cp() const { return cp > 1 && ep_data() % cp == 0; }
  bool ep_in_cp() const { return cp > 1 && ep_data() < cp; }
  // The size of the mesh axis "ep": what the ep group carves out of cp, dp or fsdp.
  int ep_axis() const { return ep_spans_cp() ? ep_data() / cp : ep_data(); }
  // Whether the mesh axis "ep" is carved out of dp (else out of cp or fsdp).
  bool ep_in_dp() const { return !ep_in_cp() && dp % ep_axis() == 0; }
  // Expert data parallelism: the dp, fsdp and cp that remain for the experts.
  int expert_dp() const { return ep_in_dp() ? dp / ep_axis() : dp; }
  int expert_fsdp() const { return ep_in_dp() || ep_in_cp() ? fsdp : fsdp / ep_axis(); }
  int expert_cp() const { return ep_spans_cp() ? 1 : ep_in_cp() ? cp / ep_data() : cp; }
  // The mesh axes of a group of the step's collectives: "tp", "pp", "cp" (with "ep" first where
  // ep is carved out of cp), "dp", "fsdp" (the attention's and dense layers' groups: with ep they
  // include the mesh axis "ep", dp with cp also cp's axes), "ep" (the dispatch/combine group:
  // with etp=1 tp's axis, "cp" where it spans all of cp, and "ep"), "etp" (expert tensor
  // parallelism: tp's axis), "expert-dp" and "expert-fsdp" (what dp, fsdp and cp keep for the
  // experts). REQUIRES: one of these names.
  std::vector<std::string> GroupAxes(std::string_view group) const;
  int data_shards() const { return dp * fsdp; }  // Chips the batch's tokens are split over.
  // Ways the batch's sequences are split: data_shards() / sequence_shards().
  int batch_shards() const { return data_shards() / sequence_shards(); }
  // Microbatches per step: the stated count, or 1. REQUIRES (for mbs= layouts): resolved.
  int microbatch_count() const { return microbatches > 0 ? microbatches : 1; }

  // "dp=2,fsdp=4,tp=8,pp=1[,cp=..][,ep=..][,etp=..][,sp=1][,microbatches=4][,mbs=2][,schedule=..][,virtual_stages=..]":
  // the canonical text, every axis written, flags only when not default (a microbatch count
  // whenever it is stated).
  std::string ToString() const;

  // The mesh axes for topology::MapMesh: dp, fsdp, tp, pp in that order (sp shares tp's group),
  // with context_shards() > 1 "cp" (sequence shards taken from dp or fsdp, which keep the
  // rest), and with ep_axis() > 1 "ep" (cp, dp or fsdp then keep the rest; listed before "cp"
  // when carved out of it, so that the cp group's ranks run through ep's chips first).
  std::vector<topology::MeshAxis> MeshAxes() const;
  // The placement order a schedule states (topology::MapMesh): `order`, or, where ep is carved
  // out of cp and no order is given, tp, ep and cp first, as Megatron-Core's ranks run tp, then
  // ep within cp, then the rest of cp (MapMesh alone places cp before ep).
  std::vector<std::string> PlacementOrder() const;
};

// Parses
// "dp=..,fsdp=..,tp=..,pp=..[,cp=..][,ep=..][,etp=..][,sp=true|false][,microbatches=..][,mbs=..]
// [,schedule=gpipe|1f1b|interleaved][,virtual_stages=..][,order=fsdp/tp/..]"; omitted axes are 1.
// Errors name the key: unknown keys get a spelling suggestion. Checks only the text; ValidateLayout
// checks it against a model and a system.
sim::StatusOr<Layout> ParseLayout(std::string_view text);

// The batch of one training step.
struct BatchSpec {
  int64_t sequences = 0;  // Global batch in sequences.
  int64_t seq = 0;        // Tokens per sequence.
  int64_t tokens() const { return sequences * seq; }
};

// `layout` with what the batch decides: its sequence shards (header; a stated value is kept and
// checked by ValidateLayout) and, with mbs=, its microbatch count, batch.sequences /
// (batch_shards() * mbs), which must divide exactly; a count stated too must agree. Errors are
// InvalidArgument naming the figures.
sim::StatusOr<Layout> ResolveLayout(const Layout& layout, const BatchSpec& batch);

// Checks `layout` against the model, the system's chip count and the batch (an mbs= layout must
// be resolved: ResolveLayout). Returns the first failure as InvalidArgument, naming the
// axis, what it must satisfy and the values, e.g.
//   "layout dp=1,fsdp=1,tp=3,pp=1: tp=3 must divide heads=64 of model 'llama3-70b'".
sim::Status ValidateLayout(const Layout& layout, const ModelSpec& model, int64_t chip_count,
                           const BatchSpec& batch);

// What one chip holds and computes under a valid layout (REQUIRES: ValidateLayout ok).
struct ShardShape {
  int64_t microbatch_sequences = 0;  // Sequences per microbatch on one chip (b).
  int64_t seq = 0;                   // T.
  int64_t tokens = 0;                // b*T: tokens a tp-sharded op processes.
  int64_t sp_tokens = 0;             // tokens / tp with sp, else tokens: for norms/residuals.
  int64_t heads = 0;                 // N / tp.
  int64_t kv_heads = 0;              // K / tp, or 1 (replicated) when tp > K.
  int64_t ffn = 0;                   // F / tp.
  int64_t vocab = 0;                 // ceil(V / tp): Megatron pads the vocabulary.
  int64_t layers_per_chunk = 0;      // ceil(L / (pp * virtual_stages)): the largest chunk.
  int64_t layers_per_stage = 0;      // The largest stage's (LayersOfStage).
};
ShardShape ShapeOf(const Layout& layout, const ModelSpec& model, const BatchSpec& batch);

// Layers of pipeline stage `stage` (0-based). When pp does not divide the layers, stages get
// ceil(L/pp) layers except that the first and last stages, then the second and second-to-last,
// ..., give up one each until the total is L: the stages holding the embedding and the head get
// fewer, as Llama 3 405B's 126 layers on 16 stages (7 on the first and last, 8 elsewhere; Llama
// Team 2024, sec. 3.3.2). With virtual stages the layers spread so over the pp * virtual_stages
// chunks (LayersOfChunk), and a stage has its chunks' layers.
int64_t LayersOfStage(const Layout& layout, const ModelSpec& model, int stage);
// The first layer of stage `stage`. REQUIRES: virtual_stages == 1.
int64_t FirstLayerOfStage(const Layout& layout, const ModelSpec& model, int stage);
// Layers of chunk (virtual stage) `chunk`, 0 <= chunk < pp * virtual_stages, chunk c of stage s
// being c * pp + s, and its first layer: consecutive chunks hold consecutive layers, spread as
// LayersOfStage spreads them over stages. That is torchtitan's default split of interleaved
// stages (generate_split_points) where L mod (pp v) is 0, pp v - 1 or pp v - 2, as 126 layers
// over 16 chunks: 7, 8 x 14, 7; otherwise torchtitan gives its extra layers to the chunks after
// the first (80 over 12: 6, 7 x 8, 6, 6, 6, where podsim has 6, 6, 7 x 8, 6, 6). Without virtual
// stages a chunk is a stage.
int64_t LayersOfChunk(const Layout& layout, const ModelSpec& model, int chunk);
int64_t FirstLayerOfChunk(const Layout& layout, const ModelSpec& model, int chunk);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_LAYOUT_H_
