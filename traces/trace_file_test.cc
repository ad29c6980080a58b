#include "traces/trace_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "traces/chrome_json_writer.h"
#include "traces/perfetto_writer.h"
#include "traces/trace_lint.h"
#include "traces/trace_test_util.h"

namespace podsim::traces {
namespace {

namespace fs = std::filesystem;

// Whether a temporary of `path` (sim::AtomicFile's ".<name>.XXXXXX" beside it) exists.
bool HasTemporary(const std::string& path) {
  const fs::path target(path);
  std::string prefix = target.filename().string();
  prefix.insert(prefix.begin(), '.');
  prefix.push_back('.');
  for (const auto& entry : fs::directory_iterator(target.parent_path())) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST(TraceFormatFromPathTest, ChoosesByExtension) {
  EXPECT_EQ(*TraceFormatFromPath("out/step.pftrace"), TraceFormat::kPerfetto);
  EXPECT_EQ(*TraceFormatFromPath("step.perfetto-trace"), TraceFormat::kPerfetto);
  EXPECT_EQ(*TraceFormatFromPath("step.json"), TraceFormat::kChromeJson);
}

TEST(TraceFormatFromPathTest, RejectsOtherNamesClearly) {
  sim::StatusOr<TraceFormat> format = TraceFormatFromPath("step.trace");
  ASSERT_FALSE(format.ok());
  EXPECT_EQ(format.status().code(), sim::Status::Code::kInvalidArgument);
  EXPECT_EQ(format.status().message(),
            "step.trace: unknown trace format; use a name ending in .pftrace or .perfetto-trace "
            "(Perfetto) or .json (Chrome JSON)");
}

// The file holds exactly what the stream writer produces, and appears only at Close.
template <typename Writer>
void ExpectFileMatchesStream(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  fs::remove(path);
  sim::StatusOr<std::unique_ptr<TraceSink>> sink = OpenTraceFile(path);
  ASSERT_TRUE(sink.ok()) << sink.status();
  testing::WriteSyntheticScenario(sink->get());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(HasTemporary(path));
  ASSERT_EQ((*sink)->Close(), sim::Status::Ok());
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(HasTemporary(path));

  std::ostringstream expected;
  Writer writer(&expected);
  testing::WriteSyntheticScenario(&writer);
  ASSERT_TRUE(writer.Close().ok());
  EXPECT_EQ(testing::ReadFileOrDie(path), expected.str());
  sink->reset();
  EXPECT_TRUE(fs::exists(path));
  fs::remove(path);
}

TEST(OpenTraceFileTest, WritesPerfettoAtomically) {
  ExpectFileMatchesStream<PerfettoWriter>("podsim_file_test.pftrace");
}

TEST(OpenTraceFileTest, WritesChromeJsonAtomically) {
  ExpectFileMatchesStream<ChromeJsonWriter>("podsim_file_test.json");
  std::string path = ::testing::TempDir() + "/podsim_file_lint.json";
  auto sink = OpenTraceFile(path);
  ASSERT_TRUE(sink.ok());
  testing::WriteSyntheticScenario(sink->get());
  ASSERT_TRUE((*sink)->Close().ok());
  EXPECT_TRUE(LintChromeJson(testing::ReadFileOrDie(path)).ok());
  fs::remove(path);
}

TEST(OpenTraceFileTest, AFailedRunLeavesNothing) {
  std::string path = ::testing::TempDir() + "/podsim_file_failed.pftrace";
  fs::remove(path);
  {
    auto sink = OpenTraceFile(path);
    ASSERT_TRUE(sink.ok());
    TrackId t = (*sink)->AddTrack((*sink)->AddProcess("chip0"), "compute");
    (*sink)->BeginSlice(t, sim::Time::Zero(), {.name = "mm", .category = "compute"});
    // The run fails here: the sink is destroyed without Close.
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(HasTemporary(path));
}

TEST(OpenTraceFileTest, ReportsUnwritableDirectory) {
  auto sink = OpenTraceFile("/nonexistent-podsim-dir/x.json");
  ASSERT_FALSE(sink.ok());
  EXPECT_EQ(sink.status().code(), sim::Status::Code::kIoError);
  EXPECT_EQ(sink.status().message(),
            "/nonexistent-podsim-dir/x.json: cannot create a file in /nonexistent-podsim-dir/: "
            "No such file or directory");
}

}  // namespace
}  // namespace podsim::traces
