#include "collectives/collective_network.h"

#include <algorithm>
#include <sstream>
#include <utility>

#include "collectives/collective.h"
#include "collectives/collective_builder.h"
#include "collectives/transfer_executor.h"
#include "sim/check.h"
#include "sim/flow_observer.h"

namespace podsim::collectives {

namespace {

// Collects the links (resources below `link_count`) that any flow crosses.
class FootprintRecorder : public sim::FlowObserver {
 public:
  explicit FootprintRecorder(size_t link_count) : used_(link_count, false) {}
  void OnFlowStarted(sim::Time, sim::FlowId, double,
                     std::span<const sim::ResourceId> route) override {
    for (sim::ResourceId resource : route) {
      if (resource.value < used_.size()) used_[resource.value] = true;
    }
  }
  std::vector<uint32_t> Links() const {
    std::vector<uint32_t> links;
    for (size_t i = 0; i < used_.size(); ++i) {
      if (used_[i]) links.push_back(static_cast<uint32_t>(i));
    }
    return links;
  }

 private:
  std::vector<bool> used_;
};

// Everything that decides what a request simulates.
std::string KeyOf(const CollectiveRequest& request) {
  std::ostringstream key;
  key.precision(17);
  key << static_cast<int>(request.op) << '|' << request.bytes << '|' << request.algorithm << '|'
      << request.src << '|' << request.dst << '|';
  for (const std::string& axis : request.axes) key << axis << ',';
  key << '|';
  for (topology::VertexId rank : request.ranks) key << rank << ',';
  key << '|';
  for (int length : request.rank_shape) key << length << ',';
  return key.str();
}

}  // namespace

struct CollectiveNetwork::Running {
  std::unique_ptr<Collective> collective;
  bool done = false;
};

CollectiveNetwork::CollectiveNetwork(const topology::Fabric* fabric, sim::Engine* engine,
                                     sim::FlowModel* model, FabricEfficiency efficiency,
                                     bool replay_idle)
    : fabric_(fabric),
      engine_(engine),
      model_(model),
      efficiency_(std::move(efficiency)),
      replay_idle_(replay_idle),
      holders_(fabric->links().size(), 0),
      replaying_(fabric->links().size(), 0) {
  InstallEfficientLinks(*fabric_, efficiency_, model_);
  executor_ = std::make_unique<TransferExecutor>(fabric_, engine_, model_,
                                                 efficiency_.per_message_overhead);
}

CollectiveNetwork::~CollectiveNetwork() = default;

uint64_t CollectiveNetwork::transfers() const { return executor_->transfers(); }

sim::StatusOr<const CollectiveNetwork::Record*> CollectiveNetwork::RecordOf(
    const CollectiveRequest& request) {
  std::string key = KeyOf(request);
  auto it = records_.find(key);
  if (it != records_.end()) return &it->second;
  CollectiveRequest alone = request;
  alone.efficiency = efficiency_;
  alone.transfer_observer = nullptr;
  FootprintRecorder recorder(fabric_->links().size());
  alone.flow_observer = &recorder;
  PODSIM_ASSIGN_OR_RETURN(std::vector<CollectiveResult> results,
                          SimulateConcurrentCollectives(*fabric_, {alone}));
  Record record{results.front().time, recorder.Links()};
  return &records_.emplace(std::move(key), std::move(record)).first->second;
}

sim::StatusOr<sim::Time> CollectiveNetwork::IdleDuration(const CollectiveRequest& request) {
  PODSIM_ASSIGN_OR_RETURN(const Record* record, RecordOf(request));
  return record->duration;
}

void CollectiveNetwork::Hold(const Record& record, bool replay) {
  for (uint32_t link : record.links) {
    ++holders_[link];
    if (replay) ++replaying_[link];
  }
}

void CollectiveNetwork::Release(const Record& record, bool replay) {
  for (uint32_t link : record.links) {
    PODSIM_CHECK(holders_[link] > 0) << "link " << link << " released more often than held";
    --holders_[link];
    if (replay) --replaying_[link];
  }
}

sim::Status CollectiveNetwork::Launch(const CollectiveRequest& request, sim::EventHandler on_done) {
  if (request.per_message_overhead != sim::Time::Zero()) {
    return sim::Status::InvalidArgument(
        "a collective network applies its own per-message overhead; the request's must be 0");
  }
  if (running_.size() >= 2 * compacted_size_ + 64) {
    std::erase_if(running_, [](const std::unique_ptr<Running>& r) { return r->done; });
    compacted_size_ = running_.size();
  }
  PODSIM_ASSIGN_OR_RETURN(const Record* record, RecordOf(request));
  ++launched_;
  bool idle = true;
  bool overlaps_replay = false;
  for (uint32_t link : record->links) {
    idle = idle && holders_[link] == 0;
    overlaps_replay = overlaps_replay || replaying_[link] > 0;
  }
  if (replay_idle_ && idle) {
    ++replayed_;
    Hold(*record, /*replay=*/true);
    engine_->Schedule(record->duration, [this, record, done = std::move(on_done)]() mutable {
      Release(*record, /*replay=*/true);
      done();
    });
    return sim::Status::Ok();
  }
  if (overlaps_replay) ++approximate_overlaps_;
  CollectiveRequest shared = request;
  shared.efficiency = efficiency_;
  PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<Collective> collective,
                          BuildCollective(*fabric_, shared, efficiency_, executor_.get()));
  Hold(*record, /*replay=*/false);
  running_.push_back(std::make_unique<Running>());
  Running* running = running_.back().get();
  running->collective = std::move(collective);
  engine_->Schedule(
      efficiency_.launch_latency, [this, running, record, done = std::move(on_done)]() mutable {
        running->collective->Start([this, running, record, done = std::move(done)]() mutable {
          Release(*record, /*replay=*/false);
          done();
          // Freed by a later Launch, after this callback has returned.
          running->done = true;
        });
      });
  return sim::Status::Ok();
}

}  // namespace podsim::collectives
