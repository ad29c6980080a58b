#include "collectives/transfer_executor.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "sim/check.h"

namespace podsim::collectives {

TransferExecutor::TransferExecutor(const topology::Fabric* fabric, sim::Engine* engine,
                                   sim::FlowModel* model, sim::Time per_message_overhead,
                                   const LinkOrbits* orbits)
    : fabric_(fabric),
      engine_(engine),
      model_(model),
      per_message_overhead_(per_message_overhead),
      orbits_(orbits),
      recent_plans_(size_t{1} << kRecentPlanBits) {
  PODSIM_CHECK(fabric_ && engine_ && model_) << "TransferExecutor needs a fabric, engine and model";
  PODSIM_CHECK(orbits_ == nullptr || orbits_->canonical.size() == fabric_->link_count())
      << "link orbits of another fabric";
  PODSIM_CHECK(model_->resource_count() == fabric_->link_count())
      << "flow model holds " << model_->resource_count() << " resources for "
      << fabric_->link_count() << " links; install the links first";
}

void TransferExecutor::Send(topology::VertexId src, topology::VertexId dst, double bytes,
                            sim::EventHandler&& on_done, SendTiming timing, RouteChoice routes) {
  PODSIM_CHECK(bytes >= 0) << "negative transfer size " << bytes;
  ++transfers_;
  bytes_sent_ += bytes;
  if (timing.data_ready == sim::Time::Max()) timing.data_ready = engine_->now();
  if (observer_ != nullptr) Observe(src, dst, bytes, &on_done);
  PODSIM_CHECK(timing.data_ready <= engine_->now() && timing.previous_done <= engine_->now())
      << "send timing in the future";
  StartFlows(src, dst, bytes, std::move(on_done), timing, routes);
}

void TransferExecutor::SendOnResources(std::span<const sim::ResourceId> resources,
                                       sim::Time latency, double bytes, sim::EventHandler&& on_done,
                                       SendTiming timing) {
  PODSIM_CHECK(bytes >= 0) << "negative transfer size " << bytes;
  ++transfers_;
  bytes_sent_ += bytes;
  if (timing.data_ready == sim::Time::Max()) timing.data_ready = engine_->now();
  PODSIM_CHECK(timing.data_ready <= engine_->now() && timing.previous_done <= engine_->now())
      << "send timing in the future";
  if (observer_ != nullptr) {
    // Name the ends by the first and last links crossed; a resource that is not a link (a
    // switch's reduction engine) is skipped, so the switch stands for it.
    const uint32_t links = fabric_->link_count();
    auto first = std::find_if(resources.begin(), resources.end(),
                              [links](sim::ResourceId r) { return r.value < links; });
    auto last = std::find_if(resources.rbegin(), resources.rend(),
                             [links](sim::ResourceId r) { return r.value < links; });
    PODSIM_CHECK(first != resources.end()) << "transfer crosses no link";
    Observe(fabric_->link(first->value).src, fabric_->link(last->value).dst, bytes, &on_done);
  }
  spec_.bytes = bytes;
  spec_.route.clear();
  spec_.weights.clear();
  if (orbits_ == nullptr) {
    spec_.route.assign(resources.begin(), resources.end());
  } else {
    for (sim::ResourceId resource : resources) AddToRoute(resource, &spec_);
  }
  spec_.latency = StartDelay(timing, latency);
  sim::StatusOr<sim::FlowId> flow = model_->StartFlow(spec_, std::move(on_done));
  PODSIM_CHECK(flow.ok()) << "transfer on explicit resources: " << flow.status();
}

sim::Time TransferExecutor::StartDelay(SendTiming timing, sim::Time latency) const {
  // The per-message overhead is software work from the send on, before the bytes leave; the
  // sender could start once its data was ready and its previous message no longer needed the
  // wire's latency, and the wire owes what is left of that latency. The flow model waits the
  // whole delay before the flow takes bandwidth, so one event covers both.
  const sim::Time sender_starts =
      std::max(timing.data_ready, timing.previous_done - latency) + per_message_overhead_;
  return std::clamp(sender_starts + latency - engine_->now(), per_message_overhead_,
                    per_message_overhead_ + latency);
}

void TransferExecutor::Observe(topology::VertexId src, topology::VertexId dst, double bytes,
                               sim::EventHandler* on_done) {
  const uint64_t id = transfers_;
  observer_->OnTransferStarted(engine_->now(), id, src, dst, bytes);
  *on_done = [this, id, done = std::move(*on_done)]() mutable {
    observer_->OnTransferCompleted(engine_->now(), id);
    done();
  };
}

void TransferExecutor::StartFlows(topology::VertexId src, topology::VertexId dst, double bytes,
                                  sim::EventHandler&& on_done, SendTiming timing,
                                  RouteChoice routes) {
  if (src == dst) {
    // What the callback starts is this transfer's owner's (sim/flow_model.h, "Owners").
    engine_->Schedule(per_message_overhead_, [model = model_, owner = model_->owner(),
                                              done = std::move(on_done)]() mutable {
      const uint32_t outer = model->owner();
      model->set_owner(owner);
      done();
      model->set_owner(outer);
    });
    return;
  }
  // Nothing below re-enters Send or StripesOf: flow completions always arrive as later events.
  std::vector<Stripe>& stripes = StripesOf(src, dst, routes);
  if (stripes.size() == 1) {
    // The whole transfer, or one stripe standing for its copies' alike.
    StartFlow(stripes.front(), bytes * stripes.front().fraction, std::move(on_done), timing);
    return;
  }
  // Striped over parallel routes: done when the last stripe is.
  uint32_t stripe;
  if (!free_stripes_.empty()) {
    stripe = free_stripes_.back();
    free_stripes_.pop_back();
  } else {
    stripe = static_cast<uint32_t>(stripes_.size());
    stripes_.emplace_back();
  }
  stripes_[stripe].pending = stripes.size();
  stripes_[stripe].on_done = std::move(on_done);
  for (Stripe& part : stripes) {
    StartFlow(
        part, bytes * part.fraction,
        [this, stripe] {
          Stripes& s = stripes_[stripe];
          if (--s.pending > 0) return;
          sim::EventHandler done = std::move(s.on_done);
          s.on_done = nullptr;
          free_stripes_.push_back(stripe);
          done();
        },
        timing);
  }
}

std::vector<TransferExecutor::Stripe>& TransferExecutor::StripesOf(topology::VertexId src,
                                                                   topology::VertexId dst,
                                                                   RouteChoice routes) {
  const uint32_t choice = routes == RouteChoice::kEveryAxisFirst ? 0 : 1;
  std::unordered_map<uint64_t, std::vector<Stripe>>& plans = plans_[choice];
  const uint64_t key = (static_cast<uint64_t>(src) << 32) | dst;
  // Fibonacci hashing of the pair; the choice flips the top bit of the slot.
  RecentPlan& recent = recent_plans_[((key * 0x9E3779B97F4A7C15ull) >> (64 - kRecentPlanBits)) ^
                                     (size_t{choice} << (kRecentPlanBits - 1))];
  if (recent.stripes != nullptr && recent.key == key && recent.choice == choice) {
    return *recent.stripes;
  }
  if (auto it = plans.find(key); it != plans.end()) {
    recent = RecentPlan{key, choice, &it->second};
    return it->second;
  }
  if (plans.size() >= kMaxPlans) {
    plans.clear();
    std::fill(recent_plans_.begin(), recent_plans_.end(), RecentPlan{});
  }
  fabric_->ParallelRoutes(src, dst, &routes_, routes == RouteChoice::kEveryAxisFirst);
  std::vector<Stripe>& stripes = plans[key];
  recent = RecentPlan{key, choice, &stripes};
  for (const topology::WeightedRoute& weighted : routes_) {
    // A stripe on a copy of an NVSwitch has a twin on the switch that stands for it, in this
    // same transfer, which the quotient simulates instead (link_orbits.h).
    if (orbits_ != nullptr &&
        std::any_of(weighted.route.begin(), weighted.route.end(),
                    [this](topology::LinkIndex link) { return orbits_->IsCopy(link); })) {
      continue;
    }
    sim::FlowSpec spec;
    if (orbits_ == nullptr) {
      for (topology::LinkIndex link : weighted.route) spec.route.push_back(sim::ResourceId{link});
    } else {
      for (topology::LinkIndex link : weighted.route) AddToRoute(sim::ResourceId{link}, &spec);
    }
    stripes.push_back(
        Stripe{weighted.fraction, fabric_->RouteLatency(weighted.route), std::move(spec)});
  }
  return stripes;
}

void TransferExecutor::StartFlow(Stripe& stripe, double bytes, sim::EventHandler&& on_done,
                                 SendTiming timing) {
  stripe.flow.bytes = bytes;
  stripe.flow.latency = StartDelay(timing, stripe.latency);
  sim::StatusOr<sim::FlowId> flow = model_->StartFlow(stripe.flow, std::move(on_done));
  PODSIM_CHECK(flow.ok()) << "transfer: " << flow.status();
}

void TransferExecutor::AddToRoute(sim::ResourceId resource, sim::FlowSpec* spec) const {
  double weight = 1;
  if (resource.value < fabric_->link_count()) {
    weight = orbits_->multiplicity[resource.value];
    PODSIM_CHECK(weight > 0) << "a flow of a symmetric quotient crosses link " << resource.value
                             << ", which its group does not act on";
    // A copy's flows are its twin's (link_orbits.h): the callers leave them out.
    PODSIM_CHECK(!orbits_->IsCopy(resource.value))
        << "a flow of a symmetric quotient crosses link " << resource.value
        << ", a copy of an NVSwitch link its twin stands for";
    resource = sim::ResourceId{orbits_->canonical[resource.value]};
  }
  for (size_t i = 0; i < spec->route.size(); ++i) {
    if (spec->route[i] == resource) {
      spec->weights[i] += weight;
      return;
    }
  }
  spec->route.push_back(resource);
  spec->weights.push_back(weight);
}

}  // namespace podsim::collectives
