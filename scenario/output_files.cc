#include "scenario/output_files.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>

namespace podsim::scenario {

namespace {

namespace fs = std::filesystem;

// Symbolic links followed in a row at most, as the kernel's limit (MAXSYMLINKS, 40).
constexpr int kMaxLinks = 40;

// The file `text` names (SameOutputFile's resolution), or nothing where it cannot be resolved.
std::optional<fs::path> Resolved(const std::string& text) {
  std::error_code error;
  fs::path path = fs::absolute(text, error);
  if (error) return std::nullopt;
  for (int links = 0; links < kMaxLinks && fs::is_symlink(path, error); ++links) {
    const fs::path target = fs::read_symlink(path, error);
    if (error) return std::nullopt;
    path = target.is_absolute() ? target : path.parent_path() / target;
  }
  path = fs::weakly_canonical(path, error);
  if (error) return std::nullopt;
  return path.lexically_normal();
}

// The file `text` names without following a link in its last place: the name a write replaces.
std::optional<fs::path> Named(const std::string& text) {
  std::error_code error;
  const fs::path path = fs::absolute(text, error);
  if (error) return std::nullopt;
  const fs::path folder = fs::weakly_canonical(path.parent_path(), error);
  if (error) return std::nullopt;
  return (folder / path.filename()).lexically_normal();
}

}  // namespace

bool SameOutputFile(const std::string& a, const std::string& b) {
  const std::optional<fs::path> pa = Resolved(a), pb = Resolved(b);
  if (!pa || !pb) return a == b;
  return *pa == *pb;
}

bool IsChakraOutput(const std::string& prefix, const std::string& path) {
  if (SameOutputFile(prefix + ".comm_groups.json", path)) return true;
  // The rank files' names, PREFIX.<rank>.et, with the folders resolved as the path's are.
  const std::optional<fs::path> resolved = Resolved(path);
  const std::optional<fs::path> first = Named(prefix + ".0.et");
  if (!resolved || !first) return false;
  constexpr std::string_view kEt = ".et";
  const std::string name = resolved->string(), rank_zero = first->string();
  const std::string stem = rank_zero.substr(0, rank_zero.size() - 1 - kEt.size());
  if (name.size() < stem.size() + kEt.size() || !name.starts_with(stem) || !name.ends_with(kEt)) {
    return false;
  }
  const std::string_view rank =
      std::string_view(name).substr(stem.size(), name.size() - stem.size() - kEt.size());
  return !rank.empty() &&
         std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string ChakraOutputCollision(const std::string& prefix, const std::string& path) {
  return "'" + path + "' is one of the Chakra trace's files (" + prefix + ".<rank>.et, " + prefix +
         ".comm_groups.json); write them apart";
}

}  // namespace podsim::scenario
