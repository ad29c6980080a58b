// ChromeJsonWriter: a TraceSink that streams the Chrome Trace Event Format (JSON), readable by
// ui.perfetto.dev and the Chrome DevTools Performance panel.
//
// Output follows the portability rules of shared/reference/traces.md 1a, so both viewers show it:
//  - `{"traceEvents":[` is written first, then one event per line as calls arrive, then `]}` at
//    Close; nothing is buffered beyond one event.
//  - ts is in microseconds with exactly 3 decimals (1 ns resolution: TraceNanoseconds rounds ps
//    half up), offset by `origin_offset` (default 1 us) so that simulated time 0 is drawn, since
//    DevTools drops ts == 0 from the trace bounds. Metadata (`M`) events carry ts 0.
//  - pid = process declaration order + 1; tid = track rank in its process + 1. Each declaration
//    writes `M` process_name/process_sort_index or thread_name/thread_sort_index at once.
//  - Slices are `B`/`E`; `E` repeats the `B`'s name and cat (DevTools drops it otherwise).
//    Instants are `i` with "s":"t". Counters are `C` with the track name as name and one series
//    named after the unit (count, bytes, bytes_per_s, fraction); tid is written but viewers key
//    counters by (pid, name).
//  - Flows are v1: `s` right after its source `B`, `f` with "bp":"e" right after its destination
//    `B`, both with the bound slice's cat, ts, pid and tid, named "flow".
//  - Formatting is fixed (field order, integer-only time formatting, shortest round-trip doubles),
//    so the same calls give the same bytes.

#ifndef PODSIM_TRACES_CHROME_JSON_WRITER_H_
#define PODSIM_TRACES_CHROME_JSON_WRITER_H_

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "traces/trace_sink.h"
#include "traces/track_registry.h"

namespace podsim::traces {

class ChromeJsonWriter final : public TraceSink {
 public:
  // Writes to `*out`, which must outlive the writer and is not closed by it. The header is
  // written at construction. REQUIRES: origin_offset >= 1 us keeps every ts >= 1 us.
  explicit ChromeJsonWriter(std::ostream* out,
                            sim::Time origin_offset = sim::Time::Microseconds(1));

  ProcessId AddProcess(std::string_view name) override;
  TrackId AddTrack(ProcessId process, std::string_view name) override;
  TrackId AddCounterTrack(ProcessId process, std::string_view name, CounterUnit unit) override;
  void BeginSlice(TrackId track, sim::Time time, const EventSpec& event) override;
  void EndSlice(TrackId track, sim::Time time) override;
  void Instant(TrackId track, sim::Time time, const EventSpec& event) override;
  void SetCounter(TrackId track, sim::Time time, double value) override;
  sim::Status Close() override;

 private:
  TrackId AddChildTrack(ProcessId process, std::string_view name, std::optional<CounterUnit> unit);
  // Writes the common prefix `{"name":..,"cat":..,"ph":..,"ts":..,"pid":..,"tid":..` into line_.
  void StartEvent(std::string_view name, std::string_view category, char phase, sim::Time time,
                  TrackId track);
  void WriteMetadata(std::string_view kind, uint32_t pid, uint32_t tid, std::string_view key,
                     std::string_view string_value, int64_t int_value);
  void WriteFlow(char phase, uint64_t id, std::string_view category, sim::Time time, TrackId track);
  // Writes line_ as the next array element.
  void EmitLine();

  std::ostream* out_;
  int64_t offset_ns_;
  TrackRegistry registry_;
  std::string line_;
  bool first_event_ = true;
};

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_CHROME_JSON_WRITER_H_
