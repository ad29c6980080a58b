// Formatting and parsing shared by the workload commands (train, sweep): durations, shares and
// token counts as users read and write them.

#ifndef PODSIM_CLI_REPORT_FORMAT_H_
#define PODSIM_CLI_REPORT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/status.h"

namespace CLI {
class App;
}

namespace podsim::cli {

// "1.234 s", "12.345 ms", "3.210 us", or "0".
std::string FormatSeconds(double seconds);
// "12.3%".
std::string FormatPercent(double fraction);
// "1 chip", "4 chips": the count and the noun, plural unless the count is 1.
std::string CountOf(uint64_t count, std::string_view noun);
// A token count: "4096", "4M" (4 x 10^6), "1Mi" (2^20), "2.5e6"; suffixes K, M, G, T (powers of
// 1000) and Ki, Mi, Gi, Ti (powers of 1024), as byte_size.h.
// Fails with InvalidArgument naming `flag`.
sim::StatusOr<int64_t> ParseTokenCount(std::string_view flag, const std::string& text);

// Registers the required --batch-tokens and --seq of train and sweep.
void AddBatchFlags(CLI::App* sub, std::string* batch_tokens, std::string* seq);

struct BatchTokens {
  int64_t tokens = 0;  // --batch-tokens
  int64_t seq = 0;     // --seq
};

// --batch-tokens and --seq, checked to be a whole number of sequences. An error for "4M" with
// --seq 4096 says that M is 10^6 and that 4Mi is 4194304 tokens, 1024 sequences.
sim::StatusOr<BatchTokens> ParseBatchTokens(const std::string& batch_tokens,
                                            const std::string& seq);

}  // namespace podsim::cli

#endif  // PODSIM_CLI_REPORT_FORMAT_H_
