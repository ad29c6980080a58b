// Fuzzes MODEL strings: workloads::ParseModel, ValidateModel and, for a model that parses, the
// parameter and FLOP counts every command derives from it (workloads/model_spec.h). The input is
// the string.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "workloads/model_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > podsim::fuzz::kMaxInputBytes) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace wl = podsim::workloads;
  podsim::sim::StatusOr<wl::ModelSpec> model = wl::ParseModel(text);
  if (!model.ok()) return 0;
  const podsim::sim::Status valid = wl::ValidateModel(*model);
  PODSIM_FUZZ_CHECK(valid.ok(), "ParseModel accepted an invalid model: " + valid.ToString());

  // The counts train, infer and sweep print for any model they accept.
  const std::string name(text);
  PODSIM_FUZZ_CHECK(model->TotalParams() > 0, name);
  PODSIM_FUZZ_CHECK(model->MatmulParams() > 0, name);
  for (wl::AttentionCount count : {wl::AttentionCount::kFull, wl::AttentionCount::kCausal}) {
    const double flops = model->TrainingFlopsPerToken(4096, count);
    PODSIM_FUZZ_CHECK(std::isfinite(flops) && flops > 0, name);
  }
  const double kv = model->KvCacheBytesPerToken(2);
  PODSIM_FUZZ_CHECK(std::isfinite(kv) && kv > 0, name);
  return 0;
}
