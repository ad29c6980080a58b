// What train and infer do with a step whose memory does not fit in HBM: a warning on stderr
// before the result, or, with --require-fit, an error.

#ifndef PODSIM_CLI_FIT_CHECK_H_
#define PODSIM_CLI_FIT_CHECK_H_

#include <string>

#include "cli/command.h"
#include "scenario/source_map.h"
#include "sim/status.h"

namespace CLI {
class App;
}

namespace podsim::cli {

// Registers --require-fit on `sub`.
void AddRequireFitFlag(CLI::App* sub, bool* require_fit);

// OK when the step fits. Otherwise, with `require_fit` (outputs.require_fit), InvalidArgument
// naming the flag: "--require-fit: <what> does not fit: 205.9 GiB per chip over the 74.51 GiB of
// HBM"; without, OK after writing "podsim: warning: <what> does not fit: ...; the result
// assumes it would (--require-fit makes this an error)" on io.err.
sim::Status CheckFit(bool fits, double bytes_per_chip, double hbm_bytes, const std::string& what,
                     bool require_fit, const scenario::SourceMap& source, CommandIo& io);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_FIT_CHECK_H_
