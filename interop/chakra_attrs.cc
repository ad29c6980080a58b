#include "interop/chakra_attrs.h"

#include <limits>

namespace podsim::interop {

namespace {

using ChakraProtoMsg::AttributeProto;

sim::Status WrongType(std::string_view name, std::string_view wanted) {
  return sim::Status::InvalidArgument("attr " + std::string(name) + ": not " + std::string(wanted));
}

// The integer in any integer case; nullopt for other cases. uint64 values above int64's range
// are refused by the caller through `too_big`.
std::optional<int64_t> AnyInt(const AttributeProto& a, bool* too_big) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  auto unsigned_value = [&](uint64_t v) -> std::optional<int64_t> {
    if (v > kMax) *too_big = true;
    return static_cast<int64_t>(v);
  };
  switch (a.value_case()) {
    case AttributeProto::kInt32Val:
      return a.int32_val();
    case AttributeProto::kInt64Val:
      return a.int64_val();
    case AttributeProto::kUint32Val:
      return a.uint32_val();
    case AttributeProto::kUint64Val:
      return unsigned_value(a.uint64_val());
    case AttributeProto::kSint32Val:
      return a.sint32_val();
    case AttributeProto::kSint64Val:
      return a.sint64_val();
    case AttributeProto::kFixed32Val:
      return a.fixed32_val();
    case AttributeProto::kFixed64Val:
      return unsigned_value(a.fixed64_val());
    case AttributeProto::kSfixed32Val:
      return a.sfixed32_val();
    case AttributeProto::kSfixed64Val:
      return a.sfixed64_val();
    default:
      return std::nullopt;
  }
}

AttributeProto* Add(ChakraProtoMsg::Node* node, std::string_view name) {
  AttributeProto* attr = node->add_attr();
  attr->set_name(std::string(name));
  return attr;
}

}  // namespace

const AttributeProto* FindAttr(const ChakraProtoMsg::Node& node, std::string_view name) {
  for (const AttributeProto& attr : node.attr()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

sim::StatusOr<std::optional<int64_t>> IntAttr(const ChakraProtoMsg::Node& node,
                                              std::string_view name) {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return std::optional<int64_t>();
  bool too_big = false;
  std::optional<int64_t> value = AnyInt(*attr, &too_big);
  if (!value) return WrongType(name, "an integer");
  if (too_big) return sim::Status::InvalidArgument("attr " + std::string(name) + ": over 2^63");
  return value;
}

sim::StatusOr<std::optional<double>> DoubleAttr(const ChakraProtoMsg::Node& node,
                                                std::string_view name) {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return std::optional<double>();
  if (attr->value_case() == AttributeProto::kDoubleVal)
    return std::optional<double>(attr->double_val());
  if (attr->value_case() == AttributeProto::kFloatVal)
    return std::optional<double>(attr->float_val());
  bool too_big = false;
  std::optional<int64_t> value = AnyInt(*attr, &too_big);
  if (!value || too_big) return WrongType(name, "a number");
  return std::optional<double>(static_cast<double>(*value));
}

sim::StatusOr<std::optional<bool>> BoolAttr(const ChakraProtoMsg::Node& node,
                                            std::string_view name) {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return std::optional<bool>();
  if (attr->value_case() != AttributeProto::kBoolVal) return WrongType(name, "a bool");
  return std::optional<bool>(attr->bool_val());
}

sim::StatusOr<std::optional<std::string>> StringAttr(const ChakraProtoMsg::Node& node,
                                                     std::string_view name) {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return std::optional<std::string>();
  if (attr->value_case() != AttributeProto::kStringVal) return WrongType(name, "a string");
  return std::optional<std::string>(attr->string_val());
}

sim::StatusOr<std::optional<std::vector<int64_t>>> IntListAttr(const ChakraProtoMsg::Node& node,
                                                               std::string_view name) {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return std::optional<std::vector<int64_t>>();
  if (attr->value_case() != AttributeProto::kInt64List) return WrongType(name, "an int64 list");
  return std::optional<std::vector<int64_t>>(
      std::vector<int64_t>(attr->int64_list().values().begin(), attr->int64_list().values().end()));
}

void AddIntAttr(ChakraProtoMsg::Node* node, std::string_view name, int64_t value) {
  Add(node, name)->set_int64_val(value);
}
void AddUintAttr(ChakraProtoMsg::Node* node, std::string_view name, uint64_t value) {
  Add(node, name)->set_uint64_val(value);
}
void AddInt32Attr(ChakraProtoMsg::Node* node, std::string_view name, int32_t value) {
  Add(node, name)->set_int32_val(value);
}
void AddDoubleAttr(ChakraProtoMsg::Node* node, std::string_view name, double value) {
  Add(node, name)->set_double_val(value);
}
void AddBoolAttr(ChakraProtoMsg::Node* node, std::string_view name, bool value) {
  Add(node, name)->set_bool_val(value);
}
void AddStringAttr(ChakraProtoMsg::Node* node, std::string_view name, std::string_view value) {
  Add(node, name)->set_string_val(std::string(value));
}
void AddIntListAttr(ChakraProtoMsg::Node* node, std::string_view name,
                    const std::vector<int64_t>& values) {
  ChakraProtoMsg::Int64List* list = Add(node, name)->mutable_int64_list();
  for (int64_t v : values) list->add_values(v);
}

}  // namespace podsim::interop
