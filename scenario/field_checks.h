// Checks of single scenario fields shared by scenario_build.cc and scenario_check.cc; every
// failure is an InvalidArgument annotated with the field's path and position. Internal to
// scenario/.

#ifndef PODSIM_SCENARIO_FIELD_CHECKS_H_
#define PODSIM_SCENARIO_FIELD_CHECKS_H_

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "scenario/source_map.h"
#include "sim/status.h"

namespace podsim::scenario::internal {

// Shortest text that reads back as `value` ("1e+15", "-3", "0.5").
std::string FormatNumber(double value);

// InvalidArgument(message) annotated with `path`.
sim::Status Invalid(const SourceMap& source, std::string_view path, std::string_view message);

// "must be an integer in [lo, hi] (got v)" unless lo <= value <= hi.
sim::Status CheckRange(const SourceMap& source, std::string_view path, int64_t value, int64_t lo,
                       int64_t hi);

// "must be a finite number >= 0 (got v)" unless value is finite and >= 0.
sim::Status CheckNonNegative(const SourceMap& source, std::string_view path, double value);

// The names of an enum's values except its 0 (unspecified) one, joined by ", ".
std::string EnumValueList(const google::protobuf::EnumDescriptor* type);

// For an enum field whose 0 value means "not given": "missing; expected one of ..." when
// `required` and the value is 0, "<NAME_UNSPECIFIED> means not given; expected one of ..." when
// it was written (`present`) as 0.
sim::Status CheckEnum(const SourceMap& source, std::string_view path,
                      const google::protobuf::EnumDescriptor* type, int value, bool present,
                      bool required);

}  // namespace podsim::scenario::internal

#endif  // PODSIM_SCENARIO_FIELD_CHECKS_H_
