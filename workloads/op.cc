#include "workloads/op.h"

namespace podsim::workloads {

std::string_view OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kMatmul:
      return "matmul";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kNorm:
      return "norm";
    case OpKind::kElementwise:
      return "elementwise";
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kLoss:
      return "loss";
    case OpKind::kOptimizer:
      return "optimizer";
    case OpKind::kCollective:
      return "collective";
  }
  return "?";
}

std::string_view PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return "forward";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kBackwardInput:
      return "backward-input";
    case Phase::kBackwardWeight:
      return "backward-weight";
    case Phase::kOptimizer:
      return "optimizer";
  }
  return "?";
}

OpTotals Totals(const OpList& ops) {
  OpTotals t;
  for (const Op& op : ops) {
    t.flops += op.flops;
    t.model_flops += op.model_flops;
    t.hfu_flops += op.hfu_flops;
    t.hbm_bytes += op.hbm_read_bytes + op.hbm_write_bytes;
    t.comm_bytes += op.comm_bytes;
  }
  return t;
}

}  // namespace podsim::workloads
