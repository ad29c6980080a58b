#include "traces/trace_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "traces/chrome_json_writer.h"
#include "traces/perfetto_writer.h"

namespace podsim::traces {

namespace {

// Owns the temporary file and the writer on it; forwards every call, and renames on Close.
class FileTraceSink final : public TraceSink {
 public:
  FileTraceSink(std::string path, std::string temp_path, std::unique_ptr<std::ofstream> file,
                TraceFormat format)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), file_(std::move(file)) {
    if (format == TraceFormat::kPerfetto) {
      writer_ = std::make_unique<PerfettoWriter>(file_.get());
    } else {
      writer_ = std::make_unique<ChromeJsonWriter>(file_.get());
    }
  }
  ~FileTraceSink() override {
    if (!renamed_) {
      writer_.reset();
      file_.reset();
      std::remove(temp_path_.c_str());
    }
  }

  ProcessId AddProcess(std::string_view name) override { return writer_->AddProcess(name); }
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
    PODSIM_RETURN_IF_ERROR(writer_->Close().WithContext(path_));
    file_->close();
    if (!*file_) return sim::Status::IoError(path_ + ": closing the trace file failed");
    if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      return sim::Status::IoError(path_ + ": cannot rename " + temp_path_ + ": " +
                                  std::strerror(errno));
    }
    renamed_ = true;
    return sim::Status::Ok();
  }

 private:
  std::string path_;
  std::string temp_path_;
  std::unique_ptr<std::ofstream> file_;
  std::unique_ptr<TraceSink> writer_;
  bool renamed_ = false;
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
  std::string temp_path = path + ".tmp";
  auto file = std::make_unique<std::ofstream>(temp_path, std::ios::binary | std::ios::trunc);
  if (!*file) {
    return sim::Status::IoError(path + ": cannot create " + temp_path + ": " +
                                std::strerror(errno));
  }
  return std::unique_ptr<TraceSink>(
      std::make_unique<FileTraceSink>(path, std::move(temp_path), std::move(file), format));
}

}  // namespace podsim::traces
