// TraceSink: what the simulation side calls to record a trace, in simulated time.
//
// A trace is a set of processes (one per chip, plus a "system" process for pod-wide tracks), each
// holding tracks: slice tracks (a compute stream, a communication stream, one link direction) and
// counter tracks (HBM bytes, link utilisation). Slices nest per track, in LIFO order. A flow
// connects a source slice to a destination slice (a send to its receive, a producer op to its
// consumer). PerfettoWriter and ChromeJsonWriter implement this interface; OpenTraceFile
// (trace_file.h) picks one from a file name.
//
// Contract (violations are programmer errors and abort via PODSIM_CHECK, in every writer, because
// a broken trace is only noticed much later in a viewer):
//  1. A process or track is declared (AddProcess/AddTrack/AddCounterTrack) before any event uses
//     it; ids come only from this sink. Names and categories are non-empty. Counter track names are
//     unique within their process (Chrome JSON keys counters by (pid, name)).
//  2. BeginSlice/EndSlice are balanced per track; EndSlice closes the innermost open slice.
//  3. Time never decreases per track (it may across tracks). Times are >= 0.
//  4. Slices and instants go on slice tracks, counter values on counter tracks.
//  5. A flow id appears in `flows_out` of one slice and later in `flows_in` of one slice (not
//     instants) of the *same category*: Chrome JSON v1 flows are matched by (cat, name, id) and
//     bound to slices by category, so both ends must agree. An id is free again once terminated.
//     Ids are < 2^53 so they survive JSON readers that use doubles.
//  6. Close() is called once, after every slice has ended and every flow has both ends; no call
//     follows it.
//
// Determinism: a sink's output depends only on the sequence of calls; the same calls produce the
// same bytes. Nothing reads the wall clock.
//
// Thread safety: none; a sink belongs to one single-threaded engine.

#ifndef PODSIM_TRACES_TRACE_SINK_H_
#define PODSIM_TRACES_TRACE_SINK_H_

#include <compare>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "sim/status.h"
#include "sim/time.h"

namespace podsim::traces {

// Handles returned by the Add* methods; valid only for the sink that returned them.
struct ProcessId {
  uint32_t index = 0;
  friend auto operator<=>(const ProcessId&, const ProcessId&) = default;
};
struct TrackId {
  uint32_t index = 0;
  friend auto operator<=>(const TrackId&, const TrackId&) = default;
};

// The unit of a counter track's values.
enum class CounterUnit {
  kCount,
  kBytes,           // e.g. HBM bytes in use.
  kBytesPerSecond,  // e.g. a link direction's carried rate.
  kFraction,        // e.g. a link direction's utilisation, 0..1.
};

// One typed argument of a slice or instant (FLOPs, bytes, shape, mesh axis, algorithm). The views
// need to live only for the duration of the call that receives them.
struct Arg {
  using Value = std::variant<int64_t, uint64_t, double, bool, std::string_view>;

  static Arg Int(std::string_view key, int64_t value) { return {key, Value(value)}; }
  static Arg Uint(std::string_view key, uint64_t value) { return {key, Value(value)}; }
  // REQUIRES: value is finite (JSON has no NaN or infinity).
  static Arg Double(std::string_view key, double value) { return {key, Value(value)}; }
  static Arg Bool(std::string_view key, bool value) { return {key, Value(value)}; }
  static Arg String(std::string_view key, std::string_view value) { return {key, Value(value)}; }

  std::string_view key;  // Non-empty and unique within one event.
  Value value;
};

// What a slice or instant carries. Designed for designated initializers:
//   sink.BeginSlice(track, t, {.name = "matmul", .category = "compute", .args = args});
struct EventSpec {
  std::string_view name = {};
  std::string_view category = {};
  std::span<const Arg> args = {};
  std::span<const uint64_t> flows_out = {};  // Flows this slice starts (slices only).
  std::span<const uint64_t> flows_in = {};   // Flows this slice terminates (slices only).
};

class TraceSink {
 public:
  TraceSink() = default;
  TraceSink(const TraceSink&) = delete;
  TraceSink& operator=(const TraceSink&) = delete;
  virtual ~TraceSink() = default;

  // Declares a process. Viewers that honour a sort index list processes by ascending
  // `sort_index` (Chrome JSON process_sort_index, Perfetto ProcessDescriptor.legacy_sort_index;
  // the Perfetto UI reads both as process_sort_index_hint: docs/reference/traces.md 1a, 1b).
  // Equal indices leave the order to the viewer. The DevTools Performance panel ignores sort
  // indices and lists the busiest tracks first (docs/reference/traces.md 1c item 3).
  virtual ProcessId AddProcess(std::string_view name, int32_t sort_index) = 0;
  // The same, with sort_index = the number of processes this overload declared before: processes
  // are listed in declaration order. Implementations add `using TraceSink::AddProcess;`.
  ProcessId AddProcess(std::string_view name) { return AddProcess(name, next_sort_index_++); }
  // Declares a slice track in `process`; listed in declaration order within the process.
  virtual TrackId AddTrack(ProcessId process, std::string_view name) = 0;
  // Declares a counter track in `process`.
  virtual TrackId AddCounterTrack(ProcessId process, std::string_view name, CounterUnit unit) = 0;

  // Opens a slice on `track` at `time`; it nests inside the slice open there, if any.
  virtual void BeginSlice(TrackId track, sim::Time time, const EventSpec& event) = 0;
  // Closes the innermost open slice on `track`. REQUIRES: one is open.
  virtual void EndSlice(TrackId track, sim::Time time) = 0;
  // A zero-duration event on a slice track. REQUIRES: event has no flows.
  virtual void Instant(TrackId track, sim::Time time, const EventSpec& event) = 0;
  // Sets the value of a counter track from `time` on. REQUIRES: value is finite.
  virtual void SetCounter(TrackId track, sim::Time time, double value) = 0;

  // Finishes the trace (trailers, flush). Returns IoError if anything could not be written.
  virtual sim::Status Close() = 0;

 private:
  int32_t next_sort_index_ = 0;
};

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_TRACE_SINK_H_
