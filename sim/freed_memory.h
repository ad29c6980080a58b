// How the process's allocator treats freed memory: kept for reuse, not handed back to the
// kernel.
//
// Why: podsim builds and drops many short-lived structures of a few megabytes (an engine's event
// buckets, a flow model, a sweep candidate's schedule). glibc serves blocks of 128 KiB and more
// (a threshold it raises as such blocks are freed) with fresh mmaps and unmaps them on free, and
// trims the heap's freed top past 128 KiB, so each new structure faults its pages in again. On
// the paravirtualized machines podsim is measured on a page fault costs ~16 us: the engine
// benchmark (bench/engine_bench.cc, 16k pending) took 1,000 faults per engine and ran at
// 19-22 M events/s, and at 31-32 M with freed memory kept (2026-12-06, 18,763 -> 1,787 faults).
//
// KeepFreedMemory() serves blocks of up to 32 MiB (glibc's largest mmap threshold) from the heap
// and keeps up to 256 MiB of freed memory at its top. Peak memory is the same or a little more
// (the README's performance section states it with this policy); what is freed after the peak
// stays mapped until the process ends. A no-op on other C libraries. Call once, at the start of
// main, before any thread starts.

#ifndef PODSIM_SIM_FREED_MEMORY_H_
#define PODSIM_SIM_FREED_MEMORY_H_

namespace podsim::sim {

void KeepFreedMemory();

}  // namespace podsim::sim

#endif  // PODSIM_SIM_FREED_MEMORY_H_
