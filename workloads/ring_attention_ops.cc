#include "workloads/ring_attention_ops.h"

#include "sim/check.h"

namespace podsim::workloads::layer_build {

namespace {

using collectives::CollectiveOp;

// One step's share of a whole-core kernel `whole` (forward or backward): 1/cp of its work, the
// block shape, causal only against the chip's own block (header comment).
Op StepOf(const Op& whole, const Dims& d, int step) {
  Op op = whole;
  op.deps.clear();
  op.flops = whole.flops / d.cp;
  op.model_flops = whole.model_flops / d.cp;
  op.hfu_flops = whole.hfu_flops / d.cp;
  op.shape.n = static_cast<int64_t>(d.T / d.cp);
  op.causal = whole.causal && step == 0;
  op.saved_bytes = 0;
  return op;
}

}  // namespace

void AppendRingAttention(Builder& b, const Dims& d, const Op& core, Phase phase) {
  PODSIM_CHECK(d.cp > 1) << "ring attention needs cp > 1";
  const int steps = static_cast<int>(d.cp);
  const double block = d.e * d.tok * (d.kv + d.v);  // The chip's keys and values.
  const double stats = kFlashStatBytes * d.tok * d.heads;
  int shift = -1;    // The shift that brought the block in hand (-1: the chip's own).
  int compute = -1;  // The previous step's core.
  const int own = b.last();
  for (int s = 0; s < steps; ++s) {
    int next = -1;
    if (s + 1 < steps) {
      Op send = b.Collective("cp.shift.kv", CollectiveOp::kShift, "cp", block * d.cp,
                             /*blocking=*/false, phase);
      send.deps = {shift >= 0 ? shift : own};
      if (compute >= 0) send.deps.push_back(compute);
      next = b.AddSide(send);
    }
    Op step = StepOf(core, d, s);
    step.hbm_read_bytes = d.e * d.tok * d.q + block + (s > 0 ? d.e * d.tok * d.o + stats : 0);
    if (s + 1 == steps) step.saved_bytes = core.saved_bytes;
    step.deps = {compute >= 0 ? compute : own};
    if (shift >= 0) step.deps.push_back(shift);
    compute = b.Add(step);
    shift = next;
  }
}

void AppendRingAttentionBackward(Builder& b, const Dims& d, const Op& bwd) {
  PODSIM_CHECK(d.cp > 1) << "ring attention needs cp > 1";
  const int steps = static_cast<int>(d.cp);
  const double block = d.e * d.tok * (d.kv + d.v);
  const Phase phase = Phase::kBackwardInput;
  int shift = -1;
  int compute = -1;
  const int own = b.last();
  for (int s = 0; s < steps; ++s) {
    // The next block (s < cp-1) and the previous step's block gradient (s > 0).
    const double bytes = (s + 1 < steps ? block : 0) + (s > 0 ? block : 0);
    int next = -1;
    Op send = b.Collective(s == 0 ? "cp.shift.kv" : "cp.shift.kv.dx", CollectiveOp::kShift, "cp",
                           bytes * d.cp, /*blocking=*/false, phase);
    send.deps = {shift >= 0 ? shift : own};
    if (compute >= 0) send.deps.push_back(compute);
    next = b.AddSide(send);
    Op step = StepOf(bwd, d, s);
    // Q, O, dO, the softmax statistics and the block; after the first step also the partial dQ
    // and the block gradient received, which this step's adds to.
    step.hbm_read_bytes = d.e * d.tok * (d.q + 2 * d.o) + kFlashStatBytes * d.tok * d.heads +
                          block + (s > 0 ? d.e * d.tok * d.q + block : 0);
    step.hbm_write_bytes = d.e * d.tok * d.q + block;  // dQ, and dK, dV of the block.
    step.deps = {compute >= 0 ? compute : own};
    if (shift >= 0) step.deps.push_back(shift);
    compute = b.Add(step);
    shift = next;
  }
  // The last block's gradient goes home; what follows on the activation path waits for it.
  Op home = b.Collective("cp.shift.dkv", CollectiveOp::kShift, "cp", block * d.cp,
                         /*blocking=*/true, phase);
  home.deps = {compute, shift};
  b.Add(home);
}

}  // namespace podsim::workloads::layer_build
