// Fuzzes training layouts: workloads::ParseLayout and, when it parses, ValidateLayout against a
// model, a chip count and a batch, then (when valid) ShapeOf and the pipeline stages
// (workloads/layout.h).
//
// Input: one selector byte, then the layout text. The selector picks
//   bits 0-2  the model: the presets in ModelPresetNames() order, then a small custom model
//             (6 layers, 8 heads, 2 kv heads) whose divisors let small layouts validate;
//   bit 3     the chip count: the layout's own dp*fsdp*tp*pp (saturated), or 8960 (a v5p pod);
//   bits 4-5  the batch in sequences: dp*fsdp*microbatches (times mbs) times 1 or 2, 1024, or 0
//             (invalid); an mbs= layout is resolved against it first;
//   bits 6-7  the sequence length: 4096, 2048, 1 or 3.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"

namespace {

namespace wl = podsim::workloads;

const std::vector<wl::ModelSpec>& Models() {
  static const std::vector<wl::ModelSpec> models = [] {
    std::vector<wl::ModelSpec> all;
    for (std::string_view name : wl::ModelPresetNames()) all.push_back(*wl::ParseModel(name));
    all.push_back(*wl::ParseModel(
        "custom:layers=6,d_model=256,ffn=1024,heads=8,kv_heads=2,head_dim=32,vocab=1000"));
    return all;
  }();
  return models;
}

// a * b * ..., saturated at INT64_MAX (the harness must not overflow where the code under test
// might).
int64_t Product(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) return std::numeric_limits<int64_t>::max();
  }
  return product;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > podsim::fuzz::kMaxInputBytes) return 0;
  const uint8_t selector = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  podsim::sim::StatusOr<wl::Layout> parsed = wl::ParseLayout(text);
  if (!parsed.ok()) return 0;
  const wl::Layout& stated = *parsed;

  // The canonical text reads back as the same layout.
  const std::string canonical = stated.ToString();
  podsim::sim::StatusOr<wl::Layout> again = wl::ParseLayout(canonical);
  PODSIM_FUZZ_CHECK(again.ok(), "ParseLayout(ToString()) failed: " + again.status().ToString());
  PODSIM_FUZZ_CHECK(again->ToString() == canonical,
                    canonical + " read back as " + again->ToString());
  (void)stated.MeshAxes();

  const std::vector<wl::ModelSpec>& models = Models();
  const wl::ModelSpec& model = models[(selector & 7) % models.size()];
  const int64_t chips =
      (selector & 8) ? 8960 : Product({stated.dp, stated.fsdp, stated.tp, stated.pp});
  const int64_t split = Product({stated.dp, stated.fsdp, stated.microbatch_count(),
                                 std::max<int64_t>(stated.micro_batch_size, 1)});
  const int64_t sequences[] = {split, Product({split, 2}), 1024, 0};
  const int64_t seqs[] = {4096, 2048, 1, 3};
  const wl::BatchSpec batch{sequences[(selector >> 4) & 3], seqs[(selector >> 6) & 3]};
  podsim::sim::StatusOr<wl::Layout> resolved = wl::ResolveLayout(stated, batch);
  if (!resolved.ok()) return 0;
  const wl::Layout& layout = *resolved;
  if (!wl::ValidateLayout(layout, model, chips, batch).ok()) return 0;

  // What a valid layout promises (ShapeOf's REQUIRES, LayersOfStage's contract).
  const wl::ShardShape shape = wl::ShapeOf(layout, model, batch);
  PODSIM_FUZZ_CHECK(shape.heads >= 1 && shape.ffn >= 1 && shape.vocab >= 1, canonical);
  int64_t layers = 0;
  for (int stage = 0; stage < layout.pp; ++stage) {
    const int64_t of_stage = wl::LayersOfStage(layout, model, stage);
    PODSIM_FUZZ_CHECK(of_stage >= 1, canonical + ": a stage without layers");
    layers += of_stage;
  }
  PODSIM_FUZZ_CHECK(layers == model.layers, canonical + ": stages do not add up to the layers");
  const int chunks = layout.pp * layout.virtual_stages;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    PODSIM_FUZZ_CHECK(wl::LayersOfChunk(layout, model, chunk) >= 1,
                      canonical + ": a chunk without layers");
  }
  PODSIM_FUZZ_CHECK(wl::FirstLayerOfChunk(layout, model, chunks - 1) +
                            wl::LayersOfChunk(layout, model, chunks - 1) ==
                        model.layers,
                    canonical + ": the last chunk does not end at the last layer");
  return 0;
}
