// Reading and writing Chakra execution trace files (chakra_et.proto): one file per rank,
// `<prefix>.<rank>.et`, each a varint32-length-prefixed GlobalMetadata followed by
// varint32-length-prefixed Nodes, as Chakra's own tools write them (protolib's encodeMessage).

#ifndef PODSIM_INTEROP_CHAKRA_FILE_H_
#define PODSIM_INTEROP_CHAKRA_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chakra_et.pb.h"
#include "sim/status.h"

namespace podsim::interop {

// One rank's trace.
struct ChakraRankTrace {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

// Bounds on what a trace may hold, checked before it is kept: enough for a recorded step of a
// large model on one rank (a PyTorch step is 1e4-1e6 nodes), far below what 24 GiB can hold.
inline constexpr uint64_t kMaxChakraNodesPerRank = 10'000'000;
inline constexpr uint64_t kMaxChakraNodes = 50'000'000;  // Over all ranks.
inline constexpr int kMaxChakraRanks = 65536;
inline constexpr int kMaxChakraMessageBytes = 64 << 20;  // One Node or GlobalMetadata.

// Parses one rank's file from its bytes; errors name `path`, the message's index and offset.
sim::StatusOr<ChakraRankTrace> ParseChakraFile(const std::string& bytes, const std::string& path);
// Its bytes.
std::string EncodeChakraFile(const ChakraRankTrace& trace);

// `<prefix>.<rank>.et`.
std::string ChakraFileName(const std::string& prefix, int rank);

// Reads `<prefix>.0.et`, `<prefix>.1.et`, ... up to the first rank without a file. NotFound when
// there is no `<prefix>.0.et`; InvalidArgument for a file that does not parse (an empty file has
// no GlobalMetadata), a gap (a missing rank with the next one present), and a trace beyond the
// bounds above.
sim::StatusOr<std::vector<ChakraRankTrace>> ReadChakraTrace(const std::string& prefix);

// Writes one file per rank, then the `extra` files (path, contents). Each file is written whole
// (sim::AtomicFile); when one cannot be, those already written are removed and the error names it.
// Files of higher ranks left by an earlier, larger trace under the same prefix are removed, so
// that ReadChakraTrace reads back exactly these ranks.
sim::Status WriteChakraTrace(const std::string& prefix, const std::vector<ChakraRankTrace>& ranks,
                             const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace podsim::interop

#endif  // PODSIM_INTEROP_CHAKRA_FILE_H_
