#include "sim/sweep_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

namespace podsim::sim {
namespace {

using Key = std::tuple<double, uint32_t, uint32_t>;

// Pops every event of a random interleaving of pushes and pops in the order a sorted
// reference (std::priority_queue on (level, kind, id)) gives, levels drawn from few values so
// that kinds and ids decide many ties, and including 0 and -0.0.
TEST(SweepQueueTest, PopsInLevelKindIdOrder) {
  std::mt19937_64 rng(7);
  const std::vector<double> levels = {0.0, -0.0, 1e-300, 0.5, 1.0, 1.0 + 1e-15, 3e9, 4.5e10};
  for (int round = 0; round < 200; ++round) {
    SweepQueue queue;
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> reference;
    for (int step = 0; step < 300; ++step) {
      if (reference.empty() || rng() % 3 != 0) {
        const double level = levels[rng() % levels.size()];
        const auto kind = static_cast<uint32_t>(rng() % 4);
        const auto id = static_cast<uint32_t>(rng() % 6);
        queue.Push(level, kind, id);
        reference.emplace(level + 0.0, kind, id);
      } else {
        const SweepEvent event = queue.Pop();
        const auto [level, kind, id] = reference.top();
        reference.pop();
        ASSERT_EQ(event.level, level) << "round " << round << " step " << step;
        ASSERT_EQ(event.kind, kind);
        ASSERT_EQ(event.id, id);
      }
      ASSERT_EQ(queue.size(), reference.size());
    }
    while (!reference.empty()) {
      const SweepEvent event = queue.Pop();
      ASSERT_EQ(Key(event.level, event.kind, event.id), reference.top());
      reference.pop();
    }
    EXPECT_TRUE(queue.empty());
  }
}

}  // namespace
}  // namespace podsim::sim
