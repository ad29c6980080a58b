// Collectives whose transfers go straight to their destinations over the fabric's routes:
//   * DirectAllToAll: every rank sends its chunk of bytes/n^2 to every other rank at once; on a
//     torus with shortest dimension-order routes (RouteChoice::kDimensionOrder) this is the
//     book's V / (4 W) per axis (reference/formulas.md, AllToAll), and the links shared by many
//     routes show up as contention in the flow model, not as a formula.
//   * ChainBroadcast: the root's array is cut into chunks that are pipelined down a chain of the
//     group's ranks (NCCL's ring broadcast): about V / W + (n - 2) chunk / W.
//   * PointToPoint: one transfer, striped over the fabric's parallel routes.

#ifndef PODSIM_COLLECTIVES_DIRECT_COLLECTIVES_H_
#define PODSIM_COLLECTIVES_DIRECT_COLLECTIVES_H_

#include <cstdint>
#include <vector>

#include "collectives/collective.h"
#include "collectives/transfer_executor.h"
#include "topology/fabric.h"

namespace podsim::collectives {

class DirectAllToAll : public Collective {
 public:
  // Each group exchanges `bytes_per_group` (the whole array, V) among its ranks.
  DirectAllToAll(TransferExecutor* executor, std::vector<std::vector<topology::VertexId>> groups,
                 double bytes_per_group);
  void Start(sim::EventHandler on_done) override;

 private:
  TransferExecutor* executor_;
  std::vector<std::vector<topology::VertexId>> groups_;
  double bytes_per_group_;
  size_t pending_ = 0;
  sim::EventHandler on_done_;
};

class ChainBroadcast : public Collective {
 public:
  // Broadcasts from the first rank of each group down the group's order in `chunks` pieces.
  ChainBroadcast(TransferExecutor* executor, std::vector<std::vector<topology::VertexId>> groups,
                 double bytes_per_group, uint32_t chunks);
  void Start(sim::EventHandler on_done) override;

 private:
  struct Hop {              // State of the sender at position i of group g.
    uint32_t received = 0;  // Chunks it has (the root has them all).
    uint32_t sent = 0;
    bool sending = false;
  };
  void TryForward(uint32_t group, uint32_t position);

  TransferExecutor* executor_;
  std::vector<std::vector<topology::VertexId>> groups_;
  double chunk_bytes_;
  uint32_t chunks_;
  std::vector<std::vector<Hop>> hops_;
  size_t pending_ = 0;  // Chunk deliveries to the last rank of each group not yet done.
  sim::EventHandler on_done_;
};

class PointToPoint : public Collective {
 public:
  PointToPoint(TransferExecutor* executor, topology::VertexId src, topology::VertexId dst,
               double bytes);
  void Start(sim::EventHandler on_done) override;

 private:
  TransferExecutor* executor_;
  topology::VertexId src_, dst_;
  double bytes_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_DIRECT_COLLECTIVES_H_
