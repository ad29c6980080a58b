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
  // A shift (schedule::SHIFT), which Chakra has no collective for, as the point-to-point pair it
  // is on each rank: a send of its bytes/n to the next rank of the group (node `send_id`) and the
  // receive from the previous one (node `index`, which the op's dependents wait for). Both carry
  // the op's index as their tag: the group's chips run one program, so sender and receiver agree.
  std::pair<Node, Node> ShiftNodes(uint32_t chip, const Op& op, int index, uint64_t send_id);
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
      if (op.launched()) AddBoolAttr(&node, kPodsimLaunched, true);
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
      if (!op.kernel().empty()) AddStringAttr(&node, kPodsimKernel, op.kernel());
      break;
    }
  }
  AddPodsimAttrs(op, &node);
  return node;
}

std::pair<Node, Node> Exporter::ShiftNodes(uint32_t chip, const Op& op, int index,
                                           uint64_t send_id) {
  const std::vector<int> set = workloads::CollectiveSet(checked_, op);
  std::vector<uint32_t> ranks;
  std::vector<int> shape;
  workloads::CollectiveGroup(schedule_, checked_, set, chip, &ranks, &shape);
  const size_t n = ranks.size();
  const size_t at =
      static_cast<size_t>(std::find(ranks.begin(), ranks.end(), chip) - ranks.begin());
  const uint32_t next = ranks[(at + 1) % n];
  const uint32_t previous = ranks[(at + n - 1) % n];
  const double bytes = std::ceil(op.bytes() / static_cast<double>(n));
  std::pair<Node, Node> nodes;
  for (Node* node : {&nodes.first, &nodes.second}) {
    const bool send = node == &nodes.first;
    node->set_id(send ? send_id : static_cast<uint64_t>(index));
    node->set_name(op.name() + (send ? ".send" : ".recv"));
    node->set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
    AddBoolAttr(node, "is_cpu_op", false);
    AddInt32Attr(node, "comm_src", static_cast<int32_t>(send ? chip : previous));
    AddInt32Attr(node, "comm_dst", static_cast<int32_t>(send ? next : chip));
    AddInt32Attr(node, "comm_tag", static_cast<int32_t>(index));
    AddIntAttr(node, "comm_size", Rounded(bytes));
    AddDoubleAttr(node, kPodsimBytes, bytes);
    AddBoolAttr(node, kPodsimShift, true);
    if (!send) {
      // What podsim needs to read the pair back as the shift it is (chakra_import.h): its group
      // and its bytes.
      const Group& group = GroupOf(chip, op);
      AddStringAttr(node, "pg_name", group.name);
      AddStringAttr(node, kPodsimGroup, group.description);
      AddDoubleAttr(node, kPodsimShiftBytes, op.bytes());
      if (group.shape.size() > 1) {
        AddIntListAttr(node, kPodsimGroupShape,
                       std::vector<int64_t>(group.shape.begin(), group.shape.end()));
      }
    }
    AddPodsimAttrs(op, node);
    // Read back, sends and receives go on streams of their own, as the importer's do: a receive
    // waiting for its message must not hold back the send beside it.
    for (ChakraProtoMsg::AttributeProto& attr : *node->mutable_attr()) {
      if (attr.name() == kPodsimStream)
        attr.set_string_val(op.stream() + (send ? ".send" : ".recv"));
    }
  }
  return nodes;
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
    std::map<std::string, int> last;                                // Per stream: its latest op.
    uint64_t extra_id = static_cast<uint64_t>(program.ops_size());  // Shifts' send nodes.
    for (int i = 0; i < program.ops_size(); ++i) {
      const Op& op = program.ops(i);
      std::vector<uint64_t> deps(op.deps().begin(), op.deps().end());
      auto [it, first] = last.try_emplace(op.stream(), i);
      if (!first) deps.push_back(static_cast<uint64_t>(std::exchange(it->second, i)));
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      if (op.kind() == schedule::COLLECTIVE && op.collective() == schedule::SHIFT) {
        auto [send, recv] = ShiftNodes(chip, op, i, extra_id++);
        for (uint64_t d : deps) send.add_data_deps(d);
        for (uint64_t d : deps) recv.add_data_deps(d);
        rank.nodes.push_back(std::move(send));
        rank.nodes.push_back(std::move(recv));
        continue;
      }
      Node node = NodeOf(chip, op, i);
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
    uint64_t per_chip = 0;  // A shift is two nodes (ShiftNodes).
    for (const Op& op : schedule.programs(p).ops()) {
      per_chip += op.kind() == schedule::COLLECTIVE && op.collective() == schedule::SHIFT ? 2 : 1;
    }
    nodes += static_cast<uint64_t>(checked.chips_of_program[p]) * per_chip;
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
