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
  records_.emplace(key, record);
}

size_t RehearsalCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

}  // namespace podsim::collectives
