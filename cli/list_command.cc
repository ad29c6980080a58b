#include "cli/list_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective_runner.h"
#include "topology/chip_spec.h"
#include "topology/names.h"
#include "topology/system.h"
#include "workloads/model_spec.h"

namespace podsim::cli {

namespace {

using nlohmann::ordered_json;

constexpr std::string_view kKinds[] = {"models", "chips", "systems", "algorithms"};

struct ListFlags {
  std::string kind;
  bool json = false;
};

ordered_json Models() {
  ordered_json models = ordered_json::array();
  for (std::string_view name : workloads::ModelPresetNames()) {
    sim::StatusOr<workloads::ModelSpec> m = workloads::ParseModel(name);
    if (!m.ok()) continue;  // Every preset parses (model_spec_test).
    models.push_back({{"name", m->name},
                      {"params", m->TotalParams()},
                      {"layers", m->layers},
                      {"d_model", m->d_model},
                      {"ffn", m->ffn},
                      {"heads", m->heads},
                      {"kv_heads", m->kv_heads},
                      {"head_dim", m->head_dim},
                      {"vocab", m->vocab},
                      {"gated_mlp", m->gated_mlp},
                      {"experts", m->experts},
                      {"top_k", m->top_k},
                      {"expert_ffn", m->expert_ffn},
                      {"shared_ffn", m->shared_ffn},
                      {"dense_layers", m->dense_layers},
                      {"source", m->source}});
  }
  return models;
}

ordered_json Chips() {
  ordered_json chips = ordered_json::array();
  for (std::string_view name : topology::ChipPresetNames()) {
    sim::StatusOr<topology::ChipSpec> c = topology::ChipPreset(name);
    if (!c.ok()) continue;  // Every preset exists (chip_spec_test).
    chips.push_back({{"name", c->name},
                     {"family", c->family == topology::ChipFamily::kTpu ? "tpu" : "gpu"},
                     {"bf16_flops_per_s", c->bf16_flops_per_s},
                     {"fp8_flops_per_s", c->fp8_flops_per_s},
                     {"int8_flops_per_s", c->int8_flops_per_s},
                     {"fp8_gemm_tn_only", c->fp8_gemm_tn_only},
                     {"fp8_block_scaled", c->fp8_block_scaled},
                     {"hbm_bytes", c->hbm_bytes},
                     {"hbm_bytes_per_s", c->hbm_bytes_per_s},
                     {"scale_up_ports", c->scale_up_ports},
                     {"scale_up_link_bytes_per_s", c->scale_up_link_bytes_per_s},
                     {"scale_out_bytes_per_s", c->scale_out_bytes_per_s},
                     {"source", c->source}});
  }
  return chips;
}

ordered_json Systems() {
  ordered_json systems = ordered_json::array();
  for (const topology::SystemForm& form : topology::SystemForms()) {
    systems.push_back({{"family", form.family},
                       {"form", form.form},
                       {"keys", form.keys},
                       {"example", form.example}});
  }
  return systems;
}

ordered_json Algorithms() {
  ordered_json algorithms = ordered_json::array();
  for (const std::string& name : collectives::AlgorithmNames()) {
    algorithms.push_back({{"name", name}, {"summary", collectives::AlgorithmSummary(name)}});
  }
  return algorithms;
}

ordered_json ListOf(std::string_view kind) {
  if (kind == "models") return Models();
  if (kind == "chips") return Chips();
  if (kind == "systems") return Systems();
  return Algorithms();
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

void PrintText(std::string_view kind, const ordered_json& rows, std::ostream& out) {
  char line[512];
  if (kind == "models") {
    out << "models (--model NAME, or custom:key=value,... with the keys of --help)\n";
    std::snprintf(line, sizeof line, "  %-14s %9s %6s %7s %6s %5s %3s %7s %-10s  %s\n", "name",
                  "params", "layers", "d_model", "ffn", "heads", "kv", "vocab", "experts",
                  "source");
    out << line;
    for (const ordered_json& m : rows) {
      // Experts: "E, top K" (the routed experts and how many a token uses), or "-".
      const int experts = m["experts"].get<int>();
      const std::string moe =
          experts > 0 ? std::to_string(experts) + ", top " + std::to_string(m["top_k"].get<int>())
                      : "-";
      std::snprintf(line, sizeof line, "  %-14s %9s %6d %7d %6d %5d %3d %7d %-10s  %s\n",
                    m["name"].get<std::string>().c_str(),
                    Format("%.3gB", m["params"].get<double>() / 1e9).c_str(),
                    m["layers"].get<int>(), m["d_model"].get<int>(), m["ffn"].get<int>(),
                    m["heads"].get<int>(), m["kv_heads"].get<int>(), m["vocab"].get<int>(),
                    moe.c_str(), m["source"].get<std::string>().c_str());
      out << line;
    }
  } else if (kind == "chips") {
    out << "chips (the NAME of a SYSTEM; dense peaks, one-way link bandwidths)\n";
    std::snprintf(line, sizeof line, "  %-8s %-4s %10s %9s %7s %9s %14s %11s  %s\n", "name", "",
                  "bf16 TF/s", "fp8 TF/s", "HBM GB", "HBM TB/s", "scale-up", "scale-out", "source");
    out << line;
    for (const ordered_json& c : rows) {
      const std::string ports = std::to_string(c["scale_up_ports"].get<int>()) + " x " +
                                Format("%.3g", c["scale_up_link_bytes_per_s"].get<double>() / 1e9) +
                                " GB/s";
      std::snprintf(line, sizeof line, "  %-8s %-4s %10.0f %9s %7.0f %9.3g %14s %6.3g GB/s  %s\n",
                    c["name"].get<std::string>().c_str(), c["family"].get<std::string>().c_str(),
                    c["bf16_flops_per_s"].get<double>() / 1e12,
                    c["fp8_flops_per_s"].get<double>() > 0
                        ? Format("%.0f", c["fp8_flops_per_s"].get<double>() / 1e12).c_str()
                        : "-",
                    c["hbm_bytes"].get<double>() / 1e9, c["hbm_bytes_per_s"].get<double>() / 1e12,
                    ports.c_str(), c["scale_out_bytes_per_s"].get<double>() / 1e9,
                    c["source"].get<std::string>().c_str());
      out << line;
    }
  } else if (kind == "systems") {
    out << "systems (--system NAME:SIZE[,key=value]...)\n";
    for (const ordered_json& s : rows) {
      out << "  " << s["family"].get<std::string>() << "  " << s["form"].get<std::string>()
          << "\n      keys: " << s["keys"].get<std::string>() << "\n      e.g.  "
          << s["example"].get<std::string>() << "\n";
    }
  } else {
    out << "algorithms (collective --algorithm NAME; the default picks one and says why)\n";
    for (const ordered_json& a : rows) {
      std::snprintf(line, sizeof line, "  %-18s %s\n", a["name"].get<std::string>().c_str(),
                    a["summary"].get<std::string>().c_str());
      out << line;
    }
  }
}

}  // namespace

Command AddListCommand(CLI::App& app) {
  auto flags = std::make_shared<ListFlags>();
  CLI::App* sub = app.add_subcommand(
      "list",
      "List the model presets, chips, system forms and collective algorithms, with sources");
  sub->add_option("KIND", flags->kind, "models, chips, systems or algorithms (default: all four)");
  sub->add_flag("--json", flags->json, "Print one JSON object");
  return Command{sub, [flags](CommandIo& io) -> sim::Status {
                   std::vector<std::string_view> kinds(std::begin(kKinds), std::end(kKinds));
                   if (!flags->kind.empty()) {
                     const auto it = std::find(kinds.begin(), kinds.end(), flags->kind);
                     if (it == kinds.end()) {
                       return sim::Status::Usage("list: unknown kind '" + flags->kind + "'" +
                                                 topology::DidYouMean(flags->kind, kinds) +
                                                 "; expected models, chips, systems or algorithms");
                     }
                     kinds = {*it};
                   }
                   ordered_json all = ordered_json::object();
                   for (std::string_view kind : kinds) all[std::string(kind)] = ListOf(kind);
                   if (flags->json) {
                     io.out << all.dump(2) << "\n";
                     return sim::Status::Ok();
                   }
                   bool first = true;
                   for (std::string_view kind : kinds) {
                     if (!first) io.out << "\n";
                     first = false;
                     PrintText(kind, all[std::string(kind)], io.out);
                   }
                   return sim::Status::Ok();
                 }};
}

}  // namespace podsim::cli
