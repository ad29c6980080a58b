// Runs the podsim command line in-process for end-to-end tests: exit code, stdout and stderr.

#ifndef PODSIM_TESTS_TESTING_RUN_PODSIM_H_
#define PODSIM_TESTS_TESTING_RUN_PODSIM_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/main_command.h"

namespace podsim::testing {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

// `args` without the program name, e.g. {"train", "--system", "h100:8", ...}.
inline Outcome Podsim(std::vector<std::string> args) {
  args.insert(args.begin(), "podsim");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  const int code = cli::RunMain(static_cast<int>(argv.size()), argv.data(), out, err);
  return Outcome{code, out.str(), err.str()};
}

// `args` followed by `more`.
inline std::vector<std::string> With(std::vector<std::string> args,
                                     const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Names of the files in `dir` that start with "." (sim::AtomicFile's temporaries), sorted.
inline std::vector<std::string> HiddenFiles(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A test with a fresh directory of its own (named after the test, under the system's temporary
// directory), removed afterwards; Path(name) is a file in it.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("podsim_" +
         std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // Names in the directory that start with "." (sim::AtomicFile's temporaries), sorted.
  std::vector<std::string> Temporaries() const { return HiddenFiles(dir_); }

  std::filesystem::path dir_;
};

}  // namespace podsim::testing

#endif  // PODSIM_TESTS_TESTING_RUN_PODSIM_H_
