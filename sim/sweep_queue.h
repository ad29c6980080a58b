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
//   Pop         O(log4 n)   sift down, three comparisons a level, one branch
//
// Pop reads a node's four children without a bounds check (kPad sentinel entries, after every
// real key, always follow the last one), picks the smallest with selects, and is out of line
// (inlined, the compiler spilled the sweep's registers around it). On BM_SharedTorus a pop went
// 2.9 levels and cost about four mispredicted branches before (callgrind: 26% of the run's, the
// pop 15.8% of the time); 13.8-15.3 k completions/s before against 15.2-16.0 k after,
// alternated.
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
  SweepQueue() = default;
  // Not moved or copied: a moved-from queue would keep its size without its entries.
  SweepQueue(const SweepQueue&) = delete;
  SweepQueue& operator=(const SweepQueue&) = delete;

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void clear() {
    size_ = 0;
    entries_.assign(kPad, kSentinel);
  }

  // REQUIRES: level >= 0 and not NaN (the flow model's levels are rates and shares).
  void Push(double level, uint32_t kind, uint32_t id) {
    const Entry entry{std::bit_cast<uint64_t>(level + 0.0),
                      (static_cast<uint64_t>(kind) << 32) | static_cast<uint64_t>(id)};
    if (entries_.size() < size_ + 1 + kPad) entries_.resize(size_ + 1 + kPad, kSentinel);
    size_t hole = size_++;
    while (hole > 0) {  // Sift up: ~1 level on average; its branch predicts well.
      const size_t parent = (hole - 1) / kArity;
      if (!Less(entry, entries_[parent])) break;
      entries_[hole] = entries_[parent];
      hole = parent;
    }
    entries_[hole] = entry;
  }

  // Removes and returns the smallest event. REQUIRES: !empty().
  [[gnu::noinline]] SweepEvent Pop() {
    const Entry top = entries_[0];
    const size_t n = --size_;
    const Entry last = entries_[n];
    entries_[n] = kSentinel;
    if (n == 0) return Event(top);  // Every entry a sentinel again.
    size_t hole = 0;
    for (;;) {
      const size_t first = hole * kArity + 1;
      if (first >= n) break;
      const Entry* c = &entries_[first];  // c[0..3]: children or sentinels.
      const size_t m01 = static_cast<size_t>(Less(c[1], c[0]));
      const size_t m23 = 2 + static_cast<size_t>(Less(c[3], c[2]));
      const size_t pick = Less(c[m23], c[m01]);  // 0 or 1.
      const size_t best = m01 ^ ((m01 ^ m23) & (0 - pick));
      if (!Less(c[best], last)) break;  // The one branch left: taken ~once a pop.
      entries_[hole] = c[best];
      hole = first + best;
    }
    entries_[hole] = last;
    return Event(top);
  }

 private:
  static constexpr size_t kArity = 4;
  static constexpr size_t kPad = kArity;
  struct alignas(16) Entry {
    uint64_t level;    // The level's bits.
    uint64_t kind_id;  // kind << 32 | id.
  };
  static constexpr Entry kSentinel{UINT64_MAX, UINT64_MAX};
  static SweepEvent Event(const Entry& entry) {
    return SweepEvent{std::bit_cast<double>(entry.level),
                      static_cast<uint32_t>(entry.kind_id >> 32),
                      static_cast<uint32_t>(entry.kind_id)};
  }
  // Branch-free: the compiler emits cmp/sbb/setb for the 128-bit compare.
  static bool Less(const Entry& a, const Entry& b) {
    const unsigned __int128 x = (static_cast<unsigned __int128>(a.level) << 64) | a.kind_id;
    const unsigned __int128 y = (static_cast<unsigned __int128>(b.level) << 64) | b.kind_id;
    return x < y;
  }
  size_t size_ = 0;
  std::vector<Entry> entries_ = std::vector<Entry>(kPad, kSentinel);
};

}  // namespace podsim::sim

#endif  // PODSIM_SIM_SWEEP_QUEUE_H_
