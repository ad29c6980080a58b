// Sizes as users write them on the command line, bytes and token counts alike: "1048576", "1e9",
// "64KiB", "1Mi", "16GiB", "1.5GB", "4M". Binary suffixes (Ki, Mi, Gi, Ti) are powers of 1024,
// decimal ones (K, M, G, T) powers of 1000; a byte size may end in "B" ("64MiB", "1.5GB", "512B").

#ifndef PODSIM_CLI_BYTE_SIZE_H_
#define PODSIM_CLI_BYTE_SIZE_H_

#include <optional>
#include <string>
#include <string_view>

#include "sim/status.h"

namespace podsim::cli {

// The value of `text` with its suffix applied, or nullopt when it is not a number with one of
// the suffixes above (`bytes`: the "B" forms too).
std::optional<double> ParseSuffixedNumber(std::string_view text, bool bytes);

// Parses a size; fails with InvalidArgument naming `flag`, the text and the accepted forms.
sim::StatusOr<double> ParseByteSize(std::string_view flag, std::string_view text);

// "1 KiB", "16 GiB", "3.5 MiB", or "1000 B": the largest binary unit that keeps a value >= 1.
std::string FormatByteSize(double bytes);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_BYTE_SIZE_H_
