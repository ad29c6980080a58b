// TrackRegistry: the bookkeeping every TraceSink implementation shares, and the one place that
// enforces the TraceSink contract (trace_sink.h) with PODSIM_CHECK, so both writers reject the
// same misuse with the same message.
//
// Memory: O(processes + tracks + open slices + open flows); nothing grows with the number of
// events already written.

#ifndef PODSIM_TRACES_TRACK_REGISTRY_H_
#define PODSIM_TRACES_TRACK_REGISTRY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.h"
#include "traces/trace_sink.h"

namespace podsim::traces {

// Simulated picoseconds to the nanoseconds both trace formats use: rounded half up
// ((ps + 500) / 1000). Monotonic, so per-track order survives rounding; slices shorter than
// 0.5 ns may become zero-length. REQUIRES: time >= 0.
int64_t TraceNanoseconds(sim::Time time);

class TrackRegistry {
 public:
  struct Process {
    std::string name;
    uint32_t num_tracks = 0;  // Tracks declared so far; gives each track its rank.
  };
  struct OpenSlice {
    std::string name;
    std::string category;
    sim::Time begin;
  };
  struct Track {
    ProcessId process;
    std::string name;
    std::optional<CounterUnit> counter_unit;  // Set iff this is a counter track.
    uint32_t rank = 0;                        // 0-based declaration order within its process.
    sim::Time last = sim::Time::Zero();       // Latest time used on this track.
    std::vector<OpenSlice> open;              // Innermost last.
  };

  TrackRegistry() = default;
  TrackRegistry(const TrackRegistry&) = delete;
  TrackRegistry& operator=(const TrackRegistry&) = delete;

  ProcessId AddProcess(std::string_view name);
  // `unit` set: a counter track. REQUIRES: process was declared; a counter name is unique in it.
  TrackId AddTrack(ProcessId process, std::string_view name, std::optional<CounterUnit> unit);

  // Each checks the contract for the corresponding TraceSink call and records its effect.
  void Begin(TrackId track, sim::Time time, const EventSpec& event);
  // Returns the slice it closed.
  OpenSlice End(TrackId track, sim::Time time);
  void Instant(TrackId track, sim::Time time, const EventSpec& event);
  void Counter(TrackId track, sim::Time time, double value);
  // REQUIRES: no open slice, no flow without its end; Close() not called before.
  void Close();

  const Process& process(ProcessId id) const;
  const Track& track(TrackId id) const;

 private:
  Track& MutableTrack(TrackId id, const char* call);
  void Advance(Track& track, sim::Time time, const char* call);
  void CheckEvent(const Track& track, const EventSpec& event, const char* call) const;

  std::vector<Process> processes_;
  std::vector<Track> tracks_;
  std::map<uint64_t, std::string> open_flows_;  // Flow id -> category of its source slice.
  bool closed_ = false;
};

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_TRACK_REGISTRY_H_
