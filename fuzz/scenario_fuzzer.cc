// Fuzzes scenario files: scenario::ParseScenarioFile (parse and ValidateScenario) on protobuf text
// (scenario/scenario_file.h). Nothing is ever run. For a scenario that loads, also checks that
// ValidateScenario without a source map agrees and that DumpScenario reads back as the same
// scenario (scenario_file.h: "ParseScenarioText(DumpScenario(s)) == s for every valid s").

#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "scenario.pb.h"
#include "scenario/scenario_file.h"
#include "scenario/text_proto.h"

namespace {

namespace sc = podsim::scenario;

// Validation builds the system: a full v5p pod (8960 chips) takes about 1 s under ASan, 2048 chips
// a fifth of that. Systems the builders accept beyond this are legitimately slow and skipped (the
// system target builds up to 16Ki chips); the checks after the build do not depend on the size.
constexpr int64_t kMaxBuiltChips = 2048;

bool TooBig(const sc::Scenario& scenario) {
  const sc::System& system = scenario.system();
  if (system.has_preset()) return podsim::fuzz::TooBigToBuild(system.preset(), kMaxBuiltChips);
  if (!system.has_custom()) return false;
  int64_t chips = 1;
  for (int32_t extent : system.custom().fabric().shape()) {
    if (extent < 1) return false;  // Refused before anything is built.
    if (__builtin_mul_overflow(chips, int64_t{extent}, &chips)) return false;
  }
  return chips > kMaxBuiltChips && chips <= podsim::fuzz::kBuilderMaxChips;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  podsim::fuzz::QuietProtobufLogs();
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // A first parse only to see how big the system is.
  sc::Scenario peek;
  if (sc::ParseTextProto(text, "fuzz.textproto", &peek).ok() && TooBig(peek)) return 0;

  podsim::sim::StatusOr<sc::LoadedScenario> loaded = sc::ParseScenarioFile(text, "fuzz.textproto");
  if (!loaded.ok()) {
    PODSIM_FUZZ_CHECK(loaded.status().message().starts_with("fuzz.textproto"),
                      "errors start with the file name: " + loaded.status().message());
    return 0;
  }
  const sc::Scenario& scenario = loaded->scenario;
  const podsim::sim::Status again = sc::ValidateScenario(scenario);
  PODSIM_FUZZ_CHECK(again.ok(), "valid with a source map, not without: " + again.ToString());

  const std::string dumped = sc::DumpScenario(scenario);
  podsim::sim::StatusOr<sc::Scenario> reread = sc::ParseScenarioText(dumped, "dumped.textproto");
  PODSIM_FUZZ_CHECK(reread.ok(), "DumpScenario does not read back: " + reread.status().ToString() +
                                     "\n" + dumped);
  PODSIM_FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(scenario, *reread),
                    "DumpScenario reads back as another scenario:\n" + dumped);
  return 0;
}
