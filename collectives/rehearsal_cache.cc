#include "collectives/rehearsal_cache.h"

namespace podsim::collectives {

std::optional<RehearsalRecord> RehearsalCache::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(key);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

void RehearsalCache::Insert(const std::string& key, const RehearsalRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, fresh] = records_.emplace(key, record);
  if (fresh) stored_.push_back(it);
}

std::vector<std::pair<std::string, RehearsalRecord>> RehearsalCache::RecordsSince(
    size_t* cursor) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, RehearsalRecord>> out;
  for (size_t i = *cursor; i < stored_.size(); ++i) out.emplace_back(*stored_[i]);
  *cursor = stored_.size();
  return out;
}

size_t RehearsalCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

}  // namespace podsim::collectives
