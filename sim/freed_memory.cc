#include "sim/freed_memory.h"

#include <cstdint>
#include <cstdlib>  // Defines __GLIBC__ (through features.h) on glibc.
#include <fstream>
#include <initializer_list>

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace podsim::sim {

#if defined(__GLIBC__)
namespace {

constexpr size_t kHugePage = size_t{2} << 20;         // x86-64's and arm64's (4 KiB base pages).
constexpr size_t kHeapReserve = size_t{512} << 20;    // The huge-page part of the main heap.
constexpr size_t kKeptFreed = size_t{256} << 20;      // Freed memory kept beyond it.
constexpr size_t kDefaultTopPad = size_t{128} << 10;  // glibc's DEFAULT_TOP_PAD.

// Whether the process may map kHeapReserve more without nearing a limit: an address-space or
// data cap a caller set (a fuzzing harness's), or strict overcommit accounting (mode 2), under
// which untouched address space counts as committed. With one, the reservation is skipped.
bool Unlimited() {
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY) return false;
  }
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  return overcommit >> mode && mode != 2;
}

// Grows the main heap by kHeapReserve of address space at once (glibc extends it by a block and
// M_TOP_PAD) and advises transparent huge pages on it. Nothing is touched, so nothing is
// resident until used; where the kernel has huge pages only on advice (the "madvise" mode),
// the heap's pages then fault in 2 MiB at a time instead of 4 KiB.
void ReserveHugePageHeap() {
  if (!Unlimited() || mallopt(M_TOP_PAD, static_cast<int>(kHeapReserve)) != 1) return;
  // Larger than what is left of the initial heap, below the mmap threshold: served from the heap.
  void* block = malloc(size_t{1} << 20);
  const uintptr_t start = reinterpret_cast<uintptr_t>(block);
  const uintptr_t end = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t first = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = end & ~(kHugePage - 1);
  // An error (a kernel without huge pages) leaves the heap as it was.
  if (start != 0 && end != static_cast<uintptr_t>(-1) && last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
  free(block);
  mallopt(M_TOP_PAD, static_cast<int>(kDefaultTopPad));
}

}  // namespace
#endif

void KeepFreedMemory() {
#if defined(__GLIBC__)
  // mallopt(3): M_MMAP_THRESHOLD may be at most half the largest arena heap, 32 MiB on 64-bit
  // systems. Setting either threshold turns off glibc's adjustment of both, so the trim
  // threshold is set only once the mmap threshold took. The heap's top is trimmed only past the
  // unused reserve and the freed memory kept.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return;
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapReserve + kKeptFreed));
  ReserveHugePageHeap();
#endif
}

}  // namespace podsim::sim
