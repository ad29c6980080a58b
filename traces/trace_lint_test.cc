// The lints must be able to fail: each hand-made broken trace is rejected with its exact message.

#include "traces/trace_lint.h"

#include <gtest/gtest.h>

#include <string>

#include "perfetto_min.pb.h"

namespace podsim::traces {
namespace {

namespace pb = ::perfetto::protos;

// ---- Perfetto ---------------------------------------------------------------------------------

class PerfettoTraceBuilder {
 public:
  PerfettoTraceBuilder() {
    pb::TracePacket* first = Packet();
    first->set_sequence_flags(3);
    first->mutable_track_descriptor()->set_uuid(1);
    first->mutable_track_descriptor()->mutable_process()->set_pid(1);
    first->mutable_track_descriptor()->mutable_process()->set_process_name("chip0");
    pb::TracePacket* track = Packet();
    track->mutable_track_descriptor()->set_uuid(2);
    track->mutable_track_descriptor()->set_parent_uuid(1);
    track->mutable_track_descriptor()->set_name("compute");
  }

  pb::TracePacket* Packet() {
    pb::TracePacket* packet = trace_.add_packet();
    packet->set_trusted_packet_sequence_id(1);
    return packet;
  }
  pb::TracePacket* Event(uint64_t track, uint64_t ts, pb::TrackEvent::Type type) {
    pb::TracePacket* packet = Packet();
    packet->set_timestamp(ts);
    packet->mutable_track_event()->set_track_uuid(track);
    packet->mutable_track_event()->set_type(type);
    if (type == pb::TrackEvent::TYPE_SLICE_BEGIN) {
      packet->mutable_track_event()->set_name("mm");
      packet->mutable_track_event()->add_categories("compute");
    }
    return packet;
  }
  std::string Bytes() const { return trace_.SerializeAsString(); }

 private:
  pb::Trace trace_;
};

TEST(LintPerfettoTest, AcceptsAWellFormedTrace) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN);
  trace.Event(2, 20, pb::TrackEvent::TYPE_SLICE_END);
  EXPECT_EQ(LintPerfetto(trace.Bytes()), sim::Status::Ok());
}

TEST(LintPerfettoTest, RejectsUnbalancedEnd) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_END);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: SLICE_END on track 2 with no open slice");
}

TEST(LintPerfettoTest, RejectsUnclosedSlice) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto end of trace: track 2 has 1 open slice(s)");
}

TEST(LintPerfettoTest, RejectsUndeclaredTrack) {
  PerfettoTraceBuilder trace;
  trace.Event(9, 10, pb::TrackEvent::TYPE_SLICE_BEGIN);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: track_event on undeclared track 9");
}

TEST(LintPerfettoTest, RejectsFlowWithOneEnd) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN)->mutable_track_event()->add_flow_ids(42);
  trace.Event(2, 20, pb::TrackEvent::TYPE_SLICE_END);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto end of trace: flow 42 has 1 endpoint (needs >= 2)");
}

TEST(LintPerfettoTest, RejectsDecreasingTime) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 100, pb::TrackEvent::TYPE_SLICE_BEGIN);
  trace.Event(2, 50, pb::TrackEvent::TYPE_SLICE_END);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 3: SLICE_END on track 2 at 50 ns, before 100 ns");
}

TEST(LintPerfettoTest, RejectsZeroSequenceId) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN)->set_trusted_packet_sequence_id(0);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: trusted_packet_sequence_id is missing or zero");
}

TEST(LintPerfettoTest, RejectsFirstPacketThatDoesNotClearState) {
  pb::Trace trace;
  pb::TracePacket* packet = trace.add_packet();
  packet->set_trusted_packet_sequence_id(5);
  packet->mutable_track_descriptor()->set_uuid(1);
  packet->mutable_track_descriptor()->set_name("t");
  EXPECT_EQ(LintPerfetto(trace.SerializeAsString()).message(),
            "perfetto packet 0: first packet of sequence 5 does not set "
            "SEQ_INCREMENTAL_STATE_CLEARED");
}

TEST(LintPerfettoTest, RejectsUnresolvedIid) {
  PerfettoTraceBuilder trace;
  pb::TracePacket* packet = trace.Event(2, 10, pb::TrackEvent::TYPE_INSTANT);
  packet->set_sequence_flags(2);
  packet->mutable_track_event()->set_name_iid(4);
  packet->mutable_track_event()->add_categories("compute");
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: name iid 4 does not resolve");
}

TEST(LintPerfettoTest, RejectsIidWithoutNeedsIncrementalState) {
  PerfettoTraceBuilder trace;
  pb::TracePacket* packet = trace.Event(2, 10, pb::TrackEvent::TYPE_INSTANT);
  pb::EventName* name = packet->mutable_interned_data()->add_event_names();
  name->set_iid(1);
  name->set_name("x");
  packet->mutable_track_event()->set_name_iid(1);
  packet->mutable_track_event()->add_categories("compute");
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: uses name iid 1 without SEQ_NEEDS_INCREMENTAL_STATE");
}

TEST(LintPerfettoTest, RejectsCounterOnSliceTrack) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_COUNTER)->mutable_track_event()->set_counter_value(1);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(), "perfetto packet 2: COUNTER on slice track 2");
}

TEST(LintPerfettoTest, RejectsSliceWithoutCategory) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN)->mutable_track_event()->clear_categories();
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: SLICE_BEGIN without a category");
}

TEST(LintPerfettoTest, RejectsUndeclaredParent) {
  PerfettoTraceBuilder trace;
  pb::TrackDescriptor* desc = trace.Packet()->mutable_track_descriptor();
  desc->set_uuid(3);
  desc->set_parent_uuid(77);
  desc->set_name("orphan");
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: track 3 has undeclared parent 77");
}

TEST(LintPerfettoTest, RejectsUnknownFields) {
  PerfettoTraceBuilder trace;
  pb::TracePacket* packet = trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN);
  // Field 999 (varint 1) inside the track event, as a writer with a wrong field number would emit.
  packet->mutable_track_event()
      ->GetReflection()
      ->MutableUnknownFields(packet->mutable_track_event())
      ->AddVarint(999, 1);
  EXPECT_EQ(LintPerfetto(trace.Bytes()).message(),
            "perfetto packet 2: unknown field in TracePacket.track_event (field 999)");
}

TEST(LintPerfettoTest, RejectsTruncatedFile) {
  PerfettoTraceBuilder trace;
  trace.Event(2, 10, pb::TrackEvent::TYPE_SLICE_BEGIN);
  std::string bytes = trace.Bytes();
  bytes.pop_back();
  EXPECT_EQ(LintPerfetto(bytes).message(), "perfetto packet 2: truncated packet");
}

// ---- Chrome JSON ------------------------------------------------------------------------------

// Metadata naming pid 1 and its thread 1, then `events`.
std::string ChromeTrace(const std::string& events) {
  std::string trace = R"({"traceEvents":[
{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"chip0"}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"comm"}})";
  // Appended rather than concatenated with +: GCC 12 -O3 warns falsely (-Wrestrict) on that.
  trace.append(events);
  trace.append("]}");
  return trace;
}

TEST(LintChromeJsonTest, AcceptsAWellFormedTrace) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1},
{"name":"flow","cat":"c","ph":"s","ts":1.0,"pid":1,"tid":1,"id":3},
{"name":"a","cat":"c","ph":"E","ts":2.0,"pid":1,"tid":1},
{"name":"b","cat":"c","ph":"B","ts":2.5,"pid":1,"tid":1},
{"name":"flow","cat":"c","ph":"f","ts":2.5,"pid":1,"tid":1,"id":3,"bp":"e"},
{"name":"b","cat":"c","ph":"E","ts":3.0,"pid":1,"tid":1},
{"name":"HBM","ph":"C","ts":1.0,"pid":1,"args":{"bytes":5}})")),
            sim::Status::Ok());
}

TEST(LintChromeJsonTest, AcceptsNestedCompleteEventsAndTheirFlows) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"X","ts":1.0,"pid":1,"tid":1,"dur":3.0},
{"name":"b","cat":"c","ph":"X","ts":1.5,"pid":1,"tid":1,"dur":1.0},
{"name":"flow","cat":"c","ph":"s","ts":1.5,"pid":1,"tid":1,"id":3},
{"name":"d","cat":"c","ph":"X","ts":4.0,"pid":1,"tid":1,"dur":0.5},
{"name":"flow","cat":"c","ph":"f","ts":4.0,"pid":1,"tid":1,"id":3,"bp":"e"})")),
            sim::Status::Ok());
}

TEST(LintChromeJsonTest, RejectsPartiallyOverlappingCompleteEvents) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"X","ts":1.0,"pid":1,"tid":1,"dur":3.0},
{"name":"b","cat":"c","ph":"X","ts":2.0,"pid":1,"tid":1,"dur":2.5})"))
                .message(),
            "chrome json event 3 (ph 'X'): X 'b' on pid 1 tid 1 ends at 4.5 us, after the slice "
            "enclosing it (4 us); slices must nest per thread");
}

// DevTools pairs B/E across all threads with one stack: interleaved pairs of two threads are
// dropped there although each thread is balanced.
TEST(LintChromeJsonTest, RejectsBeginEndInterleavedAcrossThreads) {
  EXPECT_EQ(LintChromeJson(R"({"traceEvents":[
{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"chip0"}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"a"}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":2,"args":{"name":"b"}},
{"name":"x","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1},
{"name":"y","cat":"c","ph":"B","ts":1.5,"pid":1,"tid":2},
{"name":"x","cat":"c","ph":"E","ts":2.0,"pid":1,"tid":1},
{"name":"y","cat":"c","ph":"E","ts":2.5,"pid":1,"tid":2}]})")
                .message(),
            "chrome json event 5 (ph 'E'): E 'x' on pid 1 tid 1 while a B on pid 1 tid 2 is open "
            "after it in file order (DevTools pairs B/E across all threads with one stack)");
}

TEST(LintChromeJsonTest, RejectsUnbalancedEnd) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"E","ts":2.0,"pid":1,"tid":1})"))
                .message(),
            "chrome json event 2 (ph 'E'): E 'a' on pid 1 tid 1 with no open slice");
}

TEST(LintChromeJsonTest, RejectsEndWithAnotherName) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1},
{"name":"b","cat":"c","ph":"E","ts":2.0,"pid":1,"tid":1})"))
                .message(),
            "chrome json event 3 (ph 'E'): E 'b' (cat 'c') does not match B 'a' (cat 'c')");
}

TEST(LintChromeJsonTest, RejectsUndeclaredTrack) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":2})"))
                .message(),
            "chrome json event 2 (ph 'B'): pid 1 tid 2 has no thread_name metadata before use");
}

TEST(LintChromeJsonTest, RejectsFlowWithOneEnd) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1},
{"name":"flow","cat":"c","ph":"s","ts":1.0,"pid":1,"tid":1,"id":3},
{"name":"a","cat":"c","ph":"E","ts":2.0,"pid":1,"tid":1})"))
                .message(),
            "chrome json end of trace: flow 'flow' id 3 (cat 'c') has 1 s and 0 f events "
            "(needs exactly 1 and >= 1)");
}

TEST(LintChromeJsonTest, RejectsFlowNotBoundToItsSlice) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1},
{"name":"flow","cat":"other","ph":"s","ts":1.0,"pid":1,"tid":1,"id":3})"))
                .message(),
            "chrome json event 3 (ph 's'): flow 3 at 1 us (cat 'other') does not bind to a slice "
            "starting then with that cat");
}

TEST(LintChromeJsonTest, RejectsDecreasingTime) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":5.0,"pid":1,"tid":1},
{"name":"a","cat":"c","ph":"E","ts":4.0,"pid":1,"tid":1})"))
                .message(),
            "chrome json event 3 (ph 'E'): ts 4 us on pid 1 tid 1 is before the previous 5 us");
}

TEST(LintChromeJsonTest, RejectsTimestampsBelowOneMicrosecond) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"i","ts":0,"pid":1,"tid":1})"))
                .message(),
            "chrome json event 2 (ph 'i'): ts 0 us is below 1 us");
}

TEST(LintChromeJsonTest, RejectsMissingCategoryAndName) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","ph":"B","ts":1.0,"pid":1,"tid":1})"))
                .message(),
            "chrome json event 2 (ph 'B'): missing cat");
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1})"))
                .message(),
            "chrome json event 2 (ph 'B'): missing name");
}

TEST(LintChromeJsonTest, RejectsFinishWithoutBindingPoint) {
  EXPECT_EQ(LintChromeJson(ChromeTrace(R"(,
{"name":"a","cat":"c","ph":"B","ts":1.0,"pid":1,"tid":1},
{"name":"flow","cat":"c","ph":"f","ts":1.0,"pid":1,"tid":1,"id":3})"))
                .message(),
            "chrome json event 3 (ph 'f'): f without \"bp\":\"e\" (needed to bind to its slice)");
}

TEST(LintChromeJsonTest, RejectsInvalidJsonAndUnnamedProcess) {
  EXPECT_EQ(LintChromeJson("{\"traceEvents\":[").message(), "chrome json: not valid JSON");
  EXPECT_EQ(LintChromeJson(R"([{"name":"a","cat":"c","ph":"B","ts":1,"pid":4,"tid":1}])").message(),
            "chrome json event 0 (ph 'B'): pid 4 has no process_name metadata before use");
}

}  // namespace
}  // namespace podsim::traces
