// LinkCounters: link utilisation as trace counters, for collective and step traces. Observes the
// flow model (sim/flow_observer.h) and writes, for every link direction that leaves a traced chip
// and carries traffic, one counter track in that chip's process, "link to V (kind)", valued the
// carried rate over the link's line rate (0..1).
//
// Sampling. With interval 0 a value is written at every change of the link's rate (equal
// consecutive values once). With interval W > 0 time is cut into windows [kW, (k+1)W) and the
// value written at kW is the link's mean utilisation over the window, again only when it differs
// from the last value written: a link whose rate changes many times within W costs one value per
// window, one whose rate holds costs nothing, so a track holds at most min(2 x its rate
// changes + 1, the run's length / W) values. The exact rates of the flow model are averaged, never
// dropped: the bytes the counter shows over any window equal the bytes the link carried.
//
// Only reads; the simulation is the same with or without it.

#ifndef PODSIM_CLI_LINK_COUNTERS_H_
#define PODSIM_CLI_LINK_COUNTERS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "sim/flow_observer.h"
#include "sim/time.h"
#include "topology/fabric.h"
#include "traces/trace_sink.h"

namespace podsim::cli {

class LinkCounters : public sim::FlowObserver {
 public:
  // The process of a chip whose links are counted, or nullopt for a chip that is not traced.
  using ProcessOf = std::function<std::optional<traces::ProcessId>(topology::VertexId)>;

  // `fabric` and `sink` must outlive the counters. REQUIRES: interval >= 0.
  LinkCounters(const topology::Fabric* fabric, traces::TraceSink* sink, ProcessOf process_of,
               sim::Time interval);

  void OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                              double used_bytes_per_s) override;

  // Writes the windows still open, up to `end` (the end of the run). Call once, after the run and
  // before the sink's Close(); no change may follow.
  void Finish(sim::Time end);

  uint64_t tracks() const { return links_.size(); }
  uint64_t values() const { return values_; }

 private:
  struct Link {
    traces::TrackId track;
    double line_rate = 0;           // Bytes/s.
    double rate = 0;                // Carried now, bytes/s.
    sim::Time since;                // When `rate` began.
    int64_t window = -1;            // The open window (interval > 0), -1 before the first change.
    double bytes = 0;               // Carried in the open window before `since`.
    std::optional<double> written;  // Last value written.
  };

  sim::Time WindowStart(int64_t window) const {
    return sim::Time::Picoseconds(window * interval_.picoseconds());
  }
  void Write(Link& link, sim::Time time, double utilisation);
  // Writes the open window's mean, taking `rate` as carried up to the window's end or `end`.
  void CloseWindow(Link& link, sim::Time end);

  const topology::Fabric* fabric_;
  traces::TraceSink* sink_;
  ProcessOf process_of_;
  sim::Time interval_;
  std::map<uint32_t, Link> links_;  // By link index; links that carried traffic.
  uint64_t values_ = 0;
};

}  // namespace podsim::cli

#endif  // PODSIM_CLI_LINK_COUNTERS_H_
