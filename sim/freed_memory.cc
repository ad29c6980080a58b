#include "sim/freed_memory.h"

#include <cstdlib>  // Defines __GLIBC__ (through features.h) on glibc.

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace podsim::sim {

void KeepFreedMemory() {
#if defined(__GLIBC__)
  // mallopt(3): M_MMAP_THRESHOLD may be at most half the largest arena heap, 32 MiB on 64-bit
  // systems. Setting either threshold turns off glibc's adjustment of both, so the trim
  // threshold is set only once the mmap threshold took.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1) mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace podsim::sim
