#include "collectives/collective_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "collectives/collective.h"
#include "collectives/collective_builder.h"
#include "collectives/fabric_symmetry.h"
#include "collectives/transfer_executor.h"
#include "sim/check.h"
#include "sim/flow_observer.h"

namespace podsim::collectives {

namespace {

// Adds up the bytes every flow moves over each link (resources below `link_count`).
class LinkBytesRecorder : public sim::FlowObserver {
 public:
  explicit LinkBytesRecorder(size_t link_count) : bytes_(link_count, 0.0) {}
  void OnFlowStarted(sim::Time, sim::FlowId, double bytes,
                     std::span<const sim::ResourceId> route) override {
    for (sim::ResourceId resource : route) {
      if (resource.value >= bytes_.size()) continue;
      if (bytes_[resource.value] == 0) touched_.push_back(resource.value);
      bytes_[resource.value] += bytes;
    }
  }
  const std::vector<double>& bytes() const { return bytes_; }
  // Links with bytes, in the order first used.
  const std::vector<uint32_t>& touched() const { return touched_; }
  void Clear() {
    for (uint32_t link : touched_) bytes_[link] = 0;
    touched_.clear();
  }

 private:
  std::vector<double> bytes_;
  std::vector<uint32_t> touched_;
};

// A collective's bottleneck links: those within this fraction of the largest bytes / bandwidth,
// and those carrying within this fraction of the largest bytes (a chip's PCIe link may be the
// slowest alone while the host NIC it feeds, with the same bytes, is what its neighbours share).
constexpr double kBottleneckShare = 0.9;

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
  key << '|' << request.launched;
  return key.str();
}

}  // namespace

// The private, idle copy of the network on which each distinct request is first simulated.
struct CollectiveNetwork::Rehearsal {
  Rehearsal(const topology::Fabric* fabric, const FabricEfficiency& efficiency)
      : model(&engine), recorder(fabric->links().size()) {
    InstallEfficientLinks(*fabric, efficiency, &model);
    model.AddObserver(&recorder);
    executor = std::make_unique<TransferExecutor>(fabric, &engine, &model,
                                                  efficiency.per_message_overhead);
  }
  sim::Engine engine;
  sim::FlowModel model;
  LinkBytesRecorder recorder;
  std::unique_ptr<TransferExecutor> executor;
};

struct CollectiveNetwork::Running {
  std::unique_ptr<Collective> collective;
  bool done = false;
};

CollectiveNetwork::CollectiveNetwork(const topology::Fabric* fabric, sim::Engine* engine,
                                     sim::FlowModel* model, FabricEfficiency efficiency,
                                     NetworkMode mode, RehearsalCache* shared,
                                     const LinkOrbits* orbits)
    : fabric_(fabric),
      engine_(engine),
      model_(model),
      efficiency_(std::move(efficiency)),
      mode_(mode),
      symmetry_(fabric),
      shared_(shared),
      orbits_(orbits),
      busy_(fabric->links().size(), 0) {
  PODSIM_CHECK(orbits_ == nullptr || mode_ == NetworkMode::kFlows)
      << "a symmetric quotient runs every transfer";
  PODSIM_CHECK(shared_ == nullptr ||
               (shared_->fabric() == fabric_ && shared_->efficiency() == efficiency_))
      << "a shared rehearsal cache of another fabric or efficiency model";
  InstallEfficientLinks(*fabric_, efficiency_, model_);
  executor_ = std::make_unique<TransferExecutor>(fabric_, engine_, model_,
                                                 efficiency_.per_message_overhead, orbits_);
}

CollectiveNetwork::~CollectiveNetwork() = default;

uint64_t CollectiveNetwork::transfers() const { return executor_->transfers(); }

uint64_t CollectiveNetwork::all_transfers() const {
  return transfers() + cached_transfers_ +
         (rehearsal_ == nullptr ? 0 : rehearsal_->executor->transfers());
}

uint64_t CollectiveNetwork::rehearsal_events() const {
  return rehearsal_ == nullptr ? 0 : rehearsal_->engine.executed_events();
}

sim::StatusOr<const CollectiveNetwork::Record*> CollectiveNetwork::RecordOf(
    const CollectiveRequest& request) {
  std::string key = KeyOf(request);
  auto it = records_.find(key);
  if (it != records_.end()) return &it->second;
  const bool explicit_chips = !request.ranks.empty() || request.op == CollectiveOp::kPointToPoint;
  const bool rooted =
      request.op == CollectiveOp::kPointToPoint || request.op == CollectiveOp::kBroadcast;
  std::vector<topology::VertexId> chips = request.ranks;
  if (rooted) chips.insert(chips.begin(), {request.src, request.dst});
  std::optional<FabricSymmetry::Shift> shift;
  if (explicit_chips && request.axes.empty()) shift = symmetry_.ToCanonical(chips);
  if (shift) {
    // Rehearse the canonical translate, and move its record here.
    CollectiveRequest origin = request;
    for (topology::VertexId& rank : origin.ranks) rank = symmetry_.ApplyToVertex(rank, *shift);
    if (rooted) {
      origin.src = symmetry_.ApplyToVertex(origin.src, *shift);
      origin.dst = symmetry_.ApplyToVertex(origin.dst, *shift);
    }
    if (KeyOf(origin) != key) {
      PODSIM_ASSIGN_OR_RETURN(const Record* base, Rehearse(origin));
      Record moved = *base;
      const FabricSymmetry::Shift back = symmetry_.Inverse(*shift);
      bool ok = true;
      for (sim::ResourceId& link : moved.bottleneck) {
        const topology::LinkIndex to = symmetry_.ApplyToLink(link.value, back);
        ok = ok && to != topology::kNoLink;
        link = sim::ResourceId{to};
      }
      if (ok) {
        std::sort(moved.bottleneck.begin(), moved.bottleneck.end());
        ++translated_;
        return &records_.emplace(std::move(key), std::move(moved)).first->second;
      }
    }
  }
  return Rehearse(request);
}

sim::StatusOr<const CollectiveNetwork::Record*> CollectiveNetwork::Rehearse(
    const CollectiveRequest& request) {
  std::string key = KeyOf(request);
  auto it = records_.find(key);
  if (it != records_.end()) return &it->second;
  if (shared_ != nullptr) {
    if (std::optional<Record> found = shared_->Find(key)) {
      cached_transfers_ += found->transfers;
      return &records_.emplace(std::move(key), std::move(*found)).first->second;
    }
  }
  if (rehearsal_ == nullptr) rehearsal_ = std::make_unique<Rehearsal>(fabric_, efficiency_);
  Rehearsal& r = *rehearsal_;
  CollectiveRequest alone = request;
  alone.efficiency = efficiency_;
  AlgorithmChoice choice;
  PODSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<Collective> collective,
      BuildCollective(*fabric_, alone, efficiency_, r.executor.get(), &choice, &cache_));
  // The rehearsal's clock runs on from one request to the next; durations are differences.
  const sim::Time start = r.engine.now();
  const uint64_t transfers_before = r.executor->transfers();
  sim::Time end = sim::Time::Max();
  r.recorder.Clear();
  r.engine.Schedule(LaunchLatency(efficiency_, request.launched),
                    [&] { collective->Start([&] { end = r.engine.now(); }); });
  r.engine.Run();
  if (r.engine.passed_horizon()) {
    return sim::PassedHorizonError("the " + std::string(CollectiveOpName(request.op)));
  }
  PODSIM_CHECK(end != sim::Time::Max()) << "a collective never completed in rehearsal";
  const LinkBytesRecorder& recorder = r.recorder;
  Record record;
  record.transfers = r.executor->transfers() - transfers_before;
  record.duration = end - start;
  record.algorithm = std::move(choice.algorithm);
  double slowest = 0;  // Largest bytes / bandwidth over the links.
  double most = 0;     // Largest bytes.
  for (uint32_t link : recorder.touched()) {
    slowest = std::max(slowest, recorder.bytes()[link] / model_->capacity(sim::ResourceId{link}));
    most = std::max(most, recorder.bytes()[link]);
  }
  if (slowest > 0) {
    record.rate = std::numeric_limits<double>::infinity();
    std::vector<uint32_t> links = recorder.touched();
    std::sort(links.begin(), links.end());
    for (uint32_t link : links) {
      const sim::ResourceId resource{link};
      const double bytes = recorder.bytes()[link];
      if (bytes / model_->capacity(resource) >= kBottleneckShare * slowest ||
          bytes >= kBottleneckShare * most) {
        record.bottleneck.push_back(resource);
        record.rate = std::min(record.rate, model_->capacity(resource));
      }
    }
    record.bytes = slowest * record.rate;
    const sim::Time transfer = sim::Time::FromSecondsCeil(slowest);
    record.latency = transfer < record.duration ? record.duration - transfer : sim::Time::Zero();
  } else {
    record.latency = record.duration;
  }
  if (shared_ != nullptr) shared_->Insert(key, record);
  return &records_.emplace(std::move(key), std::move(record)).first->second;
}

sim::StatusOr<sim::Time> CollectiveNetwork::IdleDuration(const CollectiveRequest& request) {
  PODSIM_ASSIGN_OR_RETURN(const Record* record, RecordOf(request));
  return record->duration;
}

sim::Status CollectiveNetwork::Launch(const CollectiveRequest& request, sim::EventHandler on_done,
                                      std::string* algorithm) {
  if (request.per_message_overhead != sim::Time::Zero()) {
    return sim::Status::InvalidArgument(
        "a collective network applies its own per-message overhead; the request's must be 0");
  }
  if (running_.size() >= 2 * compacted_size_ + 64) {
    std::erase_if(running_, [](const std::unique_ptr<Running>& r) { return r->done; });
    compacted_size_ = running_.size();
  }
  ++launched_;
  if (mode_ == NetworkMode::kWholeCollective) {
    PODSIM_ASSIGN_OR_RETURN(const Record* record, RecordOf(request));
    if (algorithm != nullptr) *algorithm = record->algorithm;
    ++whole_;
    if (record->bottleneck.empty()) {
      engine_->Schedule(record->duration, std::move(on_done));
      return sim::Status::Ok();
    }
    bool shared = false;
    for (sim::ResourceId link : record->bottleneck) shared = shared || busy_[link.value]++ > 0;
    if (shared) ++overlapped_;
    sim::FlowSpec flow;
    flow.bytes = record->bytes;
    flow.route = record->bottleneck;
    flow.latency = record->latency;
    sim::StatusOr<sim::FlowId> started =
        model_->StartFlow(flow, [this, record, done = std::move(on_done)]() mutable {
          for (sim::ResourceId link : record->bottleneck) --busy_[link.value];
          done();
        });
    PODSIM_CHECK(started.ok()) << started.status();
    return sim::Status::Ok();
  }
  CollectiveRequest shared = request;
  shared.efficiency = efficiency_;
  AlgorithmChoice choice;
  PODSIM_ASSIGN_OR_RETURN(
      std::unique_ptr<Collective> collective,
      BuildCollective(*fabric_, shared, efficiency_, executor_.get(), &choice, &cache_));
  if (algorithm != nullptr) *algorithm = std::move(choice.algorithm);
  running_.push_back(std::make_unique<Running>());
  Running* running = running_.back().get();
  running->collective = std::move(collective);
  engine_->Schedule(LaunchLatency(efficiency_, request.launched),
                    [running, done = std::move(on_done)]() mutable {
                      running->collective->Start([running, done = std::move(done)]() mutable {
                        done();
                        // Freed by a later Launch, after this callback has returned.
                        running->done = true;
                      });
                    });
  return sim::Status::Ok();
}

}  // namespace podsim::collectives
