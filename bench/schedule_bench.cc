// Building a training step's schedule: what a sweep does for every candidate's bounds (issue 13's
// sweep target; about a sixth of the TPU pod sweep, README "Performance").
//
// Builds the schedule of one of the sweep's candidates on a protobuf arena, as the sweep does
// (cli/sweep_command.cc), and frees it. Items processed = ops built.

#include <benchmark/benchmark.h>
#include <google/protobuf/arena.h>

#include <cstdint>
#include <string>

#include "schedule.pb.h"
#include "sim/check.h"
#include "topology/system.h"
#include "workloads/layer_ops.h"
#include "workloads/layout.h"
#include "workloads/model_spec.h"
#include "workloads/training_schedule.h"

namespace podsim::workloads {
namespace {

void BuildCandidate(benchmark::State& state, const std::string& system_text,
                    const std::string& model_text, const std::string& layout_text,
                    BatchSpec batch) {
  sim::StatusOr<topology::System> system = topology::ParseSystem(system_text);
  PODSIM_CHECK(system.ok()) << system.status();
  sim::StatusOr<ModelSpec> model = ParseModel(model_text);
  PODSIM_CHECK(model.ok()) << model.status();
  sim::StatusOr<Layout> parsed = ParseLayout(layout_text);
  PODSIM_CHECK(parsed.ok()) << parsed.status();
  sim::StatusOr<Layout> layout = ResolveLayout(*parsed, batch);
  PODSIM_CHECK(layout.ok()) << layout.status();
  const OpOptions options;
  int64_t ops = 0;
  for (auto _ : state) {
    google::protobuf::ArenaOptions arena_options;  // As the sweep's (sweep_command.cc).
    arena_options.start_block_size = 256 << 10;
    arena_options.max_block_size = 16 << 20;
    google::protobuf::Arena arena(arena_options);
    auto* schedule = google::protobuf::Arena::CreateMessage<schedule::Schedule>(&arena);
    BuildTrainingSchedule(*system, *model, *layout, batch, options, schedule);
    for (const schedule::Program& program : schedule->programs()) ops += program.ops_size();
  }
  state.SetItemsProcessed(ops);
}

// The TPU pod sweep's second-ranked candidate (README "Performance", the sweep).
void BM_ScheduleTpuPod(benchmark::State& state) {
  BuildCandidate(state, "tpu-v5p:16x20x28", "llama3-70b", "dp=8,fsdp=560,tp=2,order=tp/dp/fsdp",
                 BatchSpec{4480, 4096});
}
BENCHMARK(BM_ScheduleTpuPod)->Unit(benchmark::kMillisecond);

// A pipeline of 4 stages with 8 microbatches on a GPU pod.
void BM_ScheduleGpuPipeline(benchmark::State& state) {
  BuildCandidate(state, "h100:1024", "llama3-70b", "tp=8,pp=4,dp=32,microbatches=8",
                 BatchSpec{512, 8192});
}
BENCHMARK(BM_ScheduleGpuPipeline)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace podsim::workloads
