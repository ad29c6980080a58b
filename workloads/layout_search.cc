#include "workloads/layout_search.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

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

// The pipeline degrees tried for `layers` (layout_search.h): the divisors up to 16 and the powers
// of two up to 16 that leave each stage two layers or more (uneven stages, layout.h), in order.
std::vector<int> PipelineDegrees(int64_t layers) {
  std::vector<int> degrees = Divisors(layers, 16);
  for (int pp = 2; pp <= 16; pp *= 2) {
    if (layers % pp != 0 && layers >= 2 * pp) degrees.push_back(pp);
  }
  std::sort(degrees.begin(), degrees.end());
  return degrees;
}

// Where each mesh axis lands: its pieces of the physical axes, in order.
std::string PlacementKey(const topology::MeshMapping& mapping) {
  std::string key;
  for (const topology::MeshAxisPlacement& axis : mapping.axes) {
    key += axis.name + ":";
    for (const topology::AxisSpan& span : axis.spans) {
      key += span.physical_axis + "/" + std::to_string(span.extent) + "/" +
             std::to_string(span.stride) + ";";
    }
  }
  return key;
}

// The context-parallel degrees tried on `data` chips (layout_search.h): 1, and for sequences of
// kContextParallelMinSeq tokens or more every cp that divides the chips and, twice, the sequence.
std::vector<int> ContextSplits(int64_t data, int64_t seq) {
  std::vector<int> splits = {1};
  if (seq < kContextParallelMinSeq) return splits;
  for (int64_t cp = 2; cp <= data; ++cp) {
    if (data % cp == 0 && seq % (2 * cp) == 0) splits.push_back(static_cast<int>(cp));
  }
  return splits;
}

}  // namespace

std::vector<std::vector<std::string>> MappingOrders(const topology::System& system,
                                                    const Layout& layout) {
  Layout probe = layout;
  probe.order.clear();
  std::vector<std::string> others;  // Axes of size > 1 but tp, in the automatic order.
  // ep keeps its automatic place (after tp and cp, as Megatron-Core's expert ranks follow tp's and
  // cp's, or within cp where it is carved out of it); the orders permute the rest, so a model
  // with experts does not multiply the placements tried.
  for (const char* name : {"fsdp", "dp", "pp"}) {
    for (const topology::MeshAxis& axis : probe.MeshAxes()) {
      if (axis.name == name && axis.size > 1) others.push_back(axis.name);
    }
  }
  std::vector<std::vector<std::string>> orders;
  std::set<std::string> seen;
  sim::StatusOr<topology::MeshMapping> automatic =
      topology::MapMesh(system, probe.MeshAxes(), {}, probe.PlacementOrder());
  if (automatic.ok()) {
    orders.push_back({});
    seen.insert(PlacementKey(*automatic));
  }
  // Every permutation of `others`, the automatic order first.
  std::vector<size_t> index(others.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = i;
  do {
    std::vector<std::string> order;
    if (layout.tp > 1) order.push_back("tp");
    // ep within cp where it is carved out of it (Layout::PlacementOrder), else after it.
    const bool ep_first = layout.ep_in_cp() && layout.ep_axis() > 1;
    if (ep_first) order.push_back("ep");
    if (layout.context_shards() > 1) order.push_back("cp");
    if (layout.ep_axis() > 1 && !ep_first) order.push_back("ep");
    for (size_t i : index) order.push_back(others[i]);
    sim::StatusOr<topology::MeshMapping> mapping =
        topology::MapMesh(system, probe.MeshAxes(), {}, order);
    if (mapping.ok() && seen.insert(PlacementKey(*mapping)).second) orders.push_back(order);
  } while (std::next_permutation(index.begin(), index.end()));
  return orders;
}

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

namespace {

// The valid layouts of `chips` chips (tp up to `tp_limit`), resolved and unplaced, in
// EnumerateLayouts' order, in groups that differ only in sp (which adds no mesh axis).
std::vector<std::vector<Layout>> ValidLayouts(int64_t chips, int64_t tp_limit,
                                              const ModelSpec& model, const BatchSpec& batch) {
  std::vector<std::vector<Layout>> out;
  for (int tp = 1; tp <= tp_limit && chips % tp == 0; tp *= 2) {
    for (int pp : PipelineDegrees(model.layers)) {
      if ((chips / tp) % pp != 0) continue;
      const int64_t data = chips / tp / pp;
      for (int cp : ContextSplits(data, batch.seq)) {
        for (int fsdp : Divisors(data / cp, data / cp)) {
          const int dp = static_cast<int>(data / cp / fsdp);
          std::vector<Layout> layouts;
          Layout base;
          base.dp = dp;
          base.fsdp = fsdp;
          base.tp = tp;
          base.pp = pp;
          base.cp = cp;
          if (pp == 1) {
            layouts.push_back(base);
          } else {
            for (int m : {2 * pp, 4 * pp}) {
              Layout l = base;
              l.microbatches = m;
              layouts.push_back(l);
              // Two chunks a stage: equal, or unequal (LayersOfChunk) of two layers or more.
              if (model.layers % (2 * pp) == 0 || model.layers >= 4 * pp) {
                l.schedule = PipelineSchedule::kInterleavedOneFOneB;
                l.virtual_stages = 2;
                layouts.push_back(l);
              }
            }
          }
          // A model with experts: every ep that divides them, with etp = tp or (ep spanning tp)
          // 1; sp wherever tp > 1, as Megatron-LM requires (layout.h).
          std::vector<Layout> candidates;
          for (const Layout& layout : layouts) {
            if (!model.moe()) {
              candidates.push_back(layout);
              continue;
            }
            for (int ep : Divisors(model.experts, chips)) {
              for (int etp : tp > 1 && ep > 1 ? std::vector<int>{0, 1} : std::vector<int>{0}) {
                Layout l = layout;
                l.ep = ep;
                l.etp = etp;
                l.sp = tp > 1;
                candidates.push_back(l);
              }
            }
          }
          const std::vector<bool> sps = tp == 1       ? std::vector<bool>{false}
                                        : model.moe() ? std::vector<bool>{true}
                                                      : std::vector<bool>{false, true};
          for (const Layout& stated : candidates) {
            sim::StatusOr<Layout> resolved = ResolveLayout(stated, batch);
            if (!resolved.ok()) continue;
            Layout layout = *resolved;
            // Sequences are split only where the data chips outnumber them (header).
            if (layout.sequence_shards() > 1 && layout.data_shards() <= batch.sequences) continue;
            std::vector<Layout> group;
            for (bool sp : sps) {
              layout.sp = sp;
              if (ValidateLayout(layout, model, chips, batch).ok()) group.push_back(layout);
            }
            if (!group.empty()) out.push_back(std::move(group));
          }
        }
      }
    }
  }
  return out;
}

int64_t TpLimit(const topology::System& system) {
  return system.fabric.gpu() != nullptr ? system.fabric.gpus_per_node() : 16;
}

}  // namespace

std::vector<LayoutCandidate> EnumerateLayouts(const topology::System& system,
                                              const ModelSpec& model, const BatchSpec& batch) {
  std::vector<LayoutCandidate> out;
  for (const std::vector<Layout>& group :
       ValidLayouts(system.fabric.chip_count(), TpLimit(system), model, batch)) {
    for (const std::vector<std::string>& order : MappingOrders(system, group.front())) {
      for (Layout layout : group) {
        layout.order = order;
        // Selective recomputation changes nothing with flash attention (layer_ops.h).
        for (RecomputePolicy recompute : {RecomputePolicy::kNone, RecomputePolicy::kFull}) {
          out.push_back(LayoutCandidate{layout, recompute});
        }
      }
    }
  }
  return out;
}

sim::StatusOr<SliceChoice> LargestSliceWithLayouts(const topology::System& system,
                                                   const ModelSpec& model, const BatchSpec& batch) {
  // The sizes to try, as SYSTEM size strings with their chip counts, largest first.
  std::vector<std::tuple<int64_t, std::vector<int>, std::string>> sizes;
  if (system.kind == topology::SystemKind::kTpu) {
    if (system.fabric.torus()->slices > 1) {
      return sim::Status::InvalidArgument("the slices of a multi-slice system are not searched");
    }
    const std::vector<int> dims = system.fabric.shape();
    std::vector<int> box(dims.size(), 1);
    // Every box inside the shape (odometer over the dimensions).
    while (true) {
      int64_t chips = 1;
      std::string text;
      for (size_t i = 0; i < box.size(); ++i) {
        chips *= box[i];
        if (i > 0) text.push_back('x');
        text.append(std::to_string(box[i]));
      }
      if (chips < system.fabric.chip_count()) sizes.emplace_back(chips, box, text);
      size_t i = 0;
      while (i < box.size() && box[i] == dims[i]) box[i++] = 1;
      if (i == box.size()) break;
      ++box[i];
    }
  } else if (system.kind == topology::SystemKind::kGpu) {
    const int64_t node = system.fabric.gpus_per_node();
    for (int64_t n = system.fabric.chip_count() - 1; n >= 1; --n) {
      // Whole nodes beyond one (topology/system.h's GPU grammar).
      if (n > node && n % node != 0) continue;
      sizes.emplace_back(n, std::vector<int>{static_cast<int>(n)}, std::to_string(n));
    }
  } else {
    return sim::Status::InvalidArgument("only TPU and GPU systems have smaller slices to search");
  }
  // Largest first; among equal counts the larger first dimensions first.
  std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
    return std::get<1>(a) > std::get<1>(b);
  });
  std::map<int64_t, bool> has_layouts;  // By chip count, before any fabric is built.
  for (const auto& [chips, dims, text] : sizes) {
    auto [known, inserted] = has_layouts.emplace(chips, false);
    if (inserted) known->second = !ValidLayouts(chips, TpLimit(system), model, batch).empty();
    if (!known->second) continue;
    sim::StatusOr<topology::System> slice = topology::ResizedSystem(system, text);
    if (!slice.ok()) continue;  // A shape the family does not make.
    std::vector<LayoutCandidate> candidates = EnumerateLayouts(*slice, model, batch);
    if (!candidates.empty()) return SliceChoice{std::move(*slice), std::move(candidates)};
  }
  return sim::Status::InvalidArgument("no slice of " + system.name + " has a layout for the batch");
}

}  // namespace podsim::workloads
