// Reading and writing step schedules (workloads/schedule.proto): binary protobuf for a path
// ending in .pb or .binpb, protobuf text format otherwise. Writes go to "<path>.tmp", renamed
// when complete, so a failed write leaves nothing behind.

#ifndef PODSIM_CLI_SCHEDULE_FILE_H_
#define PODSIM_CLI_SCHEDULE_FILE_H_

#include <string>

#include "schedule.pb.h"
#include "sim/status.h"

namespace podsim::cli {

sim::StatusOr<schedule::Schedule> ReadScheduleFile(const std::string& path);
sim::Status WriteScheduleFile(const std::string& path, const schedule::Schedule& schedule);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_SCHEDULE_FILE_H_
