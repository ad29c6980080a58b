#include "collectives/efficiency_model.h"

#include <string>

namespace podsim::collectives {

namespace {

using topology::LinkKind;

void SetFactor(FabricEfficiency* efficiency, LinkKind kind, double factor) {
  efficiency->link_bandwidth_factor[static_cast<size_t>(kind)] = factor;
}

// Sources of every number: efficiency_model.h.
constexpr double kNvLinkFactor = 370.0 / 450.0;
constexpr double kA100NvLinkFactor = 232.0 / 300.0;
constexpr double kBlackwellNvLinkFactor = 700.0 / 900.0;
constexpr double kInfiniBandFactor = 47.0 / 50.0;
constexpr double kNvlsBusBandwidth = 480e9;
constexpr double kNvlsTheoryBusBandwidth = 2.0 * 7 / 8 * 450e9;
constexpr double kBlackwellNvlsBusBandwidth = 850e9;
constexpr double kBlackwellNvlsTheoryBusBandwidth = 2.0 * 7 / 8 * 900e9;
constexpr sim::Time kGpuMessageOverhead = sim::Time::Nanoseconds(600);
constexpr sim::Time kGpuLaunchLatency = sim::Time::Microseconds(30);
constexpr double kIciFactor = 0.95;
constexpr sim::Time kTpuLaunchLatency = sim::Time::Nanoseconds(2700);

bool HasLinkKind(const topology::Fabric& fabric, LinkKind kind) {
  for (const topology::Link& link : fabric.links()) {
    if (link.kind == kind) return true;
  }
  return false;
}

}  // namespace

FabricEfficiency PureFabric() { return FabricEfficiency{}; }

FabricEfficiency CalibratedEfficiency(const topology::Fabric& fabric) {
  FabricEfficiency efficiency;
  if (fabric.gpu() != nullptr) {
    efficiency.family = "gpu";
    const std::string& chip = fabric.gpu()->chip;
    const bool blackwell = chip == "b200" || chip == "gb200";
    SetFactor(&efficiency, LinkKind::kNvLink,
              chip == "a100" ? kA100NvLinkFactor
              : blackwell    ? kBlackwellNvLinkFactor
                             : kNvLinkFactor);
    SetFactor(&efficiency, LinkKind::kInfiniBand, kInfiniBandFactor);
    efficiency.in_switch_reduction_factor =
        blackwell ? kBlackwellNvlsBusBandwidth / kBlackwellNvlsTheoryBusBandwidth
                  : kNvlsBusBandwidth / kNvlsTheoryBusBandwidth;
    efficiency.per_message_overhead = kGpuMessageOverhead;
    efficiency.launch_latency = kGpuLaunchLatency;
  } else if (HasLinkKind(fabric, LinkKind::kIci)) {
    efficiency.family = "tpu";
    SetFactor(&efficiency, LinkKind::kIci, kIciFactor);
    efficiency.launch_latency = kTpuLaunchLatency;
  }
  return efficiency;
}

}  // namespace podsim::collectives
