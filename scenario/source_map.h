// SourceMap: where each field of a scenario file was written, so that any error about a field,
// found while loading or later while running the scenario, can name file:line:col.
//
// Paths name fields from the Scenario root with dots, and repeated elements with [i]:
// "system.preset", "train.layout.text", "collective.axes[1]". A path that was not written (a
// missing required field, a default) resolves to its nearest written ancestor, so "collective.op"
// missing points at the `collective {` that lacks it.
//
// A scenario built from command-line flags has no file; its SourceMap can name the flag that set
// each field instead (AddFlag), so that the same checks say "--bytes: must be > 0".

#ifndef PODSIM_SCENARIO_SOURCE_MAP_H_
#define PODSIM_SCENARIO_SOURCE_MAP_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "sim/status.h"

namespace podsim::scenario {

class SourceMap {
 public:
  // No file: Where() is "" and Annotate() prefixes only the path (scenarios built in code, e.g.
  // from command-line flags).
  SourceMap() = default;
  explicit SourceMap(std::string filename) : filename_(std::move(filename)) {}

  const std::string& filename() const { return filename_; }

  // Records that the field at `path` starts at 1-based `line` and `column`; the first record of
  // a path wins.
  void Add(std::string path, int line, int column);

  // Records that the command-line flag `flag` ("--bytes") set the field at `path` and everything
  // below it; it replaces a position recorded for `path` (a flag overriding a file). An empty flag
  // stands for a positional argument whose errors name it already.
  void AddFlag(std::string path, std::string flag);

  // "file:line:col" of the field at `path` or of its nearest recorded ancestor, or that
  // ancestor's flag; "file" when nothing was recorded; "" without a file.
  std::string Where(std::string_view path) const;

  // A non-OK status, same code, with its message prefixed by "<Where(path)>: <path>: " (the
  // position part left out when Where is ""); by "<flag>: " alone when a flag set the field, and
  // unchanged for an empty flag. OK stays OK.
  sim::Status Annotate(const sim::Status& status, std::string_view path) const;

 private:
  struct Position {
    int line = 0;
    int column = 0;
    bool is_flag = false;
    std::string flag;
  };
  // The record of `path` or of its nearest recorded ancestor; null when there is none.
  const Position* Find(std::string_view path) const;

  std::string filename_;
  std::map<std::string, Position, std::less<>> positions_;
};

}  // namespace podsim::scenario

#endif  // PODSIM_SCENARIO_SOURCE_MAP_H_
