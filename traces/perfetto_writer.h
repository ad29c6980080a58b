// PerfettoWriter: a TraceSink that streams Perfetto's native protobuf trace format (.pftrace),
// readable by ui.perfetto.dev and trace_processor.
//
// Format (../docs and docs/reference/traces.md 1b): the file is a `perfetto.protos.Trace`
// written one `packet` field at a time (0x0A <varint length> <TracePacket>), so memory does not
// grow with the trace. The schema is our own wire-compatible subset, traces/perfetto_min.proto.
//  - One writer is one packet sequence: every packet carries trusted_packet_sequence_id (non-zero,
//    default 1); the first packet sets SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
//    and every packet that uses an interned id sets SEQ_NEEDS_INCREMENTAL_STATE.
//  - Event names, categories and argument names are interned (iids from 1, per table) in the
//    packet that first uses them.
//  - Each process is a root TrackDescriptor with a ProcessDescriptor (pid = declaration order + 1,
//    legacy_sort_index = the sort_index given, children in EXPLICIT order); each track is a child
//    TrackDescriptor (parent_uuid = its process, sibling_order_rank = declaration order,
//    sibling_merge_behavior NONE so same-name tracks of different chips never merge). Descriptors
//    are written when declared, so always before use. Uuids are 1, 2, 3... in declaration order.
//  - Slices are SLICE_BEGIN/SLICE_END, instants INSTANT, counters COUNTER with
//    double_counter_value; args become debug annotations; flows use flow_ids on the source slice
//    and terminating_flow_ids on the destination slice.
//  - Timestamps are nanoseconds of simulated time (TraceNanoseconds: ps rounded half up), in the
//    default BOOTTIME clock domain, with no offset.

#ifndef PODSIM_TRACES_PERFETTO_WRITER_H_
#define PODSIM_TRACES_PERFETTO_WRITER_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace_sink.h"
#include "traces/track_registry.h"

namespace perfetto::protos {
class TracePacket;
}  // namespace perfetto::protos

namespace podsim::traces {

class PerfettoWriter final : public TraceSink {
 public:
  // Writes to `*out`, which must outlive the writer and is not closed by it.
  // REQUIRES: sequence_id != 0.
  explicit PerfettoWriter(std::ostream* out, uint32_t sequence_id = 1);
  ~PerfettoWriter() override;

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
  using InternTable = std::map<std::string, uint64_t, std::less<>>;

  TrackId AddChildTrack(ProcessId process, std::string_view name, std::optional<CounterUnit> unit);
  // Starts a track-event packet at `time` on `track` in packet_ (cleared first).
  void StartEventPacket(TrackId track, sim::Time time);
  // Fills name, category and args of the event in packet_, interning strings as needed.
  void FillEvent(const EventSpec& event);
  // Returns the iid of `name` in `table`; a new one is added to the packet's interned data.
  uint64_t Intern(InternTable& table, std::string_view name, int kind);
  // Appends packet_ to the stream as one `Trace.packet` field.
  void WritePacket();

  std::ostream* out_;
  uint32_t sequence_id_;
  TrackRegistry registry_;
  std::unique_ptr<perfetto::protos::TracePacket> packet_;  // Reused to avoid reallocations.
  std::string buffer_;
  bool first_packet_ = true;
  bool packet_uses_iids_ = false;
  uint64_t next_uuid_ = 1;
  std::vector<uint64_t> process_uuids_;
  std::vector<uint64_t> track_uuids_;
  InternTable names_;
  InternTable categories_;
  InternTable arg_names_;
};

}  // namespace podsim::traces

#endif  // PODSIM_TRACES_PERFETTO_WRITER_H_
