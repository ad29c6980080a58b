#include "workloads/training_schedule.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/check.h"
#include "topology/chip_spec.h"
#include "workloads/eager_kernels.h"
#include "workloads/fp8_training.h"
#include "workloads/memory.h"
#include "workloads/schedule_builder.h"
#include "workloads/stage_order.h"
#include "workloads/tp_comm_overlap.h"

namespace podsim::workloads {

namespace {

bool IsDpGroup(const std::string& group) { return group == "dp" || group == "expert-dp"; }
bool IsFsdpGroup(const std::string& group) { return group == "fsdp" || group == "expert-fsdp"; }

// Parameter all-gathers: fsdp's, and dp's under the distributed optimizer (layer_ops.h), of the
// dense parameters and of the routed experts.
bool IsWeightGather(const Op& op) {
  return op.kind == OpKind::kCollective && (IsFsdpGroup(op.axis) || IsDpGroup(op.axis)) &&
         op.collective == collectives::CollectiveOp::kAllGather;
}

// Streams by group name (Layout::GroupAxes); fsdp's gradient reduce-scatters on their own.
std::string StreamOf(const Op& op) {
  if (op.kind != OpKind::kCollective) return "compute";
  if (IsFsdpGroup(op.axis) && op.collective == collectives::CollectiveOp::kReduceScatter) {
    return op.axis + ".reduce";
  }
  return op.axis;
}

// Whether `op` ends a segment of its unit for OpOptions::ep_comm_overlap: an expert all-to-all.
bool EndsOverlapSegment(const schedule::Op& op) {
  return op.kind() == schedule::COLLECTIVE && op.stream() == "ep" &&
         op.collective() == schedule::ALL_TO_ALL;
}

// Writes into `order` [begin, end) the new order of `program`'s ops [begin, end), a backward unit
// [begin, mid) and the forward unit [mid, end) after it, as DualPipe's overlapped chunk
// (OpOptions::ep_comm_overlap): each unit cut after every expert all-to-all, the pieces
// alternating, the backward's first, so that each all-to-all is in flight while the other unit
// computes (the backward's combine behind the forward's attention, the forward's dispatch behind
// the backward's experts, and so on). Each unit keeps its own order; an op of the forward that
// waits for one of the backward goes after it.
void InterleaveOverlappedPair(const schedule::Program& program, int begin, int mid, int end,
                              std::vector<int>* order) {
  std::vector<char> placed(end - begin, 0);
  int at = begin;
  int next[2] = {begin, mid};
  const int stop[2] = {mid, end};
  auto place = [&](int i) {
    (*order)[at++] = i;
    placed[i - begin] = 1;
  };
  // Places unit u's ops up to the end of its next segment; false when it has none left.
  auto place_segment = [&](int u) {
    if (next[u] == stop[u]) return false;
    while (next[u] < stop[u]) {
      const int i = next[u]++;
      if (u == 1) {
        for (int dep : program.ops(i).deps()) {
          while (dep >= begin && dep < mid && !placed[dep - begin]) place(next[0]++);
        }
      }
      place(i);
      if (EndsOverlapSegment(program.ops(i))) break;
    }
    return true;
  };
  for (bool more = true; more;) {
    const bool backward = place_segment(0);
    const bool forward = place_segment(1);
    more = backward || forward;
  }
}

// Puts `program`'s op order[k] at position k, renumbering every dependency. REQUIRES: `order` is
// a permutation under which every op still follows its dependencies.
void ReorderOps(schedule::Program* program, const std::vector<int>& order) {
  const int n = program->ops_size();
  std::vector<int> renumber(n);
  for (int k = 0; k < n; ++k) renumber[order[k]] = k;
  // Moves the ops by swapping pointers: at[p] is the old index of the op now at position p.
  std::vector<int> at(n), where(n);
  for (int i = 0; i < n; ++i) at[i] = where[i] = i;
  for (int k = 0; k < n; ++k) {
    const int q = where[order[k]];
    if (q == k) continue;
    program->mutable_ops()->SwapElements(k, q);
    std::swap(at[k], at[q]);
    where[at[k]] = k;
    where[at[q]] = q;
  }
  for (int k = 0; k < n; ++k) {
    schedule::Op* op = program->mutable_ops(k);
    for (int d = 0; d < op->deps_size(); ++d) {
      op->set_deps(d, renumber[op->deps(d)]);
      PODSIM_CHECK(static_cast<int>(op->deps(d)) < k)
          << "reordered op " << k << " depends on a later op";
    }
  }
}

// The first compute op of `program` from index `from` on (-1: none).
int FirstCompute(const schedule::Program& program, int from) {
  for (int i = from; i < program.ops_size(); ++i) {
    if (program.ops(i).stream() == "compute") return i;
  }
  return -1;
}

class StageBuilder {
 public:
  // `fsdp_sync_last_microbatch`: OpOptions' (fsdp's reduce-scatters in the last microbatch);
  // `overlap_grad_reduce`, `overlap_param_gather`: OpOptions' (false: Append gathers up the dp
  // reductions, or the dp parameter gathers, and ExposeGradReductions or ExposeParamGathers
  // issues them as Megatron-Core does without overlap).
  StageBuilder(schedule::Program* program, const Layout& layout, bool fsdp_sync_last_microbatch,
               bool overlap_grad_reduce, bool overlap_param_gather)
      : program_(program),
        layout_(layout),
        fsdp_sync_last_(fsdp_sync_last_microbatch),
        overlap_grad_reduce_(overlap_grad_reduce),
        overlap_param_gather_(overlap_param_gather) {}

  // Appends `list`; compute ops without deps wait for `input` (-1: none); weight all-gathers wait
  // for the first compute op of the previous layer. The dp collectives run once per step: the
  // gradient reductions in the last microbatch (`last_microbatch`), the distributed optimizer's
  // parameter gathers in the first (microbatch 0); the other microbatches drop them. Returns the
  // index of the list's last compute op (-1: none).
  //
  // Under fsdp_sync_last_microbatch, FSDP2 as torch.distributed.pipelining runs it (each backward
  // with gradient sync and resharding off, then post_backward for the whole stage after its last
  // one: stage.py's backward_maybe_with_nosync since pytorch/pytorch#134052, September 2024):
  // fsdp's weight gathers in the first microbatch's forwards only, the weights then kept all
  // step, and its reduce-scatters in the last microbatch only, each waiting for the end of its
  // unit's backward (DeferReductions).
  int Append(const OpList& list, int input, const StageUnit& unit, int layer,
             bool last_microbatch) {
    std::vector<int> index(list.size(), -1);
    int first_compute = -1, last_compute = -1;
    const int gather_after = previous_layer_start_;
    for (size_t i = 0; i < list.size(); ++i) {
      const Op& op = list[i];
      if (op.kind == OpKind::kCollective && IsDpGroup(op.axis) &&
          !(IsWeightGather(op) ? unit.microbatch == 0 : last_microbatch)) {
        continue;
      }
      if (op.kind == OpKind::kCollective && IsDpGroup(op.axis) &&
          !(IsWeightGather(op) ? overlap_param_gather_ : overlap_grad_reduce_)) {
        // Issued as one bucket a model chunk after the step's compute (ExposeGradReductions) or
        // before it (ExposeParamGathers).
        auto& gathered = IsWeightGather(op) ? param_gathers_ : grad_reductions_;
        auto [it, added] = gathered.try_emplace({unit.chunk, op.axis}, op);
        if (!added) it->second.comm_bytes += op.comm_bytes;
        continue;
      }
      const bool fsdp_reduction = op.kind == OpKind::kCollective && IsFsdpGroup(op.axis) &&
                                  op.collective == collectives::CollectiveOp::kReduceScatter;
      if (fsdp_sync_last_ &&
          ((fsdp_reduction && !last_microbatch) ||
           (IsFsdpGroup(op.axis) && IsWeightGather(op) && unit.microbatch > 0))) {
        continue;
      }
      schedule::Op* out = AddScheduleOp(program_, op, StreamOf(op));
      if (op.kind == OpKind::kCollective) {
        out->clear_axes();
        for (const std::string& axis : GroupAxes(op.axis)) out->add_axes(axis);
      }
      index[i] = program_->ops_size() - 1;
      if (fsdp_sync_last_ && fsdp_reduction) deferred_.push_back(index[i]);
      out->set_microbatch(unit.microbatch);
      out->set_layer(layer);
      for (int dep : op.deps) {
        if (index[dep] >= 0) out->add_deps(index[dep]);
      }
      if (op.kind == OpKind::kCollective) {
        if (IsWeightGather(op) && gather_after >= 0) out->add_deps(gather_after);
        continue;
      }
      if (out->deps().empty() && input >= 0) out->add_deps(input);
      if (first_compute < 0) first_compute = index[i];
      last_compute = index[i];
    }
    if (first_compute >= 0) previous_layer_start_ = first_compute;
    return last_compute;
  }

  // Layout::GroupAxes, once per group name (every layer's collectives ask it again).
  const std::vector<std::string>& GroupAxes(const std::string& group) {
    auto it = group_axes_.find(group);
    if (it == group_axes_.end()) it = group_axes_.emplace(group, layout_.GroupAxes(group)).first;
    return it->second;
  }

  // The fsdp reduce-scatters appended since the last call, to wait for op `op` (the unit's last
  // compute op) and to move after the unit's ops: under fsdp_sync_last_microbatch (Append),
  // done by MoveDeferredReductions once the stage is built.
  void DeferReductions(int op) {
    if (op >= 0 && !deferred_.empty()) {
      deferrals_.push_back({op, program_->ops_size(), std::move(deferred_)});
    }
    deferred_.clear();
  }
  // Moves each unit's deferred reduce-scatters, and the collectives that wait for them (HSDP's dp
  // reductions), after the unit's last op, each reduce-scatter waiting for the unit's last compute
  // op. Units keep their ops, so their boundaries stay; the gather anchor (an index) may not, and
  // only the optimizer's ops, which gather nothing, are appended after.
  void MoveDeferredReductions() {
    if (deferrals_.empty()) return;
    std::vector<int> order(program_->ops_size());
    for (int i = 0; i < program_->ops_size(); ++i) order[i] = i;
    std::vector<char> moved(program_->ops_size(), 0);
    for (const Deferral& d : deferrals_) {
      const int begin = d.reductions.front();
      for (int r : d.reductions) {
        moved[r] = 1;
        program_->mutable_ops(r)->add_deps(d.anchor);
      }
      for (int i = begin; i < d.end; ++i) {
        const schedule::Op& op = program_->ops(i);
        if (moved[i] || op.kind() != schedule::COLLECTIVE) continue;
        for (uint32_t dep : op.deps()) {
          if (moved[dep]) moved[i] = 1;
        }
      }
      int at = begin;
      for (int i = begin; i < d.end; ++i) {
        if (!moved[i]) order[at++] = i;
      }
      for (int i = begin; i < d.end; ++i) {
        if (moved[i]) order[at++] = i;
      }
    }
    ReorderOps(program_, order);
    deferrals_.clear();
  }

  // Without OpOptions::overlap_grad_reduce, Megatron-Core's finalize_model_grads after the last
  // backward: each model chunk's gradient buffer reduced over dp in one bucket (Megatron-Core
  // buckets nothing without overlap), the dense buffer's then the experts', chunk after chunk,
  // each waiting for the one before (synchronous), the first for the stage's last compute op and
  // its last send. Appended: call once the units are built and ordered, before the optimizer.
  void ExposeGradReductions() {
    if (grad_reductions_.empty()) return;
    int last_compute = -1, last_send = -1;
    for (int i = program_->ops_size(); i-- > 0 && (last_compute < 0 || last_send < 0);) {
      const schedule::Op& op = program_->ops(i);
      if (last_compute < 0 && op.stream() == "compute") last_compute = i;
      if (last_send < 0 && op.kind() == schedule::SEND) last_send = i;
    }
    int previous = -1;
    for (auto& [key, op] : grad_reductions_) {
      op.deps.clear();
      op.name = key.second + (op.collective == collectives::CollectiveOp::kReduceScatter
                                  ? ".reduce-scatter.grads"
                                  : ".all-reduce.grads");
      schedule::Op* out = AddBucket(key, op);
      for (int dep : {last_compute, last_send, previous}) {
        if (dep >= 0) out->add_deps(dep);
      }
      previous = program_->ops_size() - 1;
    }
    grad_reductions_.clear();
  }

  // Without OpOptions::overlap_param_gather, Megatron-Core's synchronous parameter gathers at the
  // end of the distributed optimizer's step: one all-gather a model chunk and dp group of every
  // parameter Append gathered up, chunk after chunk, the dense buffer's then the experts', each
  // waiting for the one before, first in the program, the stage's first compute op waiting for
  // the last (the end of the previous step in the steady state). Call once the units are built
  // and ordered.
  void ExposeParamGathers() {
    if (param_gathers_.empty()) return;
    const int n = program_->ops_size();
    std::vector<int> order;
    for (auto& [key, op] : param_gathers_) {
      op.deps.clear();
      op.name = key.second + ".all-gather.params";
      AddBucket(key, op);
      order.push_back(program_->ops_size() - 1);
    }
    const int gathers = static_cast<int>(order.size());
    for (int i = 0; i < n; ++i) order.push_back(i);
    ReorderOps(program_, order);
    for (int g = 1; g < gathers; ++g) program_->mutable_ops(g)->add_deps(g - 1);
    const int first = FirstCompute(*program_, gathers);
    PODSIM_CHECK(first >= 0) << "a stage without compute";
    program_->mutable_ops(first)->add_deps(gathers - 1);
    param_gathers_.clear();
  }

  // Makes the next layer's weight gathers wait for op `op` (a compute op) instead of the first
  // compute op of the layer appended last.
  void AnchorGathers(int op) { previous_layer_start_ = op; }

  // Adds HBM held from the end of op `op` on (activations saved for the backward) or released
  // there. REQUIRES: op >= 0.
  void Hold(int op, double bytes) {
    PODSIM_CHECK(op >= 0) << "HBM held by no op";
    schedule::Op* out = program_->mutable_ops(op);
    out->set_hbm_alloc_bytes(out->hbm_alloc_bytes() + bytes);
  }
  void Release(int op, double bytes) {
    PODSIM_CHECK(op >= 0) << "HBM released by no op";
    schedule::Op* out = program_->mutable_ops(op);
    out->set_hbm_free_bytes(out->hbm_free_bytes() + bytes);
  }

  int Recv(const StageUnit& unit, int offset, uint64_t tag, double bytes) {
    schedule::Op* op = program_->add_ops();
    op->set_name(unit.forward ? "pp.recv.activations" : "pp.recv.gradients");
    op->set_kind(schedule::RECV);
    op->set_stream("pp.recv");
    op->set_peer_axis("pp");
    op->set_peer_offset(offset);
    op->set_tag(tag);
    op->set_bytes(bytes);
    op->set_microbatch(unit.microbatch);
    return program_->ops_size() - 1;
  }

  void Send(const StageUnit& unit, int offset, uint64_t tag, double bytes, int after) {
    schedule::Op* op = program_->add_ops();
    op->set_name(unit.forward ? "pp.send.activations" : "pp.send.gradients");
    op->set_kind(schedule::SEND);
    op->set_stream("pp");
    op->set_peer_axis("pp");
    op->set_peer_offset(offset);
    op->set_tag(tag);
    op->set_bytes(bytes);
    op->set_microbatch(unit.microbatch);
    if (after >= 0) op->add_deps(after);
  }

  // The last op of every gradient-reduction stream, for the optimizer to wait for.
  std::vector<int> LastReductions() const {
    // One pass from the end over the collectives (a stream missing from the stage, as dp's at
    // dp=1, had each stream's search compare every op's stream).
    constexpr std::string_view kStreams[] = {"fsdp.reduce", "dp", "expert-fsdp.reduce",
                                             "expert-dp"};
    int found[std::size(kStreams)] = {-1, -1, -1, -1};
    size_t left = std::size(kStreams);
    for (int i = program_->ops_size(); i-- > 0 && left > 0;) {
      const schedule::Op& op = program_->ops(i);
      if (op.kind() != schedule::COLLECTIVE) continue;
      for (size_t s = 0; s < std::size(kStreams); ++s) {
        if (found[s] < 0 && op.stream() == kStreams[s]) {
          found[s] = i;
          --left;
        }
      }
    }
    std::vector<int> last;
    for (int i : found) {
      if (i >= 0) last.push_back(i);
    }
    return last;
  }

 private:
  schedule::Program* program_;
  const Layout& layout_;
  const bool fsdp_sync_last_;
  const bool overlap_grad_reduce_;
  const bool overlap_param_gather_;
  // Per model chunk and dp group ("dp" before "expert-dp"), its gradient reductions or parameter
  // gathers gathered up (!overlap_grad_reduce_, !overlap_param_gather_): the first one's op with
  // every one's bytes.
  using BucketKey = std::pair<int, std::string>;
  std::map<BucketKey, Op> grad_reductions_;
  std::map<BucketKey, Op> param_gathers_;
  // Appends bucket `op` of `key` on its group's stream and axes, in the last microbatch (a
  // reduction) or the first (a gather), of no layer.
  schedule::Op* AddBucket(const BucketKey& key, const Op& op) {
    schedule::Op* out = AddScheduleOp(program_, op, StreamOf(op));
    out->clear_axes();
    for (const std::string& axis : GroupAxes(key.second)) out->add_axes(axis);
    out->set_microbatch(IsWeightGather(op) ? 0 : layout_.microbatch_count() - 1);
    out->set_layer(-1);
    return out;
  }
  std::map<std::string, std::vector<std::string>, std::less<>> group_axes_;
  int previous_layer_start_ = -1;
  std::vector<int> deferred_;  // Append's, for DeferReductions.
  struct Deferral {
    int anchor;                   // The unit's last compute op.
    int end;                      // One past the unit's last op.
    std::vector<int> reductions;  // Its fsdp reduce-scatters, in order.
  };
  std::vector<Deferral> deferrals_;
};

// The head's HBM in the forward, as memory.h counts it: its saved tensors (the unembedding's input
// and the logits) from the end of the op the loss reads to the end of the head's backward, and the
// loss's transient (loss_peak_bytes: its fp32 copies) on top of them while its forward kernels
// run, the step's peak where the vocabulary is large. Ops begin..last are the head forward's.
void HoldHead(StageBuilder* builder, const schedule::Program& program, int begin, int last,
              double saved, double loss_peak) {
  int first_loss = -1, last_loss = -1;
  for (int i = begin; i <= last; ++i) {
    if (program.ops(i).kind() != schedule::LOSS) continue;
    if (first_loss < 0) first_loss = i;
    last_loss = i;
  }
  if (first_loss < 0 || program.ops(first_loss).deps().empty()) {
    builder->Hold(last, saved);
    return;
  }
  const int logits = program.ops(first_loss).deps(0);
  builder->Hold(logits, saved + loss_peak);
  builder->Release(last_loss, loss_peak);
}

}  // namespace

schedule::Schedule TrainingSchedule(const topology::System& system, const ModelSpec& model,
                                    const Layout& layout, const BatchSpec& batch,
                                    const OpOptions& options) {
  schedule::Schedule out;
  BuildTrainingSchedule(system, model, layout, batch, options, &out);
  return out;
}

void BuildTrainingSchedule(const topology::System& system, const ModelSpec& model,
                           const Layout& layout, const BatchSpec& batch,
                           const OpOptions& stated_options, schedule::Schedule* schedule) {
  PODSIM_CHECK(schedule->programs_size() == 0) << "BuildTrainingSchedule into a non-empty schedule";
  const OpOptions options = WithLayoutDefaults(stated_options, layout);
  schedule::Schedule& out = *schedule;
  out.set_system(system.name);
  AddMesh(&out, layout.MeshAxes());
  for (const std::string& axis : layout.PlacementOrder()) out.add_order(axis);
  out.set_tokens_per_step(batch.tokens());
  out.set_description("train " + model.name + " " + layout.ToString() + " batch " +
                      std::to_string(batch.sequences) + "x" + std::to_string(batch.seq));

  const ShardShape shape = ShapeOf(layout, model, batch);
  // TE's userbuffers overlap the transformer layers' tp communication (not the embedding's or
  // the head's, which are Megatron's own parallel layers). Index 0: dense layers, 1: MoE layers.
  const int overlap_tp = options.tp_comm_overlap ? layout.tp : 1;
  // Index [moe][recomputes]: 0 dense and 1 MoE layers; 1 the layers that run options.recompute
  // and 0 those that keep everything, where options.recompute_layers leaves some out.
  OpList layer_fwd_run[2][2], layer_bwd_run[2][2];
  // The forwards of a chunk's later microbatches, which read Transformer Engine's cached fp8
  // weights (fp8_training.h); the same as layer_fwd_run otherwise.
  OpList layer_fwd_cached[2][2];
  double layer_saved[2][2] = {};
  // Held from a layer backward's first op to its last while it recomputes its forward (memory.h).
  double layer_transient[2][2] = {};
  const bool some_layers_keep = options.recompute != RecomputePolicy::kNone &&
                                options.recompute_layers.kind != RecomputeLayers::Kind::kAll;
  for (int moe = 0; moe < (model.moe() ? 2 : 1); ++moe) {
    const MlpKind mlp = moe ? MlpKind::kMoe : MlpKind::kDense;
    for (int recomputes = some_layers_keep ? 0 : 1; recomputes < 2; ++recomputes) {
      OpOptions layer_options = options;
      if (recomputes == 0) layer_options.recompute = RecomputePolicy::kNone;
      const OpList fwd = LayerForwardOps(model, layout, shape, layer_options, mlp);
      OpList& fwd_run = layer_fwd_run[moe][recomputes];
      OpList& fwd_cached = layer_fwd_cached[moe][recomputes];
      OpList& bwd_run = layer_bwd_run[moe][recomputes];
      fwd_run = OverlapTpCommunication(fwd, overlap_tp);
      bwd_run = OverlapTpCommunication(LayerBackwardOps(model, layout, shape, layer_options, mlp),
                                       overlap_tp);
      fwd_cached = fwd_run;
      if (options.fp8) {
        const double e = options.precision.activation_bytes;
        const bool te = options.fp8_library == Fp8Library::kTransformerEngine;
        Fp8Rewrite rewrite;
        rewrite.library = options.fp8_library;
        rewrite.recipe = options.fp8_recipe;
        rewrite.columnwise_copies = Fp8ColumnwiseCopies(options, system.chip);
        rewrite.weight_shards = options.fp8_all_gather ? layout.fsdp : 1;
        rewrite.expert_weight_shards = options.fp8_all_gather ? layout.expert_fsdp() : 1;
        // torchao casts the weights in every forward and recomputed forward, Transformer Engine
        // in a chunk's first forward of the step where it keeps them, and none with fp8
        // parameters (fp8_training.h).
        const bool cache = Fp8WeightCache(options, layout);
        const bool fp8_params = te && options.fp8_all_gather;
        Fp8Rewrite first = rewrite, cached = rewrite, backward = rewrite;
        first.cast_weights = !fp8_params;
        cached.cast_weights = !fp8_params && !cache;
        backward.cast_weights = !fp8_params && !cache;
        backward.transpose_weights = fp8_params && rewrite.columnwise_copies &&
                                     (layout.fsdp > 1 || layout.expert_fsdp() > 1);
        const OpList plain = fwd_cached;
        fwd_run = Float8Linears(plain, e, first);
        fwd_cached = Float8Linears(plain, e, cached);
        bwd_run = Float8Linears(bwd_run, e, backward);
      }
      if (options.kernels == KernelLibrary::kEager) {
        const double e = options.precision.activation_bytes;
        fwd_run = EagerKernels(fwd_run, model, e);
        fwd_cached = EagerKernels(fwd_cached, model, e);
        bwd_run = EagerKernels(bwd_run, model, e);
      }
      layer_saved[moe][recomputes] = LayerActivationBytes(fwd, layer_options);
      layer_transient[moe][recomputes] = RecomputeTransientBytes(fwd, layer_options);
    }
  }
  // Whether layer `l` of a chunk whose first layer is the stage's `in_stage`-th runs
  // options.recompute (a chip's layers in model order are its chunks' in turn).
  auto variant = [&](int in_stage, int l) {
    return !some_layers_keep || options.recompute_layers.Recomputes(in_stage + l, l) ? 1 : 0;
  };
  const OpList embed_fwd = EmbeddingForwardOps(model, layout, shape, options);
  const OpList embed_bwd = EmbeddingBackwardOps(model, layout, shape, options);
  OpList head_fwd = HeadForwardOps(model, layout, shape, options);
  OpList head_bwd = HeadBackwardOps(model, layout, shape, options);
  if (options.kernels == KernelLibrary::kEager) {
    head_fwd = EagerKernels(head_fwd, model, options.precision.activation_bytes);
    head_bwd = EagerKernels(head_bwd, model, options.precision.activation_bytes);
  }
  head_fwd = LossKernels(head_fwd, options.precision.activation_bytes, options.loss);
  head_bwd = LossKernels(head_bwd, options.precision.activation_bytes, options.loss);
  const int pp = layout.pp;
  const int v = layout.virtual_stages;
  const int m = layout.microbatch_count();
  const int virtual_stages = pp * v;
  // Activations and their gradients between stages: [tokens, D] in the working precision, split
  // over tp with sequence parallelism (Megatron's scatter/gather optimisation otherwise sends
  // the same 1/tp share and gathers over NVLink; podsim sends the full tensor without sp).
  const double boundary_bytes = options.precision.activation_bytes *
                                static_cast<double>(shape.sp_tokens) *
                                static_cast<double>(model.d_model);
  auto tag = [&](int microbatch, int chunk, bool forward) {
    return static_cast<uint64_t>((microbatch * v + chunk) * 2 + (forward ? 0 : 1));
  };
  auto offset_to = [&](int from_virtual, int to_virtual) {
    return to_virtual % pp - from_virtual % pp;
  };
  // HBM (memory.h, at its granularity): a layer's saved activations (LayerActivationBytes) are
  // held from the end of its forward to the end of its backward, the embedding's and the head's
  // saved tensors likewise; everything else StageMemory counts is held all step.
  double embed_saved = 0, head_saved = 0;
  for (const Op& op : embed_fwd) embed_saved += op.saved_bytes;
  for (const Op& op : head_fwd) head_saved += op.saved_bytes;

  for (int stage = 0; stage < pp; ++stage) {
    schedule::Program* program = out.add_programs();
    program->set_name("stage " + std::to_string(stage));
    (*program->mutable_where())["pp"] = stage;
    StageBuilder builder(program, layout, options.fsdp_sync_last_microbatch,
                         options.overlap_grad_reduce, options.overlap_param_gather);
    const MemoryBreakdown memory = StageMemory(model, layout, batch, options, system.chip, stage);
    // The loss's and the recomputation's peaks are transient, not held over the step.
    program->set_static_hbm_bytes(memory.StaticBytes());
    const std::vector<StageUnit> units = StageOrder(layout, stage, options.ep_comm_overlap);
    std::vector<int> unit_begin;  // Each unit's first op; the last entry ends the last unit.
    for (size_t u = 0; u < units.size(); ++u) {
      const StageUnit& unit = units[u];
      unit_begin.push_back(program->ops_size());
      if (options.ep_comm_overlap && unit.forward && u > 0 && !units[u - 1].forward) {
        // The forward runs overlapped with the backward before it: its first weight gather waits
        // for that backward's start, not for its last layer (which would put the whole
        // backward before the forward's first piece).
        builder.AnchorGathers(FirstCompute(*program, unit_begin[u - 1]));
      }
      const int vs = unit.chunk * pp + stage;
      const int layers = static_cast<int>(LayersOfChunk(layout, model, vs));
      const int first_layer = static_cast<int>(FirstLayerOfChunk(layout, model, vs));
      // The chunk's first layer's index among the stage's (RecomputeLayers).
      int in_stage = 0;
      for (int c = 0; c < unit.chunk; ++c) {
        in_stage += static_cast<int>(LayersOfChunk(layout, model, c * pp + stage));
      }
      const bool last_microbatch = unit.microbatch == m - 1;
      if (unit.forward) {
        int input = -1;
        if (vs == 0) {
          input = builder.Append(embed_fwd, -1, unit, -1, last_microbatch);
          builder.Hold(input, embed_saved);
        } else {
          input = builder.Recv(unit, offset_to(vs, vs - 1),
                               tag(unit.microbatch, (vs - 1) / pp, true), boundary_bytes);
        }
        for (int l = 0; l < layers; ++l) {
          const int moe = model.IsMoeLayer(first_layer + l) ? 1 : 0;
          const int re = variant(in_stage, l);
          const OpList& ops =
              unit.microbatch == 0 ? layer_fwd_run[moe][re] : layer_fwd_cached[moe][re];
          input = builder.Append(ops, input, unit, first_layer + l, last_microbatch);
          builder.Hold(input, layer_saved[moe][re]);
        }
        if (vs == virtual_stages - 1) {
          const int begin = program->ops_size();
          const int last = builder.Append(head_fwd, input, unit, -1, last_microbatch);
          HoldHead(&builder, *program, begin, last, head_saved, memory.loss_peak_bytes);
        } else {
          builder.Send(unit, offset_to(vs, vs + 1), tag(unit.microbatch, unit.chunk, true),
                       boundary_bytes, input);
        }
      } else {
        int input = -1;
        if (vs == virtual_stages - 1) {
          input = builder.Append(head_bwd, -1, unit, -1, last_microbatch);
          builder.Release(input, head_saved);
        } else {
          input = builder.Recv(unit, offset_to(vs, vs + 1),
                               tag(unit.microbatch, (vs + 1) / pp, false), boundary_bytes);
        }
        for (int l = layers; l-- > 0;) {
          const int moe = model.IsMoeLayer(first_layer + l) ? 1 : 0;
          const int re = variant(in_stage, l);
          const int begin = program->ops_size();
          input =
              builder.Append(layer_bwd_run[moe][re], input, unit, first_layer + l, last_microbatch);
          if (layer_transient[moe][re] > 0) {
            builder.Hold(FirstCompute(*program, begin), layer_transient[moe][re]);
            builder.Release(input, layer_transient[moe][re]);
          }
          builder.Release(input, layer_saved[moe][re]);
        }
        if (vs == 0) {
          input = builder.Append(embed_bwd, input, unit, -1, last_microbatch);
          builder.Release(input, embed_saved);
        } else {
          builder.Send(unit, offset_to(vs, vs - 1), tag(unit.microbatch, unit.chunk, false),
                       boundary_bytes, input);
        }
        builder.DeferReductions(input);
      }
    }
    unit_begin.push_back(program->ops_size());
    builder.MoveDeferredReductions();
    if (options.ep_comm_overlap) {
      // Each backward with the forward after it: 1F1B's steady state (ValidateEpCommOverlap).
      // The last unit is a cool-down backward, never paired, so the builder's gather anchor
      // (an index, taken again by the optimizer below) is not moved.
      std::vector<int> order(program->ops_size());
      for (int i = 0; i < program->ops_size(); ++i) order[i] = i;
      for (size_t u = 0; u + 1 < units.size(); ++u) {
        if (units[u].forward || !units[u + 1].forward) continue;
        InterleaveOverlappedPair(*program, unit_begin[u], unit_begin[u + 1], unit_begin[u + 2],
                                 &order);
        ++u;
      }
      PODSIM_CHECK(!units.back().forward) << "an overlapped pair ends the stage";
      ReorderOps(program, order);
    }
    builder.ExposeGradReductions();
    builder.ExposeParamGathers();
    const std::vector<int> reductions = builder.LastReductions();
    double expert_params = 0;
    const double params = ParamsPerChip(model, layout, stage, nullptr, &expert_params);
    OpList optimizer = OptimizerOps(params, layout, options, expert_params);
    const int before = program->ops_size();
    builder.Append(optimizer, -1, StageUnit{}, -1, true);
    for (int r : reductions) program->mutable_ops(before)->add_deps(r);
    if (memory.optimizer_step_bytes > 0 && before > 0) {
      // The step's fp32 gradient shard (memory.h): made before the update, dropped after it.
      builder.Hold(before - 1, memory.optimizer_step_bytes);
      builder.Release(before, memory.optimizer_step_bytes);
    }
  }
}

}  // namespace podsim::workloads
