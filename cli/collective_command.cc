#include "cli/collective_command.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/byte_size.h"
#include "cli/collective_trace.h"
#include "cli/run_command.h"
#include "collectives/collective_runner.h"
#include "collectives/efficiency_model.h"
#include "scenario/scenario_build.h"
#include "sim/check.h"
#include "topology/names.h"
#include "topology/system.h"
#include "traces/trace_file.h"

namespace podsim::cli {

namespace {

struct CollectiveFlags {
  std::string system;
  std::string op;
  std::string bytes;
  std::vector<std::string> axes;
  std::string algorithm;
  std::string src;
  std::string dst;
  bool sweep = false;
  bool ideal = false;
  bool reference = false;
  bool json = false;
  std::string trace;
  std::string trace_chips;
  bool dump_scenario = false;
};

// The scenario of the flags; errors name the flag that does not parse.
sim::StatusOr<scenario::Scenario> ScenarioOf(const CollectiveFlags& flags) {
  scenario::Scenario s;
  s.mutable_system()->set_preset(flags.system);
  scenario::Collective* c = s.mutable_collective();
  sim::StatusOr<collectives::CollectiveOp> op = collectives::ParseCollectiveOp(flags.op);
  if (!op.ok()) return op.status().WithContext("--op");
  c->set_op(*scenario::CollectiveOpFromName(flags.op));
  if (flags.sweep) {
    if (!flags.bytes.empty()) return sim::Status::InvalidArgument("give --bytes or --sweep-bytes");
    c->set_sweep_bytes(true);
  } else {
    if (flags.bytes.empty()) return sim::Status::InvalidArgument("--bytes is required");
    PODSIM_ASSIGN_OR_RETURN(double bytes, ParseByteSize("--bytes", flags.bytes));
    c->set_bytes(bytes);
  }
  for (const std::string& axis : flags.axes) c->add_axes(axis);
  if (!flags.algorithm.empty()) c->set_algorithm(flags.algorithm);
  if (!flags.src.empty()) c->set_src(flags.src);
  if (!flags.dst.empty()) c->set_dst(flags.dst);
  if (flags.ideal) c->set_ideal(true);
  if (flags.reference) c->set_reference(true);
  if (flags.json) s.mutable_outputs()->set_json(true);
  if (!flags.trace.empty()) s.mutable_outputs()->set_trace(flags.trace);
  if (!flags.trace_chips.empty()) s.mutable_outputs()->set_trace_chips(flags.trace_chips);
  return s;
}

// Where each field of ScenarioOf comes from.
scenario::SourceMap FlagsOf() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "--system");
  for (const char* name :
       {"op", "bytes", "axes", "algorithm", "src", "dst", "ideal", "reference"}) {
    flags.AddFlag(std::string("collective.") + name, std::string("--") + name);
  }
  flags.AddFlag("collective.sweep_bytes", "--sweep-bytes");
  flags.AddFlag("outputs.json", "--json");
  flags.AddFlag("outputs.trace", "--trace");
  flags.AddFlag("outputs.trace_chips", "--trace-chips");
  return flags;
}

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

// A chip named on the command line: "x,y[,z]" coordinates on a torus (first slice), or a chip
// index on any system.
sim::StatusOr<topology::VertexId> ParseChip(const topology::Fabric& fabric, std::string_view flag,
                                            std::string_view text) {
  const std::vector<std::string> parts = Split(text, ',');
  if (parts.size() == 1) {
    std::optional<int64_t> index = topology::ParseCount(text, int64_t{fabric.chip_count()} - 1);
    if (!index) {
      return sim::Status::InvalidArgument(std::string(flag) + ": expected a chip index from 0 to " +
                                          std::to_string(fabric.chip_count() - 1) + " (got '" +
                                          std::string(text) + "')");
    }
    return static_cast<topology::VertexId>(*index);
  }
  if (fabric.torus() == nullptr) {
    return sim::Status::InvalidArgument(std::string(flag) +
                                        ": coordinates need a torus system; give a chip index");
  }
  const std::vector<int>& shape = fabric.shape();
  if (parts.size() != shape.size()) {
    return sim::Status::InvalidArgument(
        std::string(flag) + ": expected " + std::to_string(shape.size()) +
        " coordinates like 0,1 for this torus (got '" + std::string(text) + "')");
  }
  std::vector<int> coord;
  for (size_t a = 0; a < parts.size(); ++a) {
    std::optional<int64_t> value = topology::ParseCount(parts[a], shape[a] - 1);
    if (!value) {
      return sim::Status::InvalidArgument(std::string(flag) + ": coordinate " + std::to_string(a) +
                                          " must be 0.." + std::to_string(shape[a] - 1) +
                                          " (got '" + parts[a] + "')");
    }
    coord.push_back(static_cast<int>(*value));
  }
  return fabric.ChipAt(coord);
}

// Ranks in one group, to round sweep sizes to whole shards: the product of the spanned axes on
// a torus (all of them by default), every chip elsewhere (collective_runner.h, "Groups").
int GroupSize(const topology::Fabric& fabric, const std::vector<std::string>& axes) {
  if (fabric.torus() == nullptr) return static_cast<int>(fabric.chip_count());
  const std::vector<std::string> names = fabric.AxisNames();
  int size = 1;
  for (size_t a = 0; a < names.size(); ++a) {
    bool spanned = axes.empty();
    for (const std::string& axis : axes) spanned = spanned || axis == names[a];
    if (spanned) size *= fabric.shape()[a];
  }
  return size;
}

// "ideal fabric", or the calibrated family ("calibrated for gpu"): which efficiency model ran.
std::string ModelName(const topology::Fabric& fabric, bool ideal) {
  if (ideal) return "ideal fabric (line rate, hop latencies only)";
  const collectives::FabricEfficiency efficiency = collectives::CalibratedEfficiency(fabric);
  if (efficiency.family == "none") return "ideal fabric (generic fabrics have no calibration)";
  return "calibrated for " + efficiency.family + " (collectives/efficiency_model.h)";
}

std::string Rate(double bytes_per_s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f GB/s", bytes_per_s / 1e9);
  return buffer;
}

nlohmann::ordered_json ResultJson(double bytes, const collectives::CollectiveResult& r) {
  return nlohmann::ordered_json{{"bytes", bytes},
                                {"algorithm", r.algorithm},
                                {"reason", r.reason},
                                {"time_s", r.time.ToSeconds()},
                                {"algbw_Bps", r.algbw_bytes_per_s},
                                {"busbw_Bps", r.busbw_bytes_per_s},
                                {"ranks_per_group", r.ranks_per_group},
                                {"groups", r.groups},
                                {"transfers", r.transfers},
                                {"flows", r.flows},
                                {"events", r.events},
                                {"simulated_ranks", r.simulated_ranks},
                                {"symmetric", r.symmetric}};
}

// An error of the collective runner, which names the flag of the field at fault, for the scenario
// field of that flag.
sim::Status RequestError(const sim::Status& status, const scenario::SourceMap& source) {
  for (const char* field : {"algorithm", "axes", "bytes", "src", "dst"}) {
    const std::string flag = std::string("--") + field;
    if (status.message().starts_with(flag)) {
      return FieldError(status, source, flag, std::string("collective.") + field);
    }
  }
  return FieldError(status, source, "", "collective");
}

}  // namespace

sim::Status RunCollectiveScenario(const scenario::Scenario& s, const scenario::SourceMap& source,
                                  CommandIo& io) {
  const scenario::Collective& c = s.collective();
  const scenario::Outputs& outputs = s.outputs();
  PODSIM_ASSIGN_OR_RETURN(topology::System system, scenario::BuildSystem(s.system(), source));
  const std::string op_name(scenario::CollectiveOpName(c.op()));
  sim::StatusOr<collectives::CollectiveOp> op = collectives::ParseCollectiveOp(op_name);
  if (!op.ok()) return source.Annotate(op.status(), "collective.op");
  collectives::CollectiveRequest request;
  request.op = *op;
  request.axes.assign(c.axes().begin(), c.axes().end());
  request.algorithm = c.algorithm();
  request.calibrated = !c.ideal();
  request.reference = c.reference();
  request.max_transfers = io.max_transfers;
  const bool p2p = *op == collectives::CollectiveOp::kPointToPoint;
  if (p2p && (!c.has_src() || !c.has_dst())) {
    return source.Annotate(sim::Status::InvalidArgument("--op p2p needs --src and --dst"),
                           "collective");
  }
  if (c.has_src()) {
    sim::StatusOr<topology::VertexId> src = ParseChip(system.fabric, "--src", c.src());
    if (!src.ok()) return FieldError(src.status(), source, "--src", "collective.src");
    request.src = *src;
  }
  if (c.has_dst()) {
    sim::StatusOr<topology::VertexId> dst = ParseChip(system.fabric, "--dst", c.dst());
    if (!dst.ok()) return FieldError(dst.status(), source, "--dst", "collective.dst");
    request.dst = *dst;
  }

  std::vector<double> sizes;
  if (c.sweep_bytes()) {
    // 1 KiB to 16 GiB in powers of two, each rounded up to whole shards of a group.
    const double ranks = p2p ? 1 : GroupSize(system.fabric, request.axes);
    for (double size = 1024; size <= 16.0 * (1u << 30); size *= 2)
      sizes.push_back(std::ceil(size / ranks) * ranks);
  } else {
    sizes.push_back(c.bytes());
  }

  // Tracing observes one run; the sink writes to a temporary file renamed on Close, so a run that
  // fails leaves no trace file behind.
  std::unique_ptr<traces::TraceSink> sink;
  std::unique_ptr<CollectiveTraceObserver> observer;
  if (outputs.has_trace()) {
    if (c.sweep_bytes()) {
      return source.Annotate(
          sim::Status::InvalidArgument("--trace traces one size; drop --sweep-bytes"),
          "outputs.trace");
    }
    request.bytes = sizes.front();
    sim::StatusOr<collectives::AlgorithmChoice> choice =
        collectives::ChooseAlgorithm(system.fabric, request);
    if (!choice.ok()) return RequestError(choice.status(), source);
    sim::StatusOr<std::vector<bool>> traced =
        ParseTraceChips(outputs.trace_chips(), system.fabric.chip_count());
    if (!traced.ok()) {
      return FieldError(traced.status(), source, "--trace-chips", "outputs.trace_chips");
    }
    sim::StatusOr<std::unique_ptr<traces::TraceSink>> opened =
        traces::OpenTraceFile(outputs.trace());
    if (!opened.ok()) {
      return FieldError(opened.status().WithContext("--trace"), source, "--trace", "outputs.trace");
    }
    sink = std::move(*opened);
    observer = std::make_unique<CollectiveTraceObserver>(&system.fabric, sink.get(), *traced,
                                                         choice->algorithm);
  }

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<collectives::CollectiveResult> results;
  for (double bytes : sizes) {
    request.bytes = bytes;
    sim::StatusOr<collectives::CollectiveResult> result =
        collectives::SimulateCollective(system.fabric, request);
    if (!result.ok()) return RequestError(result.status(), source);
    rows.push_back(ResultJson(bytes, *result));
    results.push_back(*std::move(result));
  }
  if (observer) {
    // The trace shows every traced rank, so it comes from a run of every rank: the same times
    // (collective_symmetry_test.cc), while the output stays that of the run without tracing.
    collectives::CollectiveRequest traced = request;
    traced.transfer_observer = observer.get();
    traced.flow_observer = observer.get();
    sim::StatusOr<collectives::CollectiveResult> result =
        collectives::SimulateCollective(system.fabric, traced);
    if (!result.ok()) return RequestError(result.status(), source);
    PODSIM_CHECK(result->time == results.front().time)
        << "a traced run took " << result->time << ", untraced " << results.front().time;
  }
  if (sink) {
    PODSIM_RETURN_IF_ERROR(
        FieldError(sink->Close().WithContext("--trace"), source, "--trace", "outputs.trace"));
  }

  if (outputs.json()) {
    nlohmann::ordered_json j{
        {"system", system.name}, {"op", op_name}, {"model", ModelName(system.fabric, c.ideal())}};
    if (c.sweep_bytes()) {
      j["sweep"] = rows;
    } else {
      for (auto& [key, value] : rows[0].items()) j[key] = value;
    }
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }

  const collectives::CollectiveResult& first = results.front();
  io.out << "system      " << system.name << " (" << system.fabric.chip_count() << " chips)\n";
  io.out << "collective  " << op_name;
  if (!p2p) {
    io.out << " over " << first.groups << (first.groups == 1 ? " group" : " groups") << " of "
           << first.ranks_per_group << " ranks";
  }
  io.out << "\n";
  io.out << "algorithm   " << first.algorithm << ": " << first.reason << "\n";
  io.out << "model       " << ModelName(system.fabric, c.ideal()) << "\n";
  if (c.sweep_bytes()) {
    char line[160];
    std::snprintf(line, sizeof line, "%12s %14s %12s %12s  %s\n", "bytes", "time", "algbw", "busbw",
                  "algorithm");
    io.out << line;
    for (size_t i = 0; i < results.size(); ++i) {
      std::snprintf(line, sizeof line, "%12s %14s %12s %12s  %s\n",
                    FormatByteSize(sizes[i]).c_str(), results[i].time.ToString().c_str(),
                    Rate(results[i].algbw_bytes_per_s).c_str(),
                    Rate(results[i].busbw_bytes_per_s).c_str(), results[i].algorithm.c_str());
      io.out << line;
    }
    return sim::Status::Ok();
  }
  io.out << "bytes       " << FormatByteSize(sizes[0]) << "\n";
  io.out << "time        " << first.time.ToString() << "\n";
  io.out << "algbw       " << Rate(first.algbw_bytes_per_s) << "\n";
  io.out << "busbw       " << Rate(first.busbw_bytes_per_s) << "\n";
  io.out << "simulated   " << first.transfers << " transfers, " << first.flows << " flows, "
         << first.events << " events"
         << (first.symmetric ? " (one rank per orbit of the torus's translations, exact; "
                               "--reference simulates every rank)"
                             : "")
         << "\n";
  if (sink) io.out << "trace       " << outputs.trace() << "\n";
  return sim::Status::Ok();
}

Command AddCollectiveCommand(CLI::App& app) {
  auto flags = std::make_shared<CollectiveFlags>();
  CLI::App* sub = app.add_subcommand(
      "collective", "Simulate a collective on a system: time, algorithm and bus bandwidth");
  sub->add_option("--system", flags->system, "SYSTEM, e.g. tpu-v5p:4x4x4, h100:8, ring:8")
      ->required();
  sub->add_option("--op", flags->op,
                  "all-gather, reduce-scatter, all-reduce, all-to-all, broadcast, p2p")
      ->required();
  sub->add_option("--bytes", flags->bytes,
                  "Size of the whole gathered or reduced array (nccl-tests' S), e.g. 1GiB");
  sub->add_option("--axes", flags->axes, "Torus axes to span, e.g. x,y (default: all)")
      ->delimiter(',');
  sub->add_option("--algorithm", flags->algorithm, "Override the selector");
  sub->add_option("--src", flags->src, "p2p source / broadcast root: chip index or x,y[,z]");
  sub->add_option("--dst", flags->dst, "p2p destination: chip index or x,y[,z]");
  sub->add_flag("--sweep-bytes", flags->sweep, "Sweep sizes from 1 KiB to 16 GiB");
  sub->add_flag("--ideal", flags->ideal,
                "Pure fabric: line rate and hop latencies, without the efficiency model "
                "calibrated on measured collectives");
  sub->add_flag("--reference", flags->reference,
                "Simulate every rank, not one per orbit of the torus's translations (the same "
                "answer, slower: the brute-force reference)");
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_option("--trace", flags->trace,
                  "Write a trace of the run: FILE.pftrace (Perfetto) or FILE.json (Chrome JSON)");
  sub->add_option("--trace-chips", flags->trace_chips,
                  "Chips to trace: 'all' or ranges like 0-15,32 (default: up to 64 chips)");
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags](CommandIo& io) {
                   return DumpOrRun(ScenarioOf(*flags), FlagsOf(), flags->dump_scenario, io);
                 }};
}

}  // namespace podsim::cli
