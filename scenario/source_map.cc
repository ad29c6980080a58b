#include "scenario/source_map.h"

namespace podsim::scenario {

namespace {

// The path one level up: "a.b[2]" -> "a.b", "a.b" -> "a", "a" -> "".
std::string_view Parent(std::string_view path) {
  if (!path.empty() && path.back() == ']') {
    const size_t open = path.rfind('[');
    return open == std::string_view::npos ? std::string_view() : path.substr(0, open);
  }
  const size_t dot = path.rfind('.');
  return dot == std::string_view::npos ? std::string_view() : path.substr(0, dot);
}

}  // namespace

void SourceMap::Add(std::string path, int line, int column) {
  positions_.emplace(std::move(path), Position{line, column});
}

std::string SourceMap::Where(std::string_view path) const {
  if (filename_.empty()) return "";
  for (std::string_view p = path; !p.empty(); p = Parent(p)) {
    auto it = positions_.find(p);
    if (it != positions_.end()) {
      return filename_ + ":" + std::to_string(it->second.line) + ":" +
             std::to_string(it->second.column);
    }
  }
  return filename_;
}

sim::Status SourceMap::Annotate(const sim::Status& status, std::string_view path) const {
  if (status.ok()) return status;
  const std::string where = Where(path);
  std::string context = where;
  if (!path.empty()) context += (context.empty() ? "" : ": ") + std::string(path);
  return context.empty() ? status : status.WithContext(context);
}

}  // namespace podsim::scenario
