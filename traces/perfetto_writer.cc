#include "traces/perfetto_writer.h"

#include <ostream>
#include <type_traits>
#include <variant>

#include "perfetto_min.pb.h"
#include "sim/check.h"

namespace podsim::traces {

namespace {

namespace pb = ::perfetto::protos;

enum InternKind { kEventName, kEventCategory, kAnnotationName };

constexpr uint32_t kClearedAndNeeds =
    pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED | pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE;

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

}  // namespace

PerfettoWriter::PerfettoWriter(std::ostream* out, uint32_t sequence_id)
    : out_(out), sequence_id_(sequence_id), packet_(std::make_unique<pb::TracePacket>()) {
  PODSIM_CHECK(out_ != nullptr) << "PerfettoWriter needs a stream";
  PODSIM_CHECK(sequence_id_ != 0) << "trusted_packet_sequence_id must be non-zero";
}

PerfettoWriter::~PerfettoWriter() = default;

ProcessId PerfettoWriter::AddProcess(std::string_view name, int32_t sort_index) {
  ProcessId id = registry_.AddProcess(name);
  uint64_t uuid = next_uuid_++;
  process_uuids_.push_back(uuid);
  packet_->Clear();
  pb::TrackDescriptor* desc = packet_->mutable_track_descriptor();
  desc->set_uuid(uuid);
  desc->mutable_process()->set_pid(static_cast<int32_t>(id.index + 1));
  desc->mutable_process()->set_process_name(std::string(name));
  desc->mutable_process()->set_legacy_sort_index(sort_index);
  desc->set_child_ordering(pb::TrackDescriptor::EXPLICIT);
  WritePacket();
  return id;
}

TrackId PerfettoWriter::AddTrack(ProcessId process, std::string_view name) {
  return AddChildTrack(process, name, std::nullopt);
}

TrackId PerfettoWriter::AddCounterTrack(ProcessId process, std::string_view name,
                                        CounterUnit unit) {
  return AddChildTrack(process, name, unit);
}

TrackId PerfettoWriter::AddChildTrack(ProcessId process, std::string_view name,
                                      std::optional<CounterUnit> unit) {
  TrackId id = registry_.AddTrack(process, name, unit);
  uint64_t uuid = next_uuid_++;
  track_uuids_.push_back(uuid);
  packet_->Clear();
  pb::TrackDescriptor* desc = packet_->mutable_track_descriptor();
  desc->set_uuid(uuid);
  desc->set_parent_uuid(process_uuids_[process.index]);
  desc->set_name(std::string(name));
  desc->set_sibling_order_rank(static_cast<int32_t>(registry_.track(id).rank));
  desc->set_sibling_merge_behavior(pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
  if (unit.has_value()) {
    pb::CounterDescriptor* counter = desc->mutable_counter();
    switch (*unit) {
      case CounterUnit::kCount:
        counter->set_unit(pb::CounterDescriptor::UNIT_COUNT);
        break;
      case CounterUnit::kBytes:
        counter->set_unit(pb::CounterDescriptor::UNIT_SIZE_BYTES);
        break;
      case CounterUnit::kBytesPerSecond:
        counter->set_unit_name("B/s");
        break;
      case CounterUnit::kFraction:
        counter->set_unit_name("fraction");
        break;
    }
  }
  WritePacket();
  return id;
}

void PerfettoWriter::BeginSlice(TrackId track, sim::Time time, const EventSpec& event) {
  registry_.Begin(track, time, event);
  StartEventPacket(track, time);
  pb::TrackEvent* ev = packet_->mutable_track_event();
  ev->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
  FillEvent(event);
  for (uint64_t flow : event.flows_out) ev->add_flow_ids(flow);
  for (uint64_t flow : event.flows_in) ev->add_terminating_flow_ids(flow);
  WritePacket();
}

void PerfettoWriter::EndSlice(TrackId track, sim::Time time) {
  registry_.End(track, time);
  StartEventPacket(track, time);
  packet_->mutable_track_event()->set_type(pb::TrackEvent::TYPE_SLICE_END);
  WritePacket();
}

void PerfettoWriter::Instant(TrackId track, sim::Time time, const EventSpec& event) {
  registry_.Instant(track, time, event);
  StartEventPacket(track, time);
  packet_->mutable_track_event()->set_type(pb::TrackEvent::TYPE_INSTANT);
  FillEvent(event);
  WritePacket();
}

void PerfettoWriter::SetCounter(TrackId track, sim::Time time, double value) {
  registry_.Counter(track, time, value);
  StartEventPacket(track, time);
  pb::TrackEvent* ev = packet_->mutable_track_event();
  ev->set_type(pb::TrackEvent::TYPE_COUNTER);
  ev->set_double_counter_value(value);
  WritePacket();
}

sim::Status PerfettoWriter::Close() {
  registry_.Close();
  out_->flush();
  if (!*out_) return sim::Status::IoError("writing the Perfetto trace failed");
  return sim::Status::Ok();
}

void PerfettoWriter::StartEventPacket(TrackId track, sim::Time time) {
  packet_->Clear();
  packet_->set_timestamp(static_cast<uint64_t>(TraceNanoseconds(time)));
  packet_->mutable_track_event()->set_track_uuid(track_uuids_[track.index]);
}

void PerfettoWriter::FillEvent(const EventSpec& event) {
  pb::TrackEvent* ev = packet_->mutable_track_event();
  ev->add_category_iids(Intern(categories_, event.category, kEventCategory));
  ev->set_name_iid(Intern(names_, event.name, kEventName));
  for (const Arg& arg : event.args) {
    pb::DebugAnnotation* annotation = ev->add_debug_annotations();
    annotation->set_name_iid(Intern(arg_names_, arg.key, kAnnotationName));
    std::visit(
        [annotation](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            annotation->set_int_value(v);
          } else if constexpr (std::is_same_v<T, uint64_t>) {
            annotation->set_uint_value(v);
          } else if constexpr (std::is_same_v<T, double>) {
            annotation->set_double_value(v);
          } else if constexpr (std::is_same_v<T, bool>) {
            annotation->set_bool_value(v);
          } else {
            annotation->set_string_value(std::string(v));
          }
        },
        arg.value);
  }
}

uint64_t PerfettoWriter::Intern(InternTable& table, std::string_view name, int kind) {
  packet_uses_iids_ = true;
  auto it = table.find(name);
  if (it != table.end()) return it->second;
  uint64_t iid = table.size() + 1;
  table.emplace(std::string(name), iid);
  pb::InternedData* interned = packet_->mutable_interned_data();
  switch (kind) {
    case kEventName: {
      pb::EventName* entry = interned->add_event_names();
      entry->set_iid(iid);
      entry->set_name(std::string(name));
      break;
    }
    case kEventCategory: {
      pb::EventCategory* entry = interned->add_event_categories();
      entry->set_iid(iid);
      entry->set_name(std::string(name));
      break;
    }
    default: {
      pb::DebugAnnotationName* entry = interned->add_debug_annotation_names();
      entry->set_iid(iid);
      entry->set_name(std::string(name));
      break;
    }
  }
  return iid;
}

void PerfettoWriter::WritePacket() {
  packet_->set_trusted_packet_sequence_id(sequence_id_);
  uint32_t flags = 0;
  if (first_packet_) flags = kClearedAndNeeds;
  if (packet_uses_iids_) flags |= pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE;
  if (flags != 0) packet_->set_sequence_flags(flags);
  first_packet_ = false;
  packet_uses_iids_ = false;

  buffer_.clear();
  buffer_.push_back(0x0A);  // Trace.packet: field 1, wire type 2 (length-delimited).
  AppendVarint(packet_->ByteSizeLong(), &buffer_);
  size_t header = buffer_.size();
  buffer_.resize(header + packet_->GetCachedSize());
  packet_->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(buffer_.data() + header));
  out_->write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
}

}  // namespace podsim::traces
