// The layer in front of the flag parser: every command-line argument is checked before CLI11
// sees it, so that no argument can make the parser loop (an empty argument did) or carry a byte
// that would break the one-line error or the JSON output.

#ifndef PODSIM_CLI_ARGUMENT_CHECK_H_
#define PODSIM_CLI_ARGUMENT_CHECK_H_

#include "sim/status.h"

namespace podsim::cli {

// OK, or InvalidArgument naming the first argument (by position, 1 = the first after the
// program name) that is empty, not valid UTF-8, or holds a control character.
sim::Status CheckArguments(int argc, const char* const* argv);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_ARGUMENT_CHECK_H_
