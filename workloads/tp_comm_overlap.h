// Megatron-Core's --tp-comm-overlap: Transformer Engine's userbuffers overlap of the
// sequence-parallel tp collectives with the GEMMs next to them, as a rewrite of a layer's op list.
//
// What TE does (transformer_engine/pytorch/module/base.py, initialize_ub's default methods):
//   ring_exchange  the all-gather before qkv and fc1 (forward) and before the proj and fc2
//                  input gradients (backward): the GEMM runs on one tp shard of the rows while
//                  the next shard arrives, tp steps in all;
//   pipeline       the reduce-scatter after proj and fc2 (forward): the GEMM runs in 4 row chunks
//                  (num_splits) and each chunk's reduce-scatter overlaps the next chunk's GEMM;
//   bulk           the backward's reduce-scatter of the qkv and fc1 input gradients overlaps the
//                  weight-gradient GEMM, which podsim's layer ops already allow; and the all-gather
//                  of the sp-sharded input that Megatron repeats in the backward for those
//                  weight gradients overlaps the input-gradient GEMM: podsim's layer ops issue it
//                  without blocking under --framework megatron (framework.h; layer_build.h
//                  AppendColumnParallelBackward), and it is not split here (a weight gradient
//                  consumes it).
// How podsim simulates it: an all-gather of V bytes followed by a row-parallel GEMM becomes tp - 1
// all-gathers of V/(tp - 1) (each receives V/tp per rank, the bytes of one ring-exchange step) and
// tp GEMMs of m/tp rows: GEMM 0 on the chip's own rows at once, GEMM k after exchange step k - 1;
// a forward GEMM followed by a reduce-scatter becomes 4 GEMMs of m/4 rows,
// each followed by its reduce-scatter of V/4. The bytes on the wire are the same and every chunk is
// a simulated collective on the fabric, launched once: the first chunk pays the collective launch
// latency, the others only their messages' costs (schedule.proto Op.launched). A chunked
// all-gather moves the ring exchange's bytes as collectives (each with its hop latencies) rather
// than as tp - 1 neighbour exchanges, an approximation of TE's schedule stated here. The chunk
// GEMMs pay their own per-kernel overhead and re-read the weights, as TE's do. Weight-gradient
// GEMMs that read a gathered tensor are not split: they wait for the last chunk.

#ifndef PODSIM_WORKLOADS_TP_COMM_OVERLAP_H_
#define PODSIM_WORKLOADS_TP_COMM_OVERLAP_H_

#include "workloads/op.h"

namespace podsim::workloads {

// TE's num_splits for the pipelined reduce-scatter.
inline constexpr int kTpOverlapReduceScatterChunks = 4;

// `ops` (a layer's forward or backward list, deps pointing backwards) with its tp all-gather ->
// GEMM and GEMM -> tp reduce-scatter pairs split as above for tp ranks; an op depending on a
// split op depends on its last chunk. REQUIRES: tp >= 1; with tp == 1 returns `ops`.
OpList OverlapTpCommunication(const OpList& ops, int tp);

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_TP_COMM_OVERLAP_H_
