#include "interop/chakra_export.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "interop/chakra_attrs.h"
#include "workloads/schedule_check.h"
#include "workloads/step_simulator.h"

namespace podsim::interop {

namespace {

using ChakraProtoMsg::Node;
using schedule::Op;

ChakraProtoMsg::CollectiveCommType CommType(schedule::CollectiveKind kind) {
  switch (kind) {
    case schedule::ALL_GATHER:
      return ChakraProtoMsg::ALL_GATHER;
    case schedule::REDUCE_SCATTER:
      return ChakraProtoMsg::REDUCE_SCATTER;
    case schedule::ALL_TO_ALL:
      return ChakraProtoMsg::ALL_TO_ALL;
    case schedule::BROADCAST:
      return ChakraProtoMsg::BROADCAST;
    default:
      return ChakraProtoMsg::ALL_REDUCE;
  }
}

int64_t Rounded(double value) { return static_cast<int64_t>(std::llround(value)); }

// The attributes every op keeps in podsim's own terms.
void AddPodsimAttrs(const Op& op, Node* node) {
  AddStringAttr(node, kPodsimStream, op.stream());
  if (!op.phase().empty()) AddStringAttr(node, kPodsimPhase, op.phase());
  if (op.layer() != 0) AddIntAttr(node, kPodsimLayer, op.layer());
  if (op.microbatch() != 0) AddIntAttr(node, kPodsimMicrobatch, op.microbatch());
  if (op.hbm_alloc_bytes() > 0) AddDoubleAttr(node, kPodsimHbmAlloc, op.hbm_alloc_bytes());
  if (op.hbm_free_bytes() > 0) AddDoubleAttr(node, kPodsimHbmFree, op.hbm_free_bytes());
}

class Exporter {
 public:
  Exporter(const topology::System& system, const schedule::Schedule& schedule,
           const workloads::CheckedSchedule& checked,
           const workloads::ComputeEfficiency& efficiency)
      : schedule_(schedule), checked_(checked), compute_(system.chip, efficiency) {}

  ChakraExport Run();

 private:
  Node NodeOf(uint32_t chip, const Op& op, int index);
  struct Group {
    std::string name;
    std::string description;  // "<axes>@<first chip>", or the schedule group's name.
    int64_t size = 0;
    std::vector<int> shape;
  };
  // The process group of collective `op` on `chip`, added to the comm groups on first use.
  const Group& GroupOf(uint32_t chip, const Op& op);

  const schedule::Schedule& schedule_;
  const workloads::CheckedSchedule& checked_;
  workloads::ComputeModel compute_;
  // By (CollectiveSet, first rank): each group once; and by (CollectiveSet, chip), a cache.
  std::map<std::pair<std::vector<int>, uint32_t>, Group> groups_;
  std::map<std::pair<std::vector<int>, uint32_t>, const Group*> of_chip_;
  ChakraExport out_;
};

const Exporter::Group& Exporter::GroupOf(uint32_t chip, const Op& op) {
  const std::vector<int> set = workloads::CollectiveSet(checked_, op);
  auto key = std::make_pair(set, chip);
  auto it = of_chip_.find(key);
  if (it != of_chip_.end()) return *it->second;
  std::vector<uint32_t> ranks;
  std::vector<int> shape;
  workloads::CollectiveGroup(schedule_, checked_, set, chip, &ranks, &shape);
  auto [group_it, fresh] = groups_.try_emplace(std::make_pair(set, ranks.front()));
  Group& group = group_it->second;
  if (fresh) {
    // ASTRA-sim reads process group names as integers (std::stoi), "0" being every rank: the
    // groups are numbered from 1 in order of first use, and their podsim name travels beside.
    group.name = std::to_string(groups_.size());
    group.description = op.group();
    if (group.description.empty()) {
      for (const std::string& axis : op.axes()) {
        if (!group.description.empty()) group.description += ',';
        group.description += axis;
      }
      group.description += '@';
      group.description += std::to_string(ranks.front());
    }
    group.size = static_cast<int64_t>(ranks.size());
    group.shape = std::move(shape);
    out_.groups.emplace(group.name, std::vector<int64_t>(ranks.begin(), ranks.end()));
  }
  return *of_chip_.emplace(key, &group).first->second;
}

Node Exporter::NodeOf(uint32_t chip, const Op& op, int index) {
  Node node;
  node.set_id(static_cast<uint64_t>(index));
  node.set_name(op.name());
  const workloads::MeshGrid& grid = checked_.grid;
  switch (op.kind()) {
    case schedule::COLLECTIVE: {
      node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
      const Group& group = GroupOf(chip, op);
      const double members = static_cast<double>(group.size);
      const ChakraProtoMsg::CollectiveCommType type = CommType(op.collective());
      // ASTRA-sim's comm_size (chakra_import.h): the per-rank share of all-gathers and
      // all-to-alls, as podsim pads it (workloads::GroupRequest), the whole buffer otherwise.
      const bool per_rank =
          type == ChakraProtoMsg::ALL_GATHER || type == ChakraProtoMsg::ALL_TO_ALL;
      const double size = per_rank ? std::ceil(op.bytes() / members) : std::ceil(op.bytes());
      AddBoolAttr(&node, "is_cpu_op", false);
      AddIntAttr(&node, "comm_type", type);
      AddIntAttr(&node, "comm_size", Rounded(size));
      AddStringAttr(&node, "pg_name", group.name);
      AddStringAttr(&node, kPodsimGroup, group.description);
      AddDoubleAttr(&node, kPodsimBytes, op.bytes());
      if (group.shape.size() > 1) {
        AddIntListAttr(&node, kPodsimGroupShape,
                       std::vector<int64_t>(group.shape.begin(), group.shape.end()));
      }
      break;
    }
    case schedule::SEND:
    case schedule::RECV: {
      const bool send = op.kind() == schedule::SEND;
      node.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
      const int axis = grid.AxisIndex(op.peer_axis());
      const uint32_t peer = grid.ChipWith(chip, axis, grid.Coord(chip, axis) + op.peer_offset());
      AddBoolAttr(&node, "is_cpu_op", false);
      AddInt32Attr(&node, "comm_src", static_cast<int32_t>(send ? chip : peer));
      AddInt32Attr(&node, "comm_dst", static_cast<int32_t>(send ? peer : chip));
      // Chakra's tag is an int32; the exact podsim tag goes with it.
      AddInt32Attr(&node, "comm_tag", static_cast<int32_t>(op.tag() & 0x7fffffff));
      AddIntAttr(&node, "comm_size", Rounded(std::ceil(op.bytes())));
      AddDoubleAttr(&node, kPodsimBytes, op.bytes());
      AddUintAttr(&node, kPodsimTag, op.tag());
      break;
    }
    default: {
      node.set_type(ChakraProtoMsg::COMP_NODE);
      const workloads::OpCost cost = workloads::ScheduleOpCost(compute_, op);
      node.set_duration_micros(
          static_cast<uint64_t>(std::llround(cost.duration.ToSeconds() * 1e6)));
      AddBoolAttr(&node, "is_cpu_op", false);
      AddIntAttr(&node, "num_ops", Rounded(op.flops()));
      AddUintAttr(&node, "tensor_size", static_cast<uint64_t>(Rounded(op.hbm_bytes())));
      AddStringAttr(&node, kPodsimKind, schedule::OpKind_Name(op.kind()));
      AddDoubleAttr(&node, kPodsimFlops, op.flops());
      AddDoubleAttr(&node, kPodsimModelFlops, op.model_flops());
      if (op.hfu_flops() > 0) AddDoubleAttr(&node, kPodsimHfuFlops, op.hfu_flops());
      AddDoubleAttr(&node, kPodsimHbmBytes, op.hbm_bytes());
      if (op.duration_s() > 0) AddDoubleAttr(&node, kPodsimDuration, op.duration_s());
      if (op.has_shape()) {
        const schedule::MatmulShape& s = op.shape();
        AddIntListAttr(&node, kPodsimShape, {s.m(), s.k(), s.n(), s.batch()});
      }
      if (op.causal()) AddBoolAttr(&node, kPodsimCausal, true);
      break;
    }
  }
  AddPodsimAttrs(op, &node);
  return node;
}

ChakraExport Exporter::Run() {
  const uint32_t chips = checked_.grid.chip_count();
  for (uint32_t chip = 0; chip < chips; ++chip) {
    const schedule::Program& program = schedule_.programs(checked_.program_of_chip[chip]);
    ChakraRankTrace& rank = out_.ranks.emplace_back();
    rank.metadata.set_version("0.0.4");
    ChakraProtoMsg::AttributeProto* schema = rank.metadata.add_attr();
    schema->set_name("schema");
    schema->set_string_val("1.0.2-chakra.0.0.4");
    ChakraProtoMsg::AttributeProto* system = rank.metadata.add_attr();
    system->set_name("podsim_system");
    system->set_string_val(schedule_.system());
    std::map<std::string, int> last;  // Per stream: its latest op.
    for (int i = 0; i < program.ops_size(); ++i) {
      const Op& op = program.ops(i);
      Node node = NodeOf(chip, op, i);
      std::vector<uint64_t> deps(op.deps().begin(), op.deps().end());
      auto [it, first] = last.try_emplace(op.stream(), i);
      if (!first) deps.push_back(static_cast<uint64_t>(std::exchange(it->second, i)));
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      for (uint64_t d : deps) node.add_data_deps(d);
      rank.nodes.push_back(std::move(node));
    }
  }
  return std::move(out_);
}

}  // namespace

sim::StatusOr<ChakraExport> ExportChakra(const topology::System& system,
                                         const schedule::Schedule& schedule,
                                         const workloads::ComputeEfficiency& efficiency) {
  PODSIM_ASSIGN_OR_RETURN(workloads::CheckedSchedule checked,
                          workloads::CheckSchedule(system, schedule));
  uint64_t nodes = 0;
  for (int p = 0; p < schedule.programs_size(); ++p) {
    nodes += static_cast<uint64_t>(checked.chips_of_program[p]) *
             static_cast<uint64_t>(schedule.programs(p).ops_size());
  }
  if (nodes > kMaxExportNodes) {
    return sim::Status::OutOfRange(
        "the Chakra trace would hold " + std::to_string(nodes) + " nodes over " +
        std::to_string(checked.grid.chip_count()) + " ranks, over podsim's limit of " +
        std::to_string(kMaxExportNodes) + "; write a smaller system's step");
  }
  if (system.chip.bf16_flops_per_s <= 0 || system.chip.hbm_bytes_per_s <= 0) {
    return sim::Status::InvalidArgument(system.name +
                                        ": generic fabrics have no compute to time ops on");
  }
  return Exporter(system, schedule, checked, efficiency).Run();
}

}  // namespace podsim::interop
