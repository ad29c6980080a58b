#include "sim/freed_memory.h"

#if __has_include(<malloc.h>)
#include <malloc.h>  // Defines __GLIBC__ (through features.h) on glibc.
#endif

namespace podsim::sim {

void KeepFreedMemory() {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
  // mallopt(3): M_MMAP_THRESHOLD at most HEAP_MAX_SIZE / 2, 32 MiB on 64-bit systems. Setting
  // either turns off glibc's dynamic adjustment of both.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace podsim::sim
