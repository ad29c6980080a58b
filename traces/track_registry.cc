#include "traces/track_registry.h"

#include <cmath>
#include <utility>

#include "sim/check.h"

namespace podsim::traces {

namespace {

// Flow ids above this lose precision in JSON readers that parse numbers as doubles.
constexpr uint64_t kMaxFlowId = (uint64_t{1} << 53) - 1;

}  // namespace

int64_t TraceNanoseconds(sim::Time time) {
  PODSIM_CHECK(time >= sim::Time::Zero()) << "trace time must be >= 0, got " << time;
  return (time.picoseconds() + 500) / 1000;
}

ProcessId TrackRegistry::AddProcess(std::string_view name) {
  PODSIM_CHECK(!closed_) << "AddProcess after Close";
  PODSIM_CHECK(!name.empty()) << "AddProcess: empty process name";
  processes_.push_back(Process{std::string(name), 0});
  return ProcessId{static_cast<uint32_t>(processes_.size() - 1)};
}

TrackId TrackRegistry::AddTrack(ProcessId process, std::string_view name,
                                std::optional<CounterUnit> unit) {
  PODSIM_CHECK(!closed_) << "AddTrack after Close";
  PODSIM_CHECK(process.index < processes_.size())
      << "AddTrack: undeclared process " << process.index;
  PODSIM_CHECK(!name.empty()) << "AddTrack: empty track name in process '"
                              << processes_[process.index].name << "'";
  if (unit.has_value()) {
    for (const Track& other : tracks_) {
      PODSIM_CHECK(
          !(other.process == process && other.counter_unit.has_value() && other.name == name))
          << "AddCounterTrack: duplicate counter '" << name << "' in process '"
          << processes_[process.index].name << "'";
    }
  }
  Process& p = processes_[process.index];
  tracks_.push_back(Track{process, std::string(name), unit, p.num_tracks++, sim::Time::Zero(), {}});
  return TrackId{static_cast<uint32_t>(tracks_.size() - 1)};
}

void TrackRegistry::Begin(TrackId id, sim::Time time, const EventSpec& event) {
  Track& track = MutableTrack(id, "BeginSlice");
  PODSIM_CHECK(!track.counter_unit.has_value())
      << "BeginSlice on counter track '" << track.name << "'";
  CheckEvent(track, event, "BeginSlice");
  Advance(track, time, "BeginSlice");
  for (uint64_t flow : event.flows_in) {
    auto it = open_flows_.find(flow);
    PODSIM_CHECK(it != open_flows_.end())
        << "BeginSlice '" << event.name << "': flow " << flow << " terminated but never started";
    PODSIM_CHECK(it->second == event.category)
        << "BeginSlice '" << event.name << "': flow " << flow << " starts on a '" << it->second
        << "' slice but ends on a '" << event.category << "' slice; both ends need one category";
    open_flows_.erase(it);
  }
  for (uint64_t flow : event.flows_out) {
    PODSIM_CHECK(flow <= kMaxFlowId) << "flow id " << flow << " is >= 2^53";
    bool inserted = open_flows_.emplace(flow, std::string(event.category)).second;
    PODSIM_CHECK(inserted) << "BeginSlice '" << event.name << "': flow " << flow
                           << " started twice";
  }
  track.open.push_back(OpenSlice{std::string(event.name), std::string(event.category), time});
}

TrackRegistry::OpenSlice TrackRegistry::End(TrackId id, sim::Time time) {
  Track& track = MutableTrack(id, "EndSlice");
  PODSIM_CHECK(!track.open.empty())
      << "EndSlice on track '" << track.name << "' with no open slice";
  Advance(track, time, "EndSlice");
  OpenSlice slice = std::move(track.open.back());
  track.open.pop_back();
  return slice;
}

void TrackRegistry::Instant(TrackId id, sim::Time time, const EventSpec& event) {
  Track& track = MutableTrack(id, "Instant");
  PODSIM_CHECK(!track.counter_unit.has_value())
      << "Instant on counter track '" << track.name << "'";
  CheckEvent(track, event, "Instant");
  PODSIM_CHECK(event.flows_out.empty() && event.flows_in.empty())
      << "Instant '" << event.name << "': flows bind to slices, not instants";
  Advance(track, time, "Instant");
}

void TrackRegistry::Counter(TrackId id, sim::Time time, double value) {
  Track& track = MutableTrack(id, "SetCounter");
  PODSIM_CHECK(track.counter_unit.has_value())
      << "SetCounter on slice track '" << track.name << "'";
  PODSIM_CHECK(std::isfinite(value)) << "SetCounter '" << track.name << "': value " << value;
  Advance(track, time, "SetCounter");
}

void TrackRegistry::Close() {
  PODSIM_CHECK(!closed_) << "Close called twice";
  for (const Track& track : tracks_) {
    PODSIM_CHECK(track.open.empty()) << "Close with slice '" << track.open.back().name
                                     << "' still open on track '" << track.name << "'";
  }
  PODSIM_CHECK(open_flows_.empty())
      << "Close with flow " << open_flows_.begin()->first << " never terminated";
  closed_ = true;
}

const TrackRegistry::Process& TrackRegistry::process(ProcessId id) const {
  PODSIM_CHECK(id.index < processes_.size()) << "undeclared process " << id.index;
  return processes_[id.index];
}

const TrackRegistry::Track& TrackRegistry::track(TrackId id) const {
  PODSIM_CHECK(id.index < tracks_.size()) << "undeclared track " << id.index;
  return tracks_[id.index];
}

TrackRegistry::Track& TrackRegistry::MutableTrack(TrackId id, const char* call) {
  PODSIM_CHECK(!closed_) << call << " after Close";
  PODSIM_CHECK(id.index < tracks_.size()) << call << " on undeclared track " << id.index;
  return tracks_[id.index];
}

void TrackRegistry::Advance(Track& track, sim::Time time, const char* call) {
  PODSIM_CHECK(time >= sim::Time::Zero()) << call << " on '" << track.name << "' at " << time;
  PODSIM_CHECK(time >= track.last) << call << " on track '" << track.name << "' at " << time
                                   << ", before its previous event at " << track.last;
  track.last = time;
}

void TrackRegistry::CheckEvent(const Track& track, const EventSpec& event, const char* call) const {
  PODSIM_CHECK(!event.name.empty()) << call << " on '" << track.name << "' without a name";
  PODSIM_CHECK(!event.category.empty())
      << call << " '" << event.name << "' on '" << track.name << "' without a category";
  for (size_t i = 0; i < event.args.size(); ++i) {
    const Arg& arg = event.args[i];
    PODSIM_CHECK(!arg.key.empty()) << call << " '" << event.name << "': arg " << i << " has no key";
    if (const double* d = std::get_if<double>(&arg.value)) {
      PODSIM_CHECK(std::isfinite(*d))
          << call << " '" << event.name << "': arg '" << arg.key << "' is " << *d;
    }
    for (size_t j = 0; j < i; ++j) {
      PODSIM_CHECK(event.args[j].key != arg.key)
          << call << " '" << event.name << "': duplicate arg '" << arg.key << "'";
    }
  }
}

}  // namespace podsim::traces
