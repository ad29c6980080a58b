// Reading and writing the attributes of Chakra nodes (chakra_et.proto), by name: the conventional
// ones (`comm_size`, `pg_name`, ...) that generators write with varying integer types, and the
// `podsim_*` ones with which podsim keeps what Chakra cannot say (chakra_export.h).

#ifndef PODSIM_INTEROP_CHAKRA_ATTRS_H_
#define PODSIM_INTEROP_CHAKRA_ATTRS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chakra_et.pb.h"
#include "sim/status.h"

namespace podsim::interop {

// The podsim attributes: what a schedule op has that its Chakra node does not otherwise say.
inline constexpr std::string_view kPodsimKind = "podsim_kind";      // OpKind name.
inline constexpr std::string_view kPodsimStream = "podsim_stream";  // string
inline constexpr std::string_view kPodsimFlops = "podsim_flops";    // double
inline constexpr std::string_view kPodsimModelFlops = "podsim_model_flops";
inline constexpr std::string_view kPodsimHfuFlops = "podsim_hfu_flops";
inline constexpr std::string_view kPodsimHbmBytes = "podsim_hbm_bytes";
inline constexpr std::string_view kPodsimDuration = "podsim_duration_s";  // Only when stated.
inline constexpr std::string_view kPodsimShape = "podsim_shape";          // int64 list m,k,n,batch
inline constexpr std::string_view kPodsimCausal = "podsim_causal";        // bool
// Compute ops: the kernel that times it (schedule.proto Op.kernel: an attention kernel or an
// HBM kernel class).
inline constexpr std::string_view kPodsimKernel = "podsim_kernel";  // string
inline constexpr std::string_view kPodsimPhase = "podsim_phase";    // string
inline constexpr std::string_view kPodsimLayer = "podsim_layer";    // int64
inline constexpr std::string_view kPodsimMicrobatch = "podsim_microbatch";
inline constexpr std::string_view kPodsimBytes = "podsim_bytes";  // Collectives, sends: double
inline constexpr std::string_view kPodsimTag = "podsim_tag";      // Sends, receives: uint64
// Collectives: what the process group is in podsim's terms ("tp@0": the tp group of chip 0).
inline constexpr std::string_view kPodsimGroup = "podsim_group";  // string
// Collectives: the group's rank grid when it has several dimensions (schedule.proto Group.shape).
inline constexpr std::string_view kPodsimGroupShape = "podsim_group_shape";  // int64 list
// Collectives: a later chunk of an operation already launched (schedule.proto Op.launched), which
// pays no launch latency.
inline constexpr std::string_view kPodsimLaunched = "podsim_launched";  // bool
// The send and the receive a shift (schedule::SHIFT) is written as (chakra_export.h); on the
// receive, the shift's whole bytes (its podsim_bytes are the transfer's, bytes / ranks).
inline constexpr std::string_view kPodsimShift = "podsim_shift";             // bool
inline constexpr std::string_view kPodsimShiftBytes = "podsim_shift_bytes";  // double
inline constexpr std::string_view kPodsimHbmAlloc = "podsim_hbm_alloc_bytes";
inline constexpr std::string_view kPodsimHbmFree = "podsim_hbm_free_bytes";

// The attribute named `name`, or null.
const ChakraProtoMsg::AttributeProto* FindAttr(const ChakraProtoMsg::Node& node,
                                               std::string_view name);

// Typed reads. Absent: nullopt. Present with a value of another type: InvalidArgument naming the
// attribute. Integers come in any of the integer cases (generators differ: `comm_size` is int64
// in Chakra's converter and uint64 in others).
sim::StatusOr<std::optional<int64_t>> IntAttr(const ChakraProtoMsg::Node& node,
                                              std::string_view name);
sim::StatusOr<std::optional<double>> DoubleAttr(const ChakraProtoMsg::Node& node,
                                                std::string_view name);
sim::StatusOr<std::optional<bool>> BoolAttr(const ChakraProtoMsg::Node& node,
                                            std::string_view name);
sim::StatusOr<std::optional<std::string>> StringAttr(const ChakraProtoMsg::Node& node,
                                                     std::string_view name);
sim::StatusOr<std::optional<std::vector<int64_t>>> IntListAttr(const ChakraProtoMsg::Node& node,
                                                               std::string_view name);

// Appends an attribute.
void AddIntAttr(ChakraProtoMsg::Node* node, std::string_view name, int64_t value);
void AddUintAttr(ChakraProtoMsg::Node* node, std::string_view name, uint64_t value);
void AddInt32Attr(ChakraProtoMsg::Node* node, std::string_view name, int32_t value);
void AddDoubleAttr(ChakraProtoMsg::Node* node, std::string_view name, double value);
void AddBoolAttr(ChakraProtoMsg::Node* node, std::string_view name, bool value);
void AddStringAttr(ChakraProtoMsg::Node* node, std::string_view name, std::string_view value);
void AddIntListAttr(ChakraProtoMsg::Node* node, std::string_view name,
                    const std::vector<int64_t>& values);

}  // namespace podsim::interop

#endif  // PODSIM_INTEROP_CHAKRA_ATTRS_H_
