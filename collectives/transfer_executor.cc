#include "collectives/transfer_executor.h"

#include <memory>
#include <utility>
#include <vector>

#include "sim/check.h"

namespace podsim::collectives {

TransferExecutor::TransferExecutor(const topology::Fabric* fabric, sim::Engine* engine,
                                   sim::FlowModel* model, sim::Time per_message_overhead)
    : fabric_(fabric), engine_(engine), model_(model), per_message_overhead_(per_message_overhead) {
  PODSIM_CHECK(fabric_ && engine_ && model_) << "TransferExecutor needs a fabric, engine and model";
  PODSIM_CHECK(model_->resource_count() == fabric_->link_count())
      << "flow model holds " << model_->resource_count() << " resources for "
      << fabric_->link_count() << " links; install the links first";
}

void TransferExecutor::Send(topology::VertexId src, topology::VertexId dst, double bytes,
                            sim::EventHandler on_done) {
  PODSIM_CHECK(bytes >= 0) << "negative transfer size " << bytes;
  ++transfers_;
  bytes_sent_ += bytes;
  if (per_message_overhead_ == sim::Time::Zero()) {
    StartFlows(src, dst, bytes, std::move(on_done));
    return;
  }
  engine_->Schedule(per_message_overhead_,
                    [this, src, dst, bytes, done = std::move(on_done)]() mutable {
                      StartFlows(src, dst, bytes, std::move(done));
                    });
}

void TransferExecutor::SendOnResources(std::vector<sim::ResourceId> resources, sim::Time latency,
                                       double bytes, sim::EventHandler on_done) {
  PODSIM_CHECK(bytes >= 0) << "negative transfer size " << bytes;
  ++transfers_;
  bytes_sent_ += bytes;
  sim::FlowSpec spec;
  spec.bytes = bytes;
  spec.latency = latency;
  spec.route = std::move(resources);
  auto start = [this, spec = std::move(spec), done = std::move(on_done)]() mutable {
    sim::StatusOr<sim::FlowId> flow = model_->StartFlow(spec, std::move(done));
    PODSIM_CHECK(flow.ok()) << "transfer on explicit resources: " << flow.status();
  };
  if (per_message_overhead_ == sim::Time::Zero()) {
    start();
  } else {
    engine_->Schedule(per_message_overhead_, std::move(start));
  }
}

void TransferExecutor::StartFlows(topology::VertexId src, topology::VertexId dst, double bytes,
                                  sim::EventHandler on_done) {
  if (src == dst) {
    engine_->Schedule(sim::Time::Zero(), std::move(on_done));
    return;
  }
  std::vector<topology::WeightedRoute> routes = fabric_->ParallelRoutes(src, dst);
  if (routes.size() == 1) {
    StartFlow(src, dst, bytes, routes.front().route, std::move(on_done));
    return;
  }
  // Striped over parallel routes: done when the last stripe is.
  auto shared_done = std::make_shared<sim::EventHandler>(std::move(on_done));
  auto pending = std::make_shared<size_t>(routes.size());
  for (const topology::WeightedRoute& weighted : routes) {
    StartFlow(src, dst, bytes * weighted.fraction, weighted.route, [shared_done, pending] {
      if (--*pending == 0) (*shared_done)();
    });
  }
}

void TransferExecutor::StartFlow(topology::VertexId src, topology::VertexId dst, double bytes,
                                 const std::vector<topology::LinkIndex>& route,
                                 sim::EventHandler on_done) {
  sim::FlowSpec spec;
  spec.bytes = bytes;
  spec.latency = fabric_->RouteLatency(route);
  spec.route.reserve(route.size());
  for (topology::LinkIndex link : route) spec.route.push_back(sim::ResourceId{link});
  sim::StatusOr<sim::FlowId> flow = model_->StartFlow(spec, std::move(on_done));
  PODSIM_CHECK(flow.ok()) << "transfer " << src << " -> " << dst << ": " << flow.status();
}

}  // namespace podsim::collectives
