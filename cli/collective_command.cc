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
#include "collectives/collective_runner.h"
#include "collectives/efficiency_model.h"
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
  bool json = false;
  std::string trace;
  std::string trace_chips;
};

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
                                {"events", r.events}};
}

sim::Status Run(const CollectiveFlags& flags, CommandIo& io) {
  PODSIM_ASSIGN_OR_RETURN(topology::System system, topology::ParseSystem(flags.system));
  sim::StatusOr<collectives::CollectiveOp> op = collectives::ParseCollectiveOp(flags.op);
  if (!op.ok()) return op.status().WithContext("--op");
  collectives::CollectiveRequest request;
  request.op = *op;
  request.axes = flags.axes;
  request.algorithm = flags.algorithm;
  request.calibrated = !flags.ideal;
  const bool p2p = *op == collectives::CollectiveOp::kPointToPoint;
  if (p2p && (flags.src.empty() || flags.dst.empty())) {
    return sim::Status::InvalidArgument("--op p2p needs --src and --dst");
  }
  if (!flags.src.empty()) {
    PODSIM_ASSIGN_OR_RETURN(request.src, ParseChip(system.fabric, "--src", flags.src));
  }
  if (!flags.dst.empty()) {
    PODSIM_ASSIGN_OR_RETURN(request.dst, ParseChip(system.fabric, "--dst", flags.dst));
  }

  std::vector<double> sizes;
  if (flags.sweep) {
    if (!flags.bytes.empty()) return sim::Status::InvalidArgument("give --bytes or --sweep-bytes");
    // 1 KiB to 16 GiB in powers of two, each rounded up to whole shards of a group.
    const double ranks = p2p ? 1 : GroupSize(system.fabric, flags.axes);
    for (double s = 1024; s <= 16.0 * (1u << 30); s *= 2)
      sizes.push_back(std::ceil(s / ranks) * ranks);
  } else {
    if (flags.bytes.empty()) return sim::Status::InvalidArgument("--bytes is required");
    PODSIM_ASSIGN_OR_RETURN(double bytes, ParseByteSize("--bytes", flags.bytes));
    sizes.push_back(bytes);
  }

  // Tracing observes one run; the sink writes to a temporary file renamed on Close, so a run that
  // fails leaves no trace file behind.
  std::unique_ptr<traces::TraceSink> sink;
  std::unique_ptr<CollectiveTraceObserver> observer;
  if (!flags.trace.empty()) {
    if (flags.sweep)
      return sim::Status::InvalidArgument("--trace traces one size; drop --sweep-bytes");
    request.bytes = sizes.front();
    PODSIM_ASSIGN_OR_RETURN(collectives::AlgorithmChoice choice,
                            collectives::ChooseAlgorithm(system.fabric, request));
    PODSIM_ASSIGN_OR_RETURN(std::vector<bool> traced,
                            ParseTraceChips(flags.trace_chips, system.fabric.chip_count()));
    sim::StatusOr<std::unique_ptr<traces::TraceSink>> opened = traces::OpenTraceFile(flags.trace);
    if (!opened.ok()) return opened.status().WithContext("--trace");
    sink = std::move(*opened);
    observer = std::make_unique<CollectiveTraceObserver>(&system.fabric, sink.get(), traced,
                                                         choice.algorithm);
    request.transfer_observer = observer.get();
    request.flow_observer = observer.get();
  }

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<collectives::CollectiveResult> results;
  for (double bytes : sizes) {
    request.bytes = bytes;
    PODSIM_ASSIGN_OR_RETURN(collectives::CollectiveResult result,
                            collectives::SimulateCollective(system.fabric, request));
    rows.push_back(ResultJson(bytes, result));
    results.push_back(std::move(result));
  }
  if (sink) PODSIM_RETURN_IF_ERROR(sink->Close().WithContext("--trace"));

  if (flags.json) {
    nlohmann::ordered_json j{{"system", system.name},
                             {"op", flags.op},
                             {"model", ModelName(system.fabric, flags.ideal)}};
    if (flags.sweep) {
      j["sweep"] = rows;
    } else {
      for (auto& [key, value] : rows[0].items()) j[key] = value;
    }
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }

  const collectives::CollectiveResult& first = results.front();
  io.out << "system      " << system.name << " (" << system.fabric.chip_count() << " chips)\n";
  io.out << "collective  " << flags.op;
  if (!p2p) {
    io.out << " over " << first.groups << (first.groups == 1 ? " group" : " groups") << " of "
           << first.ranks_per_group << " ranks";
  }
  io.out << "\n";
  io.out << "algorithm   " << first.algorithm << ": " << first.reason << "\n";
  io.out << "model       " << ModelName(system.fabric, flags.ideal) << "\n";
  if (flags.sweep) {
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
         << first.events << " events\n";
  if (sink) io.out << "trace       " << flags.trace << "\n";
  return sim::Status::Ok();
}

}  // namespace

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
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_option("--trace", flags->trace,
                  "Write a trace of the run: FILE.pftrace (Perfetto) or FILE.json (Chrome JSON)");
  sub->add_option("--trace-chips", flags->trace_chips,
                  "Chips to trace: 'all' or ranges like 0-15,32 (default: up to 64 chips)");
  return Command{sub, [flags](CommandIo& io) { return Run(*flags, io); }};
}

}  // namespace podsim::cli
