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
// systems) from the heap and keeps up to 256 MiB of freed memory at the main heap's top, beyond
// the huge-page reserve below. A worker
// thread's arena is a heap of up to 64 MiB that keeps its freed top too, but further heaps it
// needs are still unmapped once empty. Peak memory stays about the same (the README's performance
// section states it with this policy); memory freed after the peak stays mapped until the process
// ends. Where glibc refuses the threshold (32-bit systems, huge-page tunables) nothing is changed;
// a no-op on other C libraries.
//
// Huge pages. It also grows the main heap by 512 MiB of address space at once and advises
// transparent huge pages on it (madvise(MADV_HUGEPAGE); nothing is touched, so nothing is
// resident until used): on kernels that give huge pages only on advice (the "madvise" mode, as
// on the machines measured) the heap's first 512 MiB then fault in 2 MiB at a time, not 4 KiB.
// On 2026-12-06, alternated three and two times: `podsim topology ring:1048576` 0.26-0.86 s
// against 1.00-1.40 s, the h100:16384 1 GiB all-reduce 2.16-2.29 s against 2.38-2.43 s, the
// default 405B step on h100:16384 0.73-0.86 s against 1.30-1.32 s; peak memory a few MB more
// (whole 2 MiB pages), the same output. Skipped under an address-space or data limit (the fuzzing
// harness's caps) and under strict overcommit accounting, where untouched address space counts.
//
// Call once, at the start of main, before any thread starts.

#ifndef PODSIM_SIM_FREED_MEMORY_H_
#define PODSIM_SIM_FREED_MEMORY_H_

namespace podsim::sim {

void KeepFreedMemory();

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FREED_MEMORY_H_
