// issue 7: `podsim train|replay --trace` (cli/step_trace.h). Tracing only observes: the results
// are byte-identical with and without it; both formats pass the trace lint; the Perfetto file
// decodes with protoc and our schema without unknown fields; the trace holds one process per
// simulated chip, one track per stream, one slice per op and flows from sends to receives.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/main_command.h"
#include "collectives/collective_runner.h"
#include "tests/testing/run_podsim.h"
#include "traces/trace_lint.h"

namespace podsim::cli {
namespace {

using podsim::testing::Outcome;
using podsim::testing::Podsim;
using podsim::testing::ReadFile;
using podsim::testing::With;

// A pipelined step on 16 GPUs: 4 stages (programs) of tp=2 x dp=2, so compute, tp, dp, pp and
// pp.recv streams, and sends between stages.
// Stage s is nodes s and s + 4 (order=tp/pp/dp): the step's symmetry (slot rotation, node
// translation by 4) leaves one chip per stage to simulate, and chip ids do not follow the stages.
const std::vector<std::string> kTrain = {"train",
                                         "--system",
                                         "h100:64",
                                         "--model",
                                         "llama3-8b:layers=8",
                                         "--layout",
                                         "tp=8,pp=4,dp=2,microbatches=4,order=tp/pp/dp",
                                         "--batch-tokens",
                                         "64Ki",
                                         "--seq",
                                         "4096"};

class TrainTraceTest : public podsim::testing::TempDirTest {};

nlohmann::json TraceEvents(const std::string& path) {
  return nlohmann::json::parse(ReadFile(path))["traceEvents"];
}

TEST_F(TrainTraceTest, TracingDoesNotChangeResultsAndBothFormatsLint) {
  const std::string untraced = Podsim(With(kTrain, {"--json"})).out;
  ASSERT_FALSE(untraced.empty());
  for (const char* name : {"step.json", "step.pftrace"}) {
    SCOPED_TRACE(name);
    Outcome traced = Podsim(With(kTrain, {"--json", "--trace", Path(name)}));
    ASSERT_EQ(traced.code, 0) << traced.err;
    EXPECT_EQ(traced.out, untraced);
    const std::string trace = ReadFile(Path(name));
    ASSERT_FALSE(trace.empty());
    sim::Status lint = std::string(name).ends_with(".json") ? traces::LintChromeJson(trace)
                                                            : traces::LintPerfetto(trace);
    EXPECT_TRUE(lint.ok()) << lint;
    EXPECT_TRUE(Temporaries().empty());
  }
  // The same with every chip simulated (and the default of chips 0-63 traced).
  const std::string every = Podsim(With(kTrain, {"--json", "--every-chip"})).out;
  Outcome traced = Podsim(With(kTrain, {"--json", "--every-chip", "--trace", Path("all.json")}));
  ASSERT_EQ(traced.code, 0) << traced.err;
  EXPECT_EQ(traced.out, every);
  EXPECT_TRUE(traces::LintChromeJson(ReadFile(Path("all.json"))).ok());
}

// A report beside the trace shares its observers (a tee of the trace's link counters, which want
// flows' usage, and the report's link meter, which counts bytes), under the quotient's echo of
// copy links and the replays' echoes: the trace is the same to the byte.
TEST_F(TrainTraceTest, AReportBesideTheTraceChangesNoByteOfIt) {
  Outcome alone = Podsim(With(kTrain, {"--trace", Path("alone.json")}));
  ASSERT_EQ(alone.code, 0) << alone.err;
  Outcome reported =
      Podsim(With(kTrain, {"--trace", Path("reported.json"), "--report", Path("step.html")}));
  ASSERT_EQ(reported.code, 0) << reported.err;
  const std::string trace = ReadFile(Path("alone.json"));
  ASSERT_FALSE(trace.empty());
  EXPECT_EQ(ReadFile(Path("reported.json")), trace);
}

TEST_F(TrainTraceTest, OneProcessPerChipOneTrackPerStreamOneSlicePerOp) {
  Outcome run = Podsim(With(kTrain, {"--json", "--trace", Path("step.json")}));
  ASSERT_EQ(run.code, 0) << run.err;
  const nlohmann::json result = nlohmann::json::parse(run.out);
  std::map<int, std::string> processes;
  std::map<int, std::set<std::string>> threads;
  std::map<int, std::set<std::string>> counter_names;  // Each also names a thread of value slices.
  int op_slices = 0, sends = 0, pp_flows = 0;
  std::map<std::string, int> algorithms;  // "axes algorithm" -> collective slices.
  std::map<uint64_t, int> flow_pids;      // Flow id -> pid of its source.
  double step_end_us = 0;
  for (const nlohmann::json& e : TraceEvents(Path("step.json"))) {
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    if (ph == "M" && e["name"] == "process_name") processes[pid] = e["args"]["name"];
    if (ph == "M" && e["name"] == "thread_name") threads[pid].insert(e["args"]["name"]);
    if (ph == "C") counter_names[pid].insert(e["name"]);
    if (ph == "X" && e["cat"] == "op") {
      ++op_slices;
      EXPECT_TRUE(e["args"].contains("kind")) << e;
      EXPECT_TRUE(e["args"].contains("microbatch")) << e;
      if (e["args"]["kind"] == "matmul") {
        EXPECT_GT(e["args"]["flops"].get<double>(), 0) << e;
        EXPECT_TRUE(e["args"].contains("shape")) << e;
        EXPECT_TRUE(e["args"].contains("phase")) << e;
        // Transformer layers carry their index; the embedding and the head have none.
        const std::string name = e["name"];
        EXPECT_EQ(e["args"].contains("layer"), !name.starts_with("head")) << e;
      }
      if (e["args"]["kind"] == "collective") {
        EXPECT_TRUE(e["args"].contains("collective")) << e;
        EXPECT_TRUE(e["args"].contains("mesh_axes")) << e;
        EXPECT_GT(e["args"]["bytes"].get<double>(), 0) << e;
        // The algorithm the network ran, by its --algorithm name.
        const std::vector<std::string>& names = collectives::AlgorithmNames();
        EXPECT_NE(std::find(names.begin(), names.end(), e["args"]["algorithm"].get<std::string>()),
                  names.end())
            << e;
        ++algorithms[e["args"]["mesh_axes"].get<std::string>() + " " +
                     e["args"]["algorithm"].get<std::string>()];
      }
      if (e["args"]["kind"] == "send") ++sends;
    }
    if (ph == "X" && e["name"] == "step") {
      step_end_us = e["ts"].get<double>() + e["dur"].get<double>();
    }
    if (ph == "s") flow_pids[e["id"].get<uint64_t>()] = pid;
    if (ph == "f" && flow_pids.at(e["id"].get<uint64_t>()) != pid) ++pp_flows;
  }
  // "system" and one process per stage, named after its program, chip and coordinates on the
  // mesh axes the stage spans (the representative has 0 on each).
  ASSERT_EQ(processes.size(), 5u);
  EXPECT_EQ(processes[1], "system");
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(
        processes[stage + 2],
        "stage " + std::to_string(stage) + " (chip " +
            std::to_string(result["simulation"]["programs"][stage]["simulated_chip"].get<int>()) +
            ": dp 0, tp 0)");
  }
  // Streams in the fixed order; the first stage receives only gradients, the last sends only them.
  std::set<std::string> streams;
  std::set_difference(threads[2].begin(), threads[2].end(), counter_names[2].begin(),
                      counter_names[2].end(), std::inserter(streams, streams.end()));
  EXPECT_EQ(streams, (std::set<std::string>{"compute", "tp", "dp", "pp", "pp.recv"}));
  EXPECT_TRUE(counter_names[2].contains("HBM"));
  // One slice per executed op, and a flow from every send to its receive.
  EXPECT_EQ(op_slices, result["simulation"]["ops"].get<int>());
  EXPECT_EQ(sends, 2 * 3 * 4);  // Activations and gradients, 3 boundaries, 4 microbatches.
  EXPECT_EQ(pp_flows, sends);
  // NCCL's choices on H100 (collective_runner.h): NVLS for all-reduces inside a node (tp), the
  // hierarchical algorithm for data-parallel reductions across nodes.
  EXPECT_GT(algorithms["tp in-switch"], 0) << nlohmann::json(algorithms);
  EXPECT_EQ(algorithms.size(), 2u) << nlohmann::json(algorithms);
  // The step slice ends at the step time (+1 us origin; ns resolution).
  EXPECT_NEAR(step_end_us, 1 + result["step_time_s"].get<double>() * 1e6, 1e-3);
}

// Link utilisation counters (cli/link_counters.h) on the traced chips' outgoing links, in both
// network modes: fractions of the line rate, in time order per track, within the step.
TEST_F(TrainTraceTest, LinkCountersShowUtilisationInBothNetworkModes) {
  for (bool flows : {false, true}) {
    SCOPED_TRACE(flows ? "--flows" : "whole collectives");
    std::vector<std::string> args = With(kTrain, {"--trace", Path("step.json")});
    if (flows) args.push_back("--flows");
    Outcome run = Podsim(args);
    ASSERT_EQ(run.code, 0) << run.err;
    std::map<std::pair<int, std::string>, std::vector<std::pair<double, double>>> counters;
    double step_end_us = 0;
    for (const nlohmann::json& e : TraceEvents(Path("step.json"))) {
      if (e["ph"] == "C" && e["name"] != "HBM") {
        const std::string name = e["name"];
        EXPECT_TRUE(name.starts_with("link to ")) << e;
        counters[{e["pid"].get<int>(), name}].emplace_back(e["ts"].get<double>(),
                                                           e["args"]["fraction"].get<double>());
      }
      if (e["ph"] == "X" && e["name"] == "step") {
        step_end_us = e["ts"].get<double>() + e["dur"].get<double>();
      }
    }
    // Every stage's chip sends over NVLink (tp) and its NIC (dp, pp).
    std::set<int> pids;
    for (const auto& [track, values] : counters) pids.insert(track.first);
    EXPECT_EQ(pids.size(), 4u);
    EXPECT_NE(run.out.find(", " + std::to_string(counters.size()) + " link counters)"),
              std::string::npos)
        << run.out;
    for (const auto& [track, values] : counters) {
      double busy = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        EXPECT_GE(values[i].second, 0) << track.second;
        EXPECT_LE(values[i].second, 1 + 1e-9) << track.second;
        EXPECT_LE(values[i].first, step_end_us) << track.second;
        if (i > 0) {
          EXPECT_LT(values[i - 1].first, values[i].first) << track.second;
        }
        busy = std::max(busy, values[i].second);
      }
      EXPECT_GT(busy, 0) << track.second;
      EXPECT_EQ(values.back().second, 0) << track.second;  // Idle once the step is over.
    }
  }
}

// The HBM counter of each stage follows the schedule's op order from the model's figures
// (memory.h): it starts and ends at the static bytes, and its peak, reached where 1F1B holds the
// most microbatches' activations, is the memory the report gives for the stage at its peak.
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemory) {
  // GPipe's last stage holds every microbatch's logits until the backward pass, 1F1B's one.
  for (const char* schedule : {"gpipe", "1f1b", "interleaved,virtual_stages=2"}) {
    SCOPED_TRACE(schedule);
    const std::vector<std::string> args = {
        "train",
        "--system",
        "h100:64",
        "--model",
        "llama3-8b:layers=8",
        "--layout",
        std::string("tp=8,pp=4,dp=2,microbatches=4,order=tp/pp/dp,schedule=") + schedule,
        "--batch-tokens",
        "64Ki",
        "--seq",
        "4096",
        "--json",
        "--trace",
        Path("step.json")};
    Outcome run = Podsim(args);
    ASSERT_EQ(run.code, 0) << run.err;
    const nlohmann::json result = nlohmann::json::parse(run.out);
    std::map<int, std::vector<double>> hbm;  // pid -> values in order.
    for (const nlohmann::json& e : TraceEvents(Path("step.json"))) {
      if (e["ph"] == "C" && e["name"] == "HBM") hbm[e["pid"]].push_back(e["args"]["bytes"]);
    }
    ASSERT_EQ(hbm.size(), 4u);
    double peak = 0;
    for (const auto& [pid, values] : hbm) {
      ASSERT_GT(values.size(), 2u);
      EXPECT_NEAR(values.back() / values.front(), 1.0, 1e-9) << pid;
      peak = std::max(peak, *std::max_element(values.begin(), values.end()));
    }
    EXPECT_NEAR(peak / result["memory_per_chip_bytes"].get<double>(), 1.0, 1e-9);
  }
}

// Runs `train` with `args`, --json and a trace, and returns the trace's highest HBM counter over
// the memory per chip the report gives: 1 where the schedule holds what memory.h counts.
double HbmPeakOverReport(std::vector<std::string> args, const std::string& trace,
                         nlohmann::json* result) {
  args.insert(args.begin(), "train");
  for (const char* extra : {"--json", "--trace"}) args.emplace_back(extra);
  args.push_back(trace);
  Outcome run = Podsim(args);
  EXPECT_EQ(run.code, 0) << run.err;
  if (run.code != 0) return 0;
  *result = nlohmann::json::parse(run.out);
  double peak = 0;
  for (const nlohmann::json& e : TraceEvents(trace)) {
    if (e["ph"] == "C" && e["name"] == "HBM")
      peak = std::max(peak, e["args"]["bytes"].get<double>());
  }
  return peak / (*result)["memory_per_chip_bytes"].get<double>();
}

// The same under --ep-comm-overlap: twice 1F1B's warm-up, and overlapped pairs whose backward
// frees each layer before the forward holds the next (memory.h InFlightChunks), but whose forward
// holds its embedding's dropout mask before the backward releases its own (stage_order.h
// MostForwardsInFlight).
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemoryWithEpCommOverlap) {
  for (const char* model : {"mixtral-8x7b:layers=8", "mixtral-8x7b:layers=8,dropout=1"}) {
    SCOPED_TRACE(model);
    nlohmann::json result;
    EXPECT_NEAR(HbmPeakOverReport({"--system", "h100:32", "--model", model, "--layout",
                                   "dp=8,pp=4,ep=8,microbatches=8", "--batch-tokens", "256Ki",
                                   "--seq", "4096", "--ep-comm-overlap"},
                                  Path("overlap.json"), &result),
                1.0, 1e-9);
  }
}

// And under full recomputation: each layer's backward holds its recomputed activations.
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemoryUnderRecomputation) {
  nlohmann::json result;
  EXPECT_NEAR(HbmPeakOverReport({"--system", "h100:32", "--model", "llama3-8b", "--layout",
                                 "tp=8,pp=4,microbatches=8", "--batch-tokens", "128Ki", "--seq",
                                 "4096", "--recompute", "full"},
                                Path("recompute.json"), &result),
              1.0, 1e-9);
  EXPECT_GT(result["memory"]["recompute_peak_bytes"].get<double>(), 0);
}

// And with Transformer Engine's fp8 weight cache (fp8_training.h), held all step beside the
// parameters: on Hopper a byte and a transposed byte for each of the stage's layer weights.
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemoryWithTheFp8WeightCache) {
  nlohmann::json result;
  EXPECT_NEAR(HbmPeakOverReport({"--system", "h100:16", "--model", "llama3-8b:layers=8", "--layout",
                                 "tp=4,pp=4,microbatches=4", "--batch-tokens", "32Ki", "--seq",
                                 "4096", "--fp8", "--fp8-library", "te"},
                                Path("fp8.json"), &result),
              1.0, 1e-9);
  EXPECT_GT(result["memory"]["fp8_weight_cache_bytes"].get<double>(), 0);
}

// And where only some layers recompute (--recompute-layers): chunks of the interleaved schedule
// hold different activations, and the first layer a backward meets may keep everything.
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemoryWithSomeLayersRecomputing) {
  struct Case {
    const char* model;
    const char* layout;
    const char* layers;
  };
  for (const Case& c :
       {Case{"llama3-8b:layers=8", "tp=2,pp=4,microbatches=4", "first:1"},
        Case{"llama3-8b:layers=8", "tp=2,pp=4,microbatches=4", "every:2"},
        Case{"llama3-8b:layers=16", "tp=2,pp=4,microbatches=4,virtual_stages=2", "every:3"},
        Case{"llama3-8b:layers=24", "tp=2,pp=4,microbatches=4,virtual_stages=3", "every:4"},
        Case{"mixtral-8x7b:layers=8", "dp=2,pp=4,ep=2,microbatches=4", "first:1"}}) {
    SCOPED_TRACE(std::string(c.model) + " " + c.layout + " " + c.layers);
    std::string layout = c.layout;
    if (layout.find("virtual_stages") != std::string::npos) layout += ",schedule=interleaved";
    nlohmann::json result;
    EXPECT_NEAR(HbmPeakOverReport({"--system", "h100:8", "--model", c.model, "--layout", layout,
                                   "--batch-tokens", "16Ki", "--seq", "2048", "--recompute", "full",
                                   "--recompute-layers", c.layers},
                                  Path("some.json"), &result),
                1.0, 1e-9);
  }
}

// And where the loss's transient is the peak (two layers, the full vocabulary, the upcast loss):
// the schedule holds it over the loss's forward kernels on top of everything else.
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemoryInTheLoss) {
  for (const char* loss : {"vocab-parallel", "upcast"}) {
    SCOPED_TRACE(loss);
    nlohmann::json result;
    EXPECT_NEAR(
        HbmPeakOverReport({"--system", "h100:8", "--model", "llama3-8b:layers=2", "--layout",
                           "tp=8", "--batch-tokens", "16Ki", "--seq", "4096", "--loss", loss},
                          Path("loss.json"), &result),
        1.0, 1e-9);
    const nlohmann::json& memory = result["memory"];
    EXPECT_GT(memory["loss_peak_bytes"].get<double>(), 0);
    EXPECT_EQ(memory["recompute_peak_bytes"].get<double>(), 0);
  }
}

// And where the optimizer step's fp32 gradient shard (the distributed optimizer with bf16
// gradients) is the peak: short sequences leave few activations.
TEST_F(TrainTraceTest, HbmCounterPeaksAtTheModelsMemoryAtTheOptimizerStep) {
  nlohmann::json result;
  EXPECT_NEAR(HbmPeakOverReport(
                  {"--system", "h100:8", "--model", "llama3-8b:layers=4,vocab=1024", "--layout",
                   "dp=8", "--batch-tokens", "128", "--seq", "16", "--distributed-optimizer"},
                  Path("step.json"), &result),
              1.0, 1e-9);
  const nlohmann::json& memory = result["memory"];
  EXPECT_GT(memory["optimizer_step_bytes"].get<double>(),
            memory["activations_bytes"].get<double>() + memory["loss_peak_bytes"].get<double>());
}

TEST_F(TrainTraceTest, TraceChipsSelectsChipsAndDropsFlowsToOthers) {
  Outcome all = Podsim(With(kTrain, {"--json", "--trace", Path("all.json")}));
  ASSERT_EQ(all.code, 0) << all.err;
  const nlohmann::json programs = nlohmann::json::parse(all.out)["simulation"]["programs"];
  const std::string first = std::to_string(programs[0]["simulated_chip"].get<int>());
  Outcome one = Podsim(With(kTrain, {"--trace", Path("one.pftrace"), "--trace-chips", first}));
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("trace       " + Path("one.pftrace") + " (1 chip, "), std::string::npos)
      << one.out;
  EXPECT_TRUE(traces::LintPerfetto(ReadFile(Path("one.pftrace"))).ok());
  Outcome json = Podsim(With(kTrain, {"--trace", Path("one.json"), "--trace-chips", first}));
  ASSERT_EQ(json.code, 0) << json.err;
  std::set<std::string> processes;
  for (const nlohmann::json& e : TraceEvents(Path("one.json"))) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"]);
  }
  EXPECT_EQ(processes,
            (std::set<std::string>{"system", "stage 0 (chip " + first + ": dp 0, tp 0)"}));
}

TEST_F(TrainTraceTest, ReplayTracesTheSameStep) {
  ASSERT_EQ(Podsim(With(kTrain, {"--write-schedule", Path("step.pb")})).code, 0);
  const std::string untraced = Podsim({"replay", Path("step.pb"), "--json"}).out;
  Outcome traced = Podsim({"replay", Path("step.pb"), "--json", "--trace", Path("replay.pftrace")});
  ASSERT_EQ(traced.code, 0) << traced.err;
  EXPECT_EQ(traced.out, untraced);
  EXPECT_TRUE(traces::LintPerfetto(ReadFile(Path("replay.pftrace"))).ok());
  // Train and replay write the same trace of the same schedule.
  ASSERT_EQ(Podsim(With(kTrain, {"--trace", Path("train.pftrace")})).code, 0);
  EXPECT_EQ(ReadFile(Path("replay.pftrace")), ReadFile(Path("train.pftrace")));
}

// The written protobuf decodes with protoc and our schema, with no unknown fields (an unknown
// field shows up in protoc's text as a bare field number, e.g. "999: 1").
TEST_F(TrainTraceTest, PerfettoDecodesWithProtocWithoutUnknownFields) {
  ASSERT_EQ(Podsim(With(kTrain, {"--trace", Path("step.pftrace")})).code, 0);
  const std::string command = std::string(PODSIM_PROTOC_PATH) +
                              " --decode=perfetto.protos.Trace -I " + PODSIM_TRACES_SOURCE_DIR +
                              " " + PODSIM_TRACES_SOURCE_DIR + "/perfetto_min.proto < " +
                              Path("step.pftrace") + " > " + Path("step.txt");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string text = ReadFile(Path("step.txt"));
  EXPECT_NE(text.find("process_name: \"stage 3 (chip "), std::string::npos);
  EXPECT_NE(text.find("name: \"pp.recv\""), std::string::npos);
  EXPECT_NE(text.find("terminating_flow_ids: "), std::string::npos);
  EXPECT_NE(text.find("name: \"mesh_axes\""), std::string::npos);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t start = line.find_first_not_of(' ');
    const size_t digits_end = line.find_first_not_of("0123456789", start);
    const bool unknown = start != std::string::npos && digits_end != start &&
                         digits_end != std::string::npos && line[digits_end] == ':';
    EXPECT_FALSE(unknown) << "unknown field: " << line;
  }
}

// "stage S (chip C: dp D, tp T)" -> {S, D, T}; "system" -> {-1}.
std::vector<int> StageAndCoordinates(const std::string& name) {
  if (name == "system") return {-1};
  std::vector<int> key;
  std::istringstream in(name);
  std::string word;
  in >> word;
  EXPECT_EQ(word, "stage") << name;
  int stage = -1;
  in >> stage;
  key.push_back(stage);
  in >> word >> word;                                         // "(chip" "C:"
  while (in >> word >> word) key.push_back(std::stoi(word));  // "dp" "D," ... "tp" "T)"
  return key;
}

// Both formats give each process a sort index that orders "system" first, then the stages,
// then the mesh coordinates (cli/step_trace.h), though every chip is declared when it first
// runs an op: by chip id at time 0, and chip ids do not follow the stages here (stage 0 is
// chips 0-7 and 32-39).
TEST_F(TrainTraceTest, ProcessesSortByStageThenCoordinates) {
  ASSERT_EQ(Podsim(With(kTrain, {"--every-chip", "--trace", Path("all.json")})).code, 0);
  ASSERT_EQ(Podsim(With(kTrain, {"--every-chip", "--trace", Path("all.pftrace")})).code, 0);
  std::map<int, std::string> names;  // pid -> name
  std::map<int, int> sort_index;     // pid -> process_sort_index
  for (const nlohmann::json& e : TraceEvents(Path("all.json"))) {
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_sort_index") {
      sort_index[e["pid"]] = e["args"]["sort_index"];
    }
  }
  std::vector<std::pair<int, std::string>> json_order;
  for (const auto& [pid, name] : names) json_order.emplace_back(sort_index.at(pid), name);

  const std::string command = std::string(PODSIM_PROTOC_PATH) +
                              " --decode=perfetto.protos.Trace -I " + PODSIM_TRACES_SOURCE_DIR +
                              " " + PODSIM_TRACES_SOURCE_DIR + "/perfetto_min.proto < " +
                              Path("all.pftrace") + " > " + Path("all.txt");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  // protoc prints a ProcessDescriptor's fields by number: legacy_sort_index (3) before
  // process_name (6).
  std::vector<std::pair<int, std::string>> perfetto_order;
  std::istringstream lines(ReadFile(Path("all.txt")));
  int index = -1;
  for (std::string line; std::getline(lines, line);) {
    const std::string name_key = "process_name: \"", index_key = "legacy_sort_index: ";
    if (size_t at = line.find(index_key); at != std::string::npos) {
      index = std::stoi(line.substr(at + index_key.size()));
    }
    if (size_t at = line.find(name_key); at != std::string::npos) {
      perfetto_order.emplace_back(
          index, line.substr(at + name_key.size(), line.rfind('"') - at - name_key.size()));
      index = -1;
    }
  }

  for (auto* order : {&json_order, &perfetto_order}) {
    ASSERT_EQ(order->size(), 65u);  // "system" and 64 chips.
    std::sort(order->begin(), order->end());
    for (size_t i = 1; i < order->size(); ++i) {
      EXPECT_LT((*order)[i - 1].first, (*order)[i].first) << "equal sort indices";
      EXPECT_LT(StageAndCoordinates((*order)[i - 1].second),
                StageAndCoordinates((*order)[i].second))
          << (*order)[i - 1].second << " sorts before " << (*order)[i].second;
    }
  }
  EXPECT_EQ(json_order, perfetto_order);
}

TEST_F(TrainTraceTest, BadTraceArgumentsFailWithoutWritingAFile) {
  Outcome run = Podsim(With(kTrain, {"--trace", Path("step.txt")}));
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.err, "podsim: error: --trace: " + Path("step.txt") +
                         ": unknown trace format; use a name ending in .pftrace or "
                         ".perfetto-trace (Perfetto) or .json (Chrome JSON)\n");
  run = Podsim(With(kTrain, {"--trace", Path("step.json"), "--trace-chips", "0-99"}));
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(
      run.err,
      "podsim: error: --trace-chips: expected \"all\" or chip indices and ranges from 0 to 63 "
      "like \"0-15,32\" (got \"0-99\")\n");
  // A layout that fails leaves no trace behind either.
  run = Podsim({"train", "--system", "h100:16", "--model", "llama3-8b", "--layout", "tp=3",
                "--batch-tokens", "64Ki", "--seq", "4096", "--trace", Path("step.json")});
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace podsim::cli
