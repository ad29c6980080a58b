// TransferExecutor: point-to-point transfers between fabric vertices, run as flows.
//
// A transfer of N bytes from src to dst waits the per-message overhead (software and launch cost
// of one message, paid once per transfer), then moves its bytes as flows on the fabric's routes:
// one flow per parallel route (NVLink striping over a node's NVSwitches) with that route's share
// of the bytes, each paying its route's per-hop latency. The transfer is done when every flow is.
// Flows are cut-through: a flow occupies all links of its route at once, as a wormhole-routed
// transfer does, so there is no store-and-forward delay per hop.
//
// Back-to-back sends on one channel. A flow pays its route latency before its bytes move, which
// is right for a send into an idle channel. When a sender streams chunks, the next chunk's first
// byte leaves as soon as the previous chunk's last byte has (its route latency then overlaps the
// previous chunk's delivery), so SendTiming lets the caller say when the data was ready and when
// the channel's previous send completed; the flow's latency is cut to what the wire still owes:
//   sender starts  s = max(data_ready, previous_done - L) + O   (L = route latency,
//                                                                O = per-message overhead)
//   start delay    = s + L - now, within [O, O + L]             (now >= both times)
// so the send completes at s + L + bytes / rate, as on a pipelined link. The flow is started at
// the send with that delay (StartDelay): one event covers the overhead and the latency.
//
// Symmetric quotient (link_orbits.h): with `orbits`, every link of a route stands for its orbit's
// canonical link, and the flow crosses it with weight multiplicity x the number of the route's
// links in that orbit (sim/flow_model.h, "Weights"): each transfer is one per orbit of
// transfers. Resources that are not links (a switch's reduction engine, owned by one
// collective) keep weight 1.

#ifndef PODSIM_COLLECTIVES_TRANSFER_EXECUTOR_H_
#define PODSIM_COLLECTIVES_TRANSFER_EXECUTOR_H_

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "collectives/link_orbits.h"
#include "collectives/transfer_observer.h"
#include "sim/engine.h"
#include "sim/event_handler.h"
#include "sim/flow_model.h"
#include "sim/time.h"
#include "topology/fabric.h"

namespace podsim::collectives {

// When a send's data became available and when the previous send on the same channel completed;
// both at or before the time of the Send call. The default is a send into an idle channel.
struct SendTiming {
  sim::Time data_ready = sim::Time::Max();      // Max: "now".
  sim::Time previous_done = sim::Time::Zero();  // Zero with data_ready now: no credit.
};

// Which of the fabric's parallel routes a transfer is striped over (Fabric::ParallelRoutes): on a
// torus, one dimension-order route per axis crossed (kEveryAxisFirst), or the x-then-y-then-z one
// (kDimensionOrder), which an all-to-all takes: every pair sending at once loads each axis's
// links the same either way, and the rotations would triple its flows.
enum class RouteChoice { kEveryAxisFirst, kDimensionOrder };

class TransferExecutor {
 public:
  // `model` must hold the fabric's links as resources (topology::InstallLinks). All three must
  // outlive the executor.
  // `orbits`, when not null, must outlive the executor.
  TransferExecutor(const topology::Fabric* fabric, sim::Engine* engine, sim::FlowModel* model,
                   sim::Time per_message_overhead, const LinkOrbits* orbits = nullptr);
  TransferExecutor(const TransferExecutor&) = delete;
  TransferExecutor& operator=(const TransferExecutor&) = delete;

  // Sends `bytes` from src to dst; `on_done` runs when the last byte arrived. src == dst
  // completes after the overhead alone. REQUIRES: bytes >= 0 and finite, vertices exist.
  void Send(topology::VertexId src, topology::VertexId dst, double bytes,
            sim::EventHandler&& on_done, SendTiming timing = {},
            RouteChoice routes = RouteChoice::kEveryAxisFirst);

  // Sends `bytes` as one flow over explicit flow-model resources (links, and resources the caller
  // added to the model, such as a switch's reduction engine), paying the per-message overhead and
  // then `latency`, which `timing` cuts as for Send. Used by algorithms that address switches
  // directly (in_switch_reduction.h). REQUIRES: bytes >= 0 and finite; resources exist, are
  // distinct and not empty.
  void SendOnResources(std::span<const sim::ResourceId> resources, sim::Time latency, double bytes,
                       sim::EventHandler&& on_done, SendTiming timing = {});

  // Attaches an observer of every transfer (not owned; null detaches).
  void SetObserver(TransferObserver* observer) { observer_ = observer; }

  sim::Engine* engine() const { return engine_; }
  sim::FlowModel* model() const { return model_; }
  sim::Time per_message_overhead() const { return per_message_overhead_; }
  // The quotient's link orbits, or null when every chip is simulated.
  const LinkOrbits* orbits() const { return orbits_; }
  const topology::Fabric& fabric() const { return *fabric_; }
  uint64_t transfers() const { return transfers_; }
  double bytes_sent() const { return bytes_sent_; }

 private:
  // With an observer: reports the transfer's start and wraps `on_done` to report its end.
  void Observe(topology::VertexId src, topology::VertexId dst, double bytes,
               sim::EventHandler* on_done);
  void StartFlows(topology::VertexId src, topology::VertexId dst, double bytes,
                  sim::EventHandler&& on_done, SendTiming timing, RouteChoice routes);
  // The flows of a transfer between two vertices as the fabric routes them: per parallel route,
  // its share of the bytes, its latency and its resources with their weights (the quotient's
  // orbits applied; no weights without them). Built once per (src, dst, choice) and kept, since
  // collectives send between the same pairs over and over. Each keeps the spec of its flows,
  // whose bytes and start delay StartFlow sets per transfer (no copy of the route).
  struct Stripe {
    double fraction = 1;
    sim::Time latency;
    sim::FlowSpec flow;
  };
  std::vector<Stripe>& StripesOf(topology::VertexId src, topology::VertexId dst,
                                 RouteChoice routes);
  void StartFlow(Stripe& stripe, double bytes, sim::EventHandler&& on_done, SendTiming timing);
  // How long a flow started now waits before it takes bandwidth: the per-message overhead, then
  // what `timing` leaves of the route's `latency`.
  sim::Time StartDelay(SendTiming timing, sim::Time latency) const;
  // Adds resource `resource` to `spec` (a link's canonical link with its weight, when a
  // quotient), merging it with an equal resource already there.
  void AddToRoute(sim::ResourceId resource, sim::FlowSpec* spec) const;

  const topology::Fabric* fabric_;
  sim::Engine* engine_;
  sim::FlowModel* model_;
  sim::Time per_message_overhead_;
  const LinkOrbits* orbits_;
  uint64_t transfers_ = 0;
  double bytes_sent_ = 0;
  TransferObserver* observer_ = nullptr;

  // Scratch reused by every transfer.
  std::vector<topology::WeightedRoute> routes_;
  sim::FlowSpec spec_;
  // StripesOf's plans by (src, dst) and by route choice; emptied when they pass kMaxPlans (an
  // all-to-all over many ranks), so memory stays bounded.
  static constexpr size_t kMaxPlans = 1 << 16;
  std::unordered_map<uint64_t, std::vector<Stripe>> plans_[2];
  // The plans found last, by a hash of (src, dst, choice), in front of the maps: a collective
  // sends between the same pairs step after step, and a slot costs one cache line where a map's
  // lookup costs a division and two dependent misses. Emptied with the maps.
  struct RecentPlan {
    uint64_t key = 0;
    uint32_t choice = 0;
    std::vector<Stripe>* stripes = nullptr;
  };
  static constexpr int kRecentPlanBits = 12;
  std::vector<RecentPlan> recent_plans_;
  // A transfer striped over parallel routes: its stripes still in flight and its callback.
  struct Stripes {
    size_t pending = 0;
    sim::EventHandler on_done;
  };
  std::vector<Stripes> stripes_;  // Indexed by the id the stripes' callbacks carry.
  std::vector<uint32_t> free_stripes_;
};

}  // namespace podsim::collectives

#endif  // PODSIM_COLLECTIVES_TRANSFER_EXECUTOR_H_
