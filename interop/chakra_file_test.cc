#include "interop/chakra_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace podsim::interop {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("PODSIM_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// The trace interop/testdata/write_generator_trace.py writes with its own protobuf encoder, as
// Chakra's generator scripts do (protolib's encodeMessage).
std::string GeneratorPrefix() { return SourceDir() + "/interop/testdata/generator/generator"; }

std::filesystem::path ScratchDir(const std::string& name) {
  std::string leaf = "podsim_chakra_";
  leaf += name;
  leaf += '_';
  leaf += std::to_string(getpid());
  std::filesystem::path dir = std::filesystem::temp_directory_path() / leaf;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ChakraFileTest, ReadsTracesWrittenTheWayChakrasGeneratorWritesThem) {
  sim::StatusOr<std::vector<ChakraRankTrace>> trace = ReadChakraTrace(GeneratorPrefix());
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->size(), 4u);
  for (const ChakraRankTrace& rank : *trace) {
    EXPECT_EQ(rank.metadata.version(), "0.0.4");
    ASSERT_EQ(rank.nodes.size(), 14u);
    // File order is not id order: node 7 comes before node 6.
    EXPECT_EQ(rank.nodes[5].id(), 7u);
    EXPECT_EQ(rank.nodes[6].id(), 6u);
    EXPECT_EQ(rank.nodes[0].type(), ChakraProtoMsg::METADATA_NODE);
    EXPECT_EQ(rank.nodes[1].name(), "fwd_gemm");
    EXPECT_EQ(rank.nodes[1].duration_micros(), 100u);
    EXPECT_EQ(rank.nodes[5].data_deps_size(), 2);
  }
  EXPECT_EQ((*trace)[0].nodes[11].type(), ChakraProtoMsg::COMM_SEND_NODE);
  EXPECT_EQ((*trace)[2].nodes[11].type(), ChakraProtoMsg::COMM_RECV_NODE);
}

TEST(ChakraFileTest, EncodesWhatItParses) {
  ChakraRankTrace trace;
  trace.metadata.set_version("0.0.4");
  for (uint64_t id : {3u, 1u, 2u}) {
    ChakraProtoMsg::Node& node = trace.nodes.emplace_back();
    node.set_id(id);
    std::string name = "n";
    name += std::to_string(id);
    node.set_name(name);
    node.set_type(ChakraProtoMsg::COMP_NODE);
    node.set_duration_micros(10 * id);
    node.add_data_deps(id - 1);
  }
  const std::string bytes = EncodeChakraFile(trace);
  sim::StatusOr<ChakraRankTrace> back = ParseChakraFile(bytes, "x.0.et");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->nodes.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->nodes[i].SerializeAsString(), trace.nodes[i].SerializeAsString());
  }
  EXPECT_EQ(EncodeChakraFile(*back), bytes);
}

TEST(ChakraFileTest, BadFilesNameTheFileAndTheMessage) {
  ChakraRankTrace trace;
  trace.metadata.set_version("0.0.4");
  trace.nodes.emplace_back().set_name("a node with a long enough name");
  const std::string bytes = EncodeChakraFile(trace);
  // Cut inside the node: its length prefix runs past the end.
  sim::StatusOr<ChakraRankTrace> cut = ParseChakraFile(bytes.substr(0, bytes.size() - 5), "t.0.et");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("t.0.et: message 1"), std::string::npos) << cut.status();
  EXPECT_NE(cut.status().message().find("runs past the end"), std::string::npos) << cut.status();
  // A length prefix cut in its middle.
  sim::StatusOr<ChakraRankTrace> prefix = ParseChakraFile(std::string("\x80", 1), "t.0.et");
  ASSERT_FALSE(prefix.ok());
  EXPECT_NE(prefix.status().message().find("truncated length"), std::string::npos);
  // Not protobuf at all.
  sim::StatusOr<ChakraRankTrace> junk =
      ParseChakraFile(std::string("\x03\xff\xff\xff", 4), "t.0.et");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("not a Chakra GlobalMetadata"), std::string::npos)
      << junk.status();
}

TEST(ChakraFileTest, ReadsRanksUpToTheFirstMissingFile) {
  const std::filesystem::path dir = ScratchDir("ranks");
  const std::string prefix = (dir / "step").string();
  sim::StatusOr<std::vector<ChakraRankTrace>> none = ReadChakraTrace(prefix);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), sim::Status::Code::kNotFound);
  EXPECT_NE(none.status().message().find("step.0.et"), std::string::npos);
  std::vector<ChakraRankTrace> ranks(3);
  for (ChakraRankTrace& rank : ranks) rank.metadata.set_version("0.0.4");
  ranks[1].nodes.emplace_back().set_name("only on rank 1");
  ASSERT_TRUE(WriteChakraTrace(prefix, ranks, {{prefix + ".comm_groups.json", "{}\n"}}).ok());
  sim::StatusOr<std::vector<ChakraRankTrace>> read = ReadChakraTrace(prefix);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 3u);
  EXPECT_EQ((*read)[1].nodes.size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(prefix + ".comm_groups.json"));
  // A smaller trace over it leaves no rank of the larger one behind.
  ranks.pop_back();
  ASSERT_TRUE(WriteChakraTrace(prefix, ranks).ok());
  EXPECT_FALSE(std::filesystem::exists(prefix + ".2.et"));
  sim::StatusOr<std::vector<ChakraRankTrace>> smaller = ReadChakraTrace(prefix);
  ASSERT_TRUE(smaller.ok()) << smaller.status();
  EXPECT_EQ(smaller->size(), 2u);
  ranks.emplace_back().metadata.set_version("0.0.4");
  // A failed write leaves nothing behind: the rank files written before it are removed.
  const std::string other = (dir / "other").string();
  EXPECT_FALSE(
      WriteChakraTrace(other, ranks, {{(dir / "no_such_dir" / "g.json").string(), "{}\n"}}).ok());
  EXPECT_FALSE(std::filesystem::exists(other + ".0.et"));
  EXPECT_FALSE(std::filesystem::exists(other + ".2.et"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podsim::interop
