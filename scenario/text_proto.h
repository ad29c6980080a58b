// Protobuf text format with podsim's error messages, for every text file podsim reads (scenario
// files, schedule files).
//
// The first error is one line, "file:line:col: message", with 1-based lines and columns (columns
// as protobuf's tokenizer counts them: a tab advances to the next multiple of 8). An error about a
// name points at the start of the name, not at the token after it where protobuf notices it; an
// unknown field or enum value gets the nearest valid name and the list of valid ones, taken from
// the message's descriptor:
//   run.textproto:4:3: unknown field 'bites' in Collective (did you mean 'bytes'?); fields: op,
//   bytes, axes, algorithm, src, dst, sweep_bytes, ideal
//   run.textproto:3:7: unknown value 'ALL_REDUCED' for field 'op' (did you mean 'ALL_REDUCE'?);
//   values: ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, P2P, SHIFT
// Other errors keep protobuf's words, starting lower-case ("expected double, got: \"1GiB\"").

#ifndef PODSIM_SCENARIO_TEXT_PROTO_H_
#define PODSIM_SCENARIO_TEXT_PROTO_H_

#include <google/protobuf/message.h>

#include <string_view>

#include "scenario/source_map.h"
#include "sim/status.h"

namespace podsim::scenario {

// Parses `text` into `message` (cleared first); `filename` is used in messages only. Returns
// ParseError with the first error as above, OutOfRange for text over 2 GiB (protobuf's limit).
// InvalidArgument for a string that CheckStringFields refuses. With `source`, also records where
// each written field starts (SourceMap paths: "a.b", "a.list[2]") in a SourceMap of `filename`.
sim::Status ParseTextProto(std::string_view text, std::string_view filename,
                           google::protobuf::Message* message, SourceMap* source = nullptr);

// OK, or InvalidArgument "<filename>: <field path>: ..." for the first string field that is not
// valid UTF-8 or holds a control character (newlines are allowed in `description` fields).
// ParseTextProto applies it already; this is for messages read in binary.
sim::Status CheckStringFields(const google::protobuf::Message& message, std::string_view filename);

}  // namespace podsim::scenario

#endif  // PODSIM_SCENARIO_TEXT_PROTO_H_
