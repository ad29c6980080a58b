// Fuzzes byte sizes of the command line: cli::ParseByteSize and, on success, FormatByteSize
// (cli/byte_size.h). The input is the text of the flag's value.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/byte_size.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  podsim::sim::StatusOr<double> bytes = podsim::cli::ParseByteSize("--bytes", text);
  if (!bytes.ok()) {
    PODSIM_FUZZ_CHECK(bytes.status().message().starts_with("--bytes: "),
                      "errors name the flag: " + bytes.status().message());
    return 0;
  }
  const std::string formatted = podsim::cli::FormatByteSize(*bytes);
  PODSIM_FUZZ_CHECK(!formatted.empty(), "FormatByteSize gave nothing");
  return 0;
}
