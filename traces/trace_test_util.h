// Test helpers shared by the traces/ tests: one synthetic scenario that exercises every TraceSink
// feature, and small file helpers. Test-only; not part of the podsim_traces library.

#ifndef PODSIM_TRACES_TRACE_TEST_UTIL_H_
#define PODSIM_TRACES_TRACE_TEST_UTIL_H_

#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "sim/time.h"
#include "traces/trace_sink.h"

namespace podsim::traces::testing {

struct ScenarioCounts {
  int slices = 0;  // Begin/End pairs.
  int instants = 0;
  int counter_values = 0;
  int flows = 0;
};

// Two chips, each with a compute and a communication track and an HBM counter, plus a "system"
// process with a step track and a link-utilisation counter. For each of `layers` layers, both
// chips run a layer slice holding a matmul and a gelu (nested, with FLOPs/bytes/shape args), and
// chip 0 sends to chip 1: a "send" slice with a flow to the matching "recv" slice. Times are in
// odd picoseconds so rounding to ns is exercised.
inline ScenarioCounts WriteSyntheticScenario(TraceSink* sink, int layers = 3) {
  using sim::Time;
  ScenarioCounts counts;
  ProcessId system = sink->AddProcess("system");
  TrackId step = sink->AddTrack(system, "step");
  TrackId link = sink->AddCounterTrack(system, "link chip0->chip1", CounterUnit::kFraction);
  ProcessId chips[2] = {sink->AddProcess("chip0"), sink->AddProcess("chip1")};
  TrackId compute[2], comm[2], hbm[2];
  for (int c = 0; c < 2; ++c) {
    compute[c] = sink->AddTrack(chips[c], "compute");
    comm[c] = sink->AddTrack(chips[c], "comm");
    hbm[c] = sink->AddCounterTrack(chips[c], "HBM", CounterUnit::kBytes);
  }

  const Arg step_args[] = {Arg::Int("step", 0)};
  sink->BeginSlice(step, Time::Zero(),
                   {.name = "train_step", .category = "step", .args = step_args});
  ++counts.slices;
  for (int c = 0; c < 2; ++c) {
    sink->SetCounter(hbm[c], Time::Zero(), 1.5e9);
    ++counts.counter_values;
  }
  const int64_t layer_ps = 10'000'123;
  for (int k = 0; k < layers; ++k) {
    Time t0 = Time::Picoseconds(k * layer_ps + 1'234);
    for (int c = 0; c < 2; ++c) {
      const Arg layer_args[] = {Arg::Int("layer", k)};
      sink->BeginSlice(compute[c], t0,
                       {.name = "layer", .category = "compute", .args = layer_args});
      const Arg mm_args[] = {
          Arg::Uint("flops", 68'719'476'736ull), Arg::Uint("bytes", 50'331'648ull),
          Arg::String("shape", "bf16[4096,8192]x[8192,4096]"), Arg::Double("efficiency", 0.85)};
      sink->BeginSlice(compute[c], t0, {.name = "matmul", .category = "compute", .args = mm_args});
      sink->EndSlice(compute[c], t0 + Time::Picoseconds(6'000'499));
      sink->BeginSlice(compute[c], t0 + Time::Picoseconds(6'000'501),
                       {.name = "gelu", .category = "compute"});
      sink->EndSlice(compute[c], t0 + Time::Picoseconds(7'500'000));
      sink->EndSlice(compute[c], t0 + Time::Picoseconds(7'500'000));
      counts.slices += 3;
      sink->SetCounter(hbm[c], t0 + Time::Picoseconds(7'500'000), 1.5e9 + 1e8 * (k + 1));
      ++counts.counter_values;
    }
    // chip0 sends its activations to chip1 once its layer is done.
    const uint64_t flow[] = {static_cast<uint64_t>(100 + k)};
    const Arg send_args[] = {Arg::Uint("bytes", 16'777'216), Arg::String("mesh_axis", "pp"),
                             Arg::String("algorithm", "p2p"), Arg::Bool("chunked", false)};
    Time send = t0 + Time::Picoseconds(7'500'000);
    sink->BeginSlice(comm[0], send,
                     {.name = "send", .category = "comm", .args = send_args, .flows_out = flow});
    sink->SetCounter(link, send, 0.97);
    sink->BeginSlice(comm[1], send + Time::Picoseconds(1'000'000),
                     {.name = "recv", .category = "comm", .flows_in = flow});
    sink->EndSlice(comm[0], send + Time::Picoseconds(2'000'000));
    sink->EndSlice(comm[1], send + Time::Picoseconds(2'000'000));
    sink->SetCounter(link, send + Time::Picoseconds(2'000'000), 0);
    counts.slices += 2;
    counts.counter_values += 2;
    ++counts.flows;
  }
  sink->Instant(step, Time::Picoseconds(layers * layer_ps),
                {.name = "optimizer", .category = "step"});
  ++counts.instants;
  sink->EndSlice(step, Time::Picoseconds(layers * layer_ps + 1));
  return counts;
}

inline std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFileOrDie(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
}

}  // namespace podsim::traces::testing

#endif  // PODSIM_TRACES_TRACE_TEST_UTIL_H_
