// Helpers shared by the libFuzzer targets of fuzz/ (docs/fuzzing.md).
//
// Every target reads its input as text or bytes, calls one parser and, when it succeeds, the
// checks that follow it, and returns 0. Bad input must come back as a Status: an abort (a
// PODSIM_CHECK, a PODSIM_FUZZ_CHECK below, an uncaught exception) or a sanitizer report is a bug.

#ifndef PODSIM_FUZZ_FUZZ_SUPPORT_H_
#define PODSIM_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace podsim::fuzz {

// Inputs above this size return at once: every parser here reads command-line strings or small
// files, and libFuzzer's own -max_len keeps generated inputs far below it.
inline constexpr size_t kMaxInputBytes = size_t{64} << 10;

// The largest system the builders accept (topology/torus_builder.cc, generic_builder.cc).
inline constexpr int64_t kBuilderMaxChips = int64_t{1} << 20;

// The chips a SYSTEM string ("tpu-v5p:4x4x4,slices=2", "h100:1024", "ring:8") asks for: the
// product of the 'x'-separated numbers between ':' and the first ',', times slices=K. Numbers are
// read as topology::ParseCount reads them (1 to 18 decimal digits); nullopt when the size is not
// such a list, which ParseSystem rejects without building anything. Saturates at INT64_MAX.
std::optional<int64_t> RequestedChips(std::string_view system);

// True when building `system` is legitimately big work that a fuzzer should not spend its time
// on: it asks for more than `limit` chips and at most kBuilderMaxChips. Larger requests are still
// run, since the builders must refuse them cheaply.
bool TooBigToBuild(std::string_view system, int64_t limit);

// Silences protobuf's LOG(INFO/WARNING/ERROR) output (messages about invalid UTF-8 and the like
// are expected for fuzzed input); LOG(FATAL) and GOOGLE_CHECK still abort.
void QuietProtobufLogs();

// Prints "fuzz check failed: <what>: <detail>" to stderr and aborts.
[[noreturn]] void Fail(const char* file, int line, std::string_view what, std::string_view detail);

}  // namespace podsim::fuzz

// Aborts when a documented property of the code under test does not hold.
#define PODSIM_FUZZ_CHECK(condition, detail)                                          \
  do {                                                                                \
    if (!(condition)) ::podsim::fuzz::Fail(__FILE__, __LINE__, #condition, (detail)); \
  } while (false)

#endif  // PODSIM_FUZZ_FUZZ_SUPPORT_H_
