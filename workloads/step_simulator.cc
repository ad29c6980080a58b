#include "workloads/step_simulator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "collectives/collective_network.h"
#include "collectives/link_copy_echo.h"
#include "sim/check.h"
#include "sim/engine.h"
#include "sim/flow_model.h"
#include "workloads/schedule_check.h"
#include "workloads/step_collectives.h"
#include "workloads/step_symmetry.h"

namespace podsim::workloads {

namespace {

using schedule::Op;
using sim::Time;

OpKind ToOpKind(schedule::OpKind kind) {
  switch (kind) {
    case schedule::MATMUL:
      return OpKind::kMatmul;
    case schedule::ATTENTION:
      return OpKind::kAttention;
    case schedule::NORM:
      return OpKind::kNorm;
    case schedule::EMBEDDING:
      return OpKind::kEmbedding;
    case schedule::LOSS:
      return OpKind::kLoss;
    case schedule::OPTIMIZER:
      return OpKind::kOptimizer;
    default:
      return OpKind::kElementwise;
  }
}

// A compute op's time on the compute stream: its `duration_s`, or its roofline cost.
OpCost CostOf(const ComputeModel& compute, const schedule::Op& op) {
  if (op.duration_s() > 0) {
    OpCost cost;
    cost.duration = Time::FromSecondsCeil(op.duration_s());
    return cost;
  }
  workloads::Op cost_op;
  cost_op.kind = ToOpKind(op.kind());
  cost_op.flops = op.flops();
  cost_op.hbm_read_bytes = op.hbm_bytes();
  cost_op.shape = MatmulShape{op.shape().m(), op.shape().k(), op.shape().n(),
                              op.shape().batch() > 0 ? op.shape().batch() : 1};
  cost_op.causal = op.causal();
  cost_op.fp8 = op.fp8();
  cost_op.kernel = op.kernel();
  if (op.phase() == PhaseName(Phase::kBackwardInput)) cost_op.phase = Phase::kBackwardInput;
  return compute.Cost(cost_op);
}

// What a program's ops need at run time, computed once per program.
struct ProgramPlan {
  std::vector<std::string> streams;          // Stream names; "compute" first when present.
  std::vector<int> stream_of;                // Per op.
  std::vector<std::vector<int>> stream_ops;  // Per stream, op indices in order.
  std::vector<int> stream_before;            // Per op: the op before it on its stream (-1: none).
  std::vector<std::vector<int>> dependents;  // Per op.
  std::vector<Time> duration;                // Compute ops.
  std::vector<ComputeLimiter> limiter;
  std::vector<int> axes_set;  // Collectives: index into Simulation::axes_sets_.
  int compute_stream = -1;
  // The lookahead (Simulation::NoneStartsBefore): per op, the last position on the compute
  // stream that it waits for, through its deps and its stream's order (-1: none); per position
  // on the compute stream, the nominal time of the compute ops before it (one more entry: all).
  // A compute op takes at least its nominal time (slowed while its chip communicates), one at a
  // time in stream order, so an op cannot start before what is left of that time has passed.
  std::vector<int> gate;
  std::vector<Time> compute_before;
  double flops = 0;
  double model_flops = 0;
  double hfu_flops = 0;  // Ops that state none count their model_flops (schedule.proto).
};

// A group (or a sender and its receiver) that runs a copy of a representative's collective.
struct Shadow {
  std::vector<uint32_t> ranks;
  std::vector<int> shape;
};

// At most this many shadows per collective, those sharing the most links first: enough for the
// chips of a TPU host on their DCN NICs (up to 8) and for strided pipeline neighbours.
constexpr size_t kMaxShadows = 8;

// One simulated chip.
struct Instance {
  int program = 0;
  uint32_t chip = 0;
  std::vector<int32_t> pending;                  // Unfinished deps per op.
  std::vector<size_t> head;                      // Per stream: position of the next op.
  std::vector<bool> busy;                        // Per stream.
  std::vector<Time> started;                     // Per op; Max until started.
  std::vector<Time> finished;                    // Per op; Max until done.
  std::vector<int> collective_count;             // Per axes set: collectives reached so far.
  std::unordered_map<uint64_t, bool> delivered;  // Recv tags whose bytes arrived.
  std::unordered_map<uint64_t, int> waiting;     // Recv tags: the started op waiting for them.
  int remaining = 0;
  Time compute_free = Time::Zero();  // End of the last compute op.
  TimeBreakdown time;
  // Interference (ComputeEfficiency::overlap_slowdown): communication in flight on this chip (its
  // collectives and sends, from start to end, and the sends it receives while their bytes move),
  // and the compute op running, with what is left of its nominal time since the last change of
  // pace. A collective counts from its start on this chip, its wait for the group's other members
  // included: an NCCL kernel occupies its SMs while it waits. Every send pays the same slowdown,
  // however few SMs a small one takes (one figure, calibration.md G5.4).
  int communicating = 0;
  int computing = -1;
  Time compute_started;
  Time pace_changed;
  Time work_left;
  sim::EventId compute_done;
};

class Simulation {
 public:
  // `group` (kOrbits) maps the step onto itself (step_symmetry.h).
  // `replays_excluded`, when not null with kOrbits, turns replays on for every collective but
  // those (collective_network.h, "Replays").
  Simulation(const topology::System& system, const schedule::Schedule& schedule,
             const CheckedSchedule& checked, const StepOptions& options,
             collectives::TranslationGroup group,
             const std::set<std::string>* replays_excluded = nullptr)
      : system_(system),
        schedule_(schedule),
        checked_(checked),
        options_(options),
        group_(std::move(group)),
        orbits_(group_.Orbits()),
        compute_(system.chip,
                 options.compute ? *options.compute : DefaultComputeEfficiency(system.chip)),
        model_(&engine_),
        network_(&system.fabric, &engine_, &model_,
                 options.calibrated ? collectives::CalibratedEfficiency(system.fabric)
                                    : collectives::PureFabric(),
                 Orbits() ? collectives::NetworkMode::kFlows : options.network, options.rehearsals,
                 Orbits() ? &orbits_ : nullptr) {
    if (options.flow_observer != nullptr) {
      if (Orbits() && !orbits_.twin.empty()) {
        copy_echo_.emplace(options.flow_observer, orbits_);
        model_.AddObserver(&*copy_echo_);
      } else {
        model_.AddObserver(options.flow_observer);
      }
    }
    if (!options.free_communication) overlap_slowdown_ = compute_.efficiency().overlap_slowdown;
    PODSIM_CHECK(options.chips != SimulatedChips::kAuto) << "kAuto reached a simulation";
    if (Orbits() && replays_excluded != nullptr) {
      network_.EnableReplays(*replays_excluded, [this] {
        Fail(sim::Status::InvalidArgument("a replayed collective's links were shared"));
      });
      if (options.verify_translated_replays) network_.VerifyTranslates();
    }
  }

  sim::StatusOr<StepResult> Run();
  // The request of the replay whose premise failed (collective_network.h): the run is void.
  const std::optional<std::string>& intruded() const { return network_.intruded(); }
  // The events run so far, rehearsals included (echoes of replays' link usage not).
  uint64_t events() const {
    return engine_.executed_events() - network_.echo_events() + network_.rehearsal_events();
  }

 private:
  sim::Status Plan();
  sim::Status ChooseChips();
  void TryStart(int inst, int stream);
  void Start(int inst, int op);
  void Finish(int inst, int op);
  void FinishSoon(int inst, int op) {
    engine_.Schedule(Time::Zero(), [this, inst, op] { Finish(inst, op); });
  }
  bool Orbits() const { return options_.chips == SimulatedChips::kOrbits; }
  // The instance simulating `chip`: its own, or (kOrbits) its orbit representative's; -1 when
  // none does.
  int InstanceOf(uint32_t chip) const {
    return instance_of_chip_[Orbits() ? group_.Rep(chip) : chip];
  }
  // kOrbits: the group of an axes set that stands for its orbit (step_symmetry.h).
  struct CanonicalGroup {
    std::vector<uint32_t> ranks;
    std::vector<int> shape;
    uint32_t rep = 0;       // The lowest representative among its members' orbits: the key.
    size_t members = 0;     // Distinct representatives among its members: who must arrive.
    size_t stabilizer = 0;  // Elements of the group mapping it onto itself.
    // With a stabilizer > 1, per rank the first rank of its orbit under it (two ranks are in
    // one orbit exactly when they have one representative): CollectiveRequest::rank_reps.
    std::vector<uint32_t> rank_reps;
  };
  const CanonicalGroup& CanonicalGroupOf(int set, uint32_t chip);
  // The replay channel (collective_network.h) of the collectives of an axes set (>= 0) or the
  // sends along an axis (-1 - axis) on a stream: one stream runs one op at a time.
  uint32_t ChannelOf(int set, const std::string& stream) {
    return channels_.try_emplace({set, stream}, static_cast<uint32_t>(channels_.size() + 1))
        .first->second;
  }
  void StartCollective(int inst, int op);
  // Send `op` of instance `inst` has arrived at instance `peer_inst`: ends it, and the Recv of
  // `tag` there if that is waiting.
  void Delivered(int inst, int op, int peer_inst, uint64_t tag);
  // The links of the routes between neighbours of each line of a rank grid (or ring).
  // With `every_route`, every route a transfer between them may take (Fabric::ParallelRoutes,
  // both choices) instead of Route's one.
  void FootprintOf(const std::vector<uint32_t>& ranks, const std::vector<int>& shape,
                   std::vector<uint32_t>* links, bool every_route = false) const;
  // Every route a transfer from `src` to `dst` may take, appended to `links`.
  void AppendEveryRoute(uint32_t src, uint32_t dst, std::vector<uint32_t>* links) const;
  // Expected users (collective_network.h): with replays, ExpectAll counts each collective and
  // send of every instance on the network, on its footprint (Expected), and Unexpect takes `op`
  // of `inst` off as it finishes.
  void ExpectAll();
  void Unexpect(int inst, int op);
  // The lookahead of replays (CollectiveNetwork::SetLookahead): whether no collective or send
  // but those being launched (launching_) whose footprint meets `resources` can start before
  // `until`, by each op's wait for compute (ProgramPlan::gate) and, after one being launched on
  // its stream, for that launch's end at `ends`; within `work` steps.
  bool NoneStartsBefore(std::span<const sim::ResourceId> resources, Time until, Time ends,
                        uint64_t work);
  // The channel and footprint (resources, ascending) of collective or send `op` of `inst`: every
  // route (both choices) between its group's neighbours on every line and, off tori, between
  // ranks at every power-of-two distance along the group; or from its sender to its receiver.
  std::pair<uint32_t, const std::vector<sim::ResourceId>*> Expected(int inst, int op);
  // Adds the resources carrying `links` to `*resources`, leaves it ascending without repeats, and
  // returns it.
  const std::vector<sim::ResourceId>& ResourcesOf(std::vector<uint32_t> links,
                                                  std::vector<sim::ResourceId>* resources) const;
  // kOnePerProgram: parallel copies of a representative's collective (or send) on the chips of
  // its program that share links with it (header comment).
  const std::vector<Shadow>& ShadowsOf(int set, int program, const std::vector<uint32_t>& ranks,
                                       const std::vector<int>& shape);
  const std::vector<Shadow>& SendShadowsOf(int program, int axis, int offset,
                                           const std::vector<uint32_t>& pair);
  std::vector<Shadow> Overlapping(const std::vector<uint32_t>& ranks, const std::vector<int>& shape,
                                  const std::vector<Shadow>& candidates) const;
  void StartSend(int inst, int op);
  void StartRecv(int inst, int op);
  // Communication begins or ends on instance `inst`; the running compute op changes pace when
  // the chip starts or stops communicating.
  void CommunicationBegins(int inst);
  void CommunicationEnds(int inst);
  void Repace(int inst, bool was_slowed);
  // `work` of nominal compute time as it runs on `instance` now (stretched while it
  // communicates).
  Time Paced(const Instance& instance, Time work) const;
  void Fail(sim::Status status) {
    if (error_.ok()) error_ = std::move(status);
    engine_.Stop();
  }
  // Charges a wait of `duration`, ending now, before compute op `op` of `instance`.
  void Charge(Instance& instance, int op, Time duration);
  // Charges the wait [from, until), which ended when op `last` finished (-1: none), along the
  // chain of what it waited for (the header comment, "Time accounting").
  void ChargeChain(Instance& instance, int last, Time from, Time until);
  StepResult Collect();
  // What is left of options_.max_transfers after the transfers simulated so far.
  uint64_t TransfersLeft() const {
    return options_.max_transfers - std::min(options_.max_transfers, network_.all_transfers());
  }

  const topology::System& system_;
  const schedule::Schedule& schedule_;
  const CheckedSchedule& checked_;
  const StepOptions& options_;
  // Compute runs slower by this fraction while its chip communicates (compute_model.h; 0 with
  // free communication, so that the lower bound stays one).
  double overlap_slowdown_ = 0;
  const collectives::TranslationGroup group_;
  const collectives::LinkOrbits orbits_;
  // The flow observer, told of the NVSwitch copies' load the quotient leaves out.
  std::optional<collectives::LinkCopyEcho> copy_echo_;
  std::map<std::pair<int, uint32_t>, CanonicalGroup> canonical_;  // (set, chip)
  std::map<std::pair<int, std::string>, uint32_t> channels_;      // (set, stream)
  // Footprints (Expected): of the canonical groups, by (set, canonical rep); of sends, by (chip,
  // axis, offset).
  std::map<std::pair<int, uint32_t>, std::vector<sim::ResourceId>> group_footprints_;
  std::map<std::tuple<uint32_t, int, int>, std::vector<sim::ResourceId>> send_footprints_;
  bool expecting_ = false;
  std::vector<std::pair<int, int>> launching_;  // (instance, op) of the launch being decided.
  ComputeModel compute_;
  sim::Engine engine_;
  sim::FlowModel model_;
  collectives::CollectiveNetwork network_;
  std::vector<ProgramPlan> plans_;
  std::vector<std::vector<int>> axes_sets_;  // Distinct CollectiveSets of collectives.
  std::vector<Instance> instances_;
  std::vector<int> instance_of_chip_;  // -1 when the chip is not simulated.
  // Collective barriers: (axes set, first rank, n-th) -> arrived (instance, op).
  std::map<std::tuple<int, uint32_t, int>, std::vector<std::pair<int, int>>> barriers_;
  std::map<std::pair<int, uint32_t>, std::vector<Shadow>> shadows_;  // (set, first rank)
  std::map<std::tuple<int, int, int>, std::vector<Shadow>>
      send_shadows_;  // (program, axis, offset)
  uint64_t shadow_launches_ = 0;
  uint64_t ops_executed_ = 0;
  sim::Status error_;
};

sim::Status Simulation::Plan() {
  for (const schedule::Program& program : schedule_.programs()) {
    ProgramPlan plan;
    const int n = program.ops_size();
    plan.stream_of.resize(n);
    plan.dependents.resize(n);
    plan.duration.assign(n, Time::Zero());
    plan.limiter.assign(n, ComputeLimiter::kNone);
    plan.axes_set.assign(n, -1);
    for (int i = 0; i < n; ++i) {
      const Op& op = program.ops(i);
      auto it = std::find(plan.streams.begin(), plan.streams.end(), op.stream());
      if (it == plan.streams.end()) {
        plan.streams.push_back(op.stream());
        plan.stream_ops.emplace_back();
        it = plan.streams.end() - 1;
      }
      const int stream = static_cast<int>(it - plan.streams.begin());
      if (op.stream() == "compute") plan.compute_stream = stream;
      plan.stream_of[i] = stream;
      plan.stream_ops[stream].push_back(i);
      for (uint32_t dep : op.deps()) plan.dependents[dep].push_back(i);
      if (IsComputeKind(op.kind())) {
        plan.flops += op.flops();
        plan.model_flops += op.model_flops();
        plan.hfu_flops += op.hfu_flops() > 0 ? op.hfu_flops() : op.model_flops();
        const OpCost cost = CostOf(compute_, op);
        plan.duration[i] = cost.duration;
        plan.limiter[i] = cost.limiter;
      }
      if (op.kind() == schedule::COLLECTIVE) {
        const std::vector<int> axes = CollectiveSet(checked_, op);
        auto found = std::find(axes_sets_.begin(), axes_sets_.end(), axes);
        if (found == axes_sets_.end()) {
          axes_sets_.push_back(axes);
          found = axes_sets_.end() - 1;
        }
        plan.axes_set[i] = static_cast<int>(found - axes_sets_.begin());
      }
    }
    plan.gate.assign(n, -1);
    std::vector<int> position(n, -1);  // On the compute stream.
    if (plan.compute_stream >= 0) {
      const std::vector<int>& ops = plan.stream_ops[plan.compute_stream];
      plan.compute_before.assign(1, Time::Zero());
      for (size_t k = 0; k < ops.size(); ++k) {
        position[ops[k]] = static_cast<int>(k);
        plan.compute_before.push_back(plan.compute_before.back() + plan.duration[ops[k]]);
      }
    }
    auto waits_for = [&](int op, int before) {
      plan.gate[op] = std::max({plan.gate[op], plan.gate[before], position[before]});
    };
    std::vector<int> last(plan.streams.size(), -1);  // Per stream: the op before, in order.
    plan.stream_before.assign(n, -1);
    for (int i = 0; i < n; ++i) {  // Deps and streams' order point to earlier ops.
      for (uint32_t dep : program.ops(i).deps()) waits_for(i, static_cast<int>(dep));
      if (last[plan.stream_of[i]] >= 0) waits_for(i, last[plan.stream_of[i]]);
      plan.stream_before[i] = last[plan.stream_of[i]];
      last[plan.stream_of[i]] = i;
    }
    plans_.push_back(std::move(plan));
  }
  return sim::Status::Ok();
}

sim::Status Simulation::ChooseChips() {
  const MeshGrid& grid = checked_.grid;
  std::vector<uint32_t> chips;
  if (options_.chips == SimulatedChips::kEveryChip) {
    for (uint32_t chip = 0; chip < grid.chip_count(); ++chip) chips.push_back(chip);
  } else if (Orbits()) {
    for (uint32_t chip = 0; chip < grid.chip_count(); ++chip) {
      if (group_.Rep(chip) == chip) chips.push_back(chip);
    }
  } else {
    for (const schedule::Program& program : schedule_.programs()) {
      uint32_t chip = 0;  // Coordinate 0 on every axis.
      for (const auto& [name, coord] : program.where()) {
        chip = grid.ChipWith(chip, grid.AxisIndex(name), coord);
      }
      chips.push_back(chip);
    }
  }
  // Each simulated chip keeps a few words per op of its program: bounded before allocating.
  constexpr double kMaxOpInstances = 1e8;
  double op_instances = 0;
  for (uint32_t chip : chips) {
    op_instances += schedule_.programs(checked_.program_of_chip[chip]).ops_size();
  }
  if (op_instances > kMaxOpInstances) {
    char figures[96];
    std::snprintf(figures, sizeof figures,
                  "%.3g ops over its %zu simulated chips, over podsim's "
                  "limit of %.3g",
                  op_instances, chips.size(), kMaxOpInstances);
    return sim::Status::OutOfRange(std::string("the step would track ") + figures +
                                   "; simulate one chip per program (drop --every-chip)");
  }
  instance_of_chip_.assign(grid.chip_count(), -1);
  for (uint32_t chip : chips) {
    Instance instance;
    instance.chip = chip;
    instance.program = checked_.program_of_chip[chip];
    const schedule::Program& program = schedule_.programs(instance.program);
    const ProgramPlan& plan = plans_[instance.program];
    for (const Op& op : program.ops()) instance.pending.push_back(op.deps_size());
    instance.head.assign(plan.streams.size(), 0);
    instance.busy.assign(plan.streams.size(), false);
    instance.started.assign(program.ops_size(), Time::Max());
    instance.finished.assign(program.ops_size(), Time::Max());
    instance.collective_count.assign(axes_sets_.size(), 0);
    instance.remaining = program.ops_size();
    instance_of_chip_[chip] = static_cast<int>(instances_.size());
    instances_.push_back(std::move(instance));
  }
  // Every send must reach a simulated chip.
  for (const Instance& instance : instances_) {
    const schedule::Program& program = schedule_.programs(instance.program);
    for (const Op& op : program.ops()) {
      if (op.kind() != schedule::SEND) continue;
      const int axis = grid.AxisIndex(op.peer_axis());
      const uint32_t peer =
          grid.ChipWith(instance.chip, axis, grid.Coord(instance.chip, axis) + op.peer_offset());
      if (InstanceOf(peer) < 0) {
        return sim::Status::InvalidArgument(
            "schedule: program '" + program.name() + "' sends to chip " + std::to_string(peer) +
            ", which one-chip-per-program simulation does not run; simulate every chip");
      }
    }
  }
  return sim::Status::Ok();
}

void Simulation::TryStart(int inst, int stream) {
  Instance& instance = instances_[inst];
  const ProgramPlan& plan = plans_[instance.program];
  if (instance.busy[stream]) return;
  const std::vector<int>& ops = plan.stream_ops[stream];
  if (instance.head[stream] >= ops.size()) return;
  const int op = ops[instance.head[stream]];
  if (instance.pending[op] > 0) return;
  instance.busy[stream] = true;
  Start(inst, op);
}

void Simulation::Charge(Instance& instance, int op, Time duration) {
  if (duration <= Time::Zero()) return;
  const schedule::Program& program = schedule_.programs(instance.program);
  int last = -1;
  for (uint32_t dep : program.ops(op).deps()) {
    if (last < 0 || instance.finished[dep] > instance.finished[last]) last = static_cast<int>(dep);
  }
  const Time now = engine_.now();
  ChargeChain(instance, last, now - duration, now);
}

void Simulation::ChargeChain(Instance& instance, int last, Time from, Time until) {
  const schedule::Program& program = schedule_.programs(instance.program);
  const ProgramPlan& plan = plans_[instance.program];
  while (until > from) {
    if (last < 0 || IsComputeKind(program.ops(last).kind())) {
      instance.time.idle += until - from;
      return;
    }
    // The part while `last` ran is its own; before it, `last` waited for the latest to finish
    // of its deps and the op before it on its stream (it started as that one finished).
    const Time begin = std::max(from, instance.started[last]);
    if (program.ops(last).kind() == schedule::RECV) {
      instance.time.bubble += until - begin;
    } else {
      instance.time.exposed[program.ops(last).stream()] += until - begin;
    }
    until = begin;
    int cause = plan.stream_before[last];
    for (uint32_t dep : program.ops(last).deps()) {
      if (cause < 0 || instance.finished[dep] > instance.finished[cause]) {
        cause = static_cast<int>(dep);
      }
    }
    last = cause;
  }
}

void Simulation::Start(int inst, int op) {
  Instance& instance = instances_[inst];
  const Op& spec = schedule_.programs(instance.program).ops(op);
  instance.started[op] = engine_.now();
  if (options_.observer != nullptr) {
    options_.observer->OnOpStart(engine_.now(), instance.chip, instance.program, op);
  }
  switch (spec.kind()) {
    case schedule::COLLECTIVE:
      CommunicationBegins(inst);
      StartCollective(inst, op);
      return;
    case schedule::SEND:
      CommunicationBegins(inst);
      StartSend(inst, op);
      return;
    case schedule::RECV:
      StartRecv(inst, op);
      return;
    default:
      break;
  }
  Charge(instance, op, engine_.now() - instance.compute_free);
  const Time duration = plans_[instance.program].duration[op];
  instance.time.compute += duration;
  instance.computing = op;
  instance.compute_started = instance.pace_changed = engine_.now();
  instance.work_left = duration;
  instance.compute_done =
      engine_.Schedule(Paced(instance, duration), [this, inst, op] { Finish(inst, op); });
}

Time Simulation::Paced(const Instance& instance, Time work) const {
  if (instance.communicating == 0 || overlap_slowdown_ <= 0) return work;
  const double stretched =
      std::ceil(static_cast<double>(work.picoseconds()) * (1 + overlap_slowdown_));
  // Past what a Time holds: the horizon (sim/engine.h), as any time beyond it.
  if (stretched >= static_cast<double>(Time::Max().picoseconds())) return Time::Max();
  return Time::Picoseconds(static_cast<int64_t>(stretched));
}

void Simulation::CommunicationBegins(int inst) {
  if (instances_[inst].communicating++ == 0) Repace(inst, false);
}

void Simulation::CommunicationEnds(int inst) {
  Instance& instance = instances_[inst];
  PODSIM_CHECK(instance.communicating > 0) << "communication ended on an idle chip";
  if (--instance.communicating == 0) Repace(inst, true);
}

void Simulation::Repace(int inst, bool was_slowed) {
  Instance& instance = instances_[inst];
  if (instance.computing < 0 || overlap_slowdown_ <= 0) return;
  const Time now = engine_.now();
  const int64_t elapsed = (now - instance.pace_changed).picoseconds();
  const int64_t done =
      was_slowed ? static_cast<int64_t>(static_cast<double>(elapsed) / (1 + overlap_slowdown_))
                 : elapsed;
  instance.work_left =
      Time::Picoseconds(std::max<int64_t>(0, instance.work_left.picoseconds() - done));
  instance.pace_changed = now;
  engine_.Cancel(instance.compute_done);
  const int op = instance.computing;
  instance.compute_done =
      engine_.Schedule(Paced(instance, instance.work_left), [this, inst, op] { Finish(inst, op); });
}

void Simulation::AppendEveryRoute(uint32_t src, uint32_t dst, std::vector<uint32_t>* links) const {
  std::vector<topology::WeightedRoute> routes;
  for (bool every_axis_first : {true, false}) {
    system_.fabric.ParallelRoutes(src, dst, &routes, every_axis_first);
    for (const topology::WeightedRoute& route : routes) {
      links->insert(links->end(), route.route.begin(), route.route.end());
    }
  }
}

void Simulation::FootprintOf(const std::vector<uint32_t>& ranks, const std::vector<int>& shape,
                             std::vector<uint32_t>* links, bool every_route) const {
  const topology::Fabric& fabric = system_.fabric;
  std::vector<topology::LinkIndex> route;
  auto both_ways = [&](uint32_t a, uint32_t b) {
    if (a == b) return;
    if (every_route) {
      AppendEveryRoute(a, b, links);
      AppendEveryRoute(b, a, links);
      return;
    }
    route.clear();
    fabric.AppendRoute(a, b, &route);
    fabric.AppendRoute(b, a, &route);
    for (topology::LinkIndex link : route) links->push_back(link);
  };
  const std::vector<int> dims =
      shape.empty() ? std::vector<int>{static_cast<int>(ranks.size())} : shape;
  int64_t stride = 1;
  for (int length : dims) {
    if (length > 1) {
      for (size_t first = 0; first < ranks.size(); ++first) {
        if ((static_cast<int64_t>(first) / stride) % length != 0) continue;
        for (int i = 0; i < length; ++i) {
          both_ways(ranks[first + i * stride], ranks[first + ((i + 1) % length) * stride]);
        }
      }
    }
    stride *= length;
  }
  std::sort(links->begin(), links->end());
  links->erase(std::unique(links->begin(), links->end()), links->end());
}

std::vector<Shadow> Simulation::Overlapping(const std::vector<uint32_t>& ranks,
                                            const std::vector<int>& shape,
                                            const std::vector<Shadow>& candidates) const {
  std::vector<uint32_t> mine, theirs;
  FootprintOf(ranks, shape, &mine);
  std::vector<std::pair<size_t, size_t>> shared;  // (links in common, candidate)
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (candidates[c].ranks == ranks) continue;
    theirs.clear();
    FootprintOf(candidates[c].ranks, candidates[c].shape, &theirs);
    size_t common = 0;
    for (size_t i = 0, j = 0; i < mine.size() && j < theirs.size();) {
      if (mine[i] == theirs[j]) {
        ++common, ++i, ++j;
      } else if (mine[i] < theirs[j]) {
        ++i;
      } else {
        ++j;
      }
    }
    if (common > 0) shared.emplace_back(common, c);
  }
  std::stable_sort(shared.begin(), shared.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Shadow> shadows;
  for (size_t i = 0; i < shared.size() && i < kMaxShadows; ++i) {
    shadows.push_back(candidates[shared[i].second]);
  }
  return shadows;
}

const std::vector<Shadow>& Simulation::ShadowsOf(int set, int program,
                                                 const std::vector<uint32_t>& ranks,
                                                 const std::vector<int>& shape) {
  auto key = std::make_pair(set, ranks.front());
  auto it = shadows_.find(key);
  if (it != shadows_.end()) return it->second;
  // A schedule group names its chips: no other group runs a copy of its collectives.
  if (axes_sets_[set].front() < 0)
    return shadows_.emplace(key, std::vector<Shadow>{}).first->second;
  std::vector<Shadow> groups;  // Every group of the program's chips over these axes.
  std::vector<bool> seen(checked_.grid.chip_count(), false);
  for (uint32_t chip = 0; chip < checked_.grid.chip_count(); ++chip) {
    if (seen[chip] || checked_.program_of_chip[chip] != program) continue;
    Shadow group;
    checked_.grid.Group(chip, axes_sets_[set], &group.ranks, &group.shape);
    for (uint32_t member : group.ranks) seen[member] = true;
    if (system_.fabric.torus() == nullptr) group.shape.clear();
    groups.push_back(std::move(group));
  }
  return shadows_
      .emplace(key, Overlapping(ranks, system_.fabric.torus() ? shape : std::vector<int>{}, groups))
      .first->second;
}

const std::vector<Shadow>& Simulation::SendShadowsOf(int program, int axis, int offset,
                                                     const std::vector<uint32_t>& pair) {
  auto key = std::make_tuple(program, axis, offset);
  auto it = send_shadows_.find(key);
  if (it != send_shadows_.end()) return it->second;
  const MeshGrid& grid = checked_.grid;
  std::vector<Shadow> pairs;
  for (uint32_t chip = 0; chip < grid.chip_count(); ++chip) {
    if (checked_.program_of_chip[chip] != program) continue;
    pairs.push_back(Shadow{{chip, grid.ChipWith(chip, axis, grid.Coord(chip, axis) + offset)}, {}});
  }
  return send_shadows_.emplace(key, Overlapping(pair, {}, pairs)).first->second;
}

const Simulation::CanonicalGroup& Simulation::CanonicalGroupOf(int set, uint32_t chip) {
  auto key = std::make_pair(set, chip);
  auto it = canonical_.find(key);
  if (it != canonical_.end()) return it->second;
  std::vector<uint32_t> ranks;
  std::vector<int> shape;
  CollectiveGroup(schedule_, checked_, axes_sets_[set], chip, &ranks, &shape);
  // Groups are mapped onto groups, so the one holding the lowest representative of its
  // members' orbits is the same for every group of the orbit.
  CanonicalGroup canonical;
  canonical.rep = group_.Rep(ranks.front());
  for (uint32_t rank : ranks) canonical.rep = std::min(canonical.rep, group_.Rep(rank));
  CollectiveGroup(schedule_, checked_, axes_sets_[set], canonical.rep, &canonical.ranks,
                  &canonical.shape);
  std::vector<uint32_t> reps;
  for (uint32_t rank : canonical.ranks) {
    const uint32_t rep = group_.Rep(rank);
    reps.push_back(rep);
    // t maps the group onto itself exactly when t(rep) is a member.
    if (rep == canonical.rep) ++canonical.stabilizer;
  }
  if (canonical.stabilizer > 1) {
    std::map<uint32_t, uint32_t> first;  // Representative -> the first rank of its orbit.
    for (size_t i = 0; i < reps.size(); ++i) {
      canonical.rank_reps.push_back(first.emplace(reps[i], canonical.ranks[i]).first->second);
    }
  }
  std::sort(reps.begin(), reps.end());
  canonical.members = static_cast<size_t>(std::unique(reps.begin(), reps.end()) - reps.begin());
  return canonical_.emplace(key, std::move(canonical)).first->second;
}

void Simulation::StartCollective(int inst, int op) {
  Instance& instance = instances_[inst];
  const ProgramPlan& plan = plans_[instance.program];
  const int set = plan.axes_set[op];
  std::vector<uint32_t> ranks;
  std::vector<int> shape;
  size_t members = 0;
  uint32_t key = 0;
  const std::vector<uint32_t>* rank_reps = nullptr;
  if (Orbits()) {
    const CanonicalGroup& canonical = CanonicalGroupOf(set, instance.chip);
    ranks = canonical.ranks;
    shape = canonical.shape;
    members = canonical.members;
    key = canonical.rep;
    // The stabilizer rotates the group's ranks onto each other: only the first of each orbit
    // is simulated, each transfer one flow class.
    rank_reps = &canonical.rank_reps;
  } else {
    CollectiveGroup(schedule_, checked_, axes_sets_[set], instance.chip, &ranks, &shape);
    for (uint32_t rank : ranks) members += instance_of_chip_[rank] >= 0 ? 1 : 0;
    key = ranks.front();
  }
  const int nth = instance.collective_count[set]++;
  auto& arrived = barriers_[{set, key, nth}];
  arrived.emplace_back(inst, op);
  if (arrived.size() < members) return;
  std::vector<std::pair<int, int>> waiters = std::move(arrived);
  barriers_.erase({set, key, nth});
  if (options_.free_communication) {
    for (const auto& [i, o] : waiters) FinishSoon(i, o);
    return;
  }
  const Op& spec = schedule_.programs(instance.program).ops(op);
  collectives::CollectiveRequest request = GroupRequest(system_, spec, ranks, shape);
  if (rank_reps != nullptr) request.rank_reps.assign(rank_reps->begin(), rank_reps->end());
  request.max_transfers = TransfersLeft();
  std::string algorithm;
  std::vector<std::pair<int, int>> observed;  // The waiters, for the observer.
  if (options_.observer != nullptr) observed = waiters;
  collectives::LaunchExpectation expected;
  if (expecting_) {
    expected.footprint = *Expected(inst, op).second;
    expected.own = static_cast<uint32_t>(waiters.size());
    launching_ = waiters;
  }
  sim::Status status = network_.Launch(
      request,
      [this, waiters = std::move(waiters)]() mutable {
        for (const auto& [i, o] : waiters) Finish(i, o);
      },
      options_.observer != nullptr ? &algorithm : nullptr, ChannelOf(set, spec.stream()), expected);
  launching_.clear();
  if (status.ok()) {
    for (const auto& [i, o] : observed) {
      options_.observer->OnCollectiveAlgorithm(instances_[i].chip, instances_[i].program, o,
                                               algorithm);
    }
  }
  if (status.ok() && options_.chips == SimulatedChips::kOnePerProgram) {
    for (const Shadow& shadow : ShadowsOf(set, instance.program, ranks, shape)) {
      collectives::CollectiveRequest copy = request;
      copy.ranks.assign(shadow.ranks.begin(), shadow.ranks.end());
      copy.rank_shape = shadow.shape;
      ++shadow_launches_;
      status = network_.Launch(copy, [] {});
      if (!status.ok()) break;
    }
  }
  if (!status.ok()) {
    // The collective's own code stays: OutOfRange (the work bound) is not a bad schedule.
    Fail(status.WithContext("schedule: program '" + schedule_.programs(instance.program).name() +
                            "' op " + std::to_string(op) + " '" + spec.name() + "'"));
  }
}

void Simulation::StartSend(int inst, int op) {
  Instance& instance = instances_[inst];
  const Op& spec = schedule_.programs(instance.program).ops(op);
  const MeshGrid& grid = checked_.grid;
  const int axis = grid.AxisIndex(spec.peer_axis());
  const uint32_t peer =
      grid.ChipWith(instance.chip, axis, grid.Coord(instance.chip, axis) + spec.peer_offset());
  collectives::CollectiveRequest request;
  request.op = collectives::CollectiveOp::kPointToPoint;
  request.bytes = std::ceil(spec.bytes());
  request.src = instance.chip;
  request.dst = peer;
  request.max_transfers = TransfersLeft();
  const int peer_inst = InstanceOf(peer);
  const uint64_t tag = spec.tag();
  CommunicationBegins(peer_inst);  // The receiver's kernel moves the bytes in.

  if (options_.free_communication) {
    engine_.Schedule(Time::Zero(),
                     [this, inst, op, peer_inst, tag] { Delivered(inst, op, peer_inst, tag); });
    return;
  }
  collectives::LaunchExpectation expected;
  if (expecting_) {
    expected.footprint = *Expected(inst, op).second;
    expected.own = 1;
    launching_.assign(1, {inst, op});
  }
  sim::Status status = network_.Launch(
      request, [this, inst, op, peer_inst, tag] { Delivered(inst, op, peer_inst, tag); }, nullptr,
      ChannelOf(-1 - axis, spec.stream()), expected);
  launching_.clear();
  if (status.ok() && options_.chips == SimulatedChips::kOnePerProgram) {
    for (const Shadow& shadow :
         SendShadowsOf(instance.program, axis, spec.peer_offset(), {instance.chip, peer})) {
      collectives::CollectiveRequest copy = request;
      copy.src = shadow.ranks[0];
      copy.dst = shadow.ranks[1];
      ++shadow_launches_;
      status = network_.Launch(copy, [] {});
      if (!status.ok()) break;
    }
  }
  if (!status.ok()) Fail(status);
}

void Simulation::Delivered(int inst, int op, int peer_inst, uint64_t tag) {
  Finish(inst, op);
  CommunicationEnds(peer_inst);
  Instance& receiver = instances_[peer_inst];
  auto waiting = receiver.waiting.find(tag);
  if (waiting != receiver.waiting.end()) {
    const int recv = waiting->second;
    receiver.waiting.erase(waiting);
    Finish(peer_inst, recv);
  } else {
    receiver.delivered[tag] = true;
  }
}

void Simulation::StartRecv(int inst, int op) {
  Instance& instance = instances_[inst];
  const uint64_t tag = schedule_.programs(instance.program).ops(op).tag();
  auto delivered = instance.delivered.find(tag);
  if (delivered != instance.delivered.end()) {
    instance.delivered.erase(delivered);
    FinishSoon(inst, op);
  } else {
    instance.waiting[tag] = op;
  }
}

void Simulation::Finish(int inst, int op) {
  Instance& instance = instances_[inst];
  const ProgramPlan& plan = plans_[instance.program];
  const Time now = engine_.now();
  instance.finished[op] = now;
  --instance.remaining;
  ++ops_executed_;
  if (options_.observer != nullptr) {
    options_.observer->OnOpEnd(now, instance.chip, instance.program, op);
  }
  const int stream = plan.stream_of[op];
  if (op == instance.computing) {
    instance.time.interference += (now - instance.compute_started) - plan.duration[op];
    instance.computing = -1;
  }
  const schedule::OpKind kind = schedule_.programs(instance.program).ops(op).kind();
  if (kind == schedule::COLLECTIVE || kind == schedule::SEND) {
    CommunicationEnds(inst);
    if (expecting_) Unexpect(inst, op);
  }
  if (stream == plan.compute_stream) instance.compute_free = now;
  instance.busy[stream] = false;
  ++instance.head[stream];
  for (int next : plan.dependents[op]) {
    if (--instance.pending[next] == 0) TryStart(inst, plan.stream_of[next]);
  }
  TryStart(inst, stream);
}

StepResult Simulation::Collect() {
  StepResult result;
  Time end = Time::Zero();
  for (const Instance& instance : instances_) {
    for (Time t : instance.finished) end = std::max(end, t);
  }
  result.step_time = end;
  result.programs.resize(schedule_.programs_size());
  std::vector<bool> seen(schedule_.programs_size(), false);
  for (Instance& instance : instances_) {
    const schedule::Program& program = schedule_.programs(instance.program);
    // The tail after the last compute op: what finished last after it, then idle.
    int last = -1;
    for (int i = 0; i < program.ops_size(); ++i) {
      if (IsComputeKind(program.ops(i).kind())) continue;
      if (instance.finished[i] > instance.compute_free &&
          (last < 0 || instance.finished[i] > instance.finished[last])) {
        last = i;
      }
    }
    Time tail_start = instance.compute_free;
    if (last >= 0) {
      ChargeChain(instance, last, instance.compute_free, instance.finished[last]);
      tail_start = instance.finished[last];
    }
    instance.time.idle += end - tail_start;

    ProgramResult& out = result.programs[instance.program];
    Time program_end = Time::Zero();
    for (Time t : instance.finished) program_end = std::max(program_end, t);
    if (!seen[instance.program]) {
      seen[instance.program] = true;
      const ProgramPlan& plan = plans_[instance.program];
      out.name = program.name();
      out.chip = instance.chip;
      out.chips = checked_.chips_of_program[instance.program];
      out.time = instance.time;
      out.flops = plan.flops;
      out.model_flops = plan.model_flops;
      out.hfu_flops = plan.hfu_flops;
      for (int i = 0; i < program.ops_size(); ++i) {
        if (plan.limiter[i] == ComputeLimiter::kCompute) out.compute_bound += plan.duration[i];
        if (plan.limiter[i] == ComputeLimiter::kMemory) out.memory_bound += plan.duration[i];
      }
    }
    out.end = std::max(out.end, program_end);
    // The chips this instance stands for, of all chips.
    const double chips = static_cast<double>(checked_.grid.chip_count());
    const double stands_for = options_.chips == SimulatedChips::kOnePerProgram
                                  ? static_cast<double>(out.chips)
                                  : static_cast<double>(group_.size());
    const double weight = stands_for / chips;
    result.mean_compute_s += weight * instance.time.compute.ToSeconds();
    result.mean_interference_s += weight * instance.time.interference.ToSeconds();
    result.mean_bubble_s += weight * instance.time.bubble.ToSeconds();
    result.mean_idle_s += weight * instance.time.idle.ToSeconds();
    for (const auto& [stream, t] : instance.time.exposed) {
      result.mean_exposed_s[stream] += weight * t.ToSeconds();
    }
  }
  for (const ProgramResult& program : result.programs) {
    result.total_flops += program.flops * static_cast<double>(program.chips);
    result.total_model_flops += program.model_flops * static_cast<double>(program.chips);
    result.total_hfu_flops += program.hfu_flops * static_cast<double>(program.chips);
  }
  result.exact = Orbits() || (options_.chips == SimulatedChips::kEveryChip &&
                              options_.network == collectives::NetworkMode::kFlows);
  const bool flows = options_.network == collectives::NetworkMode::kFlows;
  const std::string transfers = flows ? ", every transfer" : ", whole-collective flows";
  const std::string all = std::to_string(checked_.grid.chip_count());
  switch (options_.chips) {
    case SimulatedChips::kOrbits:
      result.method = "one chip per orbit of the step's symmetry (" +
                      std::to_string(instances_.size()) + " of " + all + " chips), every transfer";
      break;
    case SimulatedChips::kEveryChip:
      result.method = "every chip" + transfers;
      break;
    case SimulatedChips::kAuto:  // Resolved by SimulateAuto before a Simulation exists.
    case SimulatedChips::kOnePerProgram:
      if (instances_.size() == checked_.grid.chip_count()) {
        // Every chip runs a program of its own (an imported trace): no shadows, every chip.
        result.method = "every chip (each its own program)" + transfers;
        result.exact = flows;
      } else {
        result.method = "one chip per program with shadow copies" + transfers;
      }
      result.default_approximation = !flows;
      break;
  }
  result.simulated_chips = instances_.size();
  result.ops_executed = ops_executed_;
  result.collectives = network_.launched();
  result.overlapped_collectives = network_.overlapped();
  // Events that only tell a flow observer of replays' link usage are not the simulation's.
  result.events = engine_.executed_events() - network_.echo_events();
  result.rehearsals = network_.rehearsals();
  result.shadow_collectives = shadow_launches_;
  result.rehearsal_events = network_.rehearsal_events();
  result.replayed_collectives = network_.replayed();
  return result;
}

const std::vector<sim::ResourceId>& Simulation::ResourcesOf(
    std::vector<uint32_t> links, std::vector<sim::ResourceId>* resources) const {
  for (uint32_t link : links) resources->push_back(network_.ResourceOf(link));
  std::sort(resources->begin(), resources->end());
  resources->erase(std::unique(resources->begin(), resources->end()), resources->end());
  return *resources;
}

std::pair<uint32_t, const std::vector<sim::ResourceId>*> Simulation::Expected(int inst, int op) {
  const Instance& instance = instances_[inst];
  const Op& spec = schedule_.programs(instance.program).ops(op);
  if (spec.kind() == schedule::SEND) {
    const MeshGrid& grid = checked_.grid;
    const int axis = grid.AxisIndex(spec.peer_axis());
    const uint32_t channel = ChannelOf(-1 - axis, spec.stream());
    auto [it, added] =
        send_footprints_.try_emplace({instance.chip, axis, static_cast<int>(spec.peer_offset())});
    if (added) {
      const uint32_t peer =
          grid.ChipWith(instance.chip, axis, grid.Coord(instance.chip, axis) + spec.peer_offset());
      std::vector<uint32_t> links;
      if (peer != instance.chip) AppendEveryRoute(instance.chip, peer, &links);
      ResourcesOf(std::move(links), &it->second);
    }
    return {channel, &it->second};
  }
  const int set = plans_[instance.program].axes_set[op];
  const CanonicalGroup& canonical = CanonicalGroupOf(set, instance.chip);
  auto [it, added] = group_footprints_.try_emplace({set, canonical.rep});
  if (added) {
    // Ring neighbours on each line (off tori the group is one flat line: GroupRequest), and
    // off tori the ranks at every power-of-two distance along it, which pairs halving-doubling
    // and recursive doubling take and, with a power-of-two count of a group's GPUs per node,
    // the hierarchical rails. Trees' pairs are not all among them: a prediction (the header).
    std::vector<uint32_t> links;
    const bool torus = system_.fabric.torus() != nullptr;
    FootprintOf(canonical.ranks, torus ? canonical.shape : std::vector<int>{}, &links,
                /*every_route=*/true);
    const size_t n = canonical.ranks.size();
    for (size_t distance = 2; !torus && distance < n; distance *= 2) {
      for (size_t i = 0; i < n; ++i) {
        AppendEveryRoute(canonical.ranks[i], canonical.ranks[(i + distance) % n], &links);
        AppendEveryRoute(canonical.ranks[(i + distance) % n], canonical.ranks[i], &links);
      }
    }
    ResourcesOf(std::move(links), &it->second);
  }
  return {ChannelOf(set, spec.stream()), &it->second};
}

void Simulation::ExpectAll() {
  expecting_ = Orbits() && network_.replays() && !options_.free_communication;
  if (!expecting_) return;
  network_.SetLookahead(
      [this](std::span<const sim::ResourceId> resources, Time until, Time ends, uint64_t work) {
        return NoneStartsBefore(resources, until, ends, work);
      });
  for (int inst = 0; inst < static_cast<int>(instances_.size()); ++inst) {
    const schedule::Program& program = schedule_.programs(instances_[inst].program);
    for (int op = 0; op < program.ops_size(); ++op) {
      const schedule::OpKind kind = program.ops(op).kind();
      if (kind != schedule::COLLECTIVE && kind != schedule::SEND) continue;
      const auto [channel, footprint] = Expected(inst, op);
      network_.ExpectUse(*footprint, channel, +1);
    }
  }
}

bool Simulation::NoneStartsBefore(std::span<const sim::ResourceId> resources, Time until, Time ends,
                                  uint64_t work) {
  const Time now = engine_.now();
  uint64_t steps = 0;
  for (int inst = 0; inst < static_cast<int>(instances_.size()); ++inst) {
    const Instance& instance = instances_[inst];
    const ProgramPlan& plan = plans_[instance.program];
    const schedule::Program& program = schedule_.programs(instance.program);
    const int cs = plan.compute_stream;
    // The first compute op not started: those before it are done or running.
    const int unstarted =
        cs < 0 ? 0 : static_cast<int>(instance.head[cs]) + (instance.busy[cs] ? 1 : 0);
    for (int stream = 0; stream < static_cast<int>(plan.streams.size()); ++stream) {
      if (stream == cs) continue;
      const std::vector<int>& ops = plan.stream_ops[stream];
      bool after_launch = false;  // Past an op being launched: after its end.
      for (size_t k = instance.head[stream]; k < ops.size(); ++k) {
        if (++steps > work) return false;
        const int op = ops[k];
        if (k == instance.head[stream] && std::find(launching_.begin(), launching_.end(),
                                                    std::make_pair(inst, op)) != launching_.end()) {
          after_launch = true;
          continue;
        }
        const int gate = plan.gate[op];
        Time start = gate < unstarted
                         ? now
                         : now + (plan.compute_before[gate + 1] - plan.compute_before[unstarted]);
        if (after_launch) start = std::max(start, ends);
        // The gates of a stream's ops only grow along it: the rest start later still.
        if (start >= until) break;
        const schedule::OpKind kind = program.ops(op).kind();
        if (kind != schedule::COLLECTIVE && kind != schedule::SEND) continue;
        const std::vector<sim::ResourceId>& footprint = *Expected(inst, op).second;
        steps += footprint.size();
        for (sim::ResourceId r : footprint) {
          if (std::binary_search(resources.begin(), resources.end(), r)) return false;
        }
      }
    }
  }
  return true;
}

void Simulation::Unexpect(int inst, int op) {
  const auto [channel, footprint] = Expected(inst, op);
  network_.ExpectUse(*footprint, channel, -1);
}

sim::StatusOr<StepResult> Simulation::Run() {
  PODSIM_RETURN_IF_ERROR(Plan());
  PODSIM_RETURN_IF_ERROR(ChooseChips());
  ExpectAll();
  for (int inst = 0; inst < static_cast<int>(instances_.size()); ++inst) {
    const size_t streams = plans_[instances_[inst].program].streams.size();
    for (size_t s = 0; s < streams; ++s) TryStart(inst, static_cast<int>(s));
  }
  engine_.Run();
  PODSIM_RETURN_IF_ERROR(error_);
  if (engine_.passed_horizon()) return sim::PassedHorizonError("the step");
  for (const Instance& instance : instances_) {
    if (instance.remaining == 0) continue;
    const schedule::Program& program = schedule_.programs(instance.program);
    for (int i = 0; i < program.ops_size(); ++i) {
      if (instance.finished[i] != Time::Max()) continue;
      return sim::Status::InvalidArgument(
          "schedule: program '" + program.name() + "' op " + std::to_string(i) + " '" +
          program.ops(i).name() + "' never finished: its dependencies, its stream's order, " +
          "its group's other members or its send can never all be ready");
    }
  }
  return Collect();
}

}  // namespace

sim::Time ComputeLowerBound(const topology::System& system, const schedule::Schedule& schedule,
                            const StepOptions& options) {
  const ComputeModel compute(
      system.chip, options.compute ? *options.compute : DefaultComputeEfficiency(system.chip));
  Time busiest = Time::Zero();
  for (const schedule::Program& program : schedule.programs()) {
    Time busy = Time::Zero();
    for (const schedule::Op& op : program.ops()) {
      if (IsComputeKind(op.kind())) busy += CostOf(compute, op).duration;
    }
    busiest = std::max(busiest, busy);
  }
  return busiest;
}

sim::StatusOr<sim::Time> DependencyLowerBound(const topology::System& system,
                                              const schedule::Schedule& schedule,
                                              const StepOptions& options) {
  StepOptions free = options;
  free.free_communication = true;
  free.observer = nullptr;
  // Free communication: every mode gives the same time; one chip per program is the cheapest.
  free.chips = SimulatedChips::kOnePerProgram;
  PODSIM_ASSIGN_OR_RETURN(StepResult step, SimulateStep(system, schedule, free));
  return step.step_time;
}

bool DependencyBoundIsComputeBound(const schedule::Schedule& schedule) {
  for (const schedule::Program& program : schedule.programs()) {
    const std::string* stream = nullptr;
    for (const schedule::Op& op : program.ops()) {
      if (op.kind() == schedule::SEND || op.kind() == schedule::RECV) return false;
      if (!IsComputeKind(op.kind())) continue;
      if (stream != nullptr && op.stream() != *stream) return false;
      stream = &op.stream();
    }
  }
  return true;
}

OpCost ScheduleOpCost(const ComputeModel& compute, const schedule::Op& op) {
  return CostOf(compute, op);
}

namespace {

// Runs before replays stop: each discarded run takes one collective out of them, and the last
// run has none, so a step costs at most this many runs.
constexpr uint64_t kReplayRuns = 3;

// What the discarded runs of a quotient left (RunQuotient).
struct Discarded {
  std::set<std::string> excluded;  // The collectives not to replay.
  uint64_t runs = 0;
  uint64_t events = 0;  // Theirs, rehearsals included: work done, though no part of the answer.
};

// A kOrbits simulation, with replays where StepOptions::replays asks for them: a run whose
// replay's premise failed is discarded and run again without replaying that collective, and
// after kReplayRuns - 1 discarded runs without any. Each run has the whole work bound. An
// observed run is never discarded: run it after an unobserved one has learnt what to exclude
// (the same run, so no intrusion).
sim::StatusOr<StepResult> RunQuotient(const topology::System& system,
                                      const schedule::Schedule& schedule,
                                      const CheckedSchedule& checked, const StepOptions& options,
                                      const collectives::TranslationGroup& group,
                                      Discarded* discarded) {
  while (true) {
    const bool replaying = options.replays && discarded->runs + 1 < kReplayRuns;
    Simulation simulation(system, schedule, checked, options, group,
                          replaying ? &discarded->excluded : nullptr);
    sim::StatusOr<StepResult> step = simulation.Run();
    if (!simulation.intruded()) {
      if (step.ok()) {
        step->discarded_runs = discarded->runs;
        step->events += discarded->events;
      }
      return step;
    }
    PODSIM_CHECK(options.observer == nullptr && options.flow_observer == nullptr)
        << "an observed run repeated an unobserved one, yet a replay in it was intruded upon";
    discarded->excluded.insert(*simulation.intruded());
    ++discarded->runs;
    discarded->events += simulation.events();
  }
}

StepOptions Unobserved(const StepOptions& options) {
  StepOptions unobserved = options;
  unobserved.observer = nullptr;
  unobserved.flow_observer = nullptr;
  return unobserved;
}

bool Observed(const StepOptions& options) {
  return options.observer != nullptr || options.flow_observer != nullptr;
}

// kOrbits: with observers, the quotient is run first without them, so that they see one run.
sim::StatusOr<StepResult> SimulateQuotient(const topology::System& system,
                                           const schedule::Schedule& schedule,
                                           const CheckedSchedule& checked,
                                           const StepOptions& options,
                                           const collectives::TranslationGroup& group) {
  Discarded discarded;
  if (Observed(options)) {
    PODSIM_RETURN_IF_ERROR(
        RunQuotient(system, schedule, checked, Unobserved(options), group, &discarded).status());
  }
  return RunQuotient(system, schedule, checked, options, group, &discarded);
}

// kAuto (step_simulator.h): the quotient where it is cheap, else one chip per program with the
// reason. A quotient that runs past the work bound falls back too (its work is lost, bounded by
// the bound); with observers attached the quotient is first run without them, so that they see
// one run and the result is the same with tracing on or off.
sim::StatusOr<StepResult> SimulateAuto(const topology::System& system,
                                       const schedule::Schedule& schedule,
                                       const CheckedSchedule& checked, const StepOptions& options) {
  StepOptions approximate = options;
  approximate.chips = SimulatedChips::kOnePerProgram;
  auto fall_back = [&](std::string reason) -> sim::StatusOr<StepResult> {
    PODSIM_ASSIGN_OR_RETURN(StepResult step,
                            Simulation(system, schedule, checked, approximate,
                                       collectives::TranslationGroup(&system.fabric))
                                .Run());
    step.approximate_reason = std::move(reason);
    return step;
  };
  sim::StatusOr<collectives::TranslationGroup> group = FindStepSymmetry(system, schedule, checked);
  if (!group.ok()) return fall_back(std::string(group.status().message()));
  const uint64_t orbits = system.fabric.chip_count() / group->size();
  if (orbits > kAutoExactOrbits) {
    return fall_back("the step's symmetry leaves " + std::to_string(orbits) +
                     " orbits of chips, over the " + std::to_string(kAutoExactOrbits) +
                     " simulated exactly by default");
  }
  StepOptions exact = options;
  exact.chips = SimulatedChips::kOrbits;
  Discarded discarded;
  sim::StatusOr<StepResult> step =
      RunQuotient(system, schedule, checked, Unobserved(exact), *group, &discarded);
  if (!step.ok() && step.status().code() == sim::Status::Code::kOutOfRange) {
    return fall_back("the quotient is beyond a limit (" + step.status().message() + ")");
  }
  if (!step.ok() || !Observed(options)) return step;
  return RunQuotient(system, schedule, checked, exact, *group, &discarded);
}

}  // namespace

sim::StatusOr<StepResult> SimulateStep(const topology::System& system,
                                       const schedule::Schedule& schedule,
                                       const StepOptions& options) {
  if (system.chip.bf16_flops_per_s <= 0 || system.chip.hbm_bytes_per_s <= 0) {
    return sim::Status::InvalidArgument("system '" + system.name +
                                        "': its chips have no compute or HBM figures to simulate "
                                        "a step on (generic fabrics are for collectives)");
  }
  PODSIM_ASSIGN_OR_RETURN(CheckedSchedule checked, CheckSchedule(system, schedule));
  if (options.compute) {
    // CheckSchedule checked the attention kernels against the chip's own calibration.
    for (const schedule::Program& program : schedule.programs()) {
      for (const schedule::Op& op : program.ops()) {
        if (op.kind() == schedule::ATTENTION && !op.kernel().empty() &&
            options.compute->AttentionCurveOf(op.kernel()) == nullptr) {
          return sim::Status::InvalidArgument("attention kernel '" + op.kernel() +
                                              "' has no curve in the compute calibration '" +
                                              options.compute->family + "'");
        }
      }
    }
  }
  collectives::TranslationGroup group(&system.fabric);
  if (options.chips == SimulatedChips::kOrbits) {
    PODSIM_ASSIGN_OR_RETURN(group, FindStepSymmetry(system, schedule, checked));
  }
  sim::StatusOr<StepResult> result =
      options.chips == SimulatedChips::kAuto ? SimulateAuto(system, schedule, checked, options)
      : options.chips == SimulatedChips::kOrbits
          ? SimulateQuotient(system, schedule, checked, options, group)
          : Simulation(system, schedule, checked, options, std::move(group)).Run();
  if (result.ok()) {
    spdlog::info(
        "step: {} ({} of {} chips simulated, {} collectives of which {} distinct, {} events)",
        result->method, result->simulated_chips, system.fabric.chip_count(), result->collectives,
        result->rehearsals, result->events + result->rehearsal_events);
  }
  return result;
}

}  // namespace podsim::workloads
