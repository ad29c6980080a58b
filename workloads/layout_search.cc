#include "workloads/layout_search.h"

#include "topology/mesh_mapping.h"

namespace podsim::workloads {

namespace {

std::vector<int> Divisors(int64_t n, int64_t limit) {
  std::vector<int> divisors;
  for (int64_t d = 1; d <= n && d <= limit; ++d) {
    if (n % d == 0) divisors.push_back(static_cast<int>(d));
  }
  return divisors;
}

}  // namespace

std::string_view RecomputeName(RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::kNone:
      return "none";
    case RecomputePolicy::kSelective:
      return "selective";
    case RecomputePolicy::kFull:
      return "full";
    case RecomputePolicy::kSaveNamed:
      return "save-named";
  }
  return "none";
}

std::string LayoutCandidate::Name() const {
  return layout.ToString() + " recompute=" + std::string(RecomputeName(recompute));
}

std::vector<LayoutCandidate> EnumerateLayouts(const topology::System& system,
                                              const ModelSpec& model, const BatchSpec& batch) {
  const int64_t chips = system.fabric.chip_count();
  const int64_t tp_limit = system.fabric.gpu() != nullptr ? system.fabric.gpus_per_node() : 16;
  std::vector<LayoutCandidate> out;
  for (int tp = 1; tp <= tp_limit && chips % tp == 0; tp *= 2) {
    for (int pp : Divisors(model.layers, 16)) {
      if ((chips / tp) % pp != 0) continue;
      const int64_t data = chips / tp / pp;
      for (int fsdp : Divisors(data, data)) {
        const int dp = static_cast<int>(data / fsdp);
        std::vector<Layout> layouts;
        Layout base;
        base.dp = dp;
        base.fsdp = fsdp;
        base.tp = tp;
        base.pp = pp;
        if (pp == 1) {
          layouts.push_back(base);
        } else {
          for (int m : {2 * pp, 4 * pp}) {
            Layout l = base;
            l.microbatches = m;
            layouts.push_back(l);
            if (model.layers % (2 * pp) == 0) {
              l.schedule = PipelineSchedule::kInterleavedOneFOneB;
              l.virtual_stages = 2;
              layouts.push_back(l);
            }
          }
        }
        for (Layout layout : layouts) {
          for (bool sp : tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
            layout.sp = sp;
            if (!ValidateLayout(layout, model, chips, batch).ok()) continue;
            if (!topology::MapMesh(system, layout.MeshAxes()).ok()) continue;
            // Selective recomputation changes nothing with flash attention (layer_ops.h).
            for (RecomputePolicy recompute : {RecomputePolicy::kNone, RecomputePolicy::kFull}) {
              out.push_back(LayoutCandidate{layout, recompute});
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace podsim::workloads
