// Fuzzes step schedules in protobuf text format: scenario::ParseTextProto into a
// schedule::Schedule (workloads/schedule.proto), then CheckSchedule against its system when that
// parses and is small (schedule_target.h). The input is the text.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "fuzz/schedule_target.h"
#include "scenario/text_proto.h"
#include "schedule.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  podsim::fuzz::QuietProtobufLogs();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  podsim::schedule::Schedule schedule;
  if (!podsim::scenario::ParseTextProto(text, "fuzz.textproto", &schedule).ok()) return 0;
  podsim::fuzz::CheckParsedSchedule(schedule);
  return 0;
}
