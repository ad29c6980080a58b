// Flow-level bandwidth model: bytes moving over routes of capacity-limited resources, sharing
// every resource max-min fairly.
//
// Model (after SimGrid's CM02/LV08 network models, without their correction factors):
//   * A resource has a capacity in bytes/s; podsim uses one per link direction.
//   * A flow moves `bytes` over a route (a list of distinct resources). It first waits its route
//     latency, during which it uses no bandwidth, then becomes active.
//   * Active flows get the max-min fair allocation (progressive filling): every flow is limited
//     either by its own rate bound or by a saturated resource on which no other flow gets more.
//   * A flow completes when its bytes are delivered; completion times are rounded up to whole
//     picoseconds (time.h).
//
// Recomputation. Arrivals and departures at one instant are batched into one reallocation (an
// event at the same time, after the events already due). Flows started one after another that
// become active at one time, with no event scheduled in between, become active in one event, in
// the order an event each would have given. A reallocation replays progressive filling only
// where the change reaches, in increasing order of rate level (a sweep):
//   * Levels. Progressive filling raises every unfrozen flow's rate together; a flow freezes when
//     a resource it crosses saturates (it is the fastest there) or at its bound. Below the rate
//     r a departed flow had, none of its resources saturated, so without it the filling is the
//     same: every flow slower than r keeps its rate. Likewise every flow slower than an arriving
//     flow's new rate keeps its own, and that rate is at least 0.
//   * The region. The sweep follows a resource from the level where the change first reaches it
//     (a departure's rate, 0 for an arrival's resources, or the level at which a flow crossing
//     it changed rate). From there its flows slower than that level count at their rates; the
//     others join the region, unfrozen, and are frozen again by the sweep: when a followed
//     resource saturates (its capacity less its frozen flows, over its unfrozen flows'
//     weights, is the level), at their bound, or at their old rate, where a flow whose old
//     bottleneck no change reached saturates there again. A flow frozen at another rate than
//     before has changed, and the sweep follows every resource it crosses from that level.
//     When no event is left every flow of the region is frozen, as the full filling would
//     freeze it, and every other flow keeps its rate; only the changed ones are rescheduled.
//   * Ties. Rounding may split one level in two (a departed flow's rate and the equal rates of
//     the flows it shared a resource with): departures are followed from their rate less
//     1e-9 of it, a resource counts as slower only the flows more than 1e-9 below the level it
//     is followed from, and a flow reaches its old rate 4e-9 after it, so that a resource the
//     change reaches at a level is followed before a flow there is frozen at its old rate. Two
//     repairs keep that order exact: a flow that joins the region through one resource after
//     another followed one counted it at its rate is counted there as unfrozen again, and a flow
//     whose old bottleneck the change has not reached is never frozen above its old rate. Where
//     distinct levels fall within a few 1e-9 of each other, rates may still be off by about 1e-7
//     of themselves (8.4e-8 at worst in 3,000 random cases of levels jittered by 1e-9 steps, the
//     margins times weights up to 7); elsewhere they agree with a from-scratch filling to 1e-8.
//   * Watched resources. A resource that holds no flow (no flow's bottleneck) and has 2% of
//     its capacity spare is watched instead of followed where the change reaches it: its flows
//     do not join, and it constrains nothing. Without such resources the old rates are still
//     max-min fair (every flow keeps its bottleneck), so the sweep gives the max-min rates of
//     the flows without them; if each watched resource carries at most its capacity at those
//     rates, they are feasible with it too, and so max-min fair with it (fair among more
//     allocations, and one of the fewer). Otherwise the sweep runs again from the old rates
//     following the resources found over capacity, and a third time following every resource
//     the change reaches. In a dense load most resources a change reaches hold no flow: on
//     BM_SharedTorus 87% of those the sweep followed, and 67% of the flows it added to regions
//     came through them.
//   * Cost. The work is that of the resources followed (each scan reads every flow on it) and
//     the flows in the region, each event a heap operation; a watched resource's usage is kept
//     as its last usage plus the changes of the flows crossing it, read from their hops as they
//     freeze, so its flows are not read (but where that sum comes within 1e-6 of its capacity,
//     and after 1,024 commits in a row from such sums, so that rounding cannot accumulate; it
//     differs from the flows' sum by rounding, which may decide where a resource at exactly
//     98% of its capacity is watched: another path to the same max-min rates); idle resources
//     and unreached flows cost nothing. Arriving flows alone on
//     every resource they cross, or sharing them only with flows on the very same route (a ring
//     step's, a pipeline's pieces), are frozen at once, without events; a departure that leaves a
//     resource empty is not followed.
// Property tests check the max-min condition on every active flow after random bursts of
// changes, to 1e-6, and the rates against a from-scratch progressive filling (above); a
// watched resource may carry more than its capacity by 1e-9 of its fastest flow's rate times
// weight at most (rounding), so that the rates stay within 1e-8 of the filling's there too.
//
// Owners. Each flow has the owner that was current when it started (set_owner; 0: none), and a
// flow's callback runs with its owner current, so the flows a callback starts are its owner's
// too. An owner belongs to a group and a class (SetOwner; a collective request and its stream,
// say). A flow that becomes active on a resource where a flow of another owner is active (or
// either has none), or on a resource marked shared, makes the owners' groups contended. A group
// never contended had each owner's flows share every resource only with each other: they got
// the rates they would have got alone on an idle model. The model also remembers, per resource,
// whether flows (or holds) of more than one class ever used it.
//
// Holds. A caller that stands in for flows it does not start (collective_network.h, "Replays":
// a collective alone on its links, run as the delay it took alone) holds their resources for the
// time they would have taken. Those flows would have been the only ones on the resources, so a
// flow that becomes active on a held resource before the hold ends breaks the premise: the model
// then calls the intrusion handler with the hold's owner, and the caller must discard the run.
//
// Determinism: iteration orders are insertion orders and resource ids; no hashing, no addresses.
// Thread safety: none (single-threaded, like the engine).

#ifndef PODSIM_SIM_FLOW_MODEL_H_
#define PODSIM_SIM_FLOW_MODEL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "sim/engine.h"
#include "sim/flow_ids.h"
#include "sim/flow_observer.h"
#include "sim/status.h"
#include "sim/sweep_queue.h"
#include "sim/time.h"

namespace podsim::sim {

struct FlowSpec {
  double bytes = 0;               // >= 0 and finite. Zero-byte flows complete after `latency`.
  std::vector<ResourceId> route;  // Distinct resources. May be empty only with a rate bound.
  Time latency = Time::Zero();    // Paid once, before any byte moves; >= 0.
  // Upper bound on the flow's rate in bytes/s (a DMA engine, a NIC's per-flow cap); infinity for
  // none. Must be > 0.
  double max_rate_bytes_per_s = std::numeric_limits<double>::infinity();
  // Per resource of `route`, the flow's weight there (finite, > 0); empty: 1 on every resource.
  std::vector<double> weights = {};
};

// Runs when a flow's last byte is delivered; allocation-free for small captures (event_handler.h).
using FlowCallback = EventHandler;

class FlowModel {
 public:
  // The model schedules its events on `engine`, which must outlive it.
  explicit FlowModel(Engine* engine);
  FlowModel(const FlowModel&) = delete;
  FlowModel& operator=(const FlowModel&) = delete;

  // Adds a resource. Fails with InvalidArgument unless capacity is finite and > 0.
  StatusOr<ResourceId> AddResource(double capacity_bytes_per_s);

  // Starts a flow now; `on_done` runs (as an engine event) when its last byte is delivered.
  // Fails with InvalidArgument on negative or non-finite bytes, a negative latency, a bound that is
  // not > 0, weights that are not one finite positive number per resource, or an empty route
  // without a bound. A route naming an unknown or repeated resource is
  // a programmer error and aborts.
  StatusOr<FlowId> StartFlow(const FlowSpec& spec, FlowCallback&& on_done);

  size_t resource_count() const { return resources_.size(); }
  double capacity(ResourceId resource) const;
  // Sum of the rates of the active flows crossing `resource`, each times its weight, in bytes/s.
  double usage(ResourceId resource) const;
  // The usage the model keeps for `resource` as of its last reallocation, from which it decides
  // what to watch (for a resource last watched, a sum of changes: "Watched resources" above); it
  // equals usage() to rounding once the reallocation due at a change has run.
  double kept_usage(ResourceId resource) const;
  // Number of active flows crossing `resource`.
  size_t flow_count(ResourceId resource) const;

  // Current rate of a flow in bytes/s: 0 while it waits its latency. REQUIRES: the flow exists.
  double rate(FlowId flow) const;
  bool exists(FlowId flow) const;
  // Flows started and not yet completed (waiting their latency or active).
  size_t live_flows() const { return live_flows_; }
  uint64_t completed_flows() const { return completed_flows_; }
  // Number of reallocations run so far, and the number of flows their sweeps re-solved in total
  // (repeated sweeps included): the measure of how local recomputation stays.
  uint64_t reallocations() const { return reallocations_; }
  uint64_t resolved_flows() const { return resolved_flows_; }
  // Sweeps run again because a watched resource would have been over capacity.
  uint64_t repeated_sweeps() const { return repeated_sweeps_; }

  // Attaches an observer (not owned; it must outlive the model's use). Its WantsFlowUsage() is
  // asked now.
  void AddObserver(FlowObserver* observer);
  bool observed() const { return !observers_.empty(); }
  // Tells the observers (OnUsageEchoed) that `resource` carries `used_bytes_per_s` from now on,
  // for a caller that stands in for flows on a held resource (header comment, "Holds").
  void EchoUsage(ResourceId resource, double used_bytes_per_s);

  // The owner of the flows started from now on (header comment, "Owners").
  void set_owner(uint32_t owner) { owner_ = owner; }
  uint32_t owner() const { return owner_; }
  // Puts `owner` (> 0) in `group` (> 0) and class `cls`; owners never put have both 0.
  void SetOwner(uint32_t owner, uint32_t group, uint32_t cls);
  bool GroupContended(uint32_t group) const {
    return group < group_contended_.size() && group_contended_[group] != 0;
  }
  // Every flow that becomes active on `resource` contends, as with a flow of no owner.
  void MarkShared(ResourceId resource);
  // Whether every flow and hold on `resources` so far was of class `cls` (or none was), and none
  // of them is marked shared.
  bool UsedOnlyBy(std::span<const ResourceId> resources, uint32_t cls) const;

  // Whether no flow is active on any of `resources`, none waits its latency to cross one, and no
  // hold on one lasts past now. REQUIRES: the resources exist; an intrusion handler is set.
  bool Unused(std::span<const ResourceId> resources) const;
  // Holds `resources` until `until` (> now) for `owner`. REQUIRES: Unused(resources).
  void Hold(std::span<const ResourceId> resources, Time until, uint32_t owner);
  // Runs, with the hold's owner, when a flow becomes active on a held resource before the hold
  // ends (the header comment). Called from within the flow's activation; may stop the engine (the
  // flows activated in the same event still become active: the run is to be discarded), and must
  // not start flows.
  using IntrusionHandler = std::function<void(uint32_t owner)>;
  void SetIntrusionHandler(IntrusionHandler handler) {
    Track();
    on_intrusion_ = std::move(handler);
  }

 private:
  struct Hop {
    uint32_t resource;
    uint32_t position;  // Index of this flow in the resource's flow list while active.
    double weight;      // FlowSpec::weights.
  };
  // The hops of a route: up to kInlineHops inside the Flow, longer routes on the heap. Reused
  // when a flow slot is. Six: a fat tree's route between nodes through a spine (four to six
  // hops) stays inline; with three, the h100:16384 all-reduce's flows (3.97 hops on average)
  // each copied their hops to the heap and read them there, about 15% of that run.
  class HopList {
   public:
    static constexpr size_t kInlineHops = 6;
    void clear() {
      size_ = 0;
      overflow_.clear();
    }
    void push_back(Hop hop) {
      if (size_ < kInlineHops) {
        inline_[size_] = hop;
      } else {
        if (size_ == kInlineHops) overflow_.assign(inline_, inline_ + kInlineHops);
        overflow_.push_back(hop);
      }
      ++size_;
    }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    Hop* begin() { return size_ <= kInlineHops ? inline_ : overflow_.data(); }
    Hop* end() { return begin() + size_; }
    const Hop* begin() const { return size_ <= kInlineHops ? inline_ : overflow_.data(); }
    const Hop* end() const { return begin() + size_; }
    Hop& operator[](size_t i) { return begin()[i]; }
    const Hop& operator[](size_t i) const { return begin()[i]; }

   private:
    uint32_t size_ = 0;
    Hop inline_[kInlineHops];
    std::vector<Hop> overflow_;  // All hops once there are more than kInlineHops.
  };
  struct Flow {
    uint32_t generation = 1;
    bool live = false;
    bool active = false;   // Latency paid; moving bytes.
    bool sharing = false;  // Registered on its resources (active, bytes > 0, non-empty route).
    bool waiting = false;  // Counted in its resources' `waiting` (started with a latency).
    // What holds its rate where it is: the resource on which it is saturated and the fastest,
    // kBoundBottleneck at its rate bound, kNoBottleneck before its first allocation.
    uint32_t bottleneck = kNoBottleneck;
    uint32_t owner = 0;
    double remaining_bytes = 0;  // As of last_update_ps.
    double rate = 0;             // bytes/s
    double bound = 0;            // bytes/s, infinity if none
    int64_t last_update_ps = 0;
    EventId completion;
    uint32_t next_activation = 0;  // The next flow of its activation event (ScheduleActivation).
    HopList hops;
  };
  struct FlowRef {
    uint32_t flow;
    uint32_t hop;   // Index into the flow's hops.
    double weight;  // The hop's, kept here so a resource's usage reads no hop list.
  };
  struct Resource {
    double capacity;
    // Sum of active flow rates times their weights as of the last commit (for a resource last
    // watched, kept as a sum of changes: WatchedFit).
    double usage = 0;
    std::vector<FlowRef> flows;
    // The commits in a row that set `usage` from a sum of changes.
    uint32_t estimated_commits = 0;
  };
  // A resource's owners, classes and hold (header comment), apart from the state the solver
  // reads, which they would spread over more cache lines.
  struct Tags {
    // The owner of the first active flow, and how many active flows it has here (flows of other
    // owners were reported contended when they came); not kept on a shared resource.
    uint32_t owner = 0;
    uint32_t owner_flows = 0;
    uint32_t used_by = 0;    // 1 + the class of the first flow or hold on it (0: none yet).
    bool mixed_use = false;  // Flows or holds of another class followed.
    bool shared = false;     // MarkShared.
    uint32_t waiting = 0;    // Flows waiting their latency to cross it.
    uint32_t hold_owner = 0;
    int64_t held_until_ps = 0;  // The end of its hold (0: none).
  };
  static void NoteUse(Tags& resource, uint32_t cls) {
    if (resource.used_by == 0) {
      resource.used_by = cls + 1;
    } else if (resource.used_by != cls + 1) {
      resource.mixed_use = true;
    }
  }

  // Activates `flow` at `at` (> now). A flow joins the event of the flow started just before it
  // when both become active at `at` and no event was scheduled in between: its own event would
  // have run right after that one, so the order of everything is as with an event a flow (a ring
  // step's flows, started together, take one event).
  void ScheduleActivation(Time at, uint32_t flow);
  void Activate(uint32_t flow);
  void Complete(uint32_t flow);
  void RequestReallocation();
  // The sweep (header comment, "Recomputation"), then Commit.
  void Reallocate();
  // Seeds the sweep from arrivals_ and departures_ and runs its events.
  void Sweep();
  // Clears a sweep's region, followed and watched resources, and starts a new epoch.
  void EndSweep();
  // Where the change reaches resource `r`: while watching_, if no flow is held by it, it has
  // kWatchSpare of its capacity spare, and it is neither followed nor to be followed in this
  // reallocation, watches it instead of following it (header comment, "Watched resources").
  // Returns whether it is watched.
  bool Watch(uint32_t r);
  // The watched resources' usage at the rates Commit will commit; those over capacity are to be
  // followed. Returns whether none is. The sweep keeps a watched resource's usage as it goes:
  // its usage as of the last commit, less its departed flows, plus the change of each flow that
  // crosses it and freezes at a new rate (MarkChanged, AddChange), so that no watched resource's
  // flows are read. That sum is exact but for rounding; where it comes within kEstimateMargin of
  // the capacity, or the resource's usage has been such a sum kMaxEstimatedCommits times in a
  // row, its flows are summed instead (and the margin checked as the header comment states).
  bool WatchedFit();
  // A region flow whose new rate is within kRateChangeEpsilon of its old one keeps the old one
  // and its completion event (Commit).
  bool KeepsOldRate(uint32_t f) const {
    const double previous = flow_previous_rate_[f];
    return flows_[f].completion.valid() &&
           std::fabs(flows_[f].rate - previous) <= kRateChangeEpsilon * previous;
  }
  // The sum of the rates of the flows on `r`, each times its weight.
  double SummedUsage(uint32_t r) const;
  // Adds `flow` to the sweep's region, unfrozen, its rate so far kept as the previous one;
  // followed resources other than `scanned` (the one whose scan adds it, if any) that counted it
  // at its rate count it as unfrozen instead.
  void Join(uint32_t flow, uint32_t scanned);
  // From now on the sweep follows resource `r` at `level`: its flows below the level count at
  // their rates, the others join the region (an event at each one's old rate), and, with
  // `schedule`, its saturation is scheduled. Returns false (a no-op) if it was followed already.
  bool MakeDirty(uint32_t r, double level, bool schedule = true);
  // The rate of `flow` changes: every resource it crosses is followed from `level` on, or
  // watched; a watched one's usage takes `change` (the flow's new rate less its old one, once
  // frozen; else 0) times the flow's weight there.
  void MarkChanged(uint32_t flow, double level, double change);
  // A flow marked changed before it froze (at its old rate) froze at a rate `change` off its old
  // one: the usage of the resources it crosses that are watched takes that change.
  void AddChange(uint32_t flow, double change);
  // Freezes arriving flow `f` and the unfrozen flows that take its route with its weights and
  // bound, if no other unfrozen flow crosses any of its resources (all followed): they get the
  // smallest share on the route, or the bound. Otherwise does nothing.
  void FreezeIsolated(uint32_t f);
  // Fixes a region flow at `rate`, held there by `bottleneck`, taking it off its followed
  // resources' residual capacity; marks it changed if its rate moved.
  void Freeze(uint32_t flow, double rate, uint32_t bottleneck);
  // A followed resource's fair share: its residual over its unfrozen flows' weights.
  // REQUIRES: unfixed_[resource] > 0.
  double FairShare(uint32_t resource) const {
    return std::max(residual_[resource], 0.0) / unfixed_weight_[resource];
  }
  // Recomputes usage from the flows on the resource and checks it against the capacity.
  void RefreshResource(uint32_t resource);
  void Commit();
  // Schedules the flow's completion at its rate, or moves it there if one is pending.
  void ScheduleCompletion(uint32_t flow);
  FlowId IdOf(uint32_t flow) const { return FlowId{flow, flows_[flow].generation}; }
  Time Now() const { return engine_->now(); }

  Engine* engine_;
  std::vector<Resource> resources_;
  std::vector<Tags> tags_;  // Per resource.
  std::vector<Flow> flows_;
  // Per flow slot; cold, so kept apart from flows_. A deque: a callback runs in place while it
  // may start flows that grow the container.
  std::deque<FlowCallback> callbacks_;
  std::vector<uint32_t> free_flows_;
  // The flows sharing an activation event form a chain through Flow::next_activation; the
  // last chain made is open to the next flow (ScheduleActivation).
  static constexpr uint32_t kNoFlow = UINT32_MAX;
  Time open_at_ = Time::Max();            // Its activation time.
  uint64_t open_scheduled_ = UINT64_MAX;  // Engine::scheduled_events() once its event was.
  uint32_t open_tail_ = kNoFlow;          // Its last flow.
  std::vector<FlowObserver*> observers_;
  std::vector<FlowObserver*> usage_observers_;  // Those that want flows' usage.
  IntrusionHandler on_intrusion_;
  uint32_t owner_ = 0;
  // Owners, classes, holds and waiting counts are kept only once a caller uses them (Track, on
  // their first use, before any flow): a model without replays pays nothing for them.
  bool tracking_ = false;
  void Track();
  struct OwnerInfo {
    uint32_t group = 0;
    uint32_t cls = 0;
  };
  std::vector<OwnerInfo> owners_;         // By owner.
  std::vector<uint8_t> group_contended_;  // By group.
  const OwnerInfo& InfoOf(uint32_t owner) const {
    static const OwnerInfo kNone;
    return owner < owners_.size() ? owners_[owner] : kNone;
  }
  void Contend(uint32_t owner) {
    const uint32_t group = InfoOf(owner).group;
    if (group != 0) group_contended_[group] = 1;
  }
  size_t live_flows_ = 0;
  uint64_t completed_flows_ = 0;
  uint64_t reallocations_ = 0;
  uint64_t resolved_flows_ = 0;
  uint64_t repeated_sweeps_ = 0;
  bool reallocation_pending_ = false;

  // The changes since the last reallocation: flows that became active, and the resources flows
  // left with the rate each had.
  std::vector<uint32_t> arrivals_;
  struct Departure {
    uint32_t resource;
    double rate;    // The departed flow's.
    double weight;  // Its weight on `resource`.
  };
  std::vector<Departure> departures_;

  // Scratch state of one sweep. Membership is an epoch stamp, so clearing is O(1) and no work is
  // proportional to the number of idle flows or resources.
  uint64_t epoch_ = 1;
  std::vector<uint64_t> flow_in_set_;       // == epoch_: in the region.
  std::vector<uint64_t> flow_fixed_;        // == epoch_: frozen.
  std::vector<uint64_t> flow_changed_;      // == epoch_: marked changed.
  std::vector<double> flow_previous_rate_;  // Rate before this sweep, for region flows.
  // == epoch_: followed (in dirty_); == epoch_ | kWatchedMark: watched (in watched_).
  std::vector<uint64_t> resource_dirty_;
  static constexpr uint64_t kWatchedMark = uint64_t{1} << 63;  // Epochs stay below it.
  // To be followed for the rest of this reallocation: a sweep found them over capacity (few).
  std::vector<uint32_t> to_follow_;
  std::vector<uint32_t> flow_previous_bottleneck_;  // Bottleneck before this sweep (region flows).
  // Per resource, the active flows whose bottleneck it is, as of the last commit.
  std::vector<uint32_t> held_;

  // StartFlow's check for a repeated resource on long routes: == solve_stamp_ once seen.
  std::vector<uint64_t> resource_solving_;
  uint64_t solve_stamp_ = 1;
  std::vector<double> residual_;        // Followed resource: capacity less its frozen flows.
  std::vector<uint32_t> unfixed_;       // Followed resource: its unfrozen region flows.
  std::vector<double> unfixed_weight_;  // Their weights' sum.
  std::vector<uint32_t> region_;
  // The highest level a resource has been followed from in this sweep (MakeDirty); a flow at
  // least that fast was counted as slower by none (Join).
  double highest_followed_level_ = 0;
  struct Watched {
    uint32_t resource;
    bool summed = false;  // Whether WatchedFit summed its flows (else: usage is a sum of changes).
    double usage;         // At the rates frozen so far (WatchedFit).
    // Usage above which WatchedFit sums its flows (kEstimateMargin below the capacity), or
    // -infinity once its usage has been a sum of changes kMaxEstimatedCommits times in a row.
    double sum_above;
  };
  std::vector<Watched> watched_;
  std::vector<uint32_t> watched_slot_;  // Per resource: its index in watched_ while watched.
  bool watching_ = true;                // Whether the sweep may watch resources.
  std::vector<uint32_t> dirty_;
  std::vector<uint32_t> seeded_;  // Resources the arrivals made dirty, not yet scheduled.
  std::vector<uint32_t> bundle_;  // FreezeIsolated's flows.
  // The sweep's events, in order of level, then kind, then id (a resource or a flow slot).
  enum class EventKind : uint32_t {
    kDirty = 0,       // Follow resource `id` from this level (a seed).
    kSaturation = 1,  // Resource `id` saturates at this level, if its share has not grown.
    kOldRate = 2,     // Region flow `id` reaches its old rate.
    kBound = 3,       // Region flow `id` reaches its rate bound.
  };
  void PushEvent(double level, EventKind kind, uint32_t id) {
    events_.Push(level, static_cast<uint32_t>(kind), id);
  }
  SweepQueue events_;
  // A re-solved rate within this relative distance of the old one keeps the old rate and its
  // completion event: rescheduling would change nothing observable.
  static constexpr double kRateChangeEpsilon = 1e-12;
  static constexpr uint32_t kNoBottleneck = UINT32_MAX;
  static constexpr uint32_t kBoundBottleneck = UINT32_MAX - 1;
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FLOW_MODEL_H_
