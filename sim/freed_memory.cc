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

constexpr size_t kHeapReserve = size_t{512} << 20;    // The huge-page part of the main heap.
constexpr size_t kKeptFreed = size_t{256} << 20;      // Freed memory kept beyond it.
constexpr size_t kDefaultTopPad = size_t{128} << 10;  // glibc's DEFAULT_TOP_PAD.

// Whether the process may take kHeapReserve more address space without nearing a limit: an
// address-space or data cap a caller set (a fuzzing harness's), or strict overcommit accounting
// (mode 2), under which untouched address space counts as committed.
bool MayReserveAddressSpace() {
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur != RLIM_INFINITY) return false;
  }
  std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
  int mode = 0;
  return overcommit >> mode && mode != 2;
}

// The kernel's transparent huge page size, 0 without transparent huge pages.
size_t HugePageBytes() {
  std::ifstream size("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
  size_t bytes = 0;
  return size >> bytes && bytes > 0 && (bytes & (bytes - 1)) == 0 ? bytes : 0;
}

// Grows the main heap's break by about kHeapReserve at once (glibc extends it by a block and
// M_TOP_PAD) and advises transparent huge pages on what the break added. Only the top chunk's
// header is written there (one small page), so almost nothing is resident until used.
// Nothing is advised unless the break really moved by the reserve (glibc found room in the
// heap, brk failed and glibc mapped the block elsewhere, or another allocator answers malloc).
void ReserveHugePageHeap() {
  const size_t huge = HugePageBytes();
  if (huge == 0 || !MayReserveAddressSpace()) return;
  const uintptr_t before = reinterpret_cast<uintptr_t>(sbrk(0));
  if (before == static_cast<uintptr_t>(-1) ||
      mallopt(M_TOP_PAD, static_cast<int>(kHeapReserve)) != 1) {
    return;
  }
  // Larger than what is left of the initial heap, below the mmap threshold: served from the heap.
  void* block = malloc(size_t{1} << 20);
  const uintptr_t start = reinterpret_cast<uintptr_t>(block);
  const uintptr_t end = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t first = (before + huge - 1) & ~(huge - 1);
  const uintptr_t last = end & ~(huge - 1);
  if (start != 0 && start < before && end != static_cast<uintptr_t>(-1) && end > before &&
      end - before >= kHeapReserve && last > first) {
    // An error (huge pages turned off) leaves the heap as it was.
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
  // threshold is set only once the mmap threshold took. A free that leaves the heap's top at the
  // trim threshold or more trims it to 128 KiB (the reserve's huge-page advice then goes with
  // it): the threshold lies past the unused reserve and kKeptFreed.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return;
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapReserve + kKeptFreed));
  ReserveHugePageHeap();
#endif
}

}  // namespace podsim::sim
