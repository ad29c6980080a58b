#include "topology/mesh_mapping.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "topology/names.h"

namespace podsim::topology {

namespace {

// A contiguous factor of one physical axis: chips at coordinate stride * d, d < length.
struct Piece {
  int axis;
  int stride;
  int length;
};

// Rank of a mesh axis name by how much it needs fast links: lower ranks are placed first on the
// fastest physical axes. Tensor and sequence parallelism communicate every layer; pipeline
// parallelism only sends activations between stages.
int TrafficRank(const std::string& name) {
  static const std::vector<std::pair<std::string_view, int>> kRanks = {
      {"tp", 0}, {"sp", 1}, {"cp", 1}, {"ep", 2}, {"fsdp", 3}, {"dp", 4}, {"pp", 5}};
  for (const auto& [known, rank] : kRanks) {
    if (name == known) return rank;
  }
  return 4;
}

std::string ListNames(const std::vector<PhysicalAxis>& axes) {
  std::string text;
  for (const PhysicalAxis& a : axes) text += StrCat({text.empty() ? "" : ", ", a.name});
  return text;
}

std::string MeshString(const std::vector<MeshAxis>& axes) {
  std::string text;
  for (const MeshAxis& a : axes) {
    text += StrCat({text.empty() ? "" : ",", a.name, "=", std::to_string(a.size)});
  }
  return text;
}

}  // namespace

std::vector<PhysicalAxis> PhysicalAxes(const System& system) {
  const Fabric& f = system.fabric;
  std::vector<PhysicalAxis> axes;
  if (const TorusLayout* t = f.torus()) {
    std::vector<std::string> names = f.AxisNames();
    for (int a = 0; a < t->axes(); ++a) axes.push_back({names[a], t->shape[a], t->wraps[a], false});
    if (t->slices > 1) axes.push_back({"slice", t->slices, false, true});
  } else if (const GpuLayout* g = f.gpu()) {
    axes.push_back({"gpu", g->gpus_per_node, false, false});
    if (g->nodes > 1) axes.push_back({"node", g->nodes, false, true});
  } else {
    axes.push_back({"x", static_cast<int>(f.chip_count()), false, false});
  }
  return axes;
}

sim::StatusOr<std::vector<MeshAxis>> ParseMeshAxes(std::string_view text) {
  std::vector<MeshAxis> axes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    std::optional<int64_t> size =
        eq == std::string_view::npos ? std::nullopt : ParseCount(item.substr(eq + 1), 1 << 20);
    if (eq == 0 || !size || *size < 1) {
      return sim::Status::ParseError(StrCat({"mesh '", text, "': item '", item,
                                             "' should be name=size with size >= 1, like "
                                             "dp=2,fsdp=4,tp=8"}));
    }
    std::string name(item.substr(0, eq));
    for (const MeshAxis& a : axes) {
      if (a.name == name) {
        return sim::Status::InvalidArgument(
            StrCat({"mesh '", text, "': axis '", name, "' given twice"}));
      }
    }
    axes.push_back({std::move(name), static_cast<int>(*size)});
    start = end + 1;
  }
  return axes;
}

sim::StatusOr<MeshMapping> MapMesh(
    const System& system, const std::vector<MeshAxis>& axes,
    const std::map<std::string, std::vector<std::string>>& explicit_pieces,
    const std::vector<std::string>& order) {
  MeshMapping mapping;
  mapping.physical_axes = PhysicalAxes(system);
  const std::vector<PhysicalAxis>& physical = mapping.physical_axes;
  const int64_t chips = system.fabric.chip_count();
  int64_t devices = 1;
  for (const MeshAxis& a : axes) {
    if (a.size < 1) {
      return sim::Status::InvalidArgument(StrCat(
          {"mesh axis '", a.name, "' has size ", std::to_string(a.size), "; sizes are >= 1"}));
    }
    devices *= a.size;
    if (devices > chips) break;
  }
  if (devices != chips) {
    return sim::Status::InvalidArgument(
        StrCat({"mesh ", MeshString(axes), " has ", devices > chips ? "more than " : "",
                std::to_string(devices), " devices but ", system.name, " has ",
                std::to_string(chips), " chips"}));
  }
  for (const auto& [name, pieces] : explicit_pieces) {
    // A named copy: clang before 16 cannot capture a structured binding.
    const std::string& axis_name = name;
    if (std::none_of(axes.begin(), axes.end(),
                     [&](const MeshAxis& a) { return a.name == axis_name; })) {
      return sim::Status::InvalidArgument(
          StrCat({"explicit placement for '", name, "', which is not an axis of mesh ",
                  MeshString(axes)}));
    }
  }

  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& name = order[i];
    if (std::none_of(axes.begin(), axes.end(), [&](const MeshAxis& a) { return a.name == name; })) {
      return sim::Status::InvalidArgument(StrCat(
          {"placement order names '", name, "', which is not an axis of mesh ", MeshString(axes)}));
    }
    if (std::find(order.begin(), order.begin() + static_cast<ptrdiff_t>(i), name) !=
        order.begin() + static_cast<ptrdiff_t>(i)) {
      return sim::Status::InvalidArgument(StrCat({"placement order names '", name, "' twice"}));
    }
  }

  // used[k]: how much of physical axis k is taken (the stride of the next piece).
  std::vector<int> used(physical.size(), 1);
  std::vector<std::vector<Piece>> placed(axes.size());
  std::vector<std::string_view> physical_names;
  for (const PhysicalAxis& p : physical) physical_names.push_back(p.name);

  // Explicit placements first, in the caller's order.
  for (size_t i = 0; i < axes.size(); ++i) {
    auto it = explicit_pieces.find(axes[i].name);
    if (it == explicit_pieces.end()) continue;
    const std::string context = StrCat({"mesh axis '", axes[i].name, "'"});
    int64_t product = 1;
    for (const std::string& text : it->second) {
      const size_t colon = text.find(':');
      const std::string axis_name = text.substr(0, colon);
      auto found = std::find(physical_names.begin(), physical_names.end(), axis_name);
      if (found == physical_names.end()) {
        return sim::Status::InvalidArgument(
            StrCat({context, ": unknown physical axis '", axis_name, "'",
                    DidYouMean(axis_name, physical_names), "; ", system.name, " has ",
                    ListNames(physical)}));
      }
      const int k = static_cast<int>(found - physical_names.begin());
      const int left = physical[k].size / used[k];
      int length = left;
      if (colon != std::string::npos) {
        std::optional<int64_t> n = ParseCount(std::string_view(text).substr(colon + 1), 1 << 20);
        if (!n || *n < 1 || left % *n != 0) {
          return sim::Status::InvalidArgument(
              StrCat({context, ": piece '", text, "' must be a factor of the ",
                      std::to_string(left), " chips left along ", axis_name}));
        }
        length = static_cast<int>(*n);
      }
      placed[i].push_back({k, used[k], length});
      used[k] *= length;
      product *= length;
    }
    if (product != axes[i].size) {
      return sim::Status::InvalidArgument(
          StrCat({context, ": its pieces hold ", std::to_string(product), " chips, not ",
                  std::to_string(axes[i].size)}));
    }
  }

  // Automatic placement: the axes of `order` in that order, then the fastest-needing axis first
  // (a stable sort keeps the caller's order).
  auto rank = [&](size_t a) {
    auto it = std::find(order.begin(), order.end(), axes[a].name);
    if (it != order.end())
      return static_cast<int>(it - order.begin()) - static_cast<int>(order.size());
    return TrafficRank(axes[a].name);
  };
  std::vector<size_t> sequence(axes.size());
  std::iota(sequence.begin(), sequence.end(), 0);
  std::stable_sort(sequence.begin(), sequence.end(),
                   [&](size_t a, size_t b) { return rank(a) < rank(b); });
  size_t k = 0;
  for (size_t i : sequence) {
    if (explicit_pieces.count(axes[i].name)) continue;
    int need = axes[i].size;
    while (need > 1) {
      while (k < physical.size() && physical[k].size / used[k] == 1) ++k;
      PODSIM_CHECK(k < physical.size()) << "sizes multiply to the chip count";
      const int left = physical[k].size / used[k];
      const int take = left % need == 0 ? need : (need % left == 0 ? left : 0);
      if (take == 0) {
        return sim::Status::InvalidArgument(
            StrCat({"mesh axis '", axes[i].name, "' (size ", std::to_string(axes[i].size),
                    ") cannot be placed contiguously on ", system.name, ": ", std::to_string(left),
                    " chips are left along ", physical[k].name, " and ", std::to_string(need),
                    " is neither a divisor nor a multiple of that; place it explicitly"}));
      }
      placed[i].push_back({static_cast<int>(k), used[k], take});
      used[k] *= take;
      need /= take;
    }
  }

  // Chip number = sum of coordinate * place value, first physical axis fastest.
  std::vector<int64_t> place(physical.size(), 1);
  for (size_t p = 1; p < physical.size(); ++p) place[p] = place[p - 1] * physical[p - 1].size;

  for (size_t i = 0; i < axes.size(); ++i) {
    // Merge consecutive pieces of the same axis (x:2 then x:2 is x:4).
    std::vector<Piece> pieces;
    for (const Piece& piece : placed[i]) {
      if (!pieces.empty() && pieces.back().axis == piece.axis &&
          pieces.back().stride * pieces.back().length == piece.stride) {
        pieces.back().length *= piece.length;
      } else {
        pieces.push_back(piece);
      }
    }
    MeshAxisPlacement out;
    out.name = axes[i].name;
    out.size = axes[i].size;
    for (const Piece& piece : pieces) {
      const PhysicalAxis& p = physical[piece.axis];
      const bool whole = piece.length == p.size;
      out.spans.push_back({p.name, piece.length, piece.stride, whole, whole && p.wraps});
      out.leaves_node = out.leaves_node || p.scale_out;
    }
    // Groups: every chip whose digits on this axis are all 0 starts one; the members follow the
    // reflected mixed-radix order of the digits (the higher digits' sum flips the lower ones'
    // direction), so successive members differ in one digit by one.
    const size_t m = pieces.size();
    std::vector<int64_t> step(m);
    for (size_t j = 0; j < m; ++j) step[j] = pieces[j].stride * place[pieces[j].axis];
    std::vector<int> raw(m), actual(m);
    for (int64_t base = 0; base < chips; ++base) {
      bool is_base = true;
      for (size_t j = 0; j < m && is_base; ++j) {
        const int64_t coord = (base / place[pieces[j].axis]) % physical[pieces[j].axis].size;
        is_base = (coord / pieces[j].stride) % pieces[j].length == 0;
      }
      if (!is_base) continue;
      std::vector<uint32_t> group;
      group.reserve(out.size);
      for (int l = 0; l < out.size; ++l) {
        int rest = l;
        for (size_t j = 0; j < m; ++j) {
          raw[j] = rest % pieces[j].length;
          rest /= pieces[j].length;
        }
        int64_t chip = base;
        int higher = 0;
        for (size_t j = m; j-- > 0;) {
          actual[j] = higher % 2 == 0 ? raw[j] : pieces[j].length - 1 - raw[j];
          higher += actual[j];
          chip += actual[j] * step[j];
        }
        group.push_back(static_cast<uint32_t>(chip));
      }
      out.groups.push_back(std::move(group));
    }
    mapping.axes.push_back(std::move(out));
  }
  return mapping;
}

}  // namespace podsim::topology
