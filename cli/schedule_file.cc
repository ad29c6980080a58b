#include "cli/schedule_file.h"

#include <google/protobuf/text_format.h>

#include <fstream>
#include <sstream>

#include "scenario/text_proto.h"
#include "sim/atomic_file.h"

namespace podsim::cli {

namespace {

bool IsBinary(const std::string& path) {
  auto ends_with = [&](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".pb") || ends_with(".binpb");
}

// Files larger than this are refused before reading: no schedule podsim writes comes near it.
constexpr std::streamoff kMaxScheduleBytes = std::streamoff{1} << 30;

}  // namespace

sim::StatusOr<schedule::Schedule> ReadScheduleFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return sim::Status::IoError(path + ": cannot open the schedule file");
  const std::streamoff size = in.tellg();
  if (size < 0) return sim::Status::IoError(path + ": cannot read the schedule file");
  if (size > kMaxScheduleBytes) {
    return sim::Status::InvalidArgument(path + ": larger than 1 GiB; not a schedule podsim reads");
  }
  in.seekg(0);
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), size);
  schedule::Schedule schedule;
  if (IsBinary(path)) {
    if (!schedule.ParseFromString(data)) {
      return sim::Status::ParseError(path + ": not a binary podsim.schedule.Schedule");
    }
    PODSIM_RETURN_IF_ERROR(scenario::CheckStringFields(schedule, path));
    return schedule;
  }
  PODSIM_RETURN_IF_ERROR(scenario::ParseTextProto(data, path, &schedule));
  return schedule;
}

sim::Status WriteScheduleFile(const std::string& path, const schedule::Schedule& schedule) {
  std::string data;
  if (IsBinary(path)) {
    if (!schedule.SerializeToString(&data)) {
      return sim::Status::IoError(path + ": cannot serialise the schedule");
    }
  } else if (!google::protobuf::TextFormat::PrintToString(schedule, &data)) {
    return sim::Status::IoError(path + ": cannot print the schedule");
  }
  return sim::WriteFileAtomically(path, data);
}

}  // namespace podsim::cli
