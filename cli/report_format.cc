#include "cli/report_format.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "cli/byte_size.h"
#include "topology/names.h"

namespace podsim::cli {

std::string FormatSeconds(double seconds) {
  char text[32];
  if (seconds == 0) return "0";
  if (seconds >= 1) {
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(text, sizeof text, "%.3f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3f us", seconds * 1e6);
  }
  return text;
}

std::string FormatPercent(double fraction) {
  char text[16];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

std::string CountOf(uint64_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

sim::StatusOr<int64_t> ParseTokenCount(std::string_view flag, const std::string& text) {
  std::optional<double> value = ParseSuffixedNumber(text, /*bytes=*/false);
  if (!value || *value < 1 || *value != std::floor(*value) || *value > 1e15) {
    return sim::Status::InvalidArgument(std::string(flag) +
                                        ": expected a whole number of tokens >= 1 like 4096, 4M "
                                        "(4,000,000) or 4Mi (4,194,304) (got '" +
                                        text + "')");
  }
  return static_cast<int64_t>(*value);
}

void AddBatchFlags(CLI::App* sub, std::string* batch_tokens, std::string* seq) {
  sub->add_option("--batch-tokens", *batch_tokens,
                  "Tokens per step, a whole number of sequences: 4Mi (4 x 2^20 = 4,194,304) or "
                  "4M (4,000,000); K, M, G are powers of 1000, Ki, Mi, Gi of 1024")
      ->required();
  sub->add_option("--seq", *seq, "Tokens per sequence, e.g. 4096 or 4Ki")->required();
}

sim::StatusOr<BatchTokens> ParseBatchTokens(const std::string& batch_tokens,
                                            const std::string& seq) {
  BatchTokens batch;
  PODSIM_ASSIGN_OR_RETURN(batch.tokens, ParseTokenCount("--batch-tokens", batch_tokens));
  PODSIM_ASSIGN_OR_RETURN(batch.seq, ParseTokenCount("--seq", seq));
  if (batch.tokens % batch.seq == 0) return batch;
  std::string message = "--batch-tokens: " + std::to_string(batch.tokens) +
                        " is not a whole number of sequences of --seq " +
                        std::to_string(batch.seq) + " tokens";
  // "4M" meant as 4Mi: K, M, G, T are powers of 1000 here.
  const char unit = batch_tokens.empty() ? ' ' : batch_tokens.back();
  if (unit == 'K' || unit == 'M' || unit == 'G' || unit == 'T') {
    const std::string binary = batch_tokens + "i";
    sim::StatusOr<int64_t> tokens = ParseTokenCount("--batch-tokens", binary);
    if (tokens.ok() && *tokens % batch.seq == 0) {
      message += " (" + std::string(1, unit) + " is 10^" +
                 std::to_string(3 * (std::string_view("KMGT").find(unit) + 1)) + "; " + binary +
                 " is " + std::to_string(*tokens) + " tokens, " +
                 std::to_string(*tokens / batch.seq) + " sequences)";
    }
  }
  return sim::Status::InvalidArgument(message);
}

}  // namespace podsim::cli
