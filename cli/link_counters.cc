#include "cli/link_counters.h"

#include <algorithm>
#include <string>
#include <utility>

#include "sim/check.h"
#include "topology/names.h"

namespace podsim::cli {

LinkCounters::LinkCounters(const topology::Fabric* fabric, traces::TraceSink* sink,
                           ProcessOf process_of, sim::Time interval)
    : fabric_(fabric), sink_(sink), process_of_(std::move(process_of)), interval_(interval) {
  PODSIM_CHECK(interval_ >= sim::Time::Zero()) << "LinkCounters needs an interval >= 0";
}

void LinkCounters::Write(Link& link, sim::Time time, double utilisation) {
  if (link.written == utilisation) return;
  sink_->SetCounter(link.track, time, utilisation);
  link.written = utilisation;
  ++values_;
}

void LinkCounters::CloseWindow(Link& link, sim::Time end) {
  const sim::Time start = WindowStart(link.window);
  const sim::Time window_end = std::min(start + interval_, end);
  if (window_end <= start) return;
  const double bytes = link.bytes + link.rate * (window_end - link.since).ToSeconds();
  Write(link, start, bytes / (window_end - start).ToSeconds() / link.line_rate);
}

void LinkCounters::OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                                          double used_bytes_per_s) {
  if (resource.value >= fabric_->link_count()) return;  // A switch's reduction engine.
  auto it = links_.find(resource.value);
  if (it == links_.end()) {
    const topology::Link& spec = fabric_->link(resource.value);
    const std::optional<traces::ProcessId> process = process_of_(spec.src);
    if (!process) return;
    const std::string name = "link to " + fabric_->vertex_name(spec.dst) + " (" +
                             std::string(topology::LinkKindName(spec.kind)) + ")";
    Link link;
    link.track = sink_->AddCounterTrack(*process, name, traces::CounterUnit::kFraction);
    link.line_rate = spec.bandwidth_bytes_per_s;
    link.since = now;
    it = links_.emplace(resource.value, link).first;
  }
  Link& link = it->second;
  if (interval_ == sim::Time::Zero()) {
    Write(link, now, used_bytes_per_s / link.line_rate);
    return;
  }
  const int64_t window = now.picoseconds() / interval_.picoseconds();
  if (link.window < 0) {
    link.window = window;  // Idle before now: no bytes yet.
  } else if (window == link.window) {
    link.bytes += link.rate * (now - link.since).ToSeconds();
  } else {
    CloseWindow(link, sim::Time::Max());
    // The windows between ran at `rate` throughout.
    if (window > link.window + 1) {
      Write(link, WindowStart(link.window + 1), link.rate / link.line_rate);
    }
    link.window = window;
    link.bytes = link.rate * (now - WindowStart(window)).ToSeconds();
  }
  link.rate = used_bytes_per_s;
  link.since = now;
}

void LinkCounters::Finish(sim::Time end) {
  if (interval_ == sim::Time::Zero()) return;
  for (auto& [index, link] : links_) {
    if (link.window < 0) continue;
    CloseWindow(link, end);
    const sim::Time next = WindowStart(link.window + 1);
    if (end > next) Write(link, next, link.rate / link.line_rate);
  }
}

}  // namespace podsim::cli
