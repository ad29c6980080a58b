#include "sim/atomic_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace podsim::sim {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("podsim_atomic_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string Read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, TargetAppearsOnlyAtCommit) {
  const std::string path = (dir_ / "trace.json").string();
  StatusOr<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
  ASSERT_TRUE(file.ok()) << file.status();
  (*file)->stream() << "{}";
  EXPECT_FALSE(fs::exists(path));
  ASSERT_EQ(Entries().size(), 1u);
  EXPECT_EQ(Entries()[0].rfind(".trace.json.", 0), 0u) << Entries()[0];
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(Read(path), "{}");
  EXPECT_EQ(Entries(), std::vector<std::string>{"trace.json"});
}

TEST_F(AtomicFileTest, UncommittedFileLeavesNothing) {
  const std::string path = (dir_ / "step.pb").string();
  {
    StatusOr<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
    ASSERT_TRUE(file.ok());
    (*file)->stream() << "half";
  }
  EXPECT_TRUE(Entries().empty());
}

// issue 16 D6: writers of one target never share a temporary; the survivor is one whole file.
TEST_F(AtomicFileTest, ConcurrentWritersOfOneTargetEachLeaveAWholeFile) {
  const std::string path = (dir_ / "same.txt").string();
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      const std::string content(100000, static_cast<char>('a' + w));
      ASSERT_TRUE(WriteFileAtomically(path, content).ok());
    });
  }
  for (std::thread& t : writers) t.join();
  const std::string survivor = Read(path);
  ASSERT_EQ(survivor.size(), 100000u);
  EXPECT_EQ(survivor.find_first_not_of(survivor[0]), std::string::npos);
  EXPECT_EQ(Entries(), std::vector<std::string>{"same.txt"});
}

TEST_F(AtomicFileTest, UnwritableFolderIsAnIoErrorNamingTheTarget) {
  const std::string path = (dir_ / "missing" / "x.json").string();
  StatusOr<std::unique_ptr<AtomicFile>> file = AtomicFile::Create(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), Status::Code::kIoError);
  EXPECT_EQ(file.status().message().rfind(path + ": cannot create a file in ", 0), 0u)
      << file.status();
}

}  // namespace
}  // namespace podsim::sim
