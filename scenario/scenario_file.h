// Scenario files: podsim commands written as protobuf text (scenario.proto, docs/scenario.md).
//
// Loading parses the text and then validates it (ValidateScenario). Every error is one line,
// "file:line:col: message", the first one found:
//   * syntax and schema errors from the protobuf text parser, with a suggestion for a misspelled
//     field or enum value:
//       run.textproto:4:3: unknown field 'bites' in Collective (did you mean 'bytes'?); fields:
//       op, bytes, axes, algorithm, src, dst, sweep_bytes, ideal
//       run.textproto:3:7: unknown value 'ALL_REDUCED' for field 'op' (did you mean
//       'ALL_REDUCE'?); values: ALL_GATHER, REDUCE_SCATTER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, P2P,
//       SHIFT
//   * semantic errors, naming the field path and what was expected and given:
//       run.textproto:4:10: collective.bytes: must be > 0 and at most 1e15 (got -3)
//       run.textproto:2:1: collective.op: missing; expected one of ALL_GATHER, ...
//     A missing field points at its enclosing message; one missing at the top level names the
//     file alone.
// Lines and columns are 1-based (columns as protobuf's tokenizer counts them: a tab advances to
// the next multiple of 8).

#ifndef PODSIM_SCENARIO_SCENARIO_FILE_H_
#define PODSIM_SCENARIO_SCENARIO_FILE_H_

#include <string>
#include <string_view>

#include "scenario.pb.h"
#include "scenario/source_map.h"
#include "sim/status.h"
#include "topology/system.h"

namespace podsim::scenario {

// Largest scenario file podsim reads; larger inputs fail with OutOfRange before any parsing.
inline constexpr size_t kMaxScenarioBytes = size_t{1} << 20;

// A scenario and where each of its fields was written.
struct LoadedScenario {
  Scenario scenario;
  SourceMap source;
  topology::System system;  // The scenario's system, built by its checks (CheckScenario).
};

// Reads, parses and validates a scenario file. IoError when it cannot be read, OutOfRange when
// larger than kMaxScenarioBytes, ParseError for the text, InvalidArgument/NotFound for values.
sim::StatusOr<LoadedScenario> LoadScenarioFile(const std::string& path);
sim::StatusOr<Scenario> LoadScenario(const std::string& path);

// Parses and validates scenario text; `filename` is used in messages only.
sim::StatusOr<LoadedScenario> ParseScenarioFile(std::string_view text, std::string_view filename);
sim::StatusOr<Scenario> ParseScenarioText(std::string_view text, std::string_view filename);

// Checks a parsed scenario: required fields present, values in range, names that exist (system,
// model, layout, axes, chips), options that fit the command. Builds the system once to do so (a
// full pod takes tens of milliseconds). Errors are prefixed by source.Annotate (a default
// SourceMap gives "path: message" for scenarios built in code).
sim::Status ValidateScenario(const Scenario& scenario, const SourceMap& source = {});
// The same checks, returning the system they built for the caller to run on (`podsim topology
// ring:1048576` spent 46% of its run building its fabric a second time).
sim::StatusOr<topology::System> CheckScenario(const Scenario& scenario,
                                              const SourceMap& source = {});
// The same checks on `system`, built from scenario.system() already (a file's checks built it,
// and only its outputs changed since): the system is not built again.
sim::StatusOr<topology::System> CheckScenario(const Scenario& scenario, const SourceMap& source,
                                              topology::System system);

// The canonical text of a scenario: a header naming the schema, then fields in schema order,
// two-space indents, repeated numbers on one line. ParseScenarioText(DumpScenario(s)) == s for
// every valid s.
std::string DumpScenario(const Scenario& scenario);

}  // namespace podsim::scenario

#endif  // PODSIM_SCENARIO_SCENARIO_FILE_H_
