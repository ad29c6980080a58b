// ChromeJsonWriter: a TraceSink that streams the Chrome Trace Event Format (JSON), readable by
// ui.perfetto.dev and the Chrome DevTools Performance panel.
//
// Output follows the portability rules of docs/reference/traces.md 1a, so both viewers show it:
//  - `{"traceEvents":[` is written first, then one event per line, then `]}` at Close.
//  - ts and dur are in microseconds with exactly 3 decimals (1 ns resolution: TraceNanoseconds
//    rounds ps half up), ts offset by `origin_offset` (default 1 us) so that simulated time 0 is
//    drawn, since DevTools drops ts == 0 from the trace bounds. Metadata (`M`) events carry ts 0.
//  - pid = process declaration order + 1; tid = track rank in its process + 1. Each declaration
//    writes `M` process_name/process_sort_index (the sort_index given) or
//    thread_name/thread_sort_index (the rank) at once; counter tracks get a thread too (below).
//  - Slices are complete events (`X` with dur), never `B`/`E`: DevTools pairs B/E events with one
//    stack for the whole file, so B/E of concurrent tracks interleaved in file order are dropped
//    as mismatched (seen with its trace engine, tests/trace_engine). A slice is written when it
//    ends; slices nested in an open slice of the same track wait for that outermost slice to end
//    and are then written outer first, so ts never decreases per track in file order. Instants are
//    `i` with "s":"t" (in that order too). Counters are `C` with the track name as name and one
//    series named after the unit (count, bytes, bytes_per_s, fraction), written at once; tid is
//    written but viewers key counters by (pid, name).
//  - The DevTools trace engine has no model of `C` events (no handler parses them, and its
//    Performance panel draws only thread tracks: docs/reference/traces.md 1c item 3), so each
//    counter track is also a thread of its own (thread_name = the counter's name) holding one
//    `X` slice, category "counter", per interval of constant non-zero value, named after the
//    value with its unit ("12.5 GiB", "40%") and carrying it in args. An interval is written
//    when the value changes; the last one ends at the latest time the trace reached, at Close.
//    Perfetto shows these slices beside its counter track of the same values.
//  - Flows are v1: `s` right after its source `X`, `f` with "bp":"e" right after its destination
//    `X`, both with the bound slice's cat, ts, pid and tid, named "flow". An `f` whose `s` is not
//    written yet (its source slice is still open) waits and follows the `s`: DevTools groups flow
//    events in file order and drops an `f` before its `s`.
//  - Formatting is fixed (field order, integer-only time formatting, shortest round-trip doubles),
//    so the same calls give the same bytes.
//
// Memory: O(tracks + open slices + the slices and instants nested in open slices + flows not yet
// terminated); nothing else waits.

#ifndef PODSIM_TRACES_CHROME_JSON_WRITER_H_
#define PODSIM_TRACES_CHROME_JSON_WRITER_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace_sink.h"
#include "traces/track_registry.h"

namespace podsim::traces {

class ChromeJsonWriter final : public TraceSink {
 public:
  // Writes to `*out`, which must outlive the writer and is not closed by it. The header is
  // written at construction. REQUIRES: origin_offset >= 1 us keeps every ts >= 1 us.
  explicit ChromeJsonWriter(std::ostream* out,
                            sim::Time origin_offset = sim::Time::Microseconds(1));

  using TraceSink::AddProcess;
  ProcessId AddProcess(std::string_view name, int32_t sort_index) override;
  TrackId AddTrack(ProcessId process, std::string_view name) override;
  TrackId AddCounterTrack(ProcessId process, std::string_view name, CounterUnit unit) override;
  void BeginSlice(TrackId track, sim::Time time, const EventSpec& event) override;
  void EndSlice(TrackId track, sim::Time time) override;
  void Instant(TrackId track, sim::Time time, const EventSpec& event) override;
  void SetCounter(TrackId track, sim::Time time, double value) override;
  sim::Status Close() override;

 private:
  // A slice or instant of a track with an open slice, waiting to be written.
  struct Pending {
    std::string head;  // `{"name":..,"cat":..,"ph":..,"ts":..,"pid":..,"tid":..`
    std::string tail;  // `,"args":{..}}` (instants: the "s" field too).
    int64_t begin_ns = 0;
    int64_t end_ns = -1;  // Slices: -1 while open. Instants: -2.
    std::vector<uint64_t> flows_in, flows_out;
    std::string category;
  };
  struct TrackState {
    std::vector<Pending> pending;  // In begin order.
    std::vector<size_t> open;      // Indices into pending, innermost last.
    // Counter tracks: the value set last and since when (ns, offset included); 0 before any.
    double value = 0;
    int64_t value_since_ns = 0;
  };

  TrackId AddChildTrack(ProcessId process, std::string_view name, std::optional<CounterUnit> unit);
  // Writes the common prefix `{"name":..,"cat":..,"ph":..,"ts":..,"pid":..,"tid":..` into *out.
  void StartEvent(std::string_view name, std::string_view category, char phase, int64_t ts_ns,
                  TrackId track, std::string* out);
  void WriteMetadata(std::string_view kind, uint32_t pid, uint32_t tid, std::string_view key,
                     std::string_view string_value, int64_t int_value);
  // Writes the pending events of `track` (its outermost slice has ended), with their flows.
  void Flush(TrackId track);
  void WriteFlow(char phase, uint64_t id, std::string_view category, int64_t ts_ns, TrackId track);
  // Writes the value slice of counter `track` from its value_since_ns to `end_ns`, if any.
  void WriteValueSlice(TrackId track, int64_t end_ns);
  // Writes line_ as the next array element.
  void EmitLine();

  std::ostream* out_;
  int64_t offset_ns_;
  TrackRegistry registry_;
  std::vector<TrackState> tracks_;                // By TrackId.
  std::set<uint64_t> started_flows_;              // `s` written, `f` not yet.
  std::map<uint64_t, std::string> waiting_ends_;  // `f` lines waiting for their `s`, by flow id.
  std::string line_;
  bool first_event_ = true;
  int64_t latest_ns_ = 0;  // The latest time of any event so far (ns, offset included).
};

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_CHROME_JSON_WRITER_H_
