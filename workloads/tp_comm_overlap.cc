#include "workloads/tp_comm_overlap.h"

#include <string>
#include <vector>

#include "sim/check.h"

namespace podsim::workloads {

namespace {

using collectives::CollectiveOp;

bool IsTpCollective(const Op& op, CollectiveOp kind) {
  return op.kind == OpKind::kCollective && op.axis == "tp" && op.collective == kind;
}

// A GEMM over the activation's rows (not a weight gradient, whose rows are the weight's) with
// at least a row for each of `chunks` chunks.
bool IsRowGemm(const Op& op, int chunks) {
  return op.kind == OpKind::kMatmul && op.phase != Phase::kBackwardWeight && op.shape.m >= chunks &&
         op.shape.batch <= 1;
}

// Rows [m k / n, m (k + 1) / n) of `gemm` as its own GEMM: FLOPs, activation bytes and outputs in
// proportion, the weights read whole.
Op GemmChunk(const Op& gemm, int k, int n) {
  const int64_t m = gemm.shape.m;
  const int64_t rows = m * (k + 1) / n - m * k / n;
  const double share = static_cast<double>(rows) / static_cast<double>(m);
  Op chunk = gemm;
  chunk.name += ".chunk" + std::to_string(k);
  chunk.shape.m = rows;
  chunk.flops *= share;
  chunk.model_flops *= share;
  chunk.hfu_flops *= share;
  // Matmul ops read e (m k + k n) and write e m n (layer_ops.cc): the element size from them.
  const double mk = static_cast<double>(m) * static_cast<double>(gemm.shape.k);
  const double kn = static_cast<double>(gemm.shape.k) * static_cast<double>(gemm.shape.n);
  const double e = gemm.hbm_read_bytes / (mk + kn);
  chunk.hbm_read_bytes = e * (mk * share + kn);
  chunk.hbm_write_bytes *= share;
  chunk.saved_bytes *= share;
  chunk.quadratic_saved_bytes *= share;
  chunk.output_bytes *= share;
  return chunk;
}

// Chunk k of n of `collective`: one operation, launched once (the first chunk pays the launch).
Op CollectiveChunk(const Op& collective, int k, int n) {
  Op chunk = collective;
  chunk.name += ".chunk" + std::to_string(k);
  chunk.comm_bytes /= n;
  chunk.launched = k > 0;
  return chunk;
}

// The split all-gather op `i` depends on (-1: none).
int SplitGatherOf(const OpList& ops, const std::vector<std::vector<int>>& chunks, int i) {
  int gather = -1;
  for (int dep : ops[i].deps) {
    if (!chunks[dep].empty() && ops[dep].kind == OpKind::kCollective) gather = dep;
  }
  return gather;
}

}  // namespace

OpList OverlapTpCommunication(const OpList& ops, int tp) {
  PODSIM_CHECK(tp >= 1) << "tp " << tp;
  if (tp == 1) return ops;
  const int size = static_cast<int>(ops.size());
  // Pipelined reduce-scatters: the forward GEMM each one reduces, and the reverse map.
  std::vector<int> reduced_by(size, -1);
  for (int i = 0; i < size; ++i) {
    const Op& op = ops[i];
    if (!IsTpCollective(op, CollectiveOp::kReduceScatter) || op.deps.size() != 1) continue;
    const Op& gemm = ops[op.deps[0]];
    if (IsRowGemm(gemm, kTpOverlapReduceScatterChunks) &&
        (gemm.phase == Phase::kForward || gemm.phase == Phase::kRecompute)) {
      reduced_by[op.deps[0]] = i;
    }
  }
  OpList out;
  std::vector<int> index(size, -1);            // The op (its last chunk) standing for each.
  std::vector<std::vector<int>> chunks(size);  // Split ops: their chunks, in order.
  auto remap = [&](const std::vector<int>& deps, int skip) {
    std::vector<int> mapped;
    for (int dep : deps) {
      if (dep != skip) mapped.push_back(index[dep]);
    }
    return mapped;
  };
  for (int i = 0; i < size; ++i) {
    const Op& op = ops[i];
    // A ring-exchange all-gather: split when a row GEMM consumes it.
    if (IsTpCollective(op, CollectiveOp::kAllGather)) {
      bool feeds_gemm = false;
      for (int j = i + 1; j < size; ++j) {
        for (int dep : ops[j].deps) feeds_gemm |= dep == i && IsRowGemm(ops[j], tp);
      }
      if (feeds_gemm) {
        // tp - 1 exchange steps, each bringing one rank's share of the rows: an all-gather of
        // V / (tp - 1) receives V / tp per rank, as one step of the ring exchange.
        for (int k = 0; k < tp - 1; ++k) {
          Op chunk = CollectiveChunk(op, k, tp - 1);
          chunk.deps = remap(op.deps, -1);
          out.push_back(std::move(chunk));
          chunks[i].push_back(static_cast<int>(out.size()) - 1);
        }
        index[i] = chunks[i].back();
        continue;
      }
    }
    // GEMMs fed by a split all-gather: chunk 0 on the chip's own rows, at once (after what the
    // gather waited for); chunk k after exchange step k - 1. Consecutive GEMMs of one gather that
    // do not feed each other (a gated MLP's gate and up, one fused fc1 GEMM in Megatron-Core)
    // run their chunks interleaved, so that every exchange step hides behind all of them.
    if (index[i] >= 0) continue;  // Emitted with the GEMM before it.
    const int gather = SplitGatherOf(ops, chunks, i);
    if (gather >= 0 && IsRowGemm(op, tp)) {
      std::vector<int> gemms = {i};
      for (int j = i + 1;
           j < size && IsRowGemm(ops[j], tp) && SplitGatherOf(ops, chunks, j) == gather; ++j) {
        bool independent = true;
        for (int dep : ops[j].deps) independent &= dep < i;
        if (!independent) break;
        gemms.push_back(j);
      }
      for (int k = 0; k < tp; ++k) {
        for (int g : gemms) {
          Op chunk = GemmChunk(ops[g], k, tp);
          chunk.deps = remap(ops[g].deps, gather);
          if (k == 0) {
            for (int dep : remap(ops[gather].deps, -1)) chunk.deps.push_back(dep);
          } else {
            chunk.deps.push_back(chunks[gather][k - 1]);
          }
          out.push_back(std::move(chunk));
          chunks[g].push_back(static_cast<int>(out.size()) - 1);
        }
      }
      for (int g : gemms) index[g] = chunks[g].back();
      continue;
    }
    // A forward GEMM whose output a pipelined reduce-scatter reduces.
    if (reduced_by[i] >= 0) {
      const int n = kTpOverlapReduceScatterChunks;
      for (int k = 0; k < n; ++k) {
        Op chunk = GemmChunk(op, k, n);
        chunk.deps = remap(op.deps, -1);
        out.push_back(std::move(chunk));
        chunks[i].push_back(static_cast<int>(out.size()) - 1);
      }
      index[i] = chunks[i].back();
      continue;
    }
    if (op.deps.size() == 1 && !chunks[op.deps[0]].empty() && reduced_by[op.deps[0]] == i) {
      const std::vector<int>& gemms = chunks[op.deps[0]];
      for (int k = 0; k < static_cast<int>(gemms.size()); ++k) {
        Op chunk = CollectiveChunk(op, k, static_cast<int>(gemms.size()));
        chunk.deps = {gemms[k]};
        out.push_back(std::move(chunk));
      }
      index[i] = static_cast<int>(out.size()) - 1;
      continue;
    }
    Op copy = op;
    copy.deps = remap(op.deps, -1);
    out.push_back(std::move(copy));
    index[i] = static_cast<int>(out.size()) - 1;
  }
  return out;
}

}  // namespace podsim::workloads
