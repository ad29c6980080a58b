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
  positions_.emplace(std::move(path), Position{line, column, false, ""});
}

void SourceMap::AddFlag(std::string path, std::string flag) {
  positions_.insert_or_assign(std::move(path), Position{0, 0, true, std::move(flag)});
}

const SourceMap::Position* SourceMap::Find(std::string_view path) const {
  for (std::string_view p = path; !p.empty(); p = Parent(p)) {
    auto it = positions_.find(p);
    if (it != positions_.end()) return &it->second;
  }
  return nullptr;
}

std::string SourceMap::Where(std::string_view path) const {
  const Position* at = Find(path);
  if (at != nullptr && at->is_flag) return at->flag;
  if (filename_.empty()) return "";
  if (at == nullptr) return filename_;
  return filename_ + ":" + std::to_string(at->line) + ":" + std::to_string(at->column);
}

sim::Status SourceMap::Annotate(const sim::Status& status, std::string_view path) const {
  if (status.ok()) return status;
  if (const Position* at = Find(path); at != nullptr && at->is_flag) {
    return at->flag.empty() ? status : status.WithContext(at->flag);
  }
  const std::string where = Where(path);
  std::string context = where;
  if (!path.empty()) context += (context.empty() ? "" : ": ") + std::string(path);
  return context.empty() ? status : status.WithContext(context);
}

}  // namespace podsim::scenario
