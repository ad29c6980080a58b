#include "workloads/moe_ops.h"

#include <string>

namespace podsim::workloads::layer_build {
namespace {

using collectives::CollectiveOp;

// Router probabilities and expert indices are fp32 / int32: 4 bytes per routed copy.
constexpr double kRoutingBytes = 4;

// The sizes of the block on one chip (moe_ops.h header comment).
struct MoeSizes {
  double t = 0;        // Tokens entering the block on this chip.
  double k = 0;        // Experts per token.
  double experts = 0;  // E.
  double rows = 0;     // Rows through the local experts' grouped GEMMs.
  double local = 0;    // Local experts: E / ep.
  int ep = 1;          // The dispatch group.
  int etp = 1;         // Expert tensor parallelism.
  // Megatron's dispatcher sorts the received rows by local expert (and back before the combine)
  // when more than one expert is local and rows came from other chips (sort_chunks_by_idxs).
  bool sorts = false;
  double a2a_bytes = 0;  // V of each all-to-all: the group's routed copies.
  // V of the dispatch and of the backward's combine (Dims::dispatch_e a copy's element).
  double dispatch_bytes = 0;
  double etp_bytes = 0;  // V of the etp all-gather and reduce-scatter.
};

MoeSizes SizesOf(const ModelSpec& model, const Layout& layout, const Dims& d) {
  MoeSizes s;
  s.t = d.sp_tok;
  s.k = D(model.top_k);
  s.experts = D(model.experts);
  s.ep = layout.ep;
  s.etp = layout.expert_tp();
  s.local = s.experts / s.ep;
  s.rows = s.t * s.k * s.etp;
  s.a2a_bytes = s.ep * s.t * s.k * d.d * d.e;
  s.dispatch_bytes = s.ep * s.t * s.k * d.d * d.dispatch_e;
  s.etp_bytes = s.rows * d.d * d.e;
  s.sorts = s.local > 1 && (s.ep > 1 || s.etp > 1);
  return s;
}

MlpPart RoutedExperts(const ModelSpec& model, const MoeSizes& s) {
  return {"moe.experts", s.rows, s.rows, D(model.expert_ffn) / s.etp, s.local, model.gated_mlp};
}

MlpPart SharedExperts(const ModelSpec& model, const Layout& layout, const Dims& d) {
  // Its input, mlp.norm's output, is kept once: by moe.router (framework.h: torchtitan's gathered
  // MoE input under tp is not modelled).
  return {"moe.shared", d.tok, 0, D(model.shared_ffn) / layout.tp, 1, model.gated_mlp};
}

// A permutation of the rows through HBM: read and written once.
Op Sort(const Builder& b, std::string name, const MoeSizes& s, const Dims& d, Phase phase) {
  Op op = b.Base(std::move(name), OpKind::kElementwise, phase);
  op.hbm_read_bytes = d.e * s.rows * d.d;
  op.hbm_write_bytes = d.e * s.rows * d.d;
  op.output_bytes = op.hbm_write_bytes;
  return op;
}

}  // namespace

void AppendMoeForward(Builder& b, const ModelSpec& model, const Layout& layout, const Dims& d,
                      Phase phase, int dense_gather, int expert_gather) {
  const MoeSizes s = SizesOf(model, layout, d);
  const int input = b.last();
  Op router = b.Matmul("moe.router", s.t, d.d, s.experts, d.e, phase);
  router.saved_bytes = d.e * s.t * d.d;  // Its input.
  b.Add(router, {dense_gather});
  Op topk = b.Elementwise("moe.router.topk", OpKind::kElementwise, s.t * s.experts, kSoftmaxFlops,
                          1, 1, d.e);
  topk.saved_bytes = kRoutingBytes * s.t * s.k;  // The chosen experts' probabilities.
  b.Add(topk);
  Op permute = b.Base("moe.permute", OpKind::kElementwise, phase);
  permute.hbm_read_bytes = d.e * s.t * d.d + kRoutingBytes * s.t * s.k;
  permute.hbm_write_bytes = d.e * s.t * s.k * d.d;
  permute.output_bytes = permute.hbm_write_bytes;
  b.Add(permute, {input});
  if (s.ep > 1) {
    b.Add(b.Collective("ep.all-to-all.dispatch", CollectiveOp::kAllToAll, "ep", s.dispatch_bytes,
                       /*blocking=*/true, phase));
  }
  if (s.etp > 1) {
    b.Add(b.Collective("etp.all-gather.moe", CollectiveOp::kAllGather, "etp", s.etp_bytes,
                       /*blocking=*/true, phase));
  }
  if (s.sorts) b.Add(Sort(b, "moe.sort", s, d, phase));
  AppendMlpCore(b, d, RoutedExperts(model, s), phase, expert_gather);
  if (s.sorts) b.Add(Sort(b, "moe.unsort", s, d, phase));
  if (s.etp > 1) {
    b.Add(b.Collective("etp.reduce-scatter.moe", CollectiveOp::kReduceScatter, "etp", s.etp_bytes,
                       /*blocking=*/true, phase));
  }
  if (s.ep > 1) {
    b.Add(b.Collective("ep.all-to-all.combine", CollectiveOp::kAllToAll, "ep", s.a2a_bytes,
                       /*blocking=*/true, phase));
  }
  Op unpermute = b.Base("moe.unpermute", OpKind::kElementwise, phase);
  unpermute.flops = 2 * s.t * s.k * d.d;  // Scale by the probability, add.
  unpermute.hbm_read_bytes = d.e * s.t * s.k * d.d + kRoutingBytes * s.t * s.k;
  unpermute.hbm_write_bytes = d.e * s.t * d.d;
  unpermute.output_bytes = unpermute.hbm_write_bytes;
  // The experts' outputs, for the gradient of the probabilities.
  unpermute.saved_bytes = d.e * s.t * s.k * d.d;
  const int routed = b.Add(unpermute);
  if (model.shared_ffn == 0) return;
  b.set_last(input);
  SpGather(b, d, "moe.shared", phase);
  AppendMlpCore(b, d, SharedExperts(model, layout, d), phase, dense_gather);
  TpReduce(b, d, "moe.shared", phase);
  Op sum = b.Elementwise("moe.sum", OpKind::kElementwise, s.t * d.d, kAddFlops, 2, 1, d.e);
  sum.deps = {routed, b.last()};
  b.Add(sum);
}

void AppendMoeBackward(Builder& b, const OpList& fwd, const ModelSpec& model, const Layout& layout,
                       const Dims& d, std::vector<int>* dense_dws, std::vector<int>* expert_dws) {
  const MoeSizes s = SizesOf(model, layout, d);
  const int dy = b.last();
  std::vector<int> grads;  // Gradients of the block's input, summed at the end.
  if (model.shared_ffn > 0) {
    SpGather(b, d, "moe.shared.dx", Phase::kBackwardInput);
    AppendMlpCoreBackward(b, fwd, d, SharedExperts(model, layout, d), dense_dws,
                          /*tp_reduced=*/true);
    grads.push_back(b.last());
    b.set_last(dy);
  }
  Op unpermute = b.Base("moe.unpermute.dx", OpKind::kElementwise, Phase::kBackwardInput);
  unpermute.flops = 2 * s.t * s.k * d.d;
  unpermute.hbm_read_bytes = d.e * s.t * d.d + d.e * s.t * s.k * d.d;
  unpermute.hbm_write_bytes = d.e * s.t * s.k * d.d + kRoutingBytes * s.t * s.k;
  const int probs = b.Add(unpermute);
  if (s.ep > 1) {
    b.Add(b.Collective("ep.all-to-all.combine.dx", CollectiveOp::kAllToAll, "ep", s.dispatch_bytes,
                       /*blocking=*/true, Phase::kBackwardInput));
  }
  if (s.etp > 1) {
    b.Add(b.Collective("etp.all-gather.moe.dx", CollectiveOp::kAllGather, "etp", s.etp_bytes,
                       /*blocking=*/true, Phase::kBackwardInput));
  }
  if (s.sorts) b.Add(Sort(b, "moe.unsort.dx", s, d, Phase::kBackwardInput));
  AppendMlpCoreBackward(b, fwd, d, RoutedExperts(model, s), expert_dws);
  if (s.sorts) b.Add(Sort(b, "moe.sort.dx", s, d, Phase::kBackwardInput));
  if (s.etp > 1) {
    b.Add(b.Collective("etp.reduce-scatter.moe.dx", CollectiveOp::kReduceScatter, "etp",
                       s.etp_bytes, /*blocking=*/true, Phase::kBackwardInput));
  }
  if (s.ep > 1) {
    b.Add(b.Collective("ep.all-to-all.dispatch.dx", CollectiveOp::kAllToAll, "ep", s.a2a_bytes,
                       /*blocking=*/true, Phase::kBackwardInput));
  }
  Op permute = b.Base("moe.permute.dx", OpKind::kElementwise, Phase::kBackwardInput);
  permute.flops = s.t * s.k * d.d;  // The copies' gradients summed.
  permute.hbm_read_bytes = d.e * s.t * s.k * d.d;
  permute.hbm_write_bytes = d.e * s.t * d.d;
  grads.push_back(b.Add(permute));
  // The probabilities' gradient through the top-k softmax to the logits, then the router's.
  b.set_last(probs);
  b.Add(ElementwiseBackward(b, Find(fwd, "moe.router.topk")));
  MatmulBackward(b, Find(fwd, "moe.router"), d, dense_dws);
  grads.push_back(b.last());
  Op sum = b.Elementwise("moe.sum.dx", OpKind::kElementwise, s.t * d.d, kAddFlops,
                         static_cast<double>(grads.size()), 1, d.e);
  sum.phase = Phase::kBackwardInput;
  sum.deps = grads;
  b.Add(sum);
}

bool IsRoutedExpertOp(const Op& op) { return op.name.starts_with("moe.experts."); }

}  // namespace podsim::workloads::layer_build
