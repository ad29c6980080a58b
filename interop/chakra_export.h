// A podsim step schedule as a Chakra execution trace (chakra_import.h reads it back), so that the
// same workload can be given to ASTRA-sim: one rank per chip of the system, rank r on chip r.
//
// Each op of a chip's program becomes one node, id = the op's index:
//   * compute ops: COMP_NODE with `num_ops` (FLOPs), `tensor_size` (HBM bytes) and
//     `duration_micros`, the op's time on the system's chip (workloads/compute_model.h) rounded
//     to the microsecond: Chakra's resolution, so ASTRA-sim replays it to within 0.5 us;
//   * collectives: COMM_COLL_NODE with `comm_type`, `comm_size` in ASTRA-sim's convention
//     (chakra_import.h) and `pg_name`, the group's number in the comm groups ("1", "2", ...:
//     ASTRA-sim reads them as integers), each group's chips in podsim's rank order; the
//     attribute podsim_group says which group it is ("tp@4": the chips agreeing with chip 4 on
//     every mesh axis but tp);
//   * sends and receives: COMM_SEND_NODE / COMM_RECV_NODE with comm_src, comm_dst, comm_size and
//     comm_tag.
//   * shifts (schedule::SHIFT, ring attention's key/value passing), which Chakra has no collective
//     for: a COMM_SEND_NODE to the next rank of the group (an id after the program's ops) and
//     a COMM_RECV_NODE from the previous one (id = the op's index), tag = the op's index, on
//     podsim streams "<stream>.send" and "<stream>.recv", both marked podsim_shift; the receive
//     also carries the group (pg_name) and the shift's bytes, and podsim reads the pair back
//     as the shift (chakra_import.cc), other tools as a send and a receive.
// `data_deps` hold the op's deps and the previous op of its stream (a podsim stream runs its ops
// in order; Chakra has no streams). Attributes named `podsim_*` keep what Chakra cannot say (the
// kind, shape, model FLOPs, stream, exact bytes and durations), so podsim reads its own traces
// back exactly; other tools ignore them.

#ifndef PODSIM_INTEROP_CHAKRA_EXPORT_H_
#define PODSIM_INTEROP_CHAKRA_EXPORT_H_

#include <cstdint>
#include <vector>

#include "interop/chakra_file.h"
#include "interop/comm_groups.h"
#include "schedule.pb.h"
#include "sim/status.h"
#include "topology/system.h"
#include "workloads/compute_model.h"

namespace podsim::interop {

struct ChakraExport {
  std::vector<ChakraRankTrace> ranks;
  CommGroups groups;
};

// Bound on the nodes one export writes (ranks x ops), checked before any is built.
inline constexpr uint64_t kMaxExportNodes = 5'000'000;

// Fails as workloads::CheckSchedule does for a bad schedule, and with OutOfRange past the bound.
sim::StatusOr<ChakraExport> ExportChakra(const topology::System& system,
                                         const schedule::Schedule& schedule,
                                         const workloads::ComputeEfficiency& efficiency);

}  // namespace podsim::interop

#endif  // PODSIM_INTEROP_CHAKRA_EXPORT_H_
