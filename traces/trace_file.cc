#include "traces/trace_file.h"

#include <utility>

#include "sim/atomic_file.h"
#include "traces/chrome_json_writer.h"
#include "traces/perfetto_writer.h"

namespace podsim::traces {

namespace {

// Owns the temporary file and the writer on it; forwards every call, and renames on Close.
class FileTraceSink final : public TraceSink {
 public:
  FileTraceSink(std::unique_ptr<sim::AtomicFile> file, TraceFormat format)
      : file_(std::move(file)) {
    if (format == TraceFormat::kPerfetto) {
      writer_ = std::make_unique<PerfettoWriter>(&file_->stream());
    } else {
      writer_ = std::make_unique<ChromeJsonWriter>(&file_->stream());
    }
  }
  ~FileTraceSink() override {
    // The writer goes first: it may still write to the file's stream. An uncommitted file
    // removes its temporary.
    writer_.reset();
  }

  using TraceSink::AddProcess;
  ProcessId AddProcess(std::string_view name, int32_t sort_index) override {
    return writer_->AddProcess(name, sort_index);
  }
  TrackId AddTrack(ProcessId process, std::string_view name) override {
    return writer_->AddTrack(process, name);
  }
  TrackId AddCounterTrack(ProcessId process, std::string_view name, CounterUnit unit) override {
    return writer_->AddCounterTrack(process, name, unit);
  }
  void BeginSlice(TrackId track, sim::Time time, const EventSpec& event) override {
    writer_->BeginSlice(track, time, event);
  }
  void EndSlice(TrackId track, sim::Time time) override { writer_->EndSlice(track, time); }
  void Instant(TrackId track, sim::Time time, const EventSpec& event) override {
    writer_->Instant(track, time, event);
  }
  void SetCounter(TrackId track, sim::Time time, double value) override {
    writer_->SetCounter(track, time, value);
  }

  sim::Status Close() override {
    PODSIM_RETURN_IF_ERROR(writer_->Close().WithContext(file_->path()));
    return file_->Commit();
  }

 private:
  std::unique_ptr<sim::AtomicFile> file_;
  std::unique_ptr<TraceSink> writer_;
};

}  // namespace

sim::StatusOr<TraceFormat> TraceFormatFromPath(std::string_view path) {
  if (path.ends_with(".pftrace") || path.ends_with(".perfetto-trace")) {
    return TraceFormat::kPerfetto;
  }
  if (path.ends_with(".json")) return TraceFormat::kChromeJson;
  return sim::Status::InvalidArgument(
      std::string(path) +
      ": unknown trace format; use a name ending in .pftrace or .perfetto-trace (Perfetto) or "
      ".json (Chrome JSON)");
}

sim::StatusOr<std::unique_ptr<TraceSink>> OpenTraceFile(const std::string& path) {
  PODSIM_ASSIGN_OR_RETURN(TraceFormat format, TraceFormatFromPath(path));
  PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<sim::AtomicFile> file, sim::AtomicFile::Create(path));
  return std::unique_ptr<TraceSink>(std::make_unique<FileTraceSink>(std::move(file), format));
}

}  // namespace podsim::traces
