#include "cli/topology_command.h"

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/run_command.h"
#include "scenario/scenario_build.h"
#include "topology/fabric_metrics.h"
#include "topology/system.h"

namespace podsim::cli {

namespace {

using topology::Fabric;
using topology::LinkKind;
using topology::VertexKind;

struct TopologyFlags {
  std::string system;
  bool json = false;
  bool dot = false;
  bool dump_scenario = false;
};

scenario::Scenario ScenarioOf(const TopologyFlags& flags) {
  scenario::Scenario s;
  s.mutable_system()->set_preset(flags.system);
  s.mutable_topology();
  if (flags.dot) s.mutable_topology()->set_dot(true);
  if (flags.json) s.mutable_outputs()->set_json(true);
  return s;
}

// Where each field of ScenarioOf comes from; SYSTEM's errors name it already.
scenario::SourceMap TopologyFlagSources() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "");
  flags.AddFlag("topology.dot", "--dot");
  flags.AddFlag("outputs.json", "--json");
  return flags;
}

bool IsSwitch(VertexKind kind) {
  return kind == VertexKind::kNvSwitch || kind == VertexKind::kLeafSwitch ||
         kind == VertexKind::kSpineSwitch || kind == VertexKind::kCoreSwitch ||
         kind == VertexKind::kDcnSwitch || kind == VertexKind::kSwitch;
}

// Scale-out bandwidth one chip can inject: its NIC link (GPU fat trees) or its share of its host's
// DCN links (several TPU slices); 0 without a scale-out fabric.
double ScaleOutPerChip(const topology::System& system) {
  const Fabric& f = system.fabric;
  if (const topology::GpuLayout* g = f.gpu(); g && !g->nic_to_leaf.empty()) {
    return f.link(g->nic_to_leaf[0]).bandwidth_bytes_per_s;
  }
  if (const topology::TorusLayout* t = f.torus(); t && !t->host_to_dcn.empty()) {
    const double chips_per_host = static_cast<double>(f.chip_count()) / t->hosts.size();
    return f.link(t->host_to_dcn[0]).bandwidth_bytes_per_s / chips_per_host;
  }
  return 0;
}

nlohmann::ordered_json Describe(const topology::System& system) {
  const Fabric& f = system.fabric;
  nlohmann::ordered_json j;
  j["system"] = system.name;
  const topology::ChipSpec& chip = system.chip;
  j["chip"] = {{"name", chip.name},
               {"bf16_flops_per_s", chip.bf16_flops_per_s},
               {"int8_flops_per_s", chip.int8_flops_per_s},
               {"fp8_flops_per_s", chip.fp8_flops_per_s},
               {"fp8_gemm_tn_only", chip.fp8_gemm_tn_only},
               {"fp8_block_scaled", chip.fp8_block_scaled},
               {"hbm_bytes", chip.hbm_bytes},
               {"hbm_bytes_per_s", chip.hbm_bytes_per_s},
               {"scale_up_ports", chip.scale_up_ports},
               {"scale_up_link_Bps", chip.scale_up_link_bytes_per_s},
               {"hop_latency_s", chip.hop_latency.ToSeconds()}};
  j["chips"] = f.chip_count();
  std::map<std::string, uint32_t> switches;
  uint32_t switch_count = 0;
  for (topology::VertexId v = f.chip_count(); v < f.vertex_count(); ++v) {
    if (IsSwitch(f.vertex_kind(v))) {
      ++switch_count;
      ++switches[std::string(topology::VertexKindName(f.vertex_kind(v)))];
    }
  }
  j["switches"] = switch_count;
  j["switches_by_kind"] = switches;
  j["nics"] = f.CountVertices(VertexKind::kNic);
  j["hosts"] = f.CountVertices(VertexKind::kHost);
  j["links"] = f.link_count();
  std::map<std::string, uint32_t> links;
  for (const topology::Link& l : f.links()) ++links[std::string(topology::LinkKindName(l.kind))];
  j["links_by_kind"] = links;
  if (const topology::TorusLayout* t = f.torus()) {
    nlohmann::ordered_json axes = nlohmann::ordered_json::array();
    std::vector<std::string> names = f.AxisNames();
    for (int a = 0; a < t->axes(); ++a) {
      axes.push_back({{"name", names[a]}, {"size", t->shape[a]}, {"wraps", bool(t->wraps[a])}});
    }
    j["axes"] = axes;
    j["slices"] = t->slices;
  }
  if (const topology::GpuLayout* g = f.gpu()) {
    j["gpus_per_node"] = g->gpus_per_node;
    j["nodes"] = g->nodes;
    j["nvswitches_per_node"] = g->switches_per_node;
    j["switch_levels"] = g->levels;
    j["oversubscription"] = g->oversubscription;
  }
  j["diameter_hops"] = topology::DiameterHops(f);
  const double bisection = topology::BisectionBytesPerS(f);
  j["bisection_one_way_Bps"] = bisection;
  j["bisection_full_duplex_Bps"] = 2 * bisection;
  const topology::InjectionBandwidth injection = topology::ScaleUpInjection(f);
  j["injection_bandwidth_Bps"] = injection.max_bytes_per_s;
  j["injection_bandwidth_min_Bps"] = injection.min_bytes_per_s;
  j["scale_out_bandwidth_per_chip_Bps"] = ScaleOutPerChip(system);
  return j;
}

std::string Count(const nlohmann::ordered_json& by_kind) {
  std::string text;
  for (const auto& [kind, count] : by_kind.items()) {
    text += (text.empty() ? "" : ", ") + kind + " " + std::to_string(count.get<uint32_t>());
  }
  return text.empty() ? "" : " (" + text + ")";
}

void PrintText(const nlohmann::ordered_json& j, std::ostream& out) {
  out << "system: " << j["system"].get<std::string>() << "\n";
  out << "chip: " << j["chip"]["name"].get<std::string>() << "\n";
  out << "chips: " << j["chips"] << "\n";
  out << "switches: " << j["switches"] << Count(j["switches_by_kind"]) << "\n";
  out << "nics: " << j["nics"] << ", hosts: " << j["hosts"] << "\n";
  out << "links (one per direction): " << j["links"] << Count(j["links_by_kind"]) << "\n";
  if (j.contains("axes")) {
    out << "axes:";
    for (const auto& axis : j["axes"]) {
      out << " " << axis["name"].get<std::string>() << "=" << axis["size"]
          << (axis["wraps"].get<bool>() ? " (wrap)" : " (no wrap)");
    }
    out << "\n";
    if (j["slices"].get<int>() > 1) out << "slices: " << j["slices"] << " (over DCN)\n";
  }
  if (j.contains("gpus_per_node")) {
    out << "nodes: " << j["nodes"] << " of " << j["gpus_per_node"] << " GPUs, "
        << j["nvswitches_per_node"] << " NVSwitches each; switch levels: " << j["switch_levels"]
        << "; oversubscription: " << j["oversubscription"] << "\n";
  }
  out << "diameter: " << j["diameter_hops"] << " hops\n";
  out << "bisection bandwidth: " << j["bisection_one_way_Bps"].get<double>() << " B/s one way, "
      << j["bisection_full_duplex_Bps"].get<double>() << " B/s full duplex\n";
  out << "injection bandwidth per chip: " << j["injection_bandwidth_Bps"].get<double>()
      << " B/s scale-up";
  if (j["injection_bandwidth_min_Bps"] != j["injection_bandwidth_Bps"]) {
    out << " (the chips with the fewest links, at the corners or ends of unwrapped axes: "
        << j["injection_bandwidth_min_Bps"].get<double>() << ")";
  }
  out << ", " << j["scale_out_bandwidth_per_chip_Bps"].get<double>() << " B/s scale-out\n";
}

// Graphviz: one undirected edge per link pair (the builders create both directions), labelled
// with its kind and one-way bandwidth.
void PrintDot(const topology::System& system, std::ostream& out) {
  const Fabric& f = system.fabric;
  out << "graph \"" << system.name << "\" {\n";
  for (topology::VertexId v = 0; v < f.vertex_count(); ++v) {
    const VertexKind kind = f.vertex_kind(v);
    const char* shape =
        kind == VertexKind::kChip ? "box" : (IsSwitch(kind) ? "diamond" : "ellipse");
    out << "  v" << v << " [label=\"" << f.vertex_name(v) << "\", shape=" << shape << "];\n";
  }
  for (const topology::Link& l : f.links()) {
    if (l.src > l.dst) continue;
    out << "  v" << l.src << " -- v" << l.dst << " [label=\"" << topology::LinkKindName(l.kind)
        << " " << l.bandwidth_bytes_per_s << "\"];\n";
  }
  out << "}\n";
}

}  // namespace

Command AddTopologyCommand(CLI::App& app) {
  auto flags = std::make_shared<TopologyFlags>();
  CLI::App* sub = app.add_subcommand(
      "topology", "Describe a system: chips, switches, links, wraps, diameter, bandwidths");
  constexpr const char* kSystemHelp =
      "e.g. tpu-v5p:16x20x28, tpu-v5e:16x16,slices=4, h100:1024, gb200:72, "
      "ring:8,bw=1e11,lat=1e-6 (podsim list systems)";
  auto positional = std::make_shared<std::string>();
  sub->add_option("SYSTEM", *positional, kSystemHelp);
  sub->add_option("--system", flags->system,
                  std::string("SYSTEM, as the other commands take it; ") + kSystemHelp);
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_flag("--dot", flags->dot, "Write the fabric as a Graphviz graph");
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags, positional](CommandIo& io) {
                   if (!positional->empty() && !flags->system.empty()) {
                     return sim::Status::Usage(
                         "topology: give the system once, as SYSTEM or as --system (got '" +
                         *positional + "' and '" + flags->system + "')");
                   }
                   if (!positional->empty()) flags->system = *positional;
                   if (flags->system.empty()) {
                     return sim::Status::Usage(
                         "topology: --system is required, e.g. podsim topology --system "
                         "tpu-v5e:16x16 (podsim list systems lists the forms)");
                   }
                   return DumpOrRun(ScenarioOf(*flags), TopologyFlagSources(), flags->dump_scenario,
                                    io);
                 }};
}

sim::Status RunTopologyScenario(const scenario::Scenario& s, const scenario::SourceMap&,
                                topology::System system, CommandIo& io) {
  if (s.topology().dot()) {
    PrintDot(system, io.out);
    return sim::Status::Ok();
  }
  nlohmann::ordered_json j = Describe(system);
  if (s.outputs().json()) {
    io.out << j.dump(2) << "\n";
  } else {
    PrintText(j, io.out);
  }
  return sim::Status::Ok();
}

}  // namespace podsim::cli
