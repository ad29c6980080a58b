// Byte sizes as users write them on the command line: "1048576", "1e9", "64KiB", "1MiB", "16GiB",
// "1.5GB". Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024; decimal ones (KB, MB, GB,
// TB) powers of 1000; "B" or no suffix is bytes.

#ifndef PODSIM_CLI_BYTE_SIZE_H_
#define PODSIM_CLI_BYTE_SIZE_H_

#include <string>
#include <string_view>

#include "sim/status.h"

namespace podsim::cli {

// Parses a size; fails with InvalidArgument naming `flag`, the text and the accepted forms.
sim::StatusOr<double> ParseByteSize(std::string_view flag, std::string_view text);

// "1 KiB", "16 GiB", "3.5 MiB", or "1000 B": the largest binary unit that keeps a value >= 1.
std::string FormatByteSize(double bytes);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_BYTE_SIZE_H_
