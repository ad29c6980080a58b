#include "cli/collective_trace.h"

#include <string>
#include <utility>

#include "sim/check.h"
#include "topology/names.h"

namespace podsim::cli {

namespace {
constexpr uint32_t kDefaultTracedChips = 64;
}

CollectiveTraceObserver::CollectiveTraceObserver(const topology::Fabric* fabric,
                                                 traces::TraceSink* sink,
                                                 const std::vector<bool>& traced,
                                                 std::string algorithm)
    : fabric_(fabric),
      sink_(sink),
      traced_(traced),
      algorithm_(std::move(algorithm)),
      link_counters_(
          fabric, sink,
          [this](topology::VertexId chip) -> std::optional<traces::ProcessId> {
            auto it = chips_.find(chip);
            if (it == chips_.end()) return std::nullopt;
            return it->second.process;
          },
          sim::Time::Zero()) {
  for (topology::VertexId chip = 0; chip < traced_.size(); ++chip) {
    if (!traced_[chip]) continue;
    chips_[chip].process =
        sink_->AddProcess("chip " + std::to_string(chip) + " (" + fabric_->vertex_name(chip) + ")");
  }
}

int CollectiveTraceObserver::TakeLane(topology::VertexId chip, bool send) {
  Chip& c = chips_[chip];
  Lanes& lanes = send ? c.send : c.recv;
  for (size_t i = 0; i < lanes.busy.size(); ++i) {
    if (!lanes.busy[i]) {
      lanes.busy[i] = true;
      return static_cast<int>(i);
    }
  }
  const std::string name = (send ? "send " : "recv ") + std::to_string(lanes.tracks.size());
  lanes.tracks.push_back(sink_->AddTrack(c.process, name));
  lanes.busy.push_back(true);
  return static_cast<int>(lanes.tracks.size() - 1);
}

void CollectiveTraceObserver::OnTransferStarted(sim::Time now, uint64_t id, topology::VertexId src,
                                                topology::VertexId dst, double bytes) {
  if (!Traced(src) && !Traced(dst)) return;
  Open open{src, dst};
  const uint64_t flow[] = {id};
  const bool both = Traced(src) && Traced(dst);
  const std::string algorithm = algorithm_;
  if (Traced(src)) {
    open.send_lane = TakeLane(src, true);
    const std::string name = "send to " + fabric_->vertex_name(dst);
    const traces::Arg args[] = {traces::Arg::Double("bytes", bytes), traces::Arg::Uint("to", dst),
                                traces::Arg::String("algorithm", algorithm)};
    traces::EventSpec event{.name = name, .category = "comm", .args = args};
    if (both) event.flows_out = flow;
    sink_->BeginSlice(chips_[src].send.tracks[open.send_lane], now, event);
  }
  if (Traced(dst)) {
    open.recv_lane = TakeLane(dst, false);
    const std::string name = "recv from " + fabric_->vertex_name(src);
    const traces::Arg args[] = {traces::Arg::Double("bytes", bytes), traces::Arg::Uint("from", src),
                                traces::Arg::String("algorithm", algorithm)};
    traces::EventSpec event{.name = name, .category = "comm", .args = args};
    if (both) event.flows_in = flow;
    sink_->BeginSlice(chips_[dst].recv.tracks[open.recv_lane], now, event);
  }
  open_[id] = open;
}

void CollectiveTraceObserver::OnTransferCompleted(sim::Time now, uint64_t id) {
  auto it = open_.find(id);
  if (it == open_.end()) return;
  const Open& open = it->second;
  if (open.send_lane >= 0) {
    Lanes& lanes = chips_[open.src].send;
    sink_->EndSlice(lanes.tracks[open.send_lane], now);
    lanes.busy[open.send_lane] = false;
  }
  if (open.recv_lane >= 0) {
    Lanes& lanes = chips_[open.dst].recv;
    sink_->EndSlice(lanes.tracks[open.recv_lane], now);
    lanes.busy[open.recv_lane] = false;
  }
  open_.erase(it);
}

void CollectiveTraceObserver::OnResourceUsageChanged(sim::Time now, sim::ResourceId resource,
                                                     double used_bytes_per_s) {
  link_counters_.OnResourceUsageChanged(now, resource, used_bytes_per_s);
}

sim::StatusOr<std::vector<bool>> ParseTraceChips(std::string_view text, uint32_t chip_count) {
  std::vector<bool> traced(chip_count, false);
  if (text.empty() || text == "all") {
    const uint32_t limit =
        text.empty() && chip_count > kDefaultTracedChips ? kDefaultTracedChips : chip_count;
    for (uint32_t c = 0; c < limit; ++c) traced[c] = true;
    return traced;
  }
  auto bad = [&](std::string_view part) {
    return sim::Status::InvalidArgument(
        "--trace-chips: expected 'all' or chip indices and ranges from 0 to " +
        std::to_string(chip_count - 1) + " like 0-15,32 (got '" + std::string(part) + "')");
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string_view part = text.substr(start, end == std::string_view::npos ? end : end - start);
    size_t dash = part.find('-');
    std::optional<int64_t> first = topology::ParseCount(part.substr(0, dash), chip_count - 1);
    std::optional<int64_t> last = dash == std::string_view::npos
                                      ? first
                                      : topology::ParseCount(part.substr(dash + 1), chip_count - 1);
    if (!first || !last || *last < *first) return bad(part);
    for (int64_t c = *first; c <= *last; ++c) traced[static_cast<size_t>(c)] = true;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return traced;
}

}  // namespace podsim::cli
