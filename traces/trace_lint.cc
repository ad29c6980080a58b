#include "traces/trace_lint.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "perfetto_min.pb.h"

namespace podsim::traces {

namespace {

namespace pb = ::perfetto::protos;

// ---- Perfetto ---------------------------------------------------------------------------------

// Builds "perfetto packet <i>: <what>" errors.
class PacketError {
 public:
  explicit PacketError(size_t index) { stream_ << "perfetto packet " << index << ": "; }
  template <typename T>
  PacketError& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  operator sim::Status() const { return sim::Status::ParseError(stream_.str()); }  // NOLINT

 private:
  std::ostringstream stream_;
};

bool ReadVarint(std::string_view bytes, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *pos < bytes.size(); shift += 7) {
    uint8_t byte = static_cast<uint8_t>(bytes[(*pos)++]);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Returns the path of the first message (depth-first) that holds unknown fields, or "".
std::string FindUnknownFields(const google::protobuf::Message& message, const std::string& path) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  if (!unknown.empty()) {
    return path + " (field " + std::to_string(unknown.field(0).number()) + ")";
  }
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        std::string found =
            FindUnknownFields(reflection->GetRepeatedMessage(message, field, i),
                              path + "." + field->name() + "[" + std::to_string(i) + "]");
        if (!found.empty()) return found;
      }
    } else {
      std::string found =
          FindUnknownFields(reflection->GetMessage(message, field), path + "." + field->name());
      if (!found.empty()) return found;
    }
  }
  return "";
}

struct SequenceState {
  bool valid = false;  // Incremental state was cleared on this sequence.
  std::map<uint64_t, std::string> names, categories, annotation_names;
};

struct PerfettoTrack {
  bool is_counter = false;
  int open_slices = 0;
  uint64_t last_ts = 0;
};

const char* TypeName(pb::TrackEvent::Type type) {
  switch (type) {
    case pb::TrackEvent::TYPE_SLICE_BEGIN:
      return "SLICE_BEGIN";
    case pb::TrackEvent::TYPE_SLICE_END:
      return "SLICE_END";
    case pb::TrackEvent::TYPE_INSTANT:
      return "INSTANT";
    case pb::TrackEvent::TYPE_COUNTER:
      return "COUNTER";
    default:
      return "UNSPECIFIED";
  }
}

class PerfettoLinter {
 public:
  sim::Status Packet(size_t index, const pb::TracePacket& packet) {
    if (std::string unknown = FindUnknownFields(packet, "TracePacket"); !unknown.empty()) {
      return PacketError(index) << "unknown field in " << unknown;
    }
    if (!packet.has_trusted_packet_sequence_id() || packet.trusted_packet_sequence_id() == 0) {
      return PacketError(index) << "trusted_packet_sequence_id is missing or zero";
    }
    uint32_t flags = packet.sequence_flags();
    auto [it, first] = sequences_.try_emplace(packet.trusted_packet_sequence_id());
    SequenceState& seq = it->second;
    if (first && (flags & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) == 0) {
      return PacketError(index) << "first packet of sequence " << it->first
                                << " does not set SEQ_INCREMENTAL_STATE_CLEARED";
    }
    if (flags & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED)
      seq = SequenceState{true, {}, {}, {}};
    if (packet.has_interned_data()) {
      PODSIM_RETURN_IF_ERROR(Intern(index, packet.interned_data(), &seq));
    }
    if (packet.has_track_descriptor()) {
      PODSIM_RETURN_IF_ERROR(Descriptor(index, packet.track_descriptor()));
    }
    if (packet.has_track_event()) {
      if (!packet.has_timestamp()) return PacketError(index) << "track_event without timestamp";
      if (packet.timestamp() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return PacketError(index) << "timestamp " << packet.timestamp() << " exceeds INT64_MAX ns";
      }
      PODSIM_RETURN_IF_ERROR(Event(index, packet, flags, seq));
    }
    return sim::Status::Ok();
  }

  sim::Status End() {
    for (const auto& [uuid, track] : tracks_) {
      if (track.open_slices != 0) {
        return sim::Status::ParseError("perfetto end of trace: track " + std::to_string(uuid) +
                                       " has " + std::to_string(track.open_slices) +
                                       " open slice(s)");
      }
    }
    for (const auto& [id, count] : flow_endpoints_) {
      if (count < 2) {
        return sim::Status::ParseError("perfetto end of trace: flow " + std::to_string(id) +
                                       " has " + std::to_string(count) + " endpoint (needs >= 2)");
      }
    }
    return sim::Status::Ok();
  }

 private:
  template <typename Entries>
  static sim::Status AddEntries(size_t index, const Entries& entries, const char* what,
                                std::map<uint64_t, std::string>* table) {
    for (const auto& entry : entries) {
      if (entry.iid() == 0 || entry.name().empty()) {
        return PacketError(index) << "interned " << what << " needs a non-zero iid and a name";
      }
      (*table)[entry.iid()] = entry.name();
    }
    return sim::Status::Ok();
  }

  static sim::Status Intern(size_t index, const pb::InternedData& data, SequenceState* seq) {
    PODSIM_RETURN_IF_ERROR(AddEntries(index, data.event_names(), "event name", &seq->names));
    PODSIM_RETURN_IF_ERROR(
        AddEntries(index, data.event_categories(), "category", &seq->categories));
    return AddEntries(index, data.debug_annotation_names(), "annotation name",
                      &seq->annotation_names);
  }

  sim::Status Descriptor(size_t index, const pb::TrackDescriptor& desc) {
    if (desc.uuid() == 0) return PacketError(index) << "track descriptor with uuid 0";
    if (tracks_.count(desc.uuid())) {
      return PacketError(index) << "track uuid " << desc.uuid() << " declared twice";
    }
    if (desc.has_parent_uuid() && !tracks_.count(desc.parent_uuid())) {
      return PacketError(index) << "track " << desc.uuid() << " has undeclared parent "
                                << desc.parent_uuid();
    }
    bool named = desc.has_process() ? !desc.process().process_name().empty()
                                    : !desc.name().empty() || !desc.static_name().empty();
    if (!named) return PacketError(index) << "track " << desc.uuid() << " has no name";
    tracks_[desc.uuid()].is_counter = desc.has_counter();
    return sim::Status::Ok();
  }

  sim::Status Resolve(size_t index, uint32_t flags, const SequenceState& seq,
                      const std::map<uint64_t, std::string>& table, uint64_t iid,
                      const char* what) {
    if ((flags & pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE) == 0) {
      return PacketError(index) << "uses " << what << " iid " << iid
                                << " without SEQ_NEEDS_INCREMENTAL_STATE";
    }
    if (!seq.valid || !table.count(iid)) {
      return PacketError(index) << what << " iid " << iid << " does not resolve";
    }
    return sim::Status::Ok();
  }

  sim::Status Event(size_t index, const pb::TracePacket& packet, uint32_t flags,
                    const SequenceState& seq) {
    const pb::TrackEvent& ev = packet.track_event();
    if (!ev.has_track_uuid()) return PacketError(index) << "track_event without track_uuid";
    auto it = tracks_.find(ev.track_uuid());
    if (it == tracks_.end()) {
      return PacketError(index) << "track_event on undeclared track " << ev.track_uuid();
    }
    PerfettoTrack& track = it->second;
    const char* type = TypeName(ev.type());
    if (!ev.has_type() || ev.type() == pb::TrackEvent::TYPE_UNSPECIFIED) {
      return PacketError(index) << "track_event without type";
    }
    if (packet.timestamp() < track.last_ts) {
      return PacketError(index) << type << " on track " << ev.track_uuid() << " at "
                                << packet.timestamp() << " ns, before " << track.last_ts << " ns";
    }
    track.last_ts = packet.timestamp();
    if (ev.has_name_iid()) {
      PODSIM_RETURN_IF_ERROR(Resolve(index, flags, seq, seq.names, ev.name_iid(), "name"));
    }
    for (uint64_t iid : ev.category_iids()) {
      PODSIM_RETURN_IF_ERROR(Resolve(index, flags, seq, seq.categories, iid, "category"));
    }
    for (const pb::DebugAnnotation& annotation : ev.debug_annotations()) {
      if (annotation.has_name_iid()) {
        PODSIM_RETURN_IF_ERROR(Resolve(index, flags, seq, seq.annotation_names,
                                       annotation.name_iid(), "annotation name"));
      } else if (annotation.name().empty()) {
        return PacketError(index) << "debug annotation without a name";
      }
      if (annotation.value_case() == pb::DebugAnnotation::VALUE_NOT_SET) {
        return PacketError(index) << "debug annotation without a value";
      }
    }
    bool is_counter_event = ev.type() == pb::TrackEvent::TYPE_COUNTER;
    if (is_counter_event != track.is_counter) {
      return PacketError(index) << type << " on " << (track.is_counter ? "counter" : "slice")
                                << " track " << ev.track_uuid();
    }
    switch (ev.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN:
      case pb::TrackEvent::TYPE_INSTANT:
        if (!ev.has_name_iid() && ev.name().empty()) {
          return PacketError(index) << type << " without a name";
        }
        if (ev.category_iids_size() == 0 && ev.categories_size() == 0) {
          return PacketError(index) << type << " without a category";
        }
        if (ev.type() == pb::TrackEvent::TYPE_SLICE_BEGIN) ++track.open_slices;
        break;
      case pb::TrackEvent::TYPE_SLICE_END:
        if (track.open_slices == 0) {
          return PacketError(index)
                 << "SLICE_END on track " << ev.track_uuid() << " with no open slice";
        }
        --track.open_slices;
        break;
      default:
        if (ev.counter_value_field_case() == pb::TrackEvent::COUNTER_VALUE_FIELD_NOT_SET) {
          return PacketError(index) << "COUNTER without a value";
        }
    }
    for (uint64_t flow : ev.flow_ids()) ++flow_endpoints_[flow];
    for (uint64_t flow : ev.terminating_flow_ids()) ++flow_endpoints_[flow];
    return sim::Status::Ok();
  }

  std::map<uint32_t, SequenceState> sequences_;
  std::map<uint64_t, PerfettoTrack> tracks_;
  std::map<uint64_t, int> flow_endpoints_;
};

// ---- Chrome JSON ------------------------------------------------------------------------------

using Json = nlohmann::json;

class EventError {
 public:
  EventError(size_t index, const std::string& ph) {
    stream_ << "chrome json event " << index;
    if (!ph.empty()) stream_ << " (ph '" << ph << "')";
    stream_ << ": ";
  }
  template <typename T>
  EventError& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  operator sim::Status() const { return sim::Status::ParseError(stream_.str()); }  // NOLINT

 private:
  std::ostringstream stream_;
};

struct OpenJsonSlice {
  std::string name, cat;
  double ts;
};

struct JsonTrack {
  std::vector<OpenJsonSlice> open;  // B slices, innermost last.
  double last_ts = -1;
  std::vector<int64_t>
      x_ends_ns;  // Ends of the X slices enclosing the current time, innermost last.
  // The slice (B or X) that started last: flows bind to it.
  int64_t last_start_ns = -1;
  std::string last_start_cat;
};

// Microseconds as written (3 decimals) to integer nanoseconds, so comparisons are exact.
int64_t JsonNanoseconds(double us) { return std::llround(us * 1000); }

bool IsNonEmptyString(const Json& event, const char* key) {
  auto it = event.find(key);
  return it != event.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

bool IsInteger(const Json& event, const char* key) {
  auto it = event.find(key);
  return it != event.end() && (it->is_number_integer() || it->is_number_unsigned());
}

class ChromeLinter {
 public:
  sim::Status Event(size_t i, const Json& event) {
    if (!event.is_object()) return EventError(i, "") << "not an object";
    if (!IsNonEmptyString(event, "ph") || event["ph"].get_ref<const std::string&>().size() != 1) {
      return EventError(i, "") << "missing or malformed ph";
    }
    const std::string& ph = event["ph"].get_ref<const std::string&>();
    static const std::string kKnown = "BEXiICstfM";
    if (kKnown.find(ph[0]) == std::string::npos) {
      return EventError(i, ph) << "unsupported phase";
    }
    char phase = ph[0];
    if (!IsNonEmptyString(event, "name")) return EventError(i, ph) << "missing name";
    if (!IsInteger(event, "pid")) return EventError(i, ph) << "missing integer pid";
    const std::string& name = event["name"].get_ref<const std::string&>();
    int64_t pid = event["pid"].get<int64_t>();
    if (phase == 'M') return Metadata(i, ph, event, name, pid);

    auto ts_it = event.find("ts");
    if (ts_it == event.end() || !ts_it->is_number()) return EventError(i, ph) << "missing ts";
    double ts = ts_it->get<double>();
    if (ts < 1.0) return EventError(i, ph) << "ts " << ts << " us is below 1 us";
    if (!process_names_.count(pid)) {
      return EventError(i, ph) << "pid " << pid << " has no process_name metadata before use";
    }
    if (phase == 'C') {
      auto args = event.find("args");
      if (args == event.end() || !args->is_object() || args->empty()) {
        return EventError(i, ph) << "counter without args";
      }
      for (const auto& [key, value] : args->items()) {
        if (!value.is_number())
          return EventError(i, ph) << "counter series '" << key << "' is not a number";
      }
      double& last = counter_last_ts_[{pid, name}];
      if (ts < last) {
        return EventError(i, ph) << "counter '" << name << "' at " << ts << " us, before " << last
                                 << " us";
      }
      last = ts;
      return sim::Status::Ok();
    }

    if (!IsNonEmptyString(event, "cat")) return EventError(i, ph) << "missing cat";
    if (!IsInteger(event, "tid")) return EventError(i, ph) << "missing integer tid";
    const std::string& cat = event["cat"].get_ref<const std::string&>();
    int64_t tid = event["tid"].get<int64_t>();
    if (!thread_names_.count({pid, tid})) {
      return EventError(i, ph) << "pid " << pid << " tid " << tid
                               << " has no thread_name metadata before use";
    }
    JsonTrack& track = tracks_[{pid, tid}];
    if (ts < track.last_ts) {
      return EventError(i, ph) << "ts " << ts << " us on pid " << pid << " tid " << tid
                               << " is before the previous " << track.last_ts << " us";
    }
    track.last_ts = ts;

    switch (phase) {
      case 'B':
        track.open.push_back(OpenJsonSlice{name, cat, ts});
        open_begins_.emplace_back(pid, tid);
        track.last_start_ns = JsonNanoseconds(ts);
        track.last_start_cat = cat;
        break;
      case 'E': {
        if (track.open.empty()) {
          return EventError(i, ph)
                 << "E '" << name << "' on pid " << pid << " tid " << tid << " with no open slice";
        }
        const OpenJsonSlice& open = track.open.back();
        if (open.name != name || open.cat != cat) {
          return EventError(i, ph) << "E '" << name << "' (cat '" << cat << "') does not match B '"
                                   << open.name << "' (cat '" << open.cat << "')";
        }
        // DevTools pairs B and E with one stack for the whole file (RendererHandler
        // makeCompleteEvent), so the last B still open anywhere must be this track's.
        if (open_begins_.back() != std::make_pair(pid, tid)) {
          return EventError(i, ph)
                 << "E '" << name << "' on pid " << pid << " tid " << tid << " while a B on pid "
                 << open_begins_.back().first << " tid " << open_begins_.back().second
                 << " is open after it in file order (DevTools pairs B/E "
                    "across all threads with one stack)";
        }
        open_begins_.pop_back();
        track.open.pop_back();
        break;
      }
      case 'X': {
        auto dur = event.find("dur");
        if (dur == event.end() || !dur->is_number() || dur->get<double>() < 0) {
          return EventError(i, ph) << "X without dur >= 0";
        }
        const int64_t begin = JsonNanoseconds(ts);
        const int64_t end = begin + JsonNanoseconds(dur->get<double>());
        while (!track.x_ends_ns.empty() && track.x_ends_ns.back() <= begin) {
          track.x_ends_ns.pop_back();
        }
        if (!track.x_ends_ns.empty() && end > track.x_ends_ns.back()) {
          return EventError(i, ph)
                 << "X '" << name << "' on pid " << pid << " tid " << tid << " ends at "
                 << end / 1000.0 << " us, after the slice enclosing it ("
                 << track.x_ends_ns.back() / 1000.0 << " us); slices must nest per thread";
        }
        track.x_ends_ns.push_back(end);
        track.last_start_ns = begin;
        track.last_start_cat = cat;
        break;
      }
      case 'i':
      case 'I': {
        auto scope = event.find("s");
        if (scope != event.end() &&
            !(scope->is_string() && (*scope == "g" || *scope == "p" || *scope == "t"))) {
          return EventError(i, ph) << "instant scope must be g, p or t";
        }
        break;
      }
      default:  // s, t, f
        return Flow(i, ph, event, name, cat, ts, track);
    }
    return sim::Status::Ok();
  }

  sim::Status End() {
    for (const auto& [key, track] : tracks_) {
      if (!track.open.empty()) {
        return sim::Status::ParseError(
            "chrome json end of trace: slice '" + track.open.back().name + "' on pid " +
            std::to_string(key.first) + " tid " + std::to_string(key.second) + " never ends");
      }
    }
    for (const auto& [key, counts] : flows_) {
      if (counts.first != 1 || counts.second < 1) {
        return sim::Status::ParseError(
            "chrome json end of trace: flow '" + std::get<1>(key) + "' id " + std::get<2>(key) +
            " (cat '" + std::get<0>(key) + "') has " + std::to_string(counts.first) + " s and " +
            std::to_string(counts.second) + " f events (needs exactly 1 and >= 1)");
      }
    }
    return sim::Status::Ok();
  }

 private:
  sim::Status Metadata(size_t i, const std::string& ph, const Json& event, const std::string& name,
                       int64_t pid) {
    auto args = event.find("args");
    bool is_name = name == "process_name" || name == "thread_name";
    bool is_sort = name == "process_sort_index" || name == "thread_sort_index";
    if (!is_name && !is_sort) return EventError(i, ph) << "unsupported metadata '" << name << "'";
    if (args == event.end() || !args->is_object()) {
      return EventError(i, ph) << name << " without args";
    }
    if (is_name && !IsNonEmptyString(*args, "name")) {
      return EventError(i, ph) << name << " without a non-empty args.name";
    }
    if (is_sort && !IsInteger(*args, "sort_index")) {
      return EventError(i, ph) << name << " without an integer args.sort_index";
    }
    if (name.starts_with("thread")) {
      if (!IsInteger(event, "tid")) return EventError(i, ph) << name << " without integer tid";
      if (name == "thread_name") thread_names_.insert({pid, event["tid"].get<int64_t>()});
    } else if (name == "process_name") {
      process_names_.insert(pid);
    }
    return sim::Status::Ok();
  }

  sim::Status Flow(size_t i, const std::string& ph, const Json& event, const std::string& name,
                   const std::string& cat, double ts, const JsonTrack& track) {
    auto id = event.find("id");
    if (id == event.end() ||
        !(id->is_number_integer() || id->is_number_unsigned() || id->is_string())) {
      return EventError(i, ph) << "flow without id";
    }
    if (ph == "f") {
      auto bp = event.find("bp");
      if (bp == event.end() || *bp != "e") {
        return EventError(i, ph) << "f without \"bp\":\"e\" (needed to bind to its slice)";
      }
    }
    if (track.last_start_ns != JsonNanoseconds(ts) || track.last_start_cat != cat) {
      return EventError(i, ph) << "flow " << id->dump() << " at " << ts << " us (cat '" << cat
                               << "') does not bind to a slice starting then with that cat";
    }
    std::pair<int, int>& counts = flows_[{cat, name, id->dump()}];
    if (ph == "s") {
      ++counts.first;
    } else if (ph == "f") {
      if (counts.first == 0) {
        return EventError(i, ph) << "flow " << id->dump() << " ends before it starts";
      }
      ++counts.second;
    }
    return sim::Status::Ok();
  }

  std::set<int64_t> process_names_;
  std::set<std::pair<int64_t, int64_t>> thread_names_;
  std::map<std::pair<int64_t, int64_t>, JsonTrack> tracks_;
  std::vector<std::pair<int64_t, int64_t>>
      open_begins_;  // (pid, tid) of open B events, file order.
  std::map<std::pair<int64_t, std::string>, double> counter_last_ts_;
  // (cat, name, id) -> (number of s, number of f).
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<int, int>> flows_;
};

}  // namespace

sim::Status LintPerfetto(std::string_view bytes) {
  PerfettoLinter linter;
  pb::TracePacket packet;
  size_t pos = 0;
  for (size_t index = 0; pos < bytes.size(); ++index) {
    uint64_t tag = 0, length = 0;
    if (!ReadVarint(bytes, &pos, &tag)) return PacketError(index) << "truncated field tag";
    if (tag != 0x0A) {
      return PacketError(index) << "top-level field " << (tag >> 3) << " (wire type " << (tag & 7)
                                << ") is not Trace.packet";
    }
    if (!ReadVarint(bytes, &pos, &length) || length > bytes.size() - pos) {
      return PacketError(index) << "truncated packet";
    }
    if (!packet.ParseFromArray(bytes.data() + pos, static_cast<int>(length))) {
      return PacketError(index) << "does not parse as TracePacket";
    }
    pos += length;
    PODSIM_RETURN_IF_ERROR(linter.Packet(index, packet));
  }
  return linter.End();
}

sim::Status LintChromeJson(std::string_view text) {
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return sim::Status::ParseError("chrome json: not valid JSON");
  const Json* events = &root;
  if (root.is_object()) {
    auto it = root.find("traceEvents");
    if (it == root.end() || !it->is_array()) {
      return sim::Status::ParseError("chrome json: object without a traceEvents array");
    }
    events = &*it;
  } else if (!root.is_array()) {
    return sim::Status::ParseError("chrome json: neither an object nor an array");
  }
  ChromeLinter linter;
  for (size_t i = 0; i < events->size(); ++i) {
    PODSIM_RETURN_IF_ERROR(linter.Event(i, (*events)[i]));
  }
  return linter.End();
}

}  // namespace podsim::traces
