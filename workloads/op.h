// Op: one unit of work of a per-chip training (or inference) schedule -- a compute op on the
// chip's compute stream or a collective on one of its communication streams -- with its FLOPs,
// HBM traffic, matmul shape and dependencies.
//
// Units: FLOPs, bytes, all per chip (the layout's sharding is already applied). An OpList is the
// ops of one piece of the model (a layer's forward, its backward, the head, the optimizer) in
// issue order; `deps` index into the same list. The schedule generator places compute ops on the
// compute stream in list order and collectives on the communication stream of their mesh axis,
// each starting when its deps are done; concatenating lists shifts the indices.

#ifndef PODSIM_WORKLOADS_OP_H_
#define PODSIM_WORKLOADS_OP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective_op.h"

namespace podsim::workloads {

enum class OpKind {
  kMatmul,       // A GEMM; `shape` is set.
  kAttention,    // Scores and values of attention (flash-style fused, or materialized).
  kNorm,         // RMSNorm / LayerNorm.
  kElementwise,  // Activations, residual adds, dropout, rotary: HBM-bound.
  kEmbedding,    // Row gather of the input embedding (and its gradient scatter-add).
  kLoss,         // Softmax cross-entropy over the (tp-sharded) vocabulary.
  kOptimizer,    // The Adam update of this chip's parameter shard.
  kCollective,   // Communication over one mesh axis; `collective`, `axis`, `comm_bytes` are set.
};

enum class Phase {
  kForward,
  kRecompute,       // Forward work repeated in the backward pass (activation recomputation).
  kBackwardInput,   // Gradients with respect to activations (dX): on the critical path.
  kBackwardWeight,  // Gradients with respect to weights (dW): may be deferred.
  kOptimizer,
};

std::string_view OpKindName(OpKind kind);
std::string_view PhaseName(Phase phase);

// A per-chip GEMM: `batch` independent [m,k] x [k,n] products.
struct MatmulShape {
  int64_t m = 0;
  int64_t k = 0;
  int64_t n = 0;
  int64_t batch = 1;
};

struct Op {
  std::string name;  // "attn.qkv", "mlp.down.dw", "tp.all-reduce.attn", ...
  OpKind kind = OpKind::kElementwise;
  Phase phase = Phase::kForward;

  double flops = 0;        // Executed on this chip: what the op's time is computed from.
  double model_flops = 0;  // Counted by the model-FLOPs convention (MFU numerator); 0 for
                           // recomputation and for work a kernel repeats internally.
  // The HFU numerator: the matmul and attention work executed, recomputation and a kernel's
  // repeated work (flash attention's backward recomputes the scores) included -- Korthikanti et
  // al. 2022's hardware FLOPs. `flops` of matmul and attention ops; 0 for the vector work (norms,
  // elementwise), which neither utilization counts. >= model_flops whenever model_flops counts no
  // more attention pairs than the kernel executes (AttentionCount::kCausal, the default).
  double hfu_flops = 0;
  double hbm_read_bytes = 0;
  double hbm_write_bytes = 0;
  // kMatmul: the GEMM. kAttention (flash kernels of training steps): m = query tokens per
  // sequence, n = key tokens, k = head dimension, batch = sequences x heads; unset elsewhere.
  MatmulShape shape;
  bool causal = false;  // kAttention: a causal kernel (skips the masked pairs).
  bool fp8 = false;     // kMatmul: operands in fp8, at the chip's fp8 peak (fp8_training.h).
  // HBM-bound ops (norms, elementwise, the loss): elements of the tensor the op maps, which a
  // rewrite into separate kernels (eager_kernels.h) needs; 0 elsewhere. Not part of schedules.
  double elements = 0;
  // kAttention: the named kernel whose curve times it ("fa2", "cudnn"; layer_ops.h
  // AttentionKernel); "": the family's flash kernel. HBM-bound ops: a kernel class the family may
  // time below its streaming rate ("softmax", "gelu.dx", ...; hbm_kernel.h); "": none.
  std::string kernel;

  // Activation bytes this forward op keeps for the backward pass when nothing is recomputed
  // (Korthikanti et al. 2022, sec. 4.1 enumeration); `quadratic_saved_bytes` is the part that
  // grows with seq^2 (attention probabilities), which selective recomputation drops.
  double saved_bytes = 0;
  double quadratic_saved_bytes = 0;
  // Bytes of the op's main output: what a "save this op's output" checkpoint policy keeps.
  double output_bytes = 0;

  // Collectives: the operation, the mesh axis ("tp", "fsdp", "dp", "pp") and the size of the
  // whole gathered or reduced array of one group (the book's V; collectives/collective_runner.h).
  collectives::CollectiveOp collective = collectives::CollectiveOp::kAllReduce;
  std::string axis;
  double comm_bytes = 0;
  // True when the compute stream waits for this collective before its next op (TP activations);
  // false when only a later consumer depends on it (FSDP prefetch, gradient reductions).
  bool blocking = false;
  // Collectives: a later chunk of an operation already launched; pays no launch latency
  // (schedule.proto Op.launched).
  bool launched = false;

  std::vector<int> deps;  // Indices of earlier ops in the same OpList.
};

using OpList = std::vector<Op>;

// Sums over a list (any phase): FLOPs, model FLOPs, HFU FLOPs, HBM bytes read + written,
// collective bytes.
struct OpTotals {
  double flops = 0;
  double model_flops = 0;
  double hfu_flops = 0;
  double hbm_bytes = 0;
  double comm_bytes = 0;
};
OpTotals Totals(const OpList& ops);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_OP_H_
