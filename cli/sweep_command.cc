#include "cli/sweep_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "cli/byte_size.h"
#include "cli/report_format.h"
#include "cli/run_command.h"
#include "cli/step_fidelity.h"
#include "collectives/efficiency_model.h"
#include "collectives/rehearsal_cache.h"
#include "scenario/scenario_build.h"
#include "topology/system.h"
#include "workloads/layout_search.h"
#include "workloads/memory.h"
#include "workloads/step_simulator.h"
#include "workloads/training.h"
#include "workloads/training_schedule.h"

namespace podsim::cli {

namespace {

// Layouts printed when neither --top nor sweep.top says.
constexpr int kDefaultTop = 10;

struct SweepFlags {
  std::string system;
  std::string model;
  std::string batch_tokens;
  std::string seq;
  int jobs = 0;
  int top = kDefaultTop;
  bool json = false;
  bool csv = false;
  bool exhaustive = false;
  bool dump_scenario = false;
};

// Candidates are simulated in waves of this many, in order of their lower bound; after each
// wave, those whose bound exceeds the K-th best step time so far are skipped. The wave size does
// not depend on --jobs, so neither does which layouts are simulated nor the output.
constexpr size_t kWave = 8;

// A pool of min(jobs, tasks) threads; an error, not an abort, where the system refuses threads.
sim::StatusOr<std::unique_ptr<boost::asio::thread_pool>> MakePool(int jobs, size_t tasks) {
  const size_t threads = std::max<size_t>(1, std::min(static_cast<size_t>(jobs), tasks));
  try {
    return std::make_unique<boost::asio::thread_pool>(threads);
  } catch (const std::system_error& e) {
    return sim::Status::OutOfRange("--jobs: cannot start " + std::to_string(threads) +
                                   " threads (" + e.what() + "); use fewer");
  }
}

struct Entry {
  workloads::LayoutCandidate candidate;
  workloads::MemoryBreakdown memory;
  double lower_bound_s = 0;
  std::optional<workloads::TrainingResult> result;
  std::string error;
  // The simulation is beyond podsim's limits (OutOfRange: the work bound, the time horizon): the
  // layout is listed as not simulated, and the sweep goes on.
  bool beyond_limits = false;
};

// The part of the step that is not compute and takes the longest, or "compute".
std::string Bottleneck(const workloads::TrainingResult& result) {
  std::string name = "compute";
  double longest = result.breakdown.count("compute") ? result.breakdown.at("compute") : 0;
  for (const auto& [part, seconds] : result.breakdown) {
    if (part != "compute" && seconds > longest) {
      name = part;
      longest = seconds;
    }
  }
  return name;
}

void Progress(std::ostream& err, size_t done, size_t total) {
  const int width = 40;
  const int filled = total == 0 ? width : static_cast<int>(width * done / total);
  err << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done
      << "/" << total << " simulated" << std::flush;
}

// The scenario of the flags; errors name the flag that does not parse.
sim::StatusOr<scenario::Scenario> ScenarioOf(const SweepFlags& flags) {
  PODSIM_ASSIGN_OR_RETURN(int64_t tokens, ParseTokenCount("--batch-tokens", flags.batch_tokens));
  PODSIM_ASSIGN_OR_RETURN(int64_t seq, ParseTokenCount("--seq", flags.seq));
  if (tokens % seq != 0) {
    return sim::Status::InvalidArgument("--batch-tokens: " + std::to_string(tokens) +
                                        " is not a whole number of sequences of --seq " +
                                        std::to_string(seq) + " tokens");
  }
  if (flags.top < 1) return sim::Status::InvalidArgument("--top: must be >= 1");
  if (flags.jobs < 0) return sim::Status::InvalidArgument("--jobs: must be >= 1 (0: all cores)");
  scenario::Scenario s;
  s.mutable_system()->set_preset(flags.system);
  scenario::Sweep* sweep = s.mutable_sweep();
  sweep->mutable_model()->set_preset(flags.model);
  sweep->set_batch_tokens(tokens);
  sweep->set_seq(seq);
  if (flags.jobs > 0) sweep->set_jobs(flags.jobs);
  if (flags.top != kDefaultTop) sweep->set_top(flags.top);
  if (flags.exhaustive) sweep->set_exhaustive(true);
  if (flags.json) s.mutable_outputs()->set_json(true);
  if (flags.csv) s.mutable_outputs()->set_csv(true);
  return s;
}

// Where each field of ScenarioOf comes from.
scenario::SourceMap FlagsOf() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "--system");
  flags.AddFlag("sweep.model", "--model");
  flags.AddFlag("sweep.batch_tokens", "--batch-tokens");
  flags.AddFlag("sweep.seq", "--seq");
  flags.AddFlag("sweep.jobs", "--jobs");
  flags.AddFlag("sweep.top", "--top");
  flags.AddFlag("sweep.exhaustive", "--exhaustive");
  flags.AddFlag("outputs.json", "--json");
  flags.AddFlag("outputs.csv", "--csv");
  return flags;
}

sim::Status RunSweep(const scenario::Scenario& s, const scenario::SourceMap& source,
                     CommandIo& io) {
  const scenario::Sweep& sweep = s.sweep();
  const scenario::Outputs& outputs = s.outputs();
  PODSIM_ASSIGN_OR_RETURN(topology::System system, scenario::BuildSystem(s.system(), source));
  PODSIM_ASSIGN_OR_RETURN(workloads::ModelSpec model,
                          scenario::BuildModel(sweep.model(), "sweep.model", source));
  if (sweep.seq() < 1 || sweep.batch_tokens() < 1 || sweep.batch_tokens() % sweep.seq() != 0) {
    return source.Annotate(
        sim::Status::InvalidArgument("batch_tokens must be a positive multiple of seq (got " +
                                     std::to_string(sweep.batch_tokens()) + " and " +
                                     std::to_string(sweep.seq()) + ")"),
        "sweep.batch_tokens");
  }
  if (system.chip.bf16_flops_per_s <= 0) {
    return source.Annotate(
        sim::Status::InvalidArgument("generic fabrics have no compute to train on"), "system");
  }
  const workloads::BatchSpec batch{sweep.batch_tokens() / sweep.seq(), sweep.seq()};
  const size_t top = static_cast<size_t>(sweep.has_top() ? sweep.top() : kDefaultTop);
  const int jobs = sweep.jobs() > 0
                       ? sweep.jobs()
                       : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  const std::vector<workloads::LayoutCandidate> candidates =
      workloads::EnumerateLayouts(system, model, batch);
  if (candidates.empty()) {
    return sim::Status::InvalidArgument(
        "no layout of " + model.name + " splits " + std::to_string(batch.sequences) +
        " sequences over the " + std::to_string(system.fabric.chip_count()) + " chips of " +
        system.name +
        ": dp*fsdp must divide the sequences and tp*pp the rest of the chips (tp a power of two "
        "dividing the heads, pp dividing the layers); change --batch-tokens or the system");
  }
  // Memory and the lower bound of every candidate. Neither depends on the mapping (with free
  // communication the placement of the mesh changes nothing), so each is computed once for the
  // candidates that differ only in their order; the rest is spread over the jobs.
  std::vector<Entry> all(candidates.size());
  std::vector<size_t> shares(candidates.size());  // The candidate whose figures each one shares.
  {
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < candidates.size(); ++i) {
      workloads::LayoutCandidate unplaced = candidates[i];
      unplaced.layout.order.clear();
      shares[i] = first.emplace(unplaced.Name(), i).first->second;
    }
    PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<boost::asio::thread_pool> pool_owner,
                            MakePool(jobs, candidates.size()));
    boost::asio::thread_pool& pool = *pool_owner;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (shares[i] != i) continue;
      boost::asio::post(pool, [&system, &model, &batch, &candidates, entry = &all[i], i] {
        workloads::OpOptions options;
        options.recompute = candidates[i].recompute;
        entry->memory =
            workloads::PeakMemory(model, candidates[i].layout, batch, options, system.chip);
        if (!entry->memory.fits) return;
        const schedule::Schedule schedule =
            workloads::TrainingSchedule(system.name, model, candidates[i].layout, batch, options);
        // Fails only where the simulation would; that failure is reported when it is simulated.
        sim::StatusOr<sim::Time> bound = workloads::DependencyLowerBound(system, schedule);
        entry->lower_bound_s = bound.ok() ? bound->ToSeconds() : 0;
      });
    }
    pool.join();
    for (size_t i = 0; i < candidates.size(); ++i) {
      all[i].candidate = candidates[i];
      if (shares[i] == i) continue;
      all[i].memory = all[shares[i]].memory;
      all[i].lower_bound_s = all[shares[i]].lower_bound_s;
    }
  }
  std::vector<Entry> fitting;
  size_t too_big = 0;
  double smallest_over = 0;  // The least memory a layout that does not fit needs.
  for (Entry& entry : all) {
    if (!entry.memory.fits) {
      ++too_big;
      if (smallest_over == 0 || entry.memory.total_bytes < smallest_over) {
        smallest_over = entry.memory.total_bytes;
      }
      continue;
    }
    fitting.push_back(std::move(entry));
  }
  std::sort(fitting.begin(), fitting.end(), [](const Entry& a, const Entry& b) {
    if (a.lower_bound_s != b.lower_bound_s) return a.lower_bound_s < b.lower_bound_s;
    return a.candidate.Name() < b.candidate.Name();
  });

  // Layouts share many collectives; each is rehearsed once for the whole sweep. SimulateTraining
  // runs with the default step options, whose collective model this is.
  collectives::RehearsalCache rehearsals(&system.fabric,
                                         collectives::CalibratedEfficiency(system.fabric));
  workloads::StepOptions step_options;
  step_options.rehearsals = &rehearsals;
  step_options.max_transfers = io.max_transfers;

  const bool progress = !outputs.json() && !outputs.csv() && isatty(STDERR_FILENO);
  std::vector<double> best;  // Step times simulated so far, ascending.
  size_t simulated = 0;
  size_t beyond_limits = 0;  // Simulations refused by the work bound or the horizon.
  std::string first_beyond;
  size_t next = 0;
  while (next < fitting.size()) {
    const double kth = best.size() >= top ? best[top - 1] : 0;
    // No later layout can make the top: their compute and dependencies alone take longer.
    if (!sweep.exhaustive() && kth > 0 && fitting[next].lower_bound_s > kth) break;
    const size_t end = std::min(fitting.size(), next + kWave);
    {
      PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<boost::asio::thread_pool> pool_owner,
                              MakePool(jobs, end - next));
      boost::asio::thread_pool& pool = *pool_owner;
      for (size_t i = next; i < end; ++i) {
        boost::asio::post(pool, [&system, &model, &batch, &step_options, entry = &fitting[i]] {
          workloads::OpOptions options;
          options.recompute = entry->candidate.recompute;
          sim::StatusOr<workloads::TrainingResult> result = workloads::SimulateTraining(
              system, model, entry->candidate.layout, batch, options, step_options);
          if (result.ok()) {
            result->schedule.Clear();  // Not needed any more; keeps the sweep's memory small.
            entry->result = std::move(*result);
          } else {
            entry->error = result.status().message();
            entry->beyond_limits = result.status().code() == sim::Status::Code::kOutOfRange;
          }
        });
      }
      pool.join();
    }
    for (size_t i = next; i < end; ++i) {
      if (fitting[i].beyond_limits) {
        if (beyond_limits++ == 0) {
          first_beyond = "layout " + fitting[i].candidate.Name() + ": " + fitting[i].error;
        }
        continue;
      }
      if (!fitting[i].error.empty()) {
        return sim::Status::InvalidArgument("layout " + fitting[i].candidate.Name() + ": " +
                                            fitting[i].error);
      }
      best.insert(std::upper_bound(best.begin(), best.end(), fitting[i].result->step_time_s),
                  fitting[i].result->step_time_s);
    }
    simulated += end - next;
    next = end;
    if (progress) Progress(io.err, simulated, fitting.size());
  }
  if (progress) io.err << "\n";

  std::vector<const Entry*> ranked;
  for (const Entry& entry : fitting) {
    if (entry.result) ranked.push_back(&entry);
  }
  std::sort(ranked.begin(), ranked.end(), [](const Entry* a, const Entry* b) {
    if (a->result->step_time_s != b->result->step_time_s) {
      return a->result->step_time_s < b->result->step_time_s;
    }
    return a->candidate.Name() < b->candidate.Name();
  });
  if (ranked.empty() && beyond_limits > 0) {
    return sim::Status::OutOfRange("no simulated layout is within podsim's limits; the first: " +
                                   first_beyond);
  }
  if (ranked.size() > top) ranked.resize(top);
  const size_t skipped = fitting.size() - simulated;

  if (outputs.json()) {
    nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
    for (const Entry* e : ranked) {
      layouts.push_back({{"layout", e->candidate.layout.ToString()},
                         {"recompute", workloads::RecomputeName(e->candidate.recompute)},
                         {"step_time_s", e->result->step_time_s},
                         {"mfu", e->result->mfu},
                         {"memory_per_chip_bytes", e->memory.total_bytes},
                         {"fits", e->memory.fits},
                         {"bottleneck", Bottleneck(*e->result)}});
    }
    nlohmann::ordered_json j{{"system", system.name},
                             {"model", model.name},
                             {"batch_tokens", batch.tokens()},
                             {"seq", batch.seq},
                             {"candidates", candidates.size()},
                             {"do_not_fit", too_big},
                             {"simulated", simulated},
                             {"skipped_by_lower_bound", skipped},
                             {"beyond_limits", beyond_limits},
                             {"exact", !ranked.empty() && ranked.front()->result->step.exact},
                             {"layouts", layouts}};
    io.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  if (outputs.csv()) {
    io.out << "rank,layout,recompute,step_time_s,mfu,memory_per_chip_bytes,bottleneck\n";
    for (size_t i = 0; i < ranked.size(); ++i) {
      const Entry& e = *ranked[i];
      char line[512];
      std::snprintf(line, sizeof line, "%zu,\"%s\",%s,%.9g,%.6f,%.0f,%s\n", i + 1,
                    e.candidate.layout.ToString().c_str(),
                    std::string(workloads::RecomputeName(e.candidate.recompute)).c_str(),
                    e.result->step_time_s, e.result->mfu, e.memory.total_bytes,
                    Bottleneck(*e.result).c_str());
      io.out << line;
    }
    return sim::Status::Ok();
  }
  io.out << "system      " << system.name << " (" << system.fabric.chip_count() << " chips)\n";
  io.out << "model       " << model.name << ", batch " << batch.sequences << " x " << batch.seq
         << " tokens\n";
  io.out << "layouts     " << candidates.size() << " valid; " << too_big << " do not fit in HBM";
  if (too_big > 0)
    io.out << " (the smallest of them needs " << FormatByteSize(smallest_over) << ")";
  io.out << "; " << simulated << " simulated; " << skipped
         << " skipped (their compute and dependencies alone exceed the top " << top << ")\n";
  if (beyond_limits > 0) {
    io.out << "unranked    " << beyond_limits
           << " simulated layout(s) beyond podsim's limits, not ranked (" << first_beyond << ")\n";
  }
  if (!ranked.empty()) {
    io.out << "accuracy    "
           << StepFidelity(ranked.front()->result->step,
                           "podsim train --exact gives a layout's full simulation")
           << "\n";
  }
  io.out << "\n";
  int width = 6;
  for (const Entry* e : ranked) {
    width = std::max(width, static_cast<int>(e->candidate.layout.ToString().size()));
  }
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-*s %-9s %12s %7s %11s  %s\n", "rank", width, "layout",
                "recompute", "step", "MFU", "memory", "bottleneck");
  io.out << line;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Entry& e = *ranked[i];
    std::snprintf(line, sizeof line, "%4zu  %-*s %-9s %12s %7s %11s  %s\n", i + 1, width,
                  e.candidate.layout.ToString().c_str(),
                  std::string(workloads::RecomputeName(e.candidate.recompute)).c_str(),
                  FormatSeconds(e.result->step_time_s).c_str(),
                  FormatPercent(e.result->mfu).c_str(),
                  FormatByteSize(e.memory.total_bytes).c_str(), Bottleneck(*e.result).c_str());
    io.out << line;
  }
  return sim::Status::Ok();
}

}  // namespace

Command AddSweepCommand(CLI::App& app) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Rank the valid layouts of a model on a system by simulated step time");
  sub->add_option("--system", flags->system, "SYSTEM, e.g. tpu-v5p:16x20x28, h100:1024")
      ->required();
  sub->add_option("--model", flags->model, "llama3-70b, ..., or custom:layers=..,d_model=..")
      ->required();
  sub->add_option("--batch-tokens", flags->batch_tokens, "Tokens per step, e.g. 4M")->required();
  sub->add_option("--seq", flags->seq, "Tokens per sequence, e.g. 4096")->required();
  sub->add_option("--jobs", flags->jobs,
                  "Simulations run at once (default: all cores); the output does not depend on it");
  sub->add_option("--top", flags->top, "Layouts to print (default 10)");
  sub->add_flag("--exhaustive", flags->exhaustive,
                "Simulate every layout that fits, skipping none by the lower bound");
  auto* json = sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_flag("--csv", flags->csv, "Print CSV")->excludes(json);
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags](CommandIo& io) {
                   return DumpOrRun(ScenarioOf(*flags), FlagsOf(), flags->dump_scenario, io);
                 }};
}

sim::Status RunSweepScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                             CommandIo& io) {
  return RunSweep(scenario, source, io);
}

}  // namespace podsim::cli
