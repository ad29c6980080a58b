// The podsim command line: parses flags, runs one command, prints its result.
//
// Exit codes (design.md): 0 ok, 1 bad input or failed run (one clear line on stderr), 2 usage.

#ifndef PODSIM_CLI_MAIN_COMMAND_H_
#define PODSIM_CLI_MAIN_COMMAND_H_

#include <iosfwd>

namespace podsim::cli {

// Runs podsim with the given arguments, writing results to `out` and errors to `err`.
int RunMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_MAIN_COMMAND_H_
