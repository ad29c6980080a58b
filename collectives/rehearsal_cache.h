// RehearsalCache: what collective_network.h's rehearsals found, shared by every CollectiveNetwork
// of one fabric and efficiency model, across simulations and threads.
//
// A sweep (cli/sweep_command.cc) simulates hundreds of layouts of one system; layouts that differ
// only in recomputation, microbatches or sequence parallelism launch many of the same collectives,
// and each network would otherwise rehearse them again, transfer by transfer. A record depends on
// the request, the fabric and the efficiency model only: a rehearsal runs on an idle copy of the
// network, and its duration is a difference of integer picosecond times, the same whatever the
// rehearsal clock read when it began (collective_network_test.cc checks this). So sharing records
// changes no result, and a sweep's output is the same for any number of threads.

#ifndef PODSIM_COLLECTIVES_REHEARSAL_CACHE_H_
#define PODSIM_COLLECTIVES_REHEARSAL_CACHE_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/efficiency_model.h"
#include "sim/flow_ids.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// A collective alone on the idle network, as CollectiveNetwork runs it in kWholeCollective mode.
struct RehearsalRecord {
  sim::Time duration;
  std::vector<sim::ResourceId> bottleneck;  // Ascending link resources.
  double bytes = 0;                         // Over each bottleneck link, at `rate`.
  double rate = 0;                          // The slowest bottleneck link's bandwidth.
  sim::Time latency;                        // duration - bytes / rate.
  std::string algorithm;                    // What the rehearsal ran (for traces).
  // The transfers the rehearsal simulated: a network that finds the record in a shared cache
  // charges them to its work bound as if it had rehearsed, so whether a simulation exceeds the
  // bound does not depend on which thread rehearsed first.
  uint64_t transfers = 0;
  // The estimate the rehearsal's work bound was checked against (collective_runner.h): a hit is
  // checked against it too, and refused as the rehearsal would have been.
  double estimated_transfers = 0;
};

class RehearsalCache {
 public:
  // Records of collectives on `fabric` (which must outlive the cache) under `efficiency`.
  RehearsalCache(const topology::Fabric* fabric, FabricEfficiency efficiency)
      : fabric_(fabric), efficiency_(std::move(efficiency)) {}
  RehearsalCache(const RehearsalCache&) = delete;
  RehearsalCache& operator=(const RehearsalCache&) = delete;

  const topology::Fabric* fabric() const { return fabric_; }
  const FabricEfficiency& efficiency() const { return efficiency_; }

  // The record stored under `key` (a request's identity, collective_network.cc), if any.
  std::optional<RehearsalRecord> Find(const std::string& key) const;
  // Stores `record` unless `key` has one already (two threads that rehearse the same request at
  // once find equal records; the first stays).
  void Insert(const std::string& key, const RehearsalRecord& record);
  size_t size() const;
  // The records stored since the call that left `*cursor` where it is (0: all), in the order
  // they were stored; advances `*cursor`. For processes that share what each rehearsed (MPI
  // sweeps, cli/task_runner.h).
  std::vector<std::pair<std::string, RehearsalRecord>> RecordsSince(size_t* cursor) const;

 private:
  const topology::Fabric* fabric_;
  const FabricEfficiency efficiency_;
  mutable std::mutex mutex_;
  std::map<std::string, RehearsalRecord> records_;
  std::vector<std::map<std::string, RehearsalRecord>::const_iterator> stored_;  // In order.
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_REHEARSAL_CACHE_H_
