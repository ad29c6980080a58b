// Trace files: choosing a format from the file name and writing it atomically.
//
// OpenTraceFile writes through a sim::AtomicFile (a unique temporary beside <path>, renamed onto
// it in Close()), so a run that fails or is interrupted never leaves a half-written trace under
// the requested name nor a temporary, and two runs writing one path never mix their bytes.
// Destroying the sink without a successful Close() removes the temporary file.

#ifndef PODSIM_TRACES_TRACE_FILE_H_
#define PODSIM_TRACES_TRACE_FILE_H_

#include <memory>
#include <string>
#include <string_view>

#include "sim/status.h"
#include "traces/trace_sink.h"

namespace podsim::traces {

enum class TraceFormat {
  kPerfetto,    // .pftrace or .perfetto-trace: Perfetto protobuf (PerfettoWriter).
  kChromeJson,  // .json: Chrome Trace Event Format (ChromeJsonWriter).
};

// The format for `path`, by extension (case-sensitive). Any other name is InvalidArgument, with a
// message that names the path and the accepted extensions.
sim::StatusOr<TraceFormat> TraceFormatFromPath(std::string_view path);

// Opens a sink writing `path` in the format TraceFormatFromPath chooses. Returns InvalidArgument
// for an unknown extension and IoError if the temporary file cannot be created. Close() returns
// IoError if writing or the final rename fails (the temporary file is then removed).
sim::StatusOr<std::unique_ptr<TraceSink>> OpenTraceFile(const std::string& path);

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_TRACE_FILE_H_
