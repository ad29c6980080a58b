#include "cli/collective_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/byte_size.h"
#include "cli/collective_trace.h"
#include "cli/report_file.h"
#include "cli/report_format.h"
#include "cli/run_command.h"
#include "cli/validation_line.h"
#include "collectives/collective_runner.h"
#include "collectives/efficiency_model.h"
#include "reports/link_cells.h"
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
  std::string min_bytes;
  std::string max_bytes;
  std::string step_factor;
  bool csv = false;
  bool ideal = false;
  bool reference = false;
  bool json = false;
  std::string trace;
  std::string trace_chips;
  std::string report;
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
  const bool range = !flags.min_bytes.empty() || !flags.max_bytes.empty();
  if (flags.sweep + !flags.bytes.empty() + range > 1) {
    return sim::Status::InvalidArgument(
        "give one of --bytes, --sweep-bytes, or -b/--min-bytes with -e/--max-bytes");
  }
  if (flags.sweep) {
    c->set_sweep_bytes(true);
  } else if (range) {
    if (flags.min_bytes.empty() || flags.max_bytes.empty()) {
      return sim::Status::InvalidArgument(
          "a size sweep needs both -b/--min-bytes and -e/--max-bytes, like -b 8 -e 8Gi -f 2");
    }
    PODSIM_ASSIGN_OR_RETURN(double min_bytes, ParseByteSize("--min-bytes", flags.min_bytes));
    PODSIM_ASSIGN_OR_RETURN(double max_bytes, ParseByteSize("--max-bytes", flags.max_bytes));
    c->set_min_bytes(min_bytes);
    c->set_max_bytes(max_bytes);
  } else {
    if (flags.bytes.empty()) {
      return sim::Status::InvalidArgument(
          "--bytes is required (or a size sweep: --sweep-bytes, or -b/--min-bytes with "
          "-e/--max-bytes)");
    }
    PODSIM_ASSIGN_OR_RETURN(double bytes, ParseByteSize("--bytes", flags.bytes));
    c->set_bytes(bytes);
  }
  if (!flags.step_factor.empty()) {
    const std::optional<double> factor = topology::ParseNumber(flags.step_factor);
    if (!factor) {
      return sim::Status::InvalidArgument("--step-factor: expected a number > 1, like 2 (got '" +
                                          flags.step_factor + "')");
    }
    c->set_step_factor(*factor);
  }
  for (const std::string& axis : flags.axes) c->add_axes(axis);
  if (!flags.algorithm.empty()) c->set_algorithm(flags.algorithm);
  if (!flags.src.empty()) c->set_src(flags.src);
  if (!flags.dst.empty()) c->set_dst(flags.dst);
  if (flags.ideal) c->set_ideal(true);
  if (flags.reference) c->set_reference(true);
  if (flags.json) s.mutable_outputs()->set_json(true);
  if (flags.csv) s.mutable_outputs()->set_csv(true);
  if (!flags.trace.empty()) s.mutable_outputs()->set_trace(flags.trace);
  if (!flags.trace_chips.empty()) s.mutable_outputs()->set_trace_chips(flags.trace_chips);
  if (!flags.report.empty()) s.mutable_outputs()->set_report(flags.report);
  return s;
}

// Where each field of ScenarioOf comes from.
scenario::SourceMap CollectiveFlagSources() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "--system");
  for (const char* name :
       {"op", "bytes", "axes", "algorithm", "src", "dst", "ideal", "reference"}) {
    flags.AddFlag(std::string("collective.") + name, std::string("--") + name);
  }
  flags.AddFlag("collective.sweep_bytes", "--sweep-bytes");
  flags.AddFlag("collective.min_bytes", "--min-bytes");
  flags.AddFlag("collective.max_bytes", "--max-bytes");
  flags.AddFlag("collective.step_factor", "--step-factor");
  flags.AddFlag("outputs.json", "--json");
  flags.AddFlag("outputs.csv", "--csv");
  flags.AddFlag("outputs.trace", "--trace");
  flags.AddFlag("outputs.trace_chips", "--trace-chips");
  flags.AddFlag("outputs.report", "--report");
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

// Whether the fabric has a calibrated efficiency model (generic fabrics have none).
bool Calibrated(const topology::Fabric& fabric) {
  return collectives::CalibratedEfficiency(fabric).family != "none";
}

// "ideal fabric", or the calibrated family ("calibrated for gpu"): which efficiency model ran.
std::string ModelName(const topology::Fabric& fabric, bool ideal) {
  if (ideal) return "ideal fabric (line rate, hop latencies only)";
  if (!Calibrated(fabric)) return "ideal fabric (generic fabrics have no calibration)";
  return "calibrated for " + collectives::CalibratedEfficiency(fabric).family +
         " (collectives/efficiency_model.h)";
}

std::string Rate(double bytes_per_s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f GB/s", bytes_per_s / 1e9);
  return buffer;
}

// At most this many of the busiest links are named; the count says how many there are.
constexpr size_t kNamedBottlenecks = 4;

std::string LinkName(const topology::Fabric& fabric, topology::LinkIndex index) {
  const topology::Link& link = fabric.link(index);
  std::string name = fabric.vertex_name(link.src);
  name += " -> ";
  name += fabric.vertex_name(link.dst);
  name += " (";
  name += topology::LinkKindName(link.kind);
  name += ")";
  return name;
}

nlohmann::ordered_json BottleneckJson(const topology::Fabric& fabric,
                                      const collectives::Bottleneck& b) {
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (size_t i = 0; i < b.links.size() && i < kNamedBottlenecks; ++i) {
    const topology::Link& link = fabric.link(b.links[i]);
    links.push_back({{"src", fabric.vertex_name(link.src)},
                     {"dst", fabric.vertex_name(link.dst)},
                     {"kind", topology::LinkKindName(link.kind)},
                     {"bandwidth_Bps", link.bandwidth_bytes_per_s}});
  }
  return {{"utilisation", b.utilisation}, {"link_count", b.link_count}, {"links", links}};
}

// "links at 97.3% of their line rate on average over the collective: a -> b (ici), c -> d
// (ici) and 30 more alike".
std::string BottleneckText(const topology::Fabric& fabric, const collectives::Bottleneck& b) {
  if (b.link_count == 0) return "none: no bytes crossed a link";
  std::string text = std::to_string(b.link_count) + (b.link_count == 1 ? " link" : " links") +
                     " at " + FormatPercent(b.utilisation) +
                     " of line rate, averaged over the collective: ";
  const size_t named = std::min(b.links.size(), kNamedBottlenecks);
  for (size_t i = 0; i < named; ++i) {
    if (i > 0) text += ", ";
    text += LinkName(fabric, b.links[i]);
  }
  if (b.link_count > named) text += " and " + std::to_string(b.link_count - named) + " more alike";
  return text;
}

// "x wraps, y does not" with the axes the collective spans: on tori, what makes a ring or a line.
std::string WrapsText(const topology::Fabric& fabric, const std::vector<std::string>& spanned) {
  std::string text;
  const std::vector<std::string> names = fabric.AxisNames();
  for (size_t a = 0; a < names.size(); ++a) {
    if (!text.empty()) text += ", ";
    text += names[a] + (fabric.Wraps(static_cast<int>(a)) ? " wraps" : " does not wrap");
    const bool spans = spanned.empty()
                           ? fabric.shape()[a] > 1
                           : std::find(spanned.begin(), spanned.end(), names[a]) != spanned.end();
    if (spans) text += " (spanned)";
  }
  return text;
}

// nccl-tests' default element type (-d float).
constexpr double kFloatBytes = 4;

// nccl-tests' "count" column: its paramcount, the elements one rank passes to the call, of
// size S in floats: S / 4 for all-reduce, broadcast and point-to-point, S / (4 n) for all-gather
// (each rank's input), reduce-scatter (each rank's output) and all-to-all (to each peer).
double NcclCount(collectives::CollectiveOp op, const collectives::CollectiveResult& r,
                 double bytes) {
  const bool per_rank = op == collectives::CollectiveOp::kAllGather ||
                        op == collectives::CollectiveOp::kReduceScatter ||
                        op == collectives::CollectiveOp::kAllToAll;
  return bytes / kFloatBytes / (per_rank ? r.ranks_per_group : 1);
}

nlohmann::ordered_json ResultJson(const topology::Fabric& fabric, collectives::CollectiveOp op,
                                  double bytes, const collectives::CollectiveResult& r) {
  return nlohmann::ordered_json{{"bytes", bytes},
                                {"count", NcclCount(op, r, bytes)},
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
                                {"symmetric", r.symmetric},
                                {"bottleneck", BottleneckJson(fabric, r.bottleneck)}};
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

// The report of a run: bandwidth against size, and the links of the largest size.
reports::Report CollectiveReport(const topology::System& system, const std::string& op_name,
                                 const collectives::CollectiveRequest& request,
                                 const std::vector<double>& sizes,
                                 const std::vector<collectives::CollectiveResult>& results,
                                 const CommandIo& io) {
  const collectives::CollectiveResult& last = results.back();
  reports::Report report("podsim collective: " + op_name + " on " + system.name, io.command_line);
  report.AddFact("system",
                 system.name + " (" + std::to_string(system.fabric.chip_count()) + " chips)");
  report.AddFact("groups", std::to_string(last.groups) + " of " +
                               std::to_string(last.ranks_per_group) + " ranks");
  report.AddFact("algorithm", last.algorithm + ": " + last.reason);
  report.AddFact("model", ModelName(system.fabric, !request.calibrated));
  if (system.fabric.torus() != nullptr) {
    report.AddFact("torus", WrapsText(system.fabric, request.axes));
  }
  report.AddFact("largest size", FormatByteSize(sizes.back()) + ": " + last.time.ToString() +
                                     ", busbw " + Rate(last.busbw_bytes_per_s));
  report.AddFact("bottleneck", BottleneckText(system.fabric, last.bottleneck));
  std::vector<reports::BandwidthPoint> points;
  for (size_t i = 0; i < results.size(); ++i) {
    points.push_back({sizes[i], results[i].algbw_bytes_per_s, results[i].busbw_bytes_per_s});
  }
  report.AddChart(reports::BandwidthChart(
      points,
      "Each size simulated on the fabric (nccl-tests' definitions: algbw = size / time, "
      "busbw = algbw x the operation's bus factor)."));
  const reports::LinkCells cells = reports::LinkCellsOf(system.fabric, last.link_utilisation);
  if (!cells.cells.empty()) {
    report.AddChart(reports::LinkHeatMap(cells.cells, cells.column_title, cells.row_title,
                                         "Mean utilisation of each link's line rate over the " +
                                             FormatByteSize(sizes.back()) +
                                             " run: " + cells.layout + "."));
  } else {
    report.AddNote("The link heat map is left out: more than " +
                   std::to_string(reports::kMaxLinkCells) + " links.");
  }
  return report;
}

sim::Status RunCollectiveScenario(const scenario::Scenario& s, const scenario::SourceMap& source,
                                  topology::System system, CommandIo& io) {
  const scenario::Collective& c = s.collective();
  const scenario::Outputs& outputs = s.outputs();
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
  request.measure_links = true;
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
  if (p2p && request.src == request.dst) {
    return FieldError(
        sim::Status::InvalidArgument("--dst: the source chip; a p2p moves bytes between two chips"),
        source, "--dst", "collective.dst");
  }

  // A sweep: 1 KiB to 16 GiB in powers of two (sweep_bytes), or nccl-tests' -b/-e/-f (the
  // scenario check bounds the count), each size rounded up to whole shards of a group. Sizes are
  // nccl-tests' S: for all-to-all one rank's send buffer, which the runner's V holds n of.
  const bool sweep = c.sweep_bytes() || c.has_min_bytes();
  const double ranks = p2p ? 1 : GroupSize(system.fabric, request.axes);
  const auto array_bytes = [&](double size) {
    return *op == collectives::CollectiveOp::kAllToAll ? size * ranks : size;
  };
  std::vector<double> sizes;
  if (sweep) {
    const double first = c.sweep_bytes() ? 1024 : c.min_bytes();
    const double last = c.sweep_bytes() ? 16.0 * (1u << 30) : c.max_bytes();
    const double factor = c.has_step_factor() ? c.step_factor() : 2;
    for (double size = first; size <= last; size *= factor) {
      const double rounded = std::ceil(size / ranks) * ranks;
      // Small steps round to one size: it is simulated and listed once.
      if (sizes.empty() || rounded != sizes.back()) sizes.push_back(rounded);
    }
  } else {
    // All-to-all: each rank sends S/n to each rank of the group (the runner's check is of V = n S).
    if (*op == collectives::CollectiveOp::kAllToAll && std::fmod(c.bytes(), ranks) != 0) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "%.17g bytes per rank do not split evenly over the %.0f ranks of a "
                    "group; use a multiple of %.0f",
                    c.bytes(), ranks, ranks);
      return source.Annotate(sim::Status::InvalidArgument(text), "collective.bytes");
    }
    sizes.push_back(c.bytes());
  }
  // An all-to-all's whole array is n times the size given (per rank): bounded as the runner
  // bounds any collective's bytes, named as the user gave it.
  if (*op == collectives::CollectiveOp::kAllToAll && array_bytes(sizes.back()) > 1e15) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "%.6g bytes per rank x %.0f ranks = %.4g bytes of an all-to-all's array, over "
                  "podsim's limit of 1e15",
                  sizes.back(), ranks, array_bytes(sizes.back()));
    return source.Annotate(sim::Status::OutOfRange(text),
                           sweep ? "collective.max_bytes" : "collective.bytes");
  }

  // Tracing observes one run; the sink writes to a temporary file renamed on Close, so a run that
  // fails leaves no trace file behind.
  std::unique_ptr<traces::TraceSink> sink;
  std::unique_ptr<CollectiveTraceObserver> observer;
  if (outputs.has_trace()) {
    if (sweep) {
      return source.Annotate(
          sim::Status::InvalidArgument("a trace follows one size; give one size (--bytes), not "
                                       "a sweep"),
          "outputs.trace");
    }
    request.bytes = array_bytes(sizes.front());
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

  if (outputs.has_report()) PODSIM_RETURN_IF_ERROR(CheckReportFlag(outputs.report(), source));
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<collectives::CollectiveResult> results;
  for (double bytes : sizes) {
    request.bytes = array_bytes(bytes);
    // The report's heat map is of the largest size.
    request.keep_link_utilisation = outputs.has_report() && bytes == sizes.back();
    sim::StatusOr<collectives::CollectiveResult> result =
        collectives::SimulateCollective(system.fabric, request);
    if (!result.ok()) return RequestError(result.status(), source);
    rows.push_back(ResultJson(system.fabric, *op, bytes, *result));
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
  if (outputs.has_report()) {
    PODSIM_RETURN_IF_ERROR(WriteReportFile(
        outputs.report(), CollectiveReport(system, op_name, request, sizes, results, io), source));
  }

  // The validation record is of the calibrated model; --ideal and generic fabrics run another.
  const bool calibrated = !c.ideal() && Calibrated(system.fabric);
  if (outputs.json()) {
    nlohmann::ordered_json j{
        {"system", system.name}, {"op", op_name}, {"model", ModelName(system.fabric, c.ideal())}};
    if (system.fabric.torus() != nullptr) {
      nlohmann::ordered_json wraps = nlohmann::ordered_json::object();
      const std::vector<std::string> names = system.fabric.AxisNames();
      for (size_t a = 0; a < names.size(); ++a) {
        wraps[names[a]] = system.fabric.Wraps(static_cast<int>(a));
      }
      j["wraps"] = wraps;
    }
    if (sweep) {
      j["sweep"] = rows;
    } else {
      for (auto& [key, value] : rows[0].items()) j[key] = value;
    }
    j["validation"] =
        calibrated ? ValidationJson(system.chip, "collectives") : nlohmann::ordered_json(nullptr);
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }

  if (outputs.csv()) {
    io.out << "size_bytes,count,type,time_us,algbw_GBps,busbw_GBps,algorithm\n";
    for (size_t i = 0; i < results.size(); ++i) {
      char line[200];
      std::snprintf(line, sizeof line, "%.0f,%.0f,float,%.6g,%.6g,%.6g,%s\n", sizes[i],
                    NcclCount(*op, results[i], sizes[i]), results[i].time.ToSeconds() * 1e6,
                    results[i].algbw_bytes_per_s / 1e9, results[i].busbw_bytes_per_s / 1e9,
                    results[i].algorithm.c_str());
      io.out << line;
    }
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
  if (calibrated) io.out << "validation  " << ValidationLine(system.chip, "collectives") << "\n";
  if (system.fabric.torus() != nullptr) {
    io.out << "torus       " << WrapsText(system.fabric, request.axes) << "\n";
  }
  if (sweep) {
    // nccl-tests' columns: size in bytes, count of elements of its default -d float.
    char line[200];
    std::snprintf(line, sizeof line, "%14s %14s %7s %12s %12s %12s  %s\n", "size (B)",
                  "count (elts)", "type", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "algorithm");
    io.out << line;
    for (size_t i = 0; i < results.size(); ++i) {
      std::snprintf(line, sizeof line, "%14.0f %14.0f %7s %12.2f %12.2f %12.2f  %s\n", sizes[i],
                    NcclCount(*op, results[i], sizes[i]), "float",
                    results[i].time.ToSeconds() * 1e6, results[i].algbw_bytes_per_s / 1e9,
                    results[i].busbw_bytes_per_s / 1e9, results[i].algorithm.c_str());
      io.out << line;
    }
    if (outputs.has_report()) io.out << "report      " << outputs.report() << "\n";
    return sim::Status::Ok();
  }
  io.out << "bytes       " << FormatByteSize(sizes[0]) << "\n";
  io.out << "time        " << first.time.ToString() << "\n";
  io.out << "algbw       " << Rate(first.algbw_bytes_per_s) << "\n";
  io.out << "busbw       " << Rate(first.busbw_bytes_per_s) << "\n";
  io.out << "bottleneck  " << BottleneckText(system.fabric, first.bottleneck) << "\n";
  io.out << "simulated   " << first.transfers << " transfers, " << first.flows << " flows, "
         << first.events << " events"
         << (first.symmetric ? " (one rank per orbit of the fabric's symmetries, exact; "
                               "--reference simulates every rank)"
                             : "")
         << "\n";
  if (sink) io.out << "trace       " << outputs.trace() << "\n";
  if (outputs.has_report()) io.out << "report      " << outputs.report() << "\n";
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
  sub->add_option(
      "--bytes", flags->bytes,
      "nccl-tests' size S, e.g. 1GiB: the whole gathered or reduced array; for all-to-all, "
      "one rank's send buffer (S/n to each rank)");
  sub->add_option("--axes", flags->axes, "Torus axes to span, e.g. x,y (default: all)")
      ->delimiter(',');
  sub->add_option("--algorithm", flags->algorithm, "Override the selector");
  sub->add_option("--src", flags->src, "p2p source / broadcast root: chip index or x,y[,z]");
  sub->add_option("--dst", flags->dst, "p2p destination: chip index or x,y[,z]");
  sub->add_flag("--sweep-bytes", flags->sweep, "Sweep sizes from 1 KiB to 16 GiB in powers of two");
  sub->add_option("-b,--min-bytes", flags->min_bytes,
                  "A size sweep as nccl-tests runs one: the first size, e.g. 8 (with -e)");
  sub->add_option("-e,--max-bytes", flags->max_bytes,
                  "The largest size of the sweep, e.g. 8Gi (G is 10^9 in podsim, nccl-tests' 8G is "
                  "8Gi here)");
  sub->add_option("-f,--step-factor", flags->step_factor,
                  "Multiply the size by this between steps (default 2)");
  sub->add_flag("--csv", flags->csv,
                "Print size, count, type, time_us, algbw_GBps, busbw_GBps, algorithm as CSV");
  sub->add_flag("--ideal", flags->ideal,
                "Pure fabric: line rate and hop latencies, without the efficiency model "
                "calibrated on measured collectives");
  sub->add_flag("--reference", flags->reference,
                "Simulate every rank, not one per orbit of the fabric's symmetries (the same "
                "answer, slower: the brute-force reference)");
  sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_option("--trace", flags->trace,
                  "Write a trace of the run: FILE.pftrace (Perfetto) or FILE.json (Chrome JSON)");
  sub->add_option("--trace-chips", flags->trace_chips,
                  "Chips to trace: 'all' or ranges like 0-15,32 (default: up to 64 chips)");
  AddReportFlag(sub, &flags->report);
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags](CommandIo& io) {
                   return DumpOrRun(ScenarioOf(*flags), CollectiveFlagSources(),
                                    flags->dump_scenario, io);
                 }};
}

}  // namespace podsim::cli
