#include "scenario/field_checks.h"

#include <charconv>
#include <cmath>

namespace podsim::scenario::internal {

std::string FormatNumber(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return error == std::errc() ? std::string(buffer, end) : "?";
}

sim::Status Invalid(const SourceMap& source, std::string_view path, std::string_view message) {
  return source.Annotate(sim::Status::InvalidArgument(message), path);
}

sim::Status CheckRange(const SourceMap& source, std::string_view path, int64_t value, int64_t lo,
                       int64_t hi) {
  if (value >= lo && value <= hi) return sim::Status::Ok();
  return Invalid(source, path,
                 "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "] (got " + std::to_string(value) + ")");
}

sim::Status CheckNonNegative(const SourceMap& source, std::string_view path, double value) {
  if (std::isfinite(value) && value >= 0) return sim::Status::Ok();
  return Invalid(source, path, "must be a finite number >= 0 (got " + FormatNumber(value) + ")");
}

std::string EnumValueList(const google::protobuf::EnumDescriptor* type) {
  std::string list;
  for (int i = 0; i < type->value_count(); ++i) {
    if (type->value(i)->number() == 0) continue;
    if (!list.empty()) list += ", ";
    list += type->value(i)->name();
  }
  return list;
}

sim::Status CheckEnum(const SourceMap& source, std::string_view path,
                      const google::protobuf::EnumDescriptor* type, int value, bool present,
                      bool required) {
  if (value != 0) return sim::Status::Ok();
  if (present) {
    const google::protobuf::EnumValueDescriptor* zero = type->FindValueByNumber(0);
    return Invalid(source, path,
                   (zero ? zero->name() : std::string("0")) + " means not given; expected one of " +
                       EnumValueList(type));
  }
  if (required) return Invalid(source, path, "missing; expected one of " + EnumValueList(type));
  return sim::Status::Ok();
}

}  // namespace podsim::scenario::internal
