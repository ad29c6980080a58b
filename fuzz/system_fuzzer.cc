// Fuzzes SYSTEM strings: topology::ParseSystem (topology/system.h). The input is the string.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "topology/system.h"

namespace {

// Systems of up to 16Ki chips are built: every system of the README, up to h100:16384 (about 1 s
// under ASan). Bigger ones that the builders accept are legitimately slow (64Ki chips take
// seconds) and skipped; bigger than the builders' limit still run, as they must fail fast.
constexpr int64_t kMaxBuiltChips = int64_t{1} << 14;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (podsim::fuzz::TooBigToBuild(text, kMaxBuiltChips)) return 0;
  podsim::sim::StatusOr<podsim::topology::System> system = podsim::topology::ParseSystem(text);
  if (!system.ok()) {
    PODSIM_FUZZ_CHECK(!system.status().message().empty(), "an error without a message");
    return 0;
  }
  PODSIM_FUZZ_CHECK(system->name == text, "System::name is the SYSTEM string as given");
  PODSIM_FUZZ_CHECK(system->fabric.chip_count() >= 1, "a system without chips");
  // A torus names its axes (what collectives and mesh placements refer to), one per dimension.
  if (system->fabric.torus() != nullptr) {
    PODSIM_FUZZ_CHECK(system->fabric.AxisNames().size() == system->fabric.shape().size(),
                      "one name per torus axis");
  }
  return 0;
}
