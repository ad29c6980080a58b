#include "interop/chakra_file.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "sim/atomic_file.h"

namespace podsim::interop {

namespace {

// Files larger than this are refused before they are read.
constexpr std::streamoff kMaxFileBytes = std::streamoff{1} << 30;

// Reads `path` whole; NotFound when it does not exist.
sim::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) {
    return sim::Status::NotFound(path + ": no such Chakra trace file");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return sim::Status::InvalidArgument(path + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return sim::Status::IoError(path + ": cannot open the Chakra trace file");
  const std::streamoff size = in.tellg();
  if (size < 0) return sim::Status::IoError(path + ": cannot read the Chakra trace file");
  if (size > kMaxFileBytes) {
    return sim::Status::InvalidArgument(path + ": larger than 1 GiB; not a trace podsim reads");
  }
  in.seekg(0);
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), size);
  if (!in) return sim::Status::IoError(path + ": cannot read the Chakra trace file");
  return data;
}

// Appends `message` with its varint32 length.
void AppendDelimited(const google::protobuf::MessageLite& message, std::string* out) {
  const size_t size = message.ByteSizeLong();
  google::protobuf::io::StringOutputStream raw(out);
  google::protobuf::io::CodedOutputStream coded(&raw);
  coded.WriteVarint32(static_cast<uint32_t>(size));
  message.SerializeWithCachedSizes(&coded);
}

}  // namespace

sim::StatusOr<ChakraRankTrace> ParseChakraFile(const std::string& bytes, const std::string& path) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  ChakraRankTrace trace;
  if (bytes.empty()) {
    return sim::Status::InvalidArgument(path +
                                        ": empty; a Chakra trace file starts with its "
                                        "GlobalMetadata");
  }
  for (uint64_t index = 0;; ++index) {
    const int offset = coded.CurrentPosition();
    if (coded.ExpectAtEnd() || offset == static_cast<int>(bytes.size())) break;
    const std::string at =
        path + ": message " + std::to_string(index) + " (byte " + std::to_string(offset) + ")";
    uint32_t size = 0;
    if (!coded.ReadVarint32(&size)) {
      return sim::Status::InvalidArgument(at + ": truncated length prefix; not a Chakra trace");
    }
    if (size > static_cast<uint32_t>(kMaxChakraMessageBytes) ||
        size > bytes.size() - static_cast<size_t>(coded.CurrentPosition())) {
      return sim::Status::InvalidArgument(at + ": length " + std::to_string(size) +
                                          (size > static_cast<uint32_t>(kMaxChakraMessageBytes)
                                               ? " is over 64 MiB"
                                               : " runs past the end of the file") +
                                          "; not a Chakra trace");
    }
    const auto limit = coded.PushLimit(static_cast<int>(size));
    google::protobuf::MessageLite* message = nullptr;
    if (index == 0) {
      message = &trace.metadata;
    } else {
      if (trace.nodes.size() >= kMaxChakraNodesPerRank) {
        return sim::Status::InvalidArgument(path + ": more than " +
                                            std::to_string(kMaxChakraNodesPerRank) +
                                            " nodes, over podsim's limit per rank");
      }
      message = &trace.nodes.emplace_back();
    }
    if (!message->ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      return sim::Status::InvalidArgument(at + ": not a Chakra " +
                                          (index == 0 ? "GlobalMetadata" : "Node") + " message");
    }
    coded.PopLimit(limit);
  }
  return trace;
}

std::string EncodeChakraFile(const ChakraRankTrace& trace) {
  std::string out;
  AppendDelimited(trace.metadata, &out);
  for (const ChakraProtoMsg::Node& node : trace.nodes) AppendDelimited(node, &out);
  return out;
}

std::string ChakraFileName(const std::string& prefix, int rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

sim::StatusOr<std::vector<ChakraRankTrace>> ReadChakraTrace(const std::string& prefix) {
  std::vector<ChakraRankTrace> ranks;
  uint64_t nodes = 0;
  for (int rank = 0;; ++rank) {
    const std::string path = ChakraFileName(prefix, rank);
    sim::StatusOr<std::string> bytes = ReadWhole(path);
    if (!bytes.ok() && bytes.status().code() == sim::Status::Code::kNotFound) {
      if (rank == 0) {
        return sim::Status::NotFound(path +
                                     ": no such file; a Chakra trace is one file per rank, " +
                                     prefix + ".0.et, " + prefix + ".1.et, ...");
      }
      break;
    }
    if (!bytes.ok()) return bytes.status();
    if (rank >= kMaxChakraRanks) {
      return sim::Status::InvalidArgument(prefix + ": more than " +
                                          std::to_string(kMaxChakraRanks) +
                                          " ranks, over podsim's limit");
    }
    PODSIM_ASSIGN_OR_RETURN(ChakraRankTrace trace, ParseChakraFile(*bytes, path));
    nodes += trace.nodes.size();
    if (nodes > kMaxChakraNodes) {
      return sim::Status::InvalidArgument(prefix + ": more than " +
                                          std::to_string(kMaxChakraNodes) +
                                          " nodes over its ranks, over podsim's limit");
    }
    ranks.push_back(std::move(trace));
  }
  return ranks;
}

sim::Status WriteChakraTrace(const std::string& prefix, const std::vector<ChakraRankTrace>& ranks,
                             const std::vector<std::pair<std::string, std::string>>& extra) {
  // Each file is written whole (AtomicFile); if one fails, those already written are removed.
  std::vector<std::string> written;
  auto write = [&](const std::string& path, const std::string& data) -> sim::Status {
    sim::Status status = sim::WriteFileAtomically(path, data);
    if (!status.ok()) {
      for (const std::string& done : written) std::remove(done.c_str());
      return status;
    }
    written.push_back(path);
    return sim::Status::Ok();
  };
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    PODSIM_RETURN_IF_ERROR(
        write(ChakraFileName(prefix, static_cast<int>(rank)), EncodeChakraFile(ranks[rank])));
  }
  for (const auto& [path, data] : extra) PODSIM_RETURN_IF_ERROR(write(path, data));
  // A trace of more ranks written here before would otherwise lend this one its higher ranks.
  for (int rank = static_cast<int>(ranks.size());; ++rank) {
    const std::string stale = ChakraFileName(prefix, rank);
    if (std::remove(stale.c_str()) != 0) break;
  }
  return sim::Status::Ok();
}

}  // namespace podsim::interop
