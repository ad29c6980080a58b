// A main() for the fuzz targets in builds without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every file named on the command line and every file of the directories named (sorted, one
// level, names starting with '.' skipped), so the seed corpus and the regressions of every target
// are ctest tests under gcc and under the ASan build (docs/fuzzing.md). A crash aborts the run,
// and the last "replay:" line on stderr names the input. Exits 1 when an argument cannot be read.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool Replay(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A copy in its own allocation, so that ASan sees reads past the end as libFuzzer would.
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int replayed = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (!std::filesystem::is_directory(arg, error)) {
      const bool read = Replay(arg);
      ok = read && ok;
      replayed += read ? 1 : 0;
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(arg, error)) {
      if (entry.is_regular_file() && !entry.path().filename().string().starts_with(".")) {
        files.push_back(entry.path());
      }
    }
    if (error) {
      std::fprintf(stderr, "replay: cannot list %s: %s\n", arg.c_str(), error.message().c_str());
      ok = false;
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const bool read = Replay(file);
      ok = read && ok;
      replayed += read ? 1 : 0;
    }
  }
  std::fprintf(stderr, "replay: %d inputs, no crash\n", replayed);
  return ok ? 0 : 1;
}
