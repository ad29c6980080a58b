#include "topology/gpu_builder.h"

#include <cmath>
#include <string>
#include <vector>

#include "topology/names.h"

namespace podsim::topology {

namespace {

struct NodeDesign {
  int gpus_per_node;
  std::vector<int> nvlinks_per_switch;
};

// hardware.md 1.3 NVLink table and "NVLink and NVSwitch (Hopper)".
std::optional<NodeDesign> NodeFor(const std::string& name) {
  if (name == "a100") return NodeDesign{8, {2, 2, 2, 2, 2, 2}};  // 12 links, 6 switches.
  if (name == "h100" || name == "h200") return NodeDesign{8, {5, 4, 4, 5}};  // 5+4+4+5.
  if (name == "b200") return NodeDesign{8, {9, 9}};                     // 18 links, 2 switches.
  if (name == "gb200") return NodeDesign{72, std::vector<int>(18, 1)};  // NVL72: 18 switches.
  return std::nullopt;
}

constexpr int kNodesPerSu = 32;      // "A SU is 32 nodes = 256 GPUs under 8 leaf switches".
constexpr int kSwitchPorts = 64;     // "IB switches have 64 ports".
constexpr int kTwoLevelSpines = 16;  // "The SuperPod is 4 SUs with 16 spine switches".
constexpr int kSusPerPod = 4;        // 1024 GPUs under one spine layer (the reference SuperPod).

}  // namespace

sim::StatusOr<Fabric> BuildGpuSystem(const ChipSpec& chip, int gpus, double oversubscription) {
  std::optional<NodeDesign> design = NodeFor(chip.name);
  const std::string what = chip.name + ":" + std::to_string(gpus);
  if (!design)
    return sim::Status::InvalidArgument(what + ": " + chip.name + " is not a GPU preset");
  const int g = design->gpus_per_node;
  if (gpus < 1) return sim::Status::InvalidArgument(what + ": needs at least 1 GPU");
  if (!(oversubscription >= 1) || !std::isfinite(oversubscription)) {
    return sim::Status::InvalidArgument(what + ": oversub must be >= 1 (got " +
                                        std::to_string(oversubscription) + ")");
  }
  if (gpus > g && gpus % g != 0) {
    return sim::Status::InvalidArgument(what + ": more than one node needs whole nodes of " +
                                        std::to_string(g) + " GPUs (got " + std::to_string(gpus) +
                                        ")");
  }
  if (gpus > g && g != 8) {
    return sim::Status::InvalidArgument(what + ": podsim models one " + chip.name + " NVL" +
                                        std::to_string(g) + " domain (" + std::to_string(g) +
                                        " GPUs); several racks are not modelled yet");
  }
  if (gpus > kMaxGpus) {
    return sim::Status::OutOfRange(what + ": more than " + std::to_string(kMaxGpus) +
                                   " GPUs needs a fat tree deeper than 3 levels");
  }

  Fabric fabric;
  GpuLayout l;
  l.chip = chip.name;
  l.gpus_per_node = gpus < g ? gpus : g;
  l.nodes = gpus / l.gpus_per_node;
  l.switches_per_node = static_cast<int>(design->nvlinks_per_switch.size());
  l.nvlinks_per_switch = design->nvlinks_per_switch;
  l.oversubscription = oversubscription;
  const int s_count = l.switches_per_node;

  for (int i = 0; i < gpus; ++i)
    fabric.AddVertex(VertexKind::kChip, StrCat({"gpu", std::to_string(i)}));
  for (int n = 0; n < l.nodes; ++n) {
    for (int s = 0; s < s_count; ++s) {
      l.nvswitches.push_back(fabric.AddVertex(
          VertexKind::kNvSwitch, StrCat({"n", std::to_string(n), "/nvswitch", std::to_string(s)})));
    }
  }
  for (int i = 0; i < gpus; ++i) {
    const int node = i / l.gpus_per_node;
    for (int s = 0; s < s_count; ++s) {
      const VertexId sw = l.nvswitches[static_cast<size_t>(node) * s_count + s];
      const double bw = design->nvlinks_per_switch[s] * chip.scale_up_link_bytes_per_s;
      l.gpu_to_switch.push_back(
          fabric.AddLink(static_cast<VertexId>(i), sw, bw, chip.hop_latency, LinkKind::kNvLink));
      l.switch_to_gpu.push_back(
          fabric.AddLink(sw, static_cast<VertexId>(i), bw, chip.hop_latency, LinkKind::kNvLink));
    }
  }

  if (l.nodes > 1) {
    const double port = chip.scale_out_bytes_per_s;
    l.nodes_per_su = kNodesPerSu;
    l.sus = (l.nodes + kNodesPerSu - 1) / kNodesPerSu;
    l.levels = l.sus <= kSusPerPod ? 2 : 3;
    l.sus_per_pod = l.levels == 2 ? l.sus : kSusPerPod;
    l.pods = (l.sus + l.sus_per_pod - 1) / l.sus_per_pod;
    const int leaves_per_pod = kSusPerPod * g;  // 32 for 8-GPU nodes.
    l.spines_per_pod = l.levels == 2 ? kTwoLevelSpines : leaves_per_pod;
    l.cores_per_group =
        l.levels == 3 ? (l.pods * (kSwitchPorts / 2) + kSwitchPorts - 1) / kSwitchPorts : 0;
    for (int i = 0; i < gpus; ++i) {
      l.nics.push_back(fabric.AddVertex(VertexKind::kNic, StrCat({"nic", std::to_string(i)})));
    }
    for (int su = 0; su < l.sus; ++su) {
      for (int r = 0; r < g; ++r) {
        l.leaves.push_back(
            fabric.AddVertex(VertexKind::kLeafSwitch,
                             StrCat({"su", std::to_string(su), "/leaf", std::to_string(r)})));
      }
    }
    for (int p = 0; p < l.pods; ++p) {
      for (int j = 0; j < l.spines_per_pod; ++j) {
        std::string name = StrCat({"spine", std::to_string(j)});
        if (l.levels == 3) name = StrCat({"pod", std::to_string(p), "/", name});
        l.spines.push_back(fabric.AddVertex(VertexKind::kSpineSwitch, std::move(name)));
      }
    }
    for (int j = 0; j < l.spines_per_pod && l.levels == 3; ++j) {
      for (int c = 0; c < l.cores_per_group; ++c) {
        l.cores.push_back(fabric.AddVertex(
            VertexKind::kCoreSwitch, StrCat({"core", std::to_string(j), ".", std::to_string(c)})));
      }
    }
    for (int i = 0; i < gpus; ++i) {
      const VertexId gpu = static_cast<VertexId>(i);
      const VertexId nic = l.nics[i];
      const VertexId leaf = l.leaves[l.LeafOf(gpu)];
      l.gpu_to_nic.push_back(
          fabric.AddLink(gpu, nic, chip.pcie_bytes_per_s, kGpuPcieLatency, LinkKind::kPcie));
      l.nic_to_gpu.push_back(
          fabric.AddLink(nic, gpu, chip.pcie_bytes_per_s, kGpuPcieLatency, LinkKind::kPcie));
      l.nic_to_leaf.push_back(
          fabric.AddLink(nic, leaf, port, kInfiniBandHopLatency, LinkKind::kInfiniBand));
      l.leaf_to_nic.push_back(
          fabric.AddLink(leaf, nic, port, kInfiniBandHopLatency, LinkKind::kInfiniBand));
    }
    // Leaf up-capacity: its 32 down-ports' worth, divided by the oversubscription factor.
    const double leaf_up = kNodesPerSu * port / oversubscription;
    const double leaf_spine = leaf_up / l.spines_per_pod;
    for (size_t leaf = 0; leaf < l.leaves.size(); ++leaf) {
      const int pod = l.PodOfSu(static_cast<int>(leaf) / g);
      for (int j = 0; j < l.spines_per_pod; ++j) {
        const VertexId spine = l.spines[static_cast<size_t>(pod) * l.spines_per_pod + j];
        l.leaf_to_spine.push_back(fabric.AddLink(l.leaves[leaf], spine, leaf_spine,
                                                 kInfiniBandHopLatency, LinkKind::kInfiniBand));
        l.spine_to_leaf.push_back(fabric.AddLink(spine, l.leaves[leaf], leaf_spine,
                                                 kInfiniBandHopLatency, LinkKind::kInfiniBand));
      }
    }
    if (l.levels == 3) {
      // A spine passes up everything its leaves can send it (non-blocking above the leaves).
      const double spine_up = leaves_per_pod * leaf_spine;
      const double spine_core = spine_up / l.cores_per_group;
      for (size_t spine = 0; spine < l.spines.size(); ++spine) {
        const int j = static_cast<int>(spine) % l.spines_per_pod;
        for (int c = 0; c < l.cores_per_group; ++c) {
          const VertexId core = l.cores[static_cast<size_t>(j) * l.cores_per_group + c];
          l.spine_to_core.push_back(fabric.AddLink(l.spines[spine], core, spine_core,
                                                   kInfiniBandHopLatency, LinkKind::kInfiniBand));
          l.core_to_spine.push_back(fabric.AddLink(core, l.spines[spine], spine_core,
                                                   kInfiniBandHopLatency, LinkKind::kInfiniBand));
        }
      }
    }
  }
  fabric.set_gpu(std::move(l));
  return fabric;
}

}  // namespace podsim::topology
