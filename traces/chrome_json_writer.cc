#include "traces/chrome_json_writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <ostream>
#include <type_traits>
#include <variant>

#include "sim/check.h"

namespace podsim::traces {

namespace {

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[(c >> 4) & 0xf]);
          out->push_back(kHex[c & 0xf]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

template <typename T>
void AppendNumber(T value, std::string* out) {
  if constexpr (std::is_floating_point_v<T>) {
    // Whole numbers that doubles hold exactly (byte counts) print as integers, not 2.5e+09.
    if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
      AppendNumber(static_cast<int64_t>(value), out);
      return;
    }
  }
  char buf[32];
  // Shortest round-trip form for doubles; plain decimal for integers. Locale-independent.
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
  PODSIM_CHECK(r.ec == std::errc()) << "number formatting failed";
  out->append(buf, r.ptr);
}

// Nanoseconds as microseconds with exactly 3 decimals, without floating point.
void AppendMicros(int64_t ns, std::string* out) {
  AppendNumber(ns / 1000, out);
  int64_t frac = ns % 1000;
  out->push_back('.');
  out->push_back(static_cast<char>('0' + frac / 100));
  out->push_back(static_cast<char>('0' + frac / 10 % 10));
  out->push_back(static_cast<char>('0' + frac % 10));
}

std::string_view UnitKey(CounterUnit unit) {
  switch (unit) {
    case CounterUnit::kCount:
      return "count";
    case CounterUnit::kBytes:
      return "bytes";
    case CounterUnit::kBytesPerSecond:
      return "bytes_per_s";
    case CounterUnit::kFraction:
      return "fraction";
  }
  return "value";
}

// A counter value as a slice name: its unit's usual scale, one decimal ("12.5 GiB", "40.0%").
void AppendValueName(double value, CounterUnit unit, std::string* out) {
  static constexpr std::string_view kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static constexpr std::string_view kRate[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"};
  std::string_view suffix;
  switch (unit) {
    case CounterUnit::kCount:
      AppendNumber(value, out);
      return;
    case CounterUnit::kFraction:
      value *= 100;
      suffix = "%";
      break;
    case CounterUnit::kBytes:
    case CounterUnit::kBytesPerSecond: {
      const double base = unit == CounterUnit::kBytes ? 1024 : 1000;
      size_t scale = 0;
      while (std::fabs(value) >= base && scale + 1 < std::size(kBinary)) {
        value /= base;
        ++scale;
      }
      suffix = unit == CounterUnit::kBytes ? kBinary[scale] : kRate[scale];
      break;
    }
  }
  char buf[64];
  std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed, 1);
  PODSIM_CHECK(r.ec == std::errc()) << "number formatting failed";
  out->append(buf, r.ptr);
  if (unit != CounterUnit::kFraction) out->push_back(' ');
  out->append(suffix);
}

void AppendArgs(std::span<const Arg> args, std::string* out) {
  out->append(",\"args\":{");
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonString(args[i].key, out);
    out->push_back(':');
    std::visit(
        [out](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, bool>) {
            out->append(v ? "true" : "false");
          } else if constexpr (std::is_same_v<T, std::string_view>) {
            AppendJsonString(v, out);
          } else {
            AppendNumber(v, out);
          }
        },
        args[i].value);
  }
  out->push_back('}');
}

}  // namespace

ChromeJsonWriter::ChromeJsonWriter(std::ostream* out, sim::Time origin_offset)
    : out_(out), offset_ns_(TraceNanoseconds(origin_offset)) {
  PODSIM_CHECK(out_ != nullptr) << "ChromeJsonWriter needs a stream";
  PODSIM_CHECK(offset_ns_ >= 1000) << "origin_offset must be >= 1 us, got " << origin_offset;
  *out_ << "{\"traceEvents\":[";
}

ProcessId ChromeJsonWriter::AddProcess(std::string_view name, int32_t sort_index) {
  ProcessId id = registry_.AddProcess(name);
  uint32_t pid = id.index + 1;
  WriteMetadata("process_name", pid, 0, "name", name, 0);
  WriteMetadata("process_sort_index", pid, 0, "sort_index", {}, sort_index);
  return id;
}

TrackId ChromeJsonWriter::AddTrack(ProcessId process, std::string_view name) {
  return AddChildTrack(process, name, std::nullopt);
}

TrackId ChromeJsonWriter::AddCounterTrack(ProcessId process, std::string_view name,
                                          CounterUnit unit) {
  return AddChildTrack(process, name, unit);
}

TrackId ChromeJsonWriter::AddChildTrack(ProcessId process, std::string_view name,
                                        std::optional<CounterUnit> unit) {
  TrackId id = registry_.AddTrack(process, name, unit);
  tracks_.emplace_back();
  const TrackRegistry::Track& track = registry_.track(id);
  WriteMetadata("thread_name", process.index + 1, track.rank + 1, "name", name, 0);
  WriteMetadata("thread_sort_index", process.index + 1, track.rank + 1, "sort_index", {},
                track.rank);
  return id;
}

void ChromeJsonWriter::BeginSlice(TrackId track, sim::Time time, const EventSpec& event) {
  registry_.Begin(track, time, event);
  TrackState& state = tracks_[track.index];
  Pending slice;
  slice.begin_ns = TraceNanoseconds(time) + offset_ns_;
  StartEvent(event.name, event.category, 'X', slice.begin_ns, track, &slice.head);
  AppendArgs(event.args, &slice.tail);
  slice.tail.push_back('}');
  slice.flows_in.assign(event.flows_in.begin(), event.flows_in.end());
  slice.flows_out.assign(event.flows_out.begin(), event.flows_out.end());
  slice.category = event.category;
  state.open.push_back(state.pending.size());
  state.pending.push_back(std::move(slice));
}

void ChromeJsonWriter::EndSlice(TrackId track, sim::Time time) {
  registry_.End(track, time);
  TrackState& state = tracks_[track.index];
  state.pending[state.open.back()].end_ns = TraceNanoseconds(time) + offset_ns_;
  latest_ns_ = std::max(latest_ns_, state.pending[state.open.back()].end_ns);
  state.open.pop_back();
  if (state.open.empty()) Flush(track);
}

void ChromeJsonWriter::Instant(TrackId track, sim::Time time, const EventSpec& event) {
  registry_.Instant(track, time, event);
  Pending instant;
  instant.begin_ns = TraceNanoseconds(time) + offset_ns_;
  instant.end_ns = -2;
  latest_ns_ = std::max(latest_ns_, instant.begin_ns);
  StartEvent(event.name, event.category, 'i', instant.begin_ns, track, &instant.head);
  instant.tail = ",\"s\":\"t\"";
  AppendArgs(event.args, &instant.tail);
  instant.tail.push_back('}');
  TrackState& state = tracks_[track.index];
  if (state.open.empty()) {
    line_ = std::move(instant.head);
    line_.append(instant.tail);
    EmitLine();
  } else {
    state.pending.push_back(std::move(instant));
  }
}

void ChromeJsonWriter::SetCounter(TrackId track, sim::Time time, double value) {
  registry_.Counter(track, time, value);
  const TrackRegistry::Track& t = registry_.track(track);
  const int64_t ts_ns = TraceNanoseconds(time) + offset_ns_;
  latest_ns_ = std::max(latest_ns_, ts_ns);
  TrackState& state = tracks_[track.index];
  if (value != state.value) {
    WriteValueSlice(track, ts_ns);
    state.value = value;
    state.value_since_ns = ts_ns;
  }
  line_.clear();
  StartEvent(t.name, {}, 'C', ts_ns, track, &line_);
  line_.append(",\"args\":{");
  AppendJsonString(UnitKey(*t.counter_unit), &line_);
  line_.push_back(':');
  AppendNumber(value, &line_);
  line_.append("}}");
  EmitLine();
}

sim::Status ChromeJsonWriter::Close() {
  registry_.Close();
  for (uint32_t i = 0; i < tracks_.size(); ++i) {
    if (registry_.track({i}).counter_unit.has_value()) WriteValueSlice({i}, latest_ns_);
  }
  PODSIM_CHECK(waiting_ends_.empty())
      << "Close with flow " << waiting_ends_.begin()->first << " ended but never started";
  *out_ << "\n]}\n";
  out_->flush();
  if (!*out_) return sim::Status::IoError("writing the Chrome JSON trace failed");
  return sim::Status::Ok();
}

void ChromeJsonWriter::Flush(TrackId track) {
  TrackState& state = tracks_[track.index];
  for (Pending& event : state.pending) {
    line_ = std::move(event.head);
    if (event.end_ns >= 0) {
      line_.append(",\"dur\":");
      AppendMicros(event.end_ns - event.begin_ns, &line_);
    }
    line_.append(event.tail);
    EmitLine();
    for (uint64_t flow : event.flows_in)
      WriteFlow('f', flow, event.category, event.begin_ns, track);
    for (uint64_t flow : event.flows_out) {
      WriteFlow('s', flow, event.category, event.begin_ns, track);
    }
  }
  state.pending.clear();
}

void ChromeJsonWriter::StartEvent(std::string_view name, std::string_view category, char phase,
                                  int64_t ts_ns, TrackId track, std::string* out) {
  const TrackRegistry::Track& t = registry_.track(track);
  out->append("{\"name\":");
  AppendJsonString(name, out);
  if (!category.empty()) {
    out->append(",\"cat\":");
    AppendJsonString(category, out);
  }
  out->append(",\"ph\":\"");
  out->push_back(phase);
  out->append("\",\"ts\":");
  AppendMicros(ts_ns, out);
  out->append(",\"pid\":");
  AppendNumber(t.process.index + 1, out);
  out->append(",\"tid\":");
  AppendNumber(t.rank + 1, out);
}

void ChromeJsonWriter::WriteMetadata(std::string_view kind, uint32_t pid, uint32_t tid,
                                     std::string_view key, std::string_view string_value,
                                     int64_t int_value) {
  line_.clear();
  line_.append("{\"name\":");
  AppendJsonString(kind, &line_);
  line_.append(",\"ph\":\"M\",\"ts\":0,\"pid\":");
  AppendNumber(pid, &line_);
  line_.append(",\"tid\":");
  AppendNumber(tid, &line_);
  line_.append(",\"args\":{");
  AppendJsonString(key, &line_);
  line_.push_back(':');
  if (key == "name") {
    AppendJsonString(string_value, &line_);
  } else {
    AppendNumber(int_value, &line_);
  }
  line_.append("}}");
  EmitLine();
}

void ChromeJsonWriter::WriteFlow(char phase, uint64_t id, std::string_view category, int64_t ts_ns,
                                 TrackId track) {
  line_.clear();
  StartEvent("flow", category, phase, ts_ns, track, &line_);
  line_.append(",\"id\":");
  AppendNumber(id, &line_);
  if (phase == 'f') {
    line_.append(",\"bp\":\"e\"}");
    if (started_flows_.erase(id) == 0) {
      waiting_ends_.emplace(id, std::move(line_));  // Its `s` is not written yet.
      return;
    }
    EmitLine();
    return;
  }
  line_.push_back('}');
  EmitLine();
  auto waiting = waiting_ends_.find(id);
  if (waiting == waiting_ends_.end()) {
    started_flows_.insert(id);
  } else {
    line_ = std::move(waiting->second);
    waiting_ends_.erase(waiting);
    EmitLine();
  }
}

void ChromeJsonWriter::WriteValueSlice(TrackId track, int64_t end_ns) {
  const TrackState& state = tracks_[track.index];
  if (state.value == 0 || end_ns <= state.value_since_ns) return;
  const CounterUnit unit = *registry_.track(track).counter_unit;
  std::string name;
  AppendValueName(state.value, unit, &name);
  line_.clear();
  StartEvent(name, "counter", 'X', state.value_since_ns, track, &line_);
  line_.append(",\"dur\":");
  AppendMicros(end_ns - state.value_since_ns, &line_);
  line_.append(",\"args\":{");
  AppendJsonString(UnitKey(unit), &line_);
  line_.push_back(':');
  AppendNumber(state.value, &line_);
  line_.append("}}");
  EmitLine();
}

void ChromeJsonWriter::EmitLine() {
  *out_ << (first_event_ ? "\n" : ",\n") << line_;
  first_event_ = false;
}

}  // namespace podsim::traces
