#include "workloads/schedule_builder.h"

namespace podsim::workloads {

namespace {

schedule::OpKind KindOf(OpKind kind) {
  switch (kind) {
    case OpKind::kMatmul:
      return schedule::MATMUL;
    case OpKind::kAttention:
      return schedule::ATTENTION;
    case OpKind::kNorm:
      return schedule::NORM;
    case OpKind::kEmbedding:
      return schedule::EMBEDDING;
    case OpKind::kLoss:
      return schedule::LOSS;
    case OpKind::kOptimizer:
      return schedule::OPTIMIZER;
    case OpKind::kCollective:
      return schedule::COLLECTIVE;
    case OpKind::kElementwise:
      break;
  }
  return schedule::ELEMENTWISE;
}

schedule::CollectiveKind CollectiveOf(collectives::CollectiveOp op) {
  switch (op) {
    case collectives::CollectiveOp::kAllGather:
      return schedule::ALL_GATHER;
    case collectives::CollectiveOp::kReduceScatter:
      return schedule::REDUCE_SCATTER;
    case collectives::CollectiveOp::kAllToAll:
      return schedule::ALL_TO_ALL;
    case collectives::CollectiveOp::kShift:
      return schedule::SHIFT;
    default:
      return schedule::ALL_REDUCE;
  }
}

}  // namespace

schedule::Op* AddScheduleOp(schedule::Program* program, const Op& op, const std::string& stream) {
  schedule::Op* out = program->add_ops();
  out->set_name(op.name);
  out->set_kind(KindOf(op.kind));
  out->set_stream(stream);
  out->set_phase(std::string(PhaseName(op.phase)));
  if (op.kind == OpKind::kCollective) {
    out->set_collective(CollectiveOf(op.collective));
    out->add_axes(op.axis);
    out->set_bytes(op.comm_bytes);
    if (op.launched) out->set_launched(true);
    return out;
  }
  out->set_flops(op.flops);
  out->set_model_flops(op.model_flops);
  out->set_hfu_flops(op.hfu_flops);
  out->set_hbm_bytes(op.hbm_read_bytes + op.hbm_write_bytes);
  if (op.kind == OpKind::kAttention) out->set_causal(op.causal);
  if (op.fp8) out->set_fp8(true);
  if (!op.kernel.empty()) out->set_kernel(op.kernel);
  if (op.kind == OpKind::kMatmul || (op.kind == OpKind::kAttention && op.shape.m > 0)) {
    out->mutable_shape()->set_m(op.shape.m);
    out->mutable_shape()->set_k(op.shape.k);
    out->mutable_shape()->set_n(op.shape.n);
    out->mutable_shape()->set_batch(op.shape.batch);
  }
  return out;
}

void AddMesh(schedule::Schedule* schedule, const std::vector<topology::MeshAxis>& axes) {
  for (const topology::MeshAxis& axis : axes) {
    schedule::MeshAxis* mesh = schedule->add_mesh();
    mesh->set_name(axis.name);
    mesh->set_size(axis.size);
  }
}

}  // namespace podsim::workloads
