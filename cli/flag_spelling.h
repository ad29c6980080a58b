// Spelling checks of the command line, run before CLI11 parses it: a misspelled flag or command
// is named with a suggestion, where the parser would report a required flag as missing
// ("--sytem h100:8" said "--system is required") or list the word as unexpected.

#ifndef PODSIM_CLI_FLAG_SPELLING_H_
#define PODSIM_CLI_FLAG_SPELLING_H_

#include "sim/status.h"

namespace CLI {
class App;
}

namespace podsim::cli {

// OK, or Usage naming the first word that is neither a command of `app`, nor a flag of the
// command it follows or of `app` itself, with the nearest spelling and where to read the list:
//   unknown flag '--sytem' of 'podsim train' (did you mean '--system'?); podsim help train lists
//   its flags
// Words after "--", values of flags that take one, numbers and positional arguments of a command
// are not checked.
sim::Status CheckSpelling(const CLI::App& app, int argc, const char* const* argv);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_FLAG_SPELLING_H_
