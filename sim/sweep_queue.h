// The flow model's sweep events (flow_model.h, "Recomputation") in order: by level, then kind,
// then id, smallest first.
//
// Structure: a 4-ary min-heap whose entries are two 64-bit words compared as one 128-bit
// number: the level's bits (a non-negative double's bits order as its value does) and the kind
// above the id. A sift is half as deep as a binary heap's, and a comparison is one 128-bit
// integer compare without a data-dependent branch (std::push_heap/pop_heap on a binary heap of
// (double, kind, id) took about a third of a dense reallocation, most of it in its
// comparisons' branches).
//
//   operation   time        notes
//   Push        O(log4 n)   sift up
//   Pop         O(log4 n)   sift down, three comparisons a level
//
// Thread safety: none.

#ifndef PODSIM_SIM_SWEEP_QUEUE_H_
#define PODSIM_SIM_SWEEP_QUEUE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace podsim::sim {

struct SweepEvent {
  double level;
  uint32_t kind;
  uint32_t id;
};

class SweepQueue {
 public:
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }

  // REQUIRES: level >= 0 and not NaN (the flow model's levels are rates and shares).
  void Push(double level, uint32_t kind, uint32_t id) {
    Entry entry{std::bit_cast<uint64_t>(level + 0.0),
                (static_cast<uint64_t>(kind) << 32) | static_cast<uint64_t>(id)};
    size_t hole = entries_.size();
    entries_.push_back(entry);
    while (hole > 0) {
      const size_t parent = (hole - 1) / kArity;
      if (!Less(entry, entries_[parent])) break;
      entries_[hole] = entries_[parent];
      hole = parent;
    }
    entries_[hole] = entry;
  }

  // Removes and returns the smallest event. REQUIRES: !empty().
  SweepEvent Pop() {
    const Entry top = entries_.front();
    const Entry last = entries_.back();
    entries_.pop_back();
    const size_t n = entries_.size();
    if (n > 0) {
      size_t hole = 0;
      for (;;) {
        const size_t first = hole * kArity + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t end = first + kArity < n ? first + kArity : n;
        for (size_t c = first + 1; c < end; ++c)
          best = Less(entries_[c], entries_[best]) ? c : best;
        if (!Less(entries_[best], last)) break;
        entries_[hole] = entries_[best];
        hole = best;
      }
      entries_[hole] = last;
    }
    return SweepEvent{std::bit_cast<double>(top.level), static_cast<uint32_t>(top.kind_id >> 32),
                      static_cast<uint32_t>(top.kind_id)};
  }

 private:
  static constexpr size_t kArity = 4;
  struct alignas(16) Entry {
    uint64_t level;    // The level's bits.
    uint64_t kind_id;  // kind << 32 | id.
  };
  static bool Less(const Entry& a, const Entry& b) {
    const unsigned __int128 x = (static_cast<unsigned __int128>(a.level) << 64) | a.kind_id;
    const unsigned __int128 y = (static_cast<unsigned __int128>(b.level) << 64) | b.kind_id;
    return x < y;
  }
  std::vector<Entry> entries_;
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_SWEEP_QUEUE_H_
