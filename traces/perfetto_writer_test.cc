#include "traces/perfetto_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "perfetto_min.pb.h"
#include "traces/trace_lint.h"
#include "traces/trace_test_util.h"

namespace podsim::traces {
namespace {

namespace pb = ::perfetto::protos;

std::string WriteScenario(testing::ScenarioCounts* counts = nullptr, int layers = 3) {
  std::ostringstream out;
  PerfettoWriter writer(&out);
  testing::ScenarioCounts c = testing::WriteSyntheticScenario(&writer, layers);
  EXPECT_TRUE(writer.Close().ok());
  if (counts != nullptr) *counts = c;
  return out.str();
}

TEST(PerfettoWriterTest, SyntheticScenarioPassesLint) {
  std::string bytes = WriteScenario();
  sim::Status lint = LintPerfetto(bytes);
  EXPECT_TRUE(lint.ok()) << lint;
}

TEST(PerfettoWriterTest, FollowsSequenceDescriptorAndInterningRules) {
  testing::ScenarioCounts counts;
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(WriteScenario(&counts)));
  ASSERT_GT(trace.packet_size(), 0);
  EXPECT_EQ(trace.packet(0).sequence_flags(), 3u);  // Cleared + needs.

  std::set<uint64_t> declared;
  int processes = 0, begins = 0, ends = 0, instants = 0, counters = 0, flow_out = 0, flow_in = 0;
  int interned_names = 0;
  for (const pb::TracePacket& packet : trace.packet()) {
    EXPECT_EQ(packet.trusted_packet_sequence_id(), 1u);
    interned_names += packet.interned_data().event_names_size();
    if (packet.has_track_descriptor()) {
      const pb::TrackDescriptor& desc = packet.track_descriptor();
      declared.insert(desc.uuid());
      if (desc.has_process()) {
        ++processes;
        EXPECT_EQ(desc.process().pid(), processes);
        EXPECT_FALSE(desc.has_parent_uuid());
      } else {
        EXPECT_TRUE(declared.count(desc.parent_uuid()));
        EXPECT_EQ(desc.sibling_merge_behavior(), pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_NONE);
      }
    }
    if (!packet.has_track_event()) continue;
    const pb::TrackEvent& ev = packet.track_event();
    EXPECT_TRUE(declared.count(ev.track_uuid())) << "track used before its descriptor";
    if (ev.has_name_iid()) {
      EXPECT_NE(packet.sequence_flags() & 2u, 0u) << "iid without NEEDS";
    }
    switch (ev.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN:
        ++begins;
        EXPECT_TRUE(ev.has_name_iid());
        EXPECT_EQ(ev.category_iids_size(), 1);
        break;
      case pb::TrackEvent::TYPE_SLICE_END:
        ++ends;
        break;
      case pb::TrackEvent::TYPE_INSTANT:
        ++instants;
        break;
      case pb::TrackEvent::TYPE_COUNTER:
        ++counters;
        break;
      default:
        ADD_FAILURE() << "unexpected type";
    }
    flow_out += ev.flow_ids_size();
    flow_in += ev.terminating_flow_ids_size();
  }
  EXPECT_EQ(processes, 3);
  EXPECT_EQ(begins, counts.slices);
  EXPECT_EQ(ends, counts.slices);
  EXPECT_EQ(instants, counts.instants);
  EXPECT_EQ(counters, counts.counter_values);
  EXPECT_EQ(flow_out, counts.flows);
  EXPECT_EQ(flow_in, counts.flows);
  // train_step, layer, matmul, gelu, send, recv, optimizer: each interned exactly once.
  EXPECT_EQ(interned_names, 7);
}

TEST(PerfettoWriterTest, RoundsTimestampsAndCarriesArgs) {
  std::ostringstream out;
  PerfettoWriter writer(&out);
  TrackId t = writer.AddTrack(writer.AddProcess("chip0"), "compute");
  const Arg args[] = {Arg::Uint("flops", 42), Arg::String("shape", "f32[2]"), Arg::Int("delta", -3),
                      Arg::Double("eff", 0.5), Arg::Bool("ok", true)};
  writer.BeginSlice(t, sim::Time::Picoseconds(1'499),
                    {.name = "mm", .category = "compute", .args = args});
  writer.EndSlice(t, sim::Time::Picoseconds(2'500));
  ASSERT_TRUE(writer.Close().ok());
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(out.str()));
  ASSERT_EQ(trace.packet_size(), 4);
  const pb::TracePacket& begin = trace.packet(2);
  EXPECT_EQ(begin.timestamp(), 1u);
  EXPECT_EQ(trace.packet(3).timestamp(), 3u);
  const pb::TrackEvent& ev = begin.track_event();
  ASSERT_EQ(ev.debug_annotations_size(), 5);
  EXPECT_EQ(ev.debug_annotations(0).uint_value(), 42u);
  EXPECT_EQ(ev.debug_annotations(1).string_value(), "f32[2]");
  EXPECT_EQ(ev.debug_annotations(2).int_value(), -3);
  EXPECT_EQ(ev.debug_annotations(3).double_value(), 0.5);
  EXPECT_TRUE(ev.debug_annotations(4).bool_value());
  EXPECT_EQ(begin.interned_data().debug_annotation_names_size(), 5);
  EXPECT_EQ(begin.interned_data().debug_annotation_names(4).name(), "ok");
}

TEST(PerfettoWriterTest, SameCallsGiveSameBytes) { EXPECT_EQ(WriteScenario(), WriteScenario()); }

TEST(PerfettoWriterTest, SizePerSliceIsSmall) {
  testing::ScenarioCounts counts;
  std::string bytes = WriteScenario(&counts, /*layers=*/200);
  double per_slice = static_cast<double>(bytes.size()) / counts.slices;
  std::cout << "perfetto: " << bytes.size() << " bytes, " << counts.slices << " slices, "
            << per_slice << " bytes/slice (incl. counters and flows)\n";
  EXPECT_LT(per_slice, 100);
}

// The written file decodes with protoc and our schema, with no unknown fields (an unknown field
// shows up in protoc's text as a bare field number, e.g. "999: 1").
TEST(PerfettoWriterTest, DecodesWithProtocWithoutUnknownFields) {
  std::string dir = ::testing::TempDir();
  std::string trace_path = dir + "/podsim_protoc_decode.pftrace";
  std::string text_path = dir + "/podsim_protoc_decode.txt";
  testing::WriteFileOrDie(trace_path, WriteScenario());
  std::string command = std::string(PODSIM_PROTOC_PATH) + " --decode=perfetto.protos.Trace -I " +
                        PODSIM_TRACES_SOURCE_DIR + " " + PODSIM_TRACES_SOURCE_DIR +
                        "/perfetto_min.proto < " + trace_path + " > " + text_path;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::string text = testing::ReadFileOrDie(text_path);
  EXPECT_THAT(text, ::testing::HasSubstr("process_name: \"chip1\""));
  EXPECT_THAT(text, ::testing::HasSubstr("sibling_merge_behavior: SIBLING_MERGE_BEHAVIOR_NONE"));
  EXPECT_THAT(text, ::testing::HasSubstr("terminating_flow_ids: 100"));
  EXPECT_THAT(text, ::testing::HasSubstr("string_value: \"bf16[4096,8192]x[8192,4096]\""));
  // No line of the form "<spaces><digits>:" (a line scan: std::regex trips GCC 12 warnings).
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t start = line.find_first_not_of(' ');
    size_t digits_end = line.find_first_not_of("0123456789", start);
    bool unknown = start != std::string::npos && digits_end != start &&
                   digits_end != std::string::npos && line[digits_end] == ':';
    EXPECT_FALSE(unknown) << "unknown field: " << line;
  }
}

}  // namespace
}  // namespace podsim::traces
