// How the process's allocator treats freed memory: kept for reuse, not handed back to the
// kernel.
//
// Why: podsim builds and drops many short-lived structures of a few megabytes (an engine's event
// buckets, a flow model, a sweep candidate's schedule). By default glibc serves a block of 128 KiB
// or more with a fresh mmap and unmaps it on free (raising that threshold to the largest block
// freed so far, up to 32 MiB: a growing vector's next, larger block is still mapped afresh), and
// trims the main heap's freed top past a threshold that follows it. Each new structure then
// faults its pages in again, which is dear on the paravirtualized machines podsim is measured on:
// the engine benchmark (bench/engine_bench.cc, 16k pending, a new engine per iteration) took
// 18,763 page faults a run against 1,787 with freed memory kept, and ran at 19.5-22.0 M events/s
// against 28.7-30.1 M (2026-12-06, alternated).
//
// KeepFreedMemory() serves blocks of up to 32 MiB (glibc's largest mmap threshold on 64-bit
// systems) from the heap and trims the main heap's top only once more than 256 MiB beyond the
// huge-page reserve below is free there. A worker thread's arena is a heap of up to 64 MiB that
// keeps its freed top too, but further heaps it needs are still unmapped once empty. Peak memory
// stays about the same (the README's performance section states it with this policy); memory freed
// after the peak stays mapped until the process ends. Where glibc refuses the threshold (32-bit
// systems, huge-page tunables) nothing is changed; a no-op on other C libraries.
//
// Huge pages. It also grows the main heap's break by about 512 MiB of address space at once and
// advises transparent huge pages on it (madvise(MADV_HUGEPAGE)), which stays untouched, so not
// resident, until used: on kernels that give huge pages only on advice (the "madvise" mode, as
// on the machines measured, where each 4 KiB fault costs about ten microseconds) the heap's next
// 512 MiB then fault in 2 MiB at a time (README, "Performance"). Peak memory grows by a few MB
// (whole huge pages); with the kernel's default defrag setting a fault there may wait for
// compaction. Skipped under an address-space or data limit (the fuzzing harness's caps), under
// strict overcommit accounting, where untouched address space counts, without transparent huge
// pages, and where the break did not move by the reserve. glibc 2.35's
// GLIBC_TUNABLES=glibc.malloc.hugetlb=1 advises every heap extension, but only when set before
// the process starts.
//
// Call once, at the start of main, before any thread starts.

#ifndef PODSIM_SIM_FREED_MEMORY_H_
#define PODSIM_SIM_FREED_MEMORY_H_

namespace podsim::sim {

void KeepFreedMemory();

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FREED_MEMORY_H_
