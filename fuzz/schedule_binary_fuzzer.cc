// Fuzzes step schedules in the binary protobuf encoding (the .pb files `podsim replay` reads):
// schedule::Schedule::ParseFromString, then CheckSchedule against its system when that parses and
// is small (schedule_target.h). The input is the encoded message.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "fuzz/schedule_target.h"
#include "schedule.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  podsim::fuzz::QuietProtobufLogs();
  podsim::schedule::Schedule schedule;
  if (!schedule.ParseFromString(std::string(reinterpret_cast<const char*>(data), size))) return 0;
  podsim::fuzz::CheckParsedSchedule(schedule);
  return 0;
}
