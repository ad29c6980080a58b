// Fabric: the network of a system as a directed graph (Boost.Graph) of chips, switches, NICs and
// hosts, with one edge per link direction.
//
// Numbering. Vertices 0..chip_count()-1 are the chips, in the system's chip order (torus:
// x + X*(y + Y*z) within a slice, slice-major; GPUs: node-major). Switches, NICs and hosts follow.
// Each directed edge is one link direction with a dense LinkIndex 0..link_count()-1 in creation
// order; InstallLinks() turns link i into flow-model resource i.
//
// Structure. Builders record how they laid the fabric out (TorusLayout, GpuLayout, StarLayout).
// Route() uses the layout when there is one (dimension-order routing on tori, switch-level
// routing on NVSwitch nodes and fat trees) and a Boost.Graph BFS otherwise. Memory is linear in
// vertices + links: routes are computed on demand, never tabulated for all pairs.
//
// Determinism: vertex and link numbers follow builder order; routes depend only on (src, dst).
// Thread safety: const methods may be called concurrently.

#ifndef PODSIM_TOPOLOGY_FABRIC_H_
#define PODSIM_TOPOLOGY_FABRIC_H_

#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"
#include "sim/time.h"

namespace podsim::sim {
class FlowModel;
}

namespace podsim::topology {

using VertexId = uint32_t;
using LinkIndex = uint32_t;
inline constexpr LinkIndex kNoLink = std::numeric_limits<LinkIndex>::max();

enum class VertexKind : uint8_t {
  kChip,
  kNvSwitch,
  kLeafSwitch,   // InfiniBand leaf (rail switch).
  kSpineSwitch,  // InfiniBand spine.
  kCoreSwitch,   // InfiniBand core (third level).
  kNic,
  kHost,
  kDcnSwitch,  // The data-centre network between TPU hosts, as one non-blocking switch.
  kSwitch,     // Generic switch (switch:N).
};

enum class LinkKind : uint8_t { kIci, kNvLink, kPcie, kInfiniBand, kDcn, kGeneric };

std::string_view VertexKindName(VertexKind kind);
std::string_view LinkKindName(LinkKind kind);

// One direction of a link.
struct Link {
  VertexId src = 0;
  VertexId dst = 0;
  double bandwidth_bytes_per_s = 0;
  sim::Time latency;
  LinkKind kind = LinkKind::kGeneric;
};

// A share of a transfer that travels on its own route (NVLink striping over the NVSwitches).
struct WeightedRoute {
  std::vector<LinkIndex> route;
  double fraction = 1;  // Share of the bytes; the fractions of one ParallelRoutes() sum to 1.
};

// Tori (TPU slices and torus:/ring: fabrics). All slices share one shape.
struct TorusLayout {
  std::vector<int> shape;   // Axis lengths, x first.
  std::vector<bool> wraps;  // Per axis: has wraparound links.
  int slices = 1;
  // Link from chip c along axis a in direction +1 (d = 0) or -1 (d = 1):
  // neighbour_links[(c * axes + a) * 2 + d], kNoLink at the edge of an unwrapped axis.
  std::vector<LinkIndex> neighbour_links;
  // Hosts (TPU): host_of_chip[c] indexes hosts; each host has a vertex and PCIe links to its
  // chips; with slices > 1 each host also has a DCN link pair to dcn_switch.
  std::vector<uint32_t> host_of_chip;
  std::vector<VertexId> hosts;
  std::vector<LinkIndex> chip_to_host, host_to_chip;  // Per chip.
  std::vector<LinkIndex> host_to_dcn, dcn_to_host;    // Per host; empty with one slice.
  VertexId dcn_switch = 0;

  int axes() const { return static_cast<int>(shape.size()); }
  int chips_per_slice() const;
};

// GPU systems: NVSwitch nodes, optionally joined by a rail-optimised InfiniBand fat tree.
struct GpuLayout {
  std::string chip;  // The GPU preset's name: collective efficiency is calibrated per generation.
  int gpus_per_node = 8;
  int nodes = 1;
  int switches_per_node = 0;
  std::vector<int> nvlinks_per_switch;  // NVLinks from one GPU to switch s (5,4,4,5 on H100).
  std::vector<VertexId> nvswitches;     // [node * switches_per_node + s]
  std::vector<LinkIndex> gpu_to_switch, switch_to_gpu;  // [gpu * switches_per_node + s]

  // Scale-out; absent (levels == 1) for one node.
  int levels = 1;         // 1: NVLink only; 2: leaf + spine; 3: + core.
  int nodes_per_su = 32;  // Scalable unit: 32 nodes under `gpus_per_node` rail leaves.
  int sus = 0;
  int sus_per_pod = 0;  // SUs under one set of spines (all of them with 2 levels).
  int pods = 0;
  int spines_per_pod = 0;
  int cores_per_group = 0;  // Core switches reached from spine j of every pod: group j.
  double oversubscription = 1;
  std::vector<VertexId> nics;                           // Per GPU.
  std::vector<LinkIndex> gpu_to_nic, nic_to_gpu;        // Per GPU (PCIe).
  std::vector<LinkIndex> nic_to_leaf, leaf_to_nic;      // Per GPU (InfiniBand).
  std::vector<VertexId> leaves;                         // [su * gpus_per_node + rail]
  std::vector<VertexId> spines;                         // [pod * spines_per_pod + j]
  std::vector<VertexId> cores;                          // [j * cores_per_group + c]
  std::vector<LinkIndex> leaf_to_spine, spine_to_leaf;  // [leaf * spines_per_pod + j]
  std::vector<LinkIndex> spine_to_core, core_to_spine;  // [spine * cores_per_group + c]

  int NodeOf(uint32_t gpu) const { return static_cast<int>(gpu) / gpus_per_node; }
  int SuOfNode(int node) const { return node / nodes_per_su; }
  int PodOfSu(int su) const { return su / sus_per_pod; }
  uint32_t LeafOf(uint32_t gpu) const;  // Index into leaves.
};

// switch:N: every chip has one link pair to one switch.
struct StarLayout {
  VertexId hub = 0;
  std::vector<LinkIndex> up, down;  // Per chip.
};

class Fabric {
 public:
  static constexpr int kMaxAxes = 3;  // Tori are 1D, 2D or 3D.

  Fabric() = default;
  Fabric(Fabric&&) = default;
  Fabric& operator=(Fabric&&) = default;
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // ---- Building (used by the builders) ----

  // Adds a vertex. REQUIRES: chips are added before any other vertex.
  VertexId AddVertex(VertexKind kind, std::string name);
  // Adds one link direction. REQUIRES: both vertices exist, src != dst, bandwidth > 0 and finite.
  LinkIndex AddLink(VertexId src, VertexId dst, double bandwidth_bytes_per_s, sim::Time latency,
                    LinkKind kind);
  void set_torus(TorusLayout layout) {
    PODSIM_CHECK(layout.axes() <= kMaxAxes) << "torus with " << layout.axes() << " axes";
    torus_ = std::move(layout);
  }
  void set_gpu(GpuLayout layout) { gpu_ = std::move(layout); }
  void set_star(StarLayout layout) { star_ = std::move(layout); }

  // ---- Graph ----

  uint32_t chip_count() const { return chip_count_; }
  uint32_t vertex_count() const { return static_cast<uint32_t>(kinds_.size()); }
  uint32_t link_count() const { return static_cast<uint32_t>(links_.size()); }
  VertexKind vertex_kind(VertexId v) const { return kinds_[v]; }
  const std::string& vertex_name(VertexId v) const { return names_[v]; }
  const Link& link(LinkIndex i) const { return links_[i]; }
  const std::vector<Link>& links() const { return links_; }
  // Links leaving v, in creation order.
  std::vector<LinkIndex> OutLinks(VertexId v) const;
  uint32_t CountVertices(VertexKind kind) const;

  // ---- Routing ----

  // The links a flow from src to dst crosses, in order; empty when src == dst. Deterministic.
  // Tori: dimension-order routing (x, then y, then z), each axis in its shorter direction using
  // wrap links where present; on a tie (even length with wrap) the positive direction. Between
  // slices: chip -> host (PCIe) -> DCN switch -> host -> chip (every chip has its own PCIe link
  // to its host, so no torus hops are needed).
  // NVSwitch nodes: GPU -> switch -> GPU through switch (src + dst) mod switches_per_node.
  // Fat trees: GPU -> NIC -> leaf [-> spine [-> core -> spine] -> leaf] -> NIC -> GPU; spine and
  // core chosen by destination node (d-mod-k spreading), so equal-cost up-links share the load.
  // Other graphs: a fewest-hop path found by BFS (ties go to the earlier-created link).
  // REQUIRES: src and dst are vertices; dst reachable from src.
  std::vector<LinkIndex> Route(VertexId src, VertexId dst) const;
  // Route() appended to `route`, for callers that reuse one vector.
  void AppendRoute(VertexId src, VertexId dst, std::vector<LinkIndex>* route) const;

  // The routes a transfer should be split over to use every parallel path, with the share of
  // bytes for each: inside an NVSwitch node one route per switch, weighted by the NVLinks to that
  // switch (NCCL stripes over all of a GPU's NVLinks); within a torus slice, with
  // `every_axis_first`, one dimension-order route per axis the chips differ on, each starting on
  // its axis and taking the others in cyclic order (link-disjoint: two of them cross an axis on
  // lines that differ in an axis one has already crossed), without it the x-then-y-then-z route
  // alone; either way over both ways round on an axis where they are equally short; the bytes
  // split evenly over the routes (formulas.md 2.2: a point-to-point moves bytes / (links used x
  // W); evenly is not a max-flow split: with ties on some of the axes the source's links carry
  // unequal shares); a single route with fraction 1 elsewhere.
  std::vector<WeightedRoute> ParallelRoutes(VertexId src, VertexId dst,
                                            bool every_axis_first = true) const;
  // The same into `routes`, reusing its vectors' storage (resized to the number of routes).
  void ParallelRoutes(VertexId src, VertexId dst, std::vector<WeightedRoute>* routes,
                      bool every_axis_first = true) const;

  // Sum of the per-hop latencies of a route.
  sim::Time RouteLatency(const std::vector<LinkIndex>& route) const;
  // Smallest link bandwidth on a route (infinity for an empty route).
  double RouteBandwidth(const std::vector<LinkIndex>& route) const;

  // ---- Torus queries (REQUIRES: torus() != nullptr for these) ----

  const TorusLayout* torus() const { return torus_ ? &*torus_ : nullptr; }
  const std::vector<int>& shape() const;
  // "x", "y", "z" for the axes in shape order.
  std::vector<std::string> AxisNames() const;
  bool Wraps(int axis) const;
  int SliceOf(uint32_t chip) const;
  // Coordinates of a chip within its slice.
  std::vector<int> ChipCoord(uint32_t chip) const;
  // The chip at `coord` in `slice`. REQUIRES: coord within the shape.
  uint32_t ChipAt(const std::vector<int>& coord, int slice = 0) const;
  // The link from `chip` to its neighbour along `axis` in `direction` (+1 or -1); nullopt at the
  // edge of an unwrapped axis.
  std::optional<LinkIndex> NeighborLink(uint32_t chip, int axis, int direction) const;

  // ---- GPU queries (REQUIRES: gpu() != nullptr for these) ----

  const GpuLayout* gpu() const { return gpu_ ? &*gpu_ : nullptr; }
  int NodeOf(uint32_t gpu) const { return gpu_->NodeOf(gpu); }
  int gpus_per_node() const { return gpu_->gpus_per_node; }
  std::vector<VertexId> NodeSwitches(int node) const;
  // The GPU's NIC vertex, or nullopt on a single node (no scale-out fabric).
  std::optional<VertexId> NicOf(uint32_t gpu) const;
  int switch_levels() const { return gpu_->levels; }

  const StarLayout* star() const { return star_ ? &*star_ : nullptr; }

 private:
  using Graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                            boost::property<boost::edge_index_t, LinkIndex>>;

  using Coord = std::array<int, kMaxAxes>;
  // Coordinates within the chip's slice, without allocating; unused axes are 0.
  void LocalCoord(uint32_t chip, Coord* coord) const;
  // Dimension-order route within a slice, or over the DCN between slices: the axes in the order
  // first_axis, first_axis + 1, ... (cyclically). Bit a of negative_on_tie takes the negative
  // direction on axis a when both ways are shortest.
  void AppendTorusRoute(uint32_t src, uint32_t dst, std::vector<LinkIndex>* route,
                        uint32_t negative_on_tie = 0, int first_axis = 0) const;
  void AppendGpuRoute(VertexId src, VertexId dst, int nvswitch,
                      std::vector<LinkIndex>* route) const;
  std::vector<LinkIndex> BfsRoute(VertexId src, VertexId dst) const;

  // Behind a pointer so a Fabric moves cheaply (and without Boost's move of the edge lists).
  std::unique_ptr<Graph> graph_ = std::make_unique<Graph>();
  uint32_t chip_count_ = 0;
  std::vector<VertexKind> kinds_;
  std::vector<std::string> names_;
  std::vector<Link> links_;
  std::optional<TorusLayout> torus_;
  std::optional<GpuLayout> gpu_;
  std::optional<StarLayout> star_;
};

// Adds one flow-model resource per link, in LinkIndex order, so that ResourceId{i} is link i.
// REQUIRES: model has no resources yet.
void InstallLinks(const Fabric& fabric, sim::FlowModel* model);

}  // namespace podsim::topology

#endif  // PODSIM_TOPOLOGY_FABRIC_H_
