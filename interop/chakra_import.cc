#include "interop/chakra_import.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "interop/chakra_attrs.h"
#include "workloads/mesh_grid.h"
#include "workloads/schedule_check.h"

namespace podsim::interop {

namespace {

using ChakraProtoMsg::Node;

// The schedule group of collectives that name no process group: every rank, in rank order.
constexpr char kAllRanks[] = "(all ranks)";
// A barrier, as PyTorch's: an all-reduce of one 4-byte element.
constexpr double kBarrierBytes = 4;
// Dependencies the import may create over all ranks (about 8 bytes each while it runs, more in
// the simulation): a node that takes no time hands its waits to each of its dependents, so K
// nodes before one metadata node and K after it make K^2.
constexpr uint64_t kMaxDependencies = 50'000'000;

std::string NodeAt(int rank, const Node& node) {
  return "rank " + std::to_string(rank) + " node " + std::to_string(node.id()) + " '" +
         node.name() + "'";
}

// The chip of each rank, and the schedule group of each process group used so far.
class Importer {
 public:
  Importer(const topology::System& system, const std::vector<ChakraRankTrace>& ranks,
           const CommGroups& groups, const ChakraImportOptions& options)
      : system_(system),
        efficiency_(workloads::DefaultComputeEfficiency(system.chip)),
        ranks_(ranks),
        groups_(groups),
        options_(options) {}

  sim::StatusOr<ChakraImport> Run();

 private:
  sim::Status PlaceRanks();
  // The ops of one rank, in dependency order.
  sim::Status ImportRank(int rank);
  // Fills `op` from `node`; false (and no op) for a node that takes no time.
  sim::StatusOr<bool> Convert(int rank, const Node& node, schedule::Op* op);
  sim::StatusOr<bool> ConvertCompute(const Node& node, schedule::Op* op);
  sim::Status ConvertCollective(int rank, const Node& node, schedule::Op* op);
  sim::Status ConvertPointToPoint(int rank, const Node& node, schedule::Op* op);
  // A send's or receive's message: its sender, receiver and Chakra tag, the peer checked to be
  // another rank, the node's own end to be `rank`, and the tag to be an int32.
  using MessageKey = std::tuple<int, int, int64_t>;
  sim::StatusOr<MessageKey> MessageOf(int rank, const Node& node) const;
  // The receive podsim wrote for a shift (kPodsimShift), as that shift; its send is dropped.
  sim::Status ConvertShift(int rank, const Node& node, schedule::Op* op);
  // The schedule group of process group `pg` (empty: every rank), added on first use.
  // `node` may give its rank grid (kPodsimGroupShape).
  sim::StatusOr<std::string> GroupOf(int rank, const Node& node, const std::string& pg,
                                     int64_t* size);
  // Restores the podsim attributes of a node podsim wrote.
  sim::Status Restore(const Node& node, schedule::Op* op);
  // The op's numbers within what a schedule may hold (schedule_check.h), its stream its kind's.
  sim::Status CheckOp(const schedule::Op& op) const;
  sim::Status PairPointToPoint() const;

  const topology::System& system_;
  const workloads::ComputeEfficiency efficiency_;  // The chip's, which times the ops' kernels.
  const std::vector<ChakraRankTrace>& ranks_;
  const CommGroups& groups_;
  const ChakraImportOptions& options_;
  std::vector<uint32_t> chip_of_rank_;
  std::vector<int> coord_of_chip_;              // On the mesh axis "rank".
  std::map<std::string, int> group_index_;      // Schedule group by process group name.
  std::vector<std::vector<uint32_t>> members_;  // Per schedule group: its chips, sorted.
  std::set<std::string> names_;                 // Schedule group names taken.
  uint64_t edges_ = 0;                          // Dependencies made so far (kMaxDependencies).
  // Per (sender, receiver, Chakra tag): messages sent and received so far.
  std::map<MessageKey, std::pair<uint64_t, uint64_t>> messages_;
  // The same for the sends and receives of shifts (kPodsimShift), which pair up as messages too.
  std::map<MessageKey, std::pair<uint64_t, uint64_t>> shift_messages_;
  // A shift's send and receive, counted in shift_messages_ (the send then gives no op).
  sim::Status CountShiftMessage(int rank, const Node& node);
  ChakraImport out_;
};

sim::Status Importer::PlaceRanks() {
  const int64_t chips = system_.fabric.chip_count();
  const int64_t n = static_cast<int64_t>(ranks_.size());
  if (options_.rank_chips.empty()) {
    if (n != chips) {
      return sim::Status::InvalidArgument(
          "the trace has " + std::to_string(n) + " ranks and " + system_.name + " has " +
          std::to_string(chips) +
          " chips: run it on a system of as many chips, or place its ranks with a rank map");
    }
    for (int64_t r = 0; r < n; ++r) chip_of_rank_.push_back(static_cast<uint32_t>(r));
  } else {
    if (static_cast<int64_t>(options_.rank_chips.size()) != n) {
      return sim::Status::InvalidArgument("the rank map places " +
                                          std::to_string(options_.rank_chips.size()) +
                                          " ranks and the trace has " + std::to_string(n));
    }
    for (int64_t r = 0; r < n; ++r) {
      const int64_t chip = options_.rank_chips[r];
      if (chip < 0 || chip >= chips) {
        return sim::Status::InvalidArgument(
            "the rank map places rank " + std::to_string(r) + " on chip " + std::to_string(chip) +
            ", and " + system_.name + " has " + std::to_string(chips) + " chips");
      }
      chip_of_rank_.push_back(static_cast<uint32_t>(chip));
    }
  }
  PODSIM_ASSIGN_OR_RETURN(workloads::MeshGrid grid,
                          workloads::MeshGrid::Make(system_, {{"rank", static_cast<int>(chips)}}));
  coord_of_chip_.resize(chips);
  for (int64_t c = 0; c < chips; ++c) coord_of_chip_[c] = grid.Coord(static_cast<uint32_t>(c), 0);
  return sim::Status::Ok();
}

sim::StatusOr<std::string> Importer::GroupOf(int rank, const Node& node, const std::string& pg,
                                             int64_t* size) {
  // ASTRA-sim's process group "0" is every rank, unless the comm groups define it. The key of
  // the every-rank group cannot be a process group's name (those are what pg_name holds).
  const bool every_rank = pg.empty() || (pg == "0" && groups_.count(pg) == 0);
  const std::string key = every_rank ? std::string(1, '\0') : "pg " + pg;
  auto it = group_index_.find(key);
  if (it == group_index_.end()) {
    schedule::Group group;
    // A group podsim wrote keeps its podsim name ("tp@4"); names stay unique.
    PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> own, StringAttr(node, kPodsimGroup));
    std::string base = pg;
    if (own && !own->empty()) {
      base = *own;
    } else if (every_rank) {
      base = kAllRanks;
    }
    std::string name = base;
    for (int n = 2; names_.count(name) > 0; ++n) name = base + " #" + std::to_string(n);
    names_.insert(name);
    group.set_name(name);
    if (every_rank) {
      for (uint32_t chip : chip_of_rank_) group.add_chips(chip);
    } else {
      auto found = groups_.find(pg);
      if (found == groups_.end()) {
        return sim::Status::InvalidArgument("pg_name: process group '" + pg +
                                            "' is not in the comm groups" +
                                            (groups_.empty() ? " (none were given)" : ""));
      }
      for (int64_t r : found->second) {
        if (r >= static_cast<int64_t>(chip_of_rank_.size())) {
          return sim::Status::InvalidArgument("pg_name: process group '" + pg + "' holds rank " +
                                              std::to_string(r) + ", and the trace has " +
                                              std::to_string(chip_of_rank_.size()) + " ranks");
        }
        group.add_chips(chip_of_rank_[r]);
      }
    }
    PODSIM_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape,
                            IntListAttr(node, kPodsimGroupShape));
    if (shape) {
      int64_t product = 1;
      for (int64_t length : *shape) {
        if (length < 1 || length > group.chips_size()) {
          return sim::Status::InvalidArgument("attr podsim_group_shape: a size out of range");
        }
        product *= length;
        if (product > group.chips_size()) break;
        group.add_shape(static_cast<int32_t>(length));
      }
      if (product != group.chips_size()) {
        return sim::Status::InvalidArgument("attr podsim_group_shape: sizes multiply to " +
                                            std::to_string(product) + ", not the group's " +
                                            std::to_string(group.chips_size()) + " ranks");
      }
    }
    it = group_index_.emplace(key, out_.schedule.groups_size()).first;
    std::vector<uint32_t>& sorted =
        members_.emplace_back(group.chips().begin(), group.chips().end());
    std::sort(sorted.begin(), sorted.end());
    *out_.schedule.add_groups() = std::move(group);
  }
  const std::vector<uint32_t>& members = members_[it->second];
  if (!std::binary_search(members.begin(), members.end(), chip_of_rank_[rank])) {
    return sim::Status::InvalidArgument("pg_name: process group '" + pg +
                                        "' does not hold this rank");
  }
  *size = static_cast<int64_t>(members.size());
  return out_.schedule.groups(it->second).name();
}

sim::Status Importer::Restore(const Node& node, schedule::Op* op) {
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> kind, StringAttr(node, kPodsimKind));
  if (kind && workloads::IsComputeKind(op->kind())) {
    schedule::OpKind value;
    if (!schedule::OpKind_Parse(*kind, &value) || !workloads::IsComputeKind(value)) {
      return sim::Status::InvalidArgument("attr podsim_kind: '" + *kind +
                                          "' is not a compute op kind");
    }
    op->set_kind(value);
  }
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> stream, StringAttr(node, kPodsimStream));
  if (stream) op->set_stream(*stream);
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> phase, StringAttr(node, kPodsimPhase));
  if (phase) op->set_phase(*phase);
  struct Number {
    std::string_view name;
    void (schedule::Op::*set)(double);
  };
  for (const Number& n : {Number{kPodsimFlops, &schedule::Op::set_flops},
                          Number{kPodsimModelFlops, &schedule::Op::set_model_flops},
                          Number{kPodsimHfuFlops, &schedule::Op::set_hfu_flops},
                          Number{kPodsimHbmBytes, &schedule::Op::set_hbm_bytes},
                          Number{kPodsimDuration, &schedule::Op::set_duration_s},
                          Number{kPodsimBytes, &schedule::Op::set_bytes},
                          Number{kPodsimHbmAlloc, &schedule::Op::set_hbm_alloc_bytes},
                          Number{kPodsimHbmFree, &schedule::Op::set_hbm_free_bytes}}) {
    PODSIM_ASSIGN_OR_RETURN(std::optional<double> value, DoubleAttr(node, n.name));
    if (value) (op->*n.set)(*value);
  }
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> shape,
                          IntListAttr(node, kPodsimShape));
  if (shape) {
    if (shape->size() != 4) {
      return sim::Status::InvalidArgument("attr podsim_shape: m, k, n and batch, not " +
                                          std::to_string(shape->size()) + " values");
    }
    op->mutable_shape()->set_m((*shape)[0]);
    op->mutable_shape()->set_k((*shape)[1]);
    op->mutable_shape()->set_n((*shape)[2]);
    op->mutable_shape()->set_batch((*shape)[3]);
  }
  PODSIM_ASSIGN_OR_RETURN(std::optional<bool> causal, BoolAttr(node, kPodsimCausal));
  if (causal) op->set_causal(*causal);
  PODSIM_ASSIGN_OR_RETURN(std::optional<bool> launched, BoolAttr(node, kPodsimLaunched));
  if (launched) op->set_launched(*launched);
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> kernel, StringAttr(node, kPodsimKernel));
  if (kernel) op->set_kernel(*kernel);
  for (const auto& [name, set] : {std::pair{kPodsimLayer, &schedule::Op::set_layer},
                                  std::pair{kPodsimMicrobatch, &schedule::Op::set_microbatch}}) {
    PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> value, IntAttr(node, name));
    if (value && (*value < std::numeric_limits<int32_t>::min() ||
                  *value > std::numeric_limits<int32_t>::max())) {
      return sim::Status::InvalidArgument("attr " + std::string(name) + ": out of range");
    }
    if (value) (op->*set)(static_cast<int32_t>(*value));
  }
  return sim::Status::Ok();
}

sim::Status Importer::CheckOp(const schedule::Op& op) const {
  using workloads::kMaxOpBytes;
  using workloads::kMaxOpFlops;
  for (double value : {op.flops(), op.model_flops(), op.hfu_flops(), op.hbm_bytes(),
                       op.duration_s(), op.bytes(), op.hbm_alloc_bytes(), op.hbm_free_bytes()}) {
    if (!std::isfinite(value) || value < 0) {
      return sim::Status::InvalidArgument("FLOPs, bytes and durations must be finite and >= 0");
    }
  }
  if (op.bytes() > kMaxOpBytes || op.hbm_bytes() > kMaxOpBytes ||
      op.hbm_alloc_bytes() > kMaxOpBytes || op.hbm_free_bytes() > kMaxOpBytes) {
    return sim::Status::InvalidArgument("comm_size and tensor_size: at most 1e18 bytes");
  }
  if (op.flops() > kMaxOpFlops || op.model_flops() > kMaxOpFlops || op.hfu_flops() > kMaxOpFlops) {
    return sim::Status::InvalidArgument("num_ops: at most 1e30");
  }
  const schedule::MatmulShape& shape = op.shape();
  for (int64_t length : {shape.m(), shape.k(), shape.n(), shape.batch()}) {
    if (length < 0 || length > (int64_t{1} << 40)) {
      return sim::Status::InvalidArgument("attr podsim_shape: sizes from 0 to 2^40");
    }
  }
  const bool compute = workloads::IsComputeKind(op.kind());
  if (op.stream().empty() || compute != (op.stream() == "compute")) {
    return sim::Status::InvalidArgument("attr podsim_stream: '" + op.stream() + "' is not a " +
                                        (compute ? "compute" : "communication") + " stream");
  }
  if (const std::string kernel = workloads::KernelProblem(op, system_.chip, efficiency_);
      !kernel.empty()) {
    return sim::Status::InvalidArgument("attr podsim_" + kernel);
  }
  return sim::Status::Ok();
}

sim::StatusOr<bool> Importer::ConvertCompute(const Node& node, schedule::Op* op) {
  PODSIM_ASSIGN_OR_RETURN(std::optional<bool> cpu, BoolAttr(node, "is_cpu_op"));
  if (cpu.value_or(false)) {
    ++out_.summary.cpu_nodes;
    return false;
  }
  const bool memory = node.type() != ChakraProtoMsg::COMP_NODE;
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> num_ops, IntAttr(node, "num_ops"));
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> tensor_size, IntAttr(node, "tensor_size"));
  if (num_ops.value_or(0) < 0 || tensor_size.value_or(0) < 0) {
    return sim::Status::InvalidArgument("num_ops and tensor_size must be >= 0");
  }
  const double flops = memory ? 0 : static_cast<double>(num_ops.value_or(0));
  const double bytes = static_cast<double>(tensor_size.value_or(0));
  op->set_stream("compute");
  op->set_kind(flops > 0 ? schedule::MATMUL : schedule::ELEMENTWISE);
  op->set_flops(flops);
  op->set_model_flops(flops);
  op->set_hbm_bytes(bytes);
  const bool own = FindAttr(node, kPodsimKind) != nullptr;
  const bool work = flops > 0 || bytes > 0;
  const bool recorded = node.duration_micros() > 0 && !memory &&
                        (options_.compute == ChakraCompute::kRecorded || !work);
  if (own) {
    PODSIM_RETURN_IF_ERROR(Restore(node, op));
  } else if (recorded) {
    op->set_duration_s(static_cast<double>(node.duration_micros()) * 1e-6);
  } else if (!work) {
    ++out_.summary.empty_nodes;
    return false;
  }
  ++(op->duration_s() > 0 ? out_.summary.recorded : out_.summary.roofline);
  return true;
}

sim::Status Importer::ConvertCollective(int rank, const Node& node, schedule::Op* op) {
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> type, IntAttr(node, "comm_type"));
  if (!type) return sim::Status::InvalidArgument("comm_type: missing");
  if (*type < 0 || *type > 1000 ||
      !ChakraProtoMsg::CollectiveCommType_IsValid(static_cast<int>(*type))) {
    return sim::Status::InvalidArgument("comm_type: unknown value " + std::to_string(*type));
  }
  const auto comm = static_cast<ChakraProtoMsg::CollectiveCommType>(*type);
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> size, IntAttr(node, "comm_size"));
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> pg, StringAttr(node, "pg_name"));
  int64_t members = 0;
  PODSIM_ASSIGN_OR_RETURN(std::string group, GroupOf(rank, node, pg.value_or(""), &members));
  op->set_kind(schedule::COLLECTIVE);
  op->set_group(group);
  op->set_stream(pg && !pg->empty() ? "comm " + *pg : "comm");
  double per = 1;  // podsim's bytes per comm_size byte (chakra_import.h).
  switch (comm) {
    case ChakraProtoMsg::ALL_REDUCE:
    case ChakraProtoMsg::BARRIER:
      op->set_collective(schedule::ALL_REDUCE);
      break;
    case ChakraProtoMsg::ALL_GATHER:
      op->set_collective(schedule::ALL_GATHER);
      per = static_cast<double>(members);
      break;
    case ChakraProtoMsg::REDUCE_SCATTER:
    case ChakraProtoMsg::REDUCE_SCATTER_BLOCK:
      op->set_collective(schedule::REDUCE_SCATTER);
      break;
    case ChakraProtoMsg::ALL_TO_ALL:
      op->set_collective(schedule::ALL_TO_ALL);
      per = static_cast<double>(members);
      break;
    case ChakraProtoMsg::BROADCAST:
      op->set_collective(schedule::BROADCAST);
      break;
    default:
      return sim::Status::InvalidArgument(
          "comm_type " + ChakraProtoMsg::CollectiveCommType_Name(comm) +
          ": podsim simulates all-reduce, all-gather, reduce-scatter, all-to-all, broadcast and "
          "barrier, not reduce, gather or scatter");
  }
  if (comm == ChakraProtoMsg::BARRIER) {
    op->set_bytes(kBarrierBytes);
  } else {
    if (!size || *size <= 0) return sim::Status::InvalidArgument("comm_size: missing or not > 0");
    op->set_bytes(static_cast<double>(*size) * per);
  }
  PODSIM_RETURN_IF_ERROR(Restore(node, op));
  ++out_.summary.collectives;
  return sim::Status::Ok();
}

sim::Status Importer::CountShiftMessage(int rank, const Node& node) {
  PODSIM_ASSIGN_OR_RETURN(MessageKey key, MessageOf(rank, node));
  auto& [sent, received] = shift_messages_[key];
  ++(node.type() == ChakraProtoMsg::COMM_SEND_NODE ? sent : received);
  return sim::Status::Ok();
}

sim::Status Importer::ConvertShift(int rank, const Node& node, schedule::Op* op) {
  PODSIM_ASSIGN_OR_RETURN(std::optional<std::string> pg, StringAttr(node, "pg_name"));
  PODSIM_ASSIGN_OR_RETURN(std::optional<double> bytes, DoubleAttr(node, kPodsimShiftBytes));
  if (!pg || pg->empty() || !bytes) {
    return sim::Status::InvalidArgument(
        "attr podsim_shift: a shift's receive needs pg_name and podsim_shift_bytes");
  }
  int64_t members = 0;
  PODSIM_ASSIGN_OR_RETURN(std::string group, GroupOf(rank, node, *pg, &members));
  op->set_kind(schedule::COLLECTIVE);
  op->set_collective(schedule::SHIFT);
  op->set_group(group);
  PODSIM_RETURN_IF_ERROR(Restore(node, op));
  op->set_bytes(*bytes);
  // The receive's stream is the shift's with ".recv" (chakra_export.cc).
  constexpr std::string_view kRecv = ".recv";
  if (op->stream().ends_with(kRecv))
    op->set_stream(op->stream().substr(0, op->stream().size() - kRecv.size()));
  ++out_.summary.collectives;
  return sim::Status::Ok();
}

sim::StatusOr<Importer::MessageKey> Importer::MessageOf(int rank, const Node& node) const {
  const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> src, IntAttr(node, "comm_src"));
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> dst, IntAttr(node, "comm_dst"));
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> tag, IntAttr(node, "comm_tag"));
  const std::optional<int64_t>& peer = send ? dst : src;
  const std::optional<int64_t>& self = send ? src : dst;
  const char* peer_name = send ? "comm_dst" : "comm_src";
  if (!peer) return sim::Status::InvalidArgument(std::string(peer_name) + ": missing");
  if (*peer < 0 || *peer >= static_cast<int64_t>(chip_of_rank_.size()) || *peer == rank) {
    return sim::Status::InvalidArgument(std::string(peer_name) + ": " + std::to_string(*peer) +
                                        " is not another rank of the trace");
  }
  if (self && *self != rank) {
    return sim::Status::InvalidArgument(std::string(send ? "comm_src" : "comm_dst") + ": " +
                                        std::to_string(*self) + " is not this rank");
  }
  if (tag &&
      (*tag < std::numeric_limits<int32_t>::min() || *tag > std::numeric_limits<int32_t>::max())) {
    return sim::Status::InvalidArgument("comm_tag: " + std::to_string(*tag) +
                                        " is outside Chakra's int32 tags");
  }
  const int other = static_cast<int>(*peer);
  return MessageKey{send ? rank : other, send ? other : rank, tag.value_or(0)};
}

sim::Status Importer::ConvertPointToPoint(int rank, const Node& node, schedule::Op* op) {
  const bool send = node.type() == ChakraProtoMsg::COMM_SEND_NODE;
  PODSIM_ASSIGN_OR_RETURN(MessageKey key, MessageOf(rank, node));
  PODSIM_ASSIGN_OR_RETURN(std::optional<int64_t> size, IntAttr(node, "comm_size"));
  if (send && (!size || *size <= 0)) {
    return sim::Status::InvalidArgument("comm_size: missing or not > 0");
  }
  const auto [from, to, tag] = key;
  const int peer = send ? to : from;
  auto& [sent, received] = messages_[key];
  const uint64_t nth = send ? sent++ : received++;
  op->set_kind(send ? schedule::SEND : schedule::RECV);
  // Sends and receives on streams of their own: a receive waiting for its message never holds
  // back a send (a pipeline stage sends to one neighbour while it waits on the other).
  op->set_stream(send ? "send" : "recv");
  op->set_bytes(static_cast<double>(size.value_or(0)));
  op->set_peer_axis("rank");
  op->set_peer_offset(coord_of_chip_[chip_of_rank_[peer]] - coord_of_chip_[chip_of_rank_[rank]]);
  // Messages between two ranks with one Chakra tag pair up in order: the n-th of each.
  op->set_tag((nth << 32) | static_cast<uint32_t>(tag));
  PODSIM_RETURN_IF_ERROR(Restore(node, op));
  ++out_.summary.sends;
  return sim::Status::Ok();
}

sim::StatusOr<bool> Importer::Convert(int rank, const Node& node, schedule::Op* op) {
  op->set_name(node.name());
  switch (node.type()) {
    case ChakraProtoMsg::METADATA_NODE:
      ++out_.summary.metadata_nodes;
      return false;
    case ChakraProtoMsg::COMP_NODE:
    case ChakraProtoMsg::MEM_LOAD_NODE:
    case ChakraProtoMsg::MEM_STORE_NODE:
      return ConvertCompute(node, op);
    case ChakraProtoMsg::COMM_COLL_NODE:
      PODSIM_RETURN_IF_ERROR(ConvertCollective(rank, node, op));
      return true;
    case ChakraProtoMsg::COMM_SEND_NODE:
    case ChakraProtoMsg::COMM_RECV_NODE: {
      PODSIM_ASSIGN_OR_RETURN(std::optional<bool> shift, BoolAttr(node, kPodsimShift));
      if (shift.value_or(false)) {
        PODSIM_RETURN_IF_ERROR(CountShiftMessage(rank, node));
        if (node.type() == ChakraProtoMsg::COMM_SEND_NODE) {
          ++out_.summary.shift_sends;
          return false;
        }
        PODSIM_RETURN_IF_ERROR(ConvertShift(rank, node, op));
        return true;
      }
      PODSIM_RETURN_IF_ERROR(ConvertPointToPoint(rank, node, op));
      return true;
    }
    default: {
      const int type = static_cast<int>(node.type());
      const std::string name = ChakraProtoMsg::NodeType_IsValid(type)
                                   ? " (" + ChakraProtoMsg::NodeType_Name(node.type()) + ")"
                                   : "";
      return sim::Status::InvalidArgument("type " + std::to_string(type) + name +
                                          ": podsim reads METADATA, COMP, MEM_LOAD, MEM_STORE, "
                                          "COMM_COLL, COMM_SEND and COMM_RECV nodes");
    }
  }
}

sim::Status Importer::ImportRank(int rank) {
  const std::vector<Node>& nodes = ranks_[rank].nodes;
  const size_t n = nodes.size();
  std::unordered_map<uint64_t, size_t> index;  // Node id -> position in the file.
  index.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!index.emplace(nodes[i].id(), i).second) {
      return sim::Status::InvalidArgument(NodeAt(rank, nodes[i]) + ": a second node with id " +
                                          std::to_string(nodes[i].id()));
    }
  }
  // Dependencies as positions; Kahn's order, the lowest id first among the ready nodes.
  std::vector<std::vector<size_t>> deps(n), dependents(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    auto add = [&](uint64_t id, const char* field) -> sim::Status {
      auto it = index.find(id);
      if (it == index.end()) {
        return sim::Status::InvalidArgument(NodeAt(rank, nodes[i]) + ": " + field + ": no node " +
                                            std::to_string(id) + " in this rank");
      }
      deps[i].push_back(it->second);
      return sim::Status::Ok();
    };
    for (uint64_t id : nodes[i].data_deps()) PODSIM_RETURN_IF_ERROR(add(id, "data_deps"));
    if (options_.ctrl_deps) {
      for (uint64_t id : nodes[i].ctrl_deps()) PODSIM_RETURN_IF_ERROR(add(id, "ctrl_deps"));
    }
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
    for (size_t d : deps[i]) dependents[d].push_back(i);
    pending[i] = deps[i].size();
  }
  using Ready = std::pair<uint64_t, size_t>;  // (id, position)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.emplace(nodes[i].id(), i);
  }
  schedule::Program* program = out_.schedule.add_programs();
  program->set_name("rank " + std::to_string(rank));
  (*program->mutable_where())["rank"] = coord_of_chip_[chip_of_rank_[rank]];
  // Per node: the ops its dependents wait for (its own, or what it waited for when it has none).
  std::vector<std::vector<uint32_t>> through(n);
  size_t done = 0;
  while (!ready.empty()) {
    const size_t i = ready.top().second;
    ready.pop();
    ++done;
    std::vector<uint32_t> waits;
    for (size_t d : deps[i]) {
      edges_ += through[d].size();
      if (edges_ > kMaxDependencies) {
        return sim::Status::InvalidArgument(
            NodeAt(rank, nodes[i]) +
            ": the trace's dependencies, with those that pass through "
            "nodes taking no time (metadata, CPU ops), exceed " +
            std::to_string(kMaxDependencies) + ", over podsim's limit");
      }
      waits.insert(waits.end(), through[d].begin(), through[d].end());
    }
    std::sort(waits.begin(), waits.end());
    waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
    schedule::Op op;
    sim::StatusOr<bool> kept = Convert(rank, nodes[i], &op);
    if (kept.ok() && *kept) {
      if (sim::Status valid = CheckOp(op); !valid.ok()) kept = valid;
    }
    if (!kept.ok()) return kept.status().WithContext(NodeAt(rank, nodes[i]));
    if (*kept) {
      for (uint32_t w : waits) op.add_deps(w);
      through[i] = {static_cast<uint32_t>(program->ops_size())};
      *program->add_ops() = std::move(op);
    } else {
      through[i] = std::move(waits);
    }
    for (size_t j : dependents[i]) {
      if (--pending[j] == 0) ready.emplace(nodes[j].id(), j);
    }
  }
  if (done < n) {
    uint64_t lowest = UINT64_MAX;
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      if (pending[i] > 0 && nodes[i].id() < lowest) lowest = nodes[i].id(), at = i;
    }
    return sim::Status::InvalidArgument(NodeAt(rank, nodes[at]) + ": its dependencies" +
                                        (options_.ctrl_deps ? " (data and control)" : "") +
                                        " form a cycle, or wait on one");
  }
  out_.summary.nodes += n;
  out_.summary.ops += program->ops_size();
  return sim::Status::Ok();
}

sim::Status Importer::PairPointToPoint() const {
  for (const auto* messages : {&messages_, &shift_messages_}) {
    for (const auto& [key, counts] : *messages) {
      const auto& [from, to, tag] = key;
      if (counts.first == counts.second) continue;
      return sim::Status::InvalidArgument(
          "rank " + std::to_string(from) + " sends " + std::to_string(counts.first) +
          (messages == &shift_messages_ ? " shift message(s) (podsim_shift)" : " message(s)") +
          " with comm_tag " + std::to_string(tag) + " to rank " + std::to_string(to) +
          ", which receives " + std::to_string(counts.second));
    }
  }
  return sim::Status::Ok();
}

sim::StatusOr<ChakraImport> Importer::Run() {
  if (ranks_.empty()) return sim::Status::InvalidArgument("the trace has no ranks");
  PODSIM_RETURN_IF_ERROR(PlaceRanks());
  schedule::Schedule& s = out_.schedule;
  s.set_system(system_.name);
  schedule::MeshAxis* axis = s.add_mesh();
  axis->set_name("rank");
  axis->set_size(static_cast<int32_t>(system_.fabric.chip_count()));
  for (int rank = 0; rank < static_cast<int>(ranks_.size()); ++rank) {
    PODSIM_RETURN_IF_ERROR(ImportRank(rank));
  }
  PODSIM_RETURN_IF_ERROR(PairPointToPoint());
  // Chips no rank is placed on run nothing.
  std::vector<bool> used(system_.fabric.chip_count(), false);
  for (uint32_t chip : chip_of_rank_) used[chip] = true;
  for (uint32_t chip = 0; chip < used.size(); ++chip) {
    if (used[chip]) continue;
    schedule::Program* idle = s.add_programs();
    idle->set_name("idle chip " + std::to_string(chip));
    (*idle->mutable_where())["rank"] = coord_of_chip_[chip];
  }
  out_.summary.ranks = static_cast<int>(ranks_.size());
  s.set_description("Chakra execution trace " + options_.source + " (" +
                    std::to_string(ranks_.size()) + " ranks)");
  return std::move(out_);
}

}  // namespace

sim::StatusOr<ChakraImport> ImportChakra(const topology::System& system,
                                         const std::vector<ChakraRankTrace>& ranks,
                                         const CommGroups& groups,
                                         const ChakraImportOptions& options) {
  return Importer(system, ranks, groups, options).Run();
}

}  // namespace podsim::interop
