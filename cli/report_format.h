// Formatting and parsing shared by the workload commands (train, sweep): durations, shares and
// token counts as users read and write them.

#ifndef PODSIM_CLI_REPORT_FORMAT_H_
#define PODSIM_CLI_REPORT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/status.h"

namespace podsim::cli {

// "1.234 s", "12.345 ms", "3.210 us", or "0".
std::string FormatSeconds(double seconds);
// "12.3%".
std::string FormatPercent(double fraction);
// A token count: "4096", "4M" (10^6), "1Mi" (2^20), "2.5e6"; suffixes K, M, G and Ki, Mi, Gi.
// Fails with InvalidArgument naming `flag`.
sim::StatusOr<int64_t> ParseTokenCount(std::string_view flag, const std::string& text);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_REPORT_FORMAT_H_
