#include "cli/sweep_command.h"

#include <google/protobuf/arena.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/byte_size.h"
#include "cli/logging.h"
#include "cli/report_file.h"
#include "cli/report_format.h"
#include "cli/run_command.h"
#include "cli/step_fidelity.h"
#include "cli/task_runner.h"
#include "cli/training_flags.h"
#include "cli/training_options_json.h"
#include "cli/validation_line.h"
#include "collectives/efficiency_model.h"
#include "collectives/rehearsal_cache.h"
#include "reports/charts.h"
#include "reports/report.h"
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
  std::string report;
  bool exhaustive = false;
  bool mpi = false;
  bool dump_scenario = false;
  TrainingFlags training;
};

// Candidates are simulated in waves of this many, in order of their lower bound; after each
// wave, those whose bound exceeds the K-th best step time so far are skipped. The wave size does
// not depend on --jobs or the MPI ranks, so neither does which layouts are simulated nor the
// output.
constexpr size_t kWave = 8;

// What the sweep keeps of one simulated layout: what it prints and ranks by. It crosses MPI
// ranks as JSON (nlohmann's doubles round-trip exactly), so one process and many print the same.
struct Outcome {
  double step_time_s = 0;
  double mfu = 0;
  std::string bottleneck;
  bool exact = false;
  std::string fidelity;  // StepFidelity of the step, for the report's accuracy line.
};

struct Entry {
  workloads::LayoutCandidate candidate;
  bool fits = false;
  double memory_bytes = 0;
  // A lower bound on the step time: compute alone until refined, then compute and dependencies
  // with free communication (for layouts without pipeline stages the two are one).
  double lower_bound_s = 0;
  bool bound_refined = false;
  size_t share = 0;  // The candidate whose memory and bounds this one shares (its order aside).
  std::optional<Outcome> result;
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

// MPI ranks give each other the collectives they rehearsed (a record depends on its request
// alone, collectives/rehearsal_cache.h), so that no rank rehearses what another already did.
void ShareRehearsals(TaskRunner& runner, collectives::RehearsalCache& cache, size_t* cursor) {
  if (runner.ranks() < 2) return;
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& [key, r] : cache.RecordsSince(cursor)) {
    std::vector<uint32_t> links;
    for (sim::ResourceId link : r.bottleneck) links.push_back(link.value);
    mine.push_back({key, r.duration.picoseconds(), links, r.bytes, r.rate, r.latency.picoseconds(),
                    r.algorithm, r.transfers});
  }
  const std::vector<std::string> all = runner.AllGather(mine.dump());
  for (int rank = 0; rank < static_cast<int>(all.size()); ++rank) {
    if (rank == runner.rank()) continue;
    for (const nlohmann::json& j : nlohmann::json::parse(all[rank])) {
      collectives::RehearsalRecord r;
      r.duration = sim::Time::Picoseconds(j[1].get<int64_t>());
      for (uint32_t link : j[2].get<std::vector<uint32_t>>()) r.bottleneck.push_back({link});
      r.bytes = j[3].get<double>();
      r.rate = j[4].get<double>();
      r.latency = sim::Time::Picoseconds(j[5].get<int64_t>());
      r.algorithm = j[6].get<std::string>();
      r.transfers = j[7].get<uint64_t>();
      cache.Insert(j[0].get<std::string>(), r);
    }
  }
  // What this rank inserted from the others is not its own to give again.
  cache.RecordsSince(cursor);
}

void Progress(std::ostream& err, size_t done, size_t total) {
  const int width = 40;
  const int filled = total == 0 ? width : static_cast<int>(width * done / total);
  err << "\r[" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done
      << "/" << total << " simulated" << std::flush;
}

// One candidate's options: the sweep's, its recompute policy, and the tp overlap where its layout
// has sp (Megatron requires it).
workloads::OpOptions CandidateOptions(const workloads::OpOptions& base,
                                      const workloads::LayoutCandidate& candidate) {
  workloads::OpOptions options = base;
  options.recompute = candidate.recompute;
  options.tp_comm_overlap =
      base.tp_comm_overlap && (candidate.layout.tp == 1 || candidate.layout.sp);
  options.ep_comm_overlap =
      base.ep_comm_overlap && workloads::ValidateEpCommOverlap(base, candidate.layout).ok();
  options.fp8_dispatch = base.fp8_dispatch && candidate.layout.ep > 1;
  return options;
}

// The step schedule of `candidate` with its options, what the bounds are taken on, built on
// `arena`: the sweep builds one per candidate, and the heap's allocation and freeing of their
// ops and names was a third of its time.
const schedule::Schedule& CandidateSchedule(const topology::System& system,
                                            const workloads::ModelSpec& model,
                                            const workloads::BatchSpec& batch,
                                            const workloads::OpOptions& base,
                                            const workloads::LayoutCandidate& candidate,
                                            google::protobuf::Arena* arena) {
  auto* schedule = google::protobuf::Arena::CreateMessage<schedule::Schedule>(arena);
  workloads::BuildTrainingSchedule(system, model, candidate.layout, batch,
                                   CandidateOptions(base, candidate), schedule);
  return *schedule;
}

// Arena blocks for one candidate's schedule (a few MB for the largest).
google::protobuf::ArenaOptions ScheduleArenaOptions() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = 256 << 10;
  options.max_block_size = 16 << 20;
  return options;
}

// The scenario of the flags; errors name the flag that does not parse.
sim::StatusOr<scenario::Scenario> ScenarioOf(const SweepFlags& flags) {
  PODSIM_ASSIGN_OR_RETURN(BatchTokens batch, ParseBatchTokens(flags.batch_tokens, flags.seq));
  if (flags.top < 1) return sim::Status::InvalidArgument("--top: must be >= 1");
  PODSIM_RETURN_IF_ERROR(CheckJobs(flags.jobs));
  PODSIM_RETURN_IF_ERROR(CheckTrainingFlags(flags.training));
  scenario::Scenario s;
  s.mutable_system()->set_preset(flags.system);
  scenario::Sweep* sweep = s.mutable_sweep();
  sweep->mutable_model()->set_preset(flags.model);
  sweep->set_batch_tokens(batch.tokens);
  sweep->set_seq(batch.seq);
  if (flags.jobs > 0) sweep->set_jobs(flags.jobs);
  if (flags.top != kDefaultTop) sweep->set_top(flags.top);
  if (flags.exhaustive) sweep->set_exhaustive(true);
  if (flags.mpi) sweep->set_mpi(true);
  SetTrainingFields(flags.training, sweep);
  if (flags.json) s.mutable_outputs()->set_json(true);
  if (flags.csv) s.mutable_outputs()->set_csv(true);
  if (!flags.report.empty()) s.mutable_outputs()->set_report(flags.report);
  return s;
}

// Where each field of ScenarioOf comes from.
scenario::SourceMap SweepFlagSources() {
  scenario::SourceMap flags;
  flags.AddFlag("system", "--system");
  flags.AddFlag("sweep.model", "--model");
  flags.AddFlag("sweep.batch_tokens", "--batch-tokens");
  flags.AddFlag("sweep.seq", "--seq");
  flags.AddFlag("sweep.jobs", "--jobs");
  flags.AddFlag("sweep.top", "--top");
  flags.AddFlag("sweep.exhaustive", "--exhaustive");
  flags.AddFlag("sweep.mpi", "--mpi");
  AddTrainingFlagSources("sweep", &flags);
  flags.AddFlag("outputs.json", "--json");
  flags.AddFlag("outputs.csv", "--csv");
  flags.AddFlag("outputs.report", "--report");
  return flags;
}

sim::Status RunSweep(const scenario::Scenario& s, const scenario::SourceMap& source,
                     topology::System system, CommandIo& io) {
  const scenario::Sweep& sweep = s.sweep();
  const scenario::Outputs& outputs = s.outputs();
  LogCalibration(system.chip);
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
  const workloads::OpOptions base = scenario::OpOptionsOf(sweep);
  if (outputs.has_report()) PODSIM_RETURN_IF_ERROR(CheckReportFlag(outputs.report(), source));
  const size_t top = static_cast<size_t>(sweep.has_top() ? sweep.top() : kDefaultTop);
  PODSIM_ASSIGN_OR_RETURN(std::unique_ptr<TaskRunner> runner,
                          MakeTaskRunner(sweep.jobs(), sweep.mpi()));
  // Only rank 0 of an MPI sweep prints; the others compute the same ranking in silence.
  std::ostringstream silent;
  CommandIo quiet{silent, silent, io.max_transfers, io.command_line, {}};
  CommandIo& shown = runner->rank() == 0 ? io : quiet;

  std::vector<workloads::LayoutCandidate> candidates =
      workloads::EnumerateLayouts(system, model, batch);
  // When no layout uses every chip, the sweep runs on the largest slice that has one, and says so.
  std::string whole_system;
  if (candidates.empty()) {
    const std::string none =
        "no layout of " + model.name + " splits " + std::to_string(batch.sequences) +
        (batch.sequences == 1 ? " sequence of " : " sequences of ") + std::to_string(batch.seq) +
        " tokens over the " + std::to_string(system.fabric.chip_count()) + " chips of " +
        system.name;
    sim::StatusOr<workloads::SliceChoice> slice =
        workloads::LargestSliceWithLayouts(system, model, batch);
    if (!slice.ok()) {
      return sim::Status::InvalidArgument(
          none +
          ": dp*fsdp (split further by sequence sharding) must divide the tokens and tp*pp the "
          "rest of the chips (tp a power of two dividing the heads, pp dividing the layers), and " +
          slice.status().message() + "; change --batch-tokens or the system");
    }
    whole_system = system.name + " (" + none + ")";
    system = std::move(slice->system);
    candidates = std::move(slice->candidates);
    // Said on stderr too, so that no output format (--csv included) hides it.
    shown.err << "podsim: warning: " << none << "; the sweep runs on its largest slice with a "
              << "layout, " << system.name << " (" << system.fabric.chip_count() << " chips)\n";
  }
  // The layouts the framework does not run as simulated (torchtitan's tp without sp) are not
  // candidates, nor those the precision recipe is not modelled with (amp's fsdp and pp).
  std::erase_if(candidates, [&base](const workloads::LayoutCandidate& candidate) {
    return !workloads::ValidateFrameworkLayout(base, candidate.layout).ok() ||
           !workloads::ValidatePrecision(base, candidate.layout).ok();
  });
  if (candidates.empty()) {
    return sim::Status::InvalidArgument(
        "--framework " + std::string(workloads::FrameworkName(base.framework)) +
        " with --precision " + std::string(base.precision.name) + " runs no layout of " +
        model.name + " on " + system.name + " (workloads/framework.h, workloads/precision.h)");
  }
  // Memory and the lower bound of every candidate. Neither depends on the mapping (with free
  // communication the placement of the mesh changes nothing), so each is computed once for the
  // candidates that differ only in their order; the rest is spread over the jobs (and ranks).
  std::vector<Entry> all(candidates.size());
  std::vector<size_t> shares(candidates.size());  // The candidate whose figures each one shares.
  std::vector<size_t> distinct;                   // Those that share their own.
  {
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < candidates.size(); ++i) {
      workloads::LayoutCandidate unplaced = candidates[i];
      unplaced.layout.order.clear();
      shares[i] = first.emplace(unplaced.Name(), i).first->second;
      if (shares[i] == i) distinct.push_back(i);
    }
    const std::vector<std::string> figures = runner->Map(
        distinct.size(), [&system, &model, &batch, &candidates, &distinct, &base](size_t k) {
          const workloads::LayoutCandidate& candidate = candidates[distinct[k]];
          const workloads::OpOptions options = CandidateOptions(base, candidate);
          const workloads::MemoryBreakdown memory =
              workloads::PeakMemory(model, candidate.layout, batch, options, system.chip);
          double bound_s = 0;
          bool refined = false;
          if (memory.fits) {
            google::protobuf::Arena arena(ScheduleArenaOptions());
            const schedule::Schedule& schedule =
                CandidateSchedule(system, model, batch, base, candidate, &arena);
            bound_s = workloads::ComputeLowerBound(system, schedule).ToSeconds();
            refined = workloads::DependencyBoundIsComputeBound(schedule);
          }
          return nlohmann::json{{"fits", memory.fits},
                                {"bytes", memory.total_bytes},
                                {"bound", bound_s},
                                {"refined", refined}}
              .dump();
        });
    for (size_t k = 0; k < distinct.size(); ++k) {
      const nlohmann::json j = nlohmann::json::parse(figures[k]);
      Entry& entry = all[distinct[k]];
      entry.fits = j["fits"].get<bool>();
      entry.memory_bytes = j["bytes"].get<double>();
      entry.lower_bound_s = j["bound"].get<double>();
      entry.bound_refined = j["refined"].get<bool>();
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
      all[i].candidate = candidates[i];
      all[i].share = shares[i];
      if (shares[i] == i) continue;
      all[i].fits = all[shares[i]].fits;
      all[i].memory_bytes = all[shares[i]].memory_bytes;
      all[i].lower_bound_s = all[shares[i]].lower_bound_s;
      all[i].bound_refined = all[shares[i]].bound_refined;
    }
  }
  std::vector<Entry> fitting;
  size_t too_big = 0;
  double smallest_over = 0;  // The least memory a layout that does not fit needs.
  for (Entry& entry : all) {
    if (!entry.fits) {
      ++too_big;
      if (smallest_over == 0 || entry.memory_bytes < smallest_over) {
        smallest_over = entry.memory_bytes;
      }
      continue;
    }
    fitting.push_back(std::move(entry));
  }
  const auto by_bound = [](const Entry& a, const Entry& b) {
    if (a.lower_bound_s != b.lower_bound_s) return a.lower_bound_s < b.lower_bound_s;
    return a.candidate.Name() < b.candidate.Name();
  };
  std::sort(fitting.begin(), fitting.end(), by_bound);
  // Refines the compute bounds of the next wave's candidates (those not past `kth`, when it is
  // set) to the dependency bound, which simulates the step with free communication: only
  // pipelines need it, and only the ones whose compute alone does not already rule them out.
  // Every candidate sharing a refined one's figures takes its bound; the rest is re-sorted.
  const auto refine_next_wave = [&](size_t next, double kth) {
    while (true) {
      std::vector<size_t> pending;  // Distinct candidates (`share`) to refine.
      for (size_t i = next; i < fitting.size() && i < next + kWave; ++i) {
        if (kth > 0 && fitting[i].lower_bound_s > kth) break;
        if (!fitting[i].bound_refined &&
            std::find(pending.begin(), pending.end(), fitting[i].share) == pending.end()) {
          pending.push_back(fitting[i].share);
        }
      }
      if (pending.empty()) return;
      const std::vector<std::string> bounds = runner->Map(
          pending.size(), [&system, &model, &batch, &candidates, &pending, &base](size_t k) {
            const workloads::LayoutCandidate& candidate = candidates[pending[k]];
            google::protobuf::Arena arena(ScheduleArenaOptions());
            const schedule::Schedule& schedule =
                CandidateSchedule(system, model, batch, base, candidate, &arena);
            // Fails only where the simulation would: -1, so that the layout is simulated next
            // and the sweep reports that failure.
            sim::StatusOr<sim::Time> bound = workloads::DependencyLowerBound(system, schedule);
            return nlohmann::json(bound.ok() ? bound->ToSeconds() : -1.0).dump();
          });
      std::map<size_t, double> refined;
      for (size_t k = 0; k < pending.size(); ++k) {
        refined[pending[k]] = nlohmann::json::parse(bounds[k]).get<double>();
      }
      for (size_t i = next; i < fitting.size(); ++i) {
        auto it = refined.find(fitting[i].share);
        if (it == refined.end()) continue;
        fitting[i].lower_bound_s =
            it->second < 0 ? 0 : std::max(fitting[i].lower_bound_s, it->second);
        fitting[i].bound_refined = true;
      }
      std::sort(fitting.begin() + static_cast<std::ptrdiff_t>(next), fitting.end(), by_bound);
    }
  };

  // Layouts share many collectives; each is rehearsed once for the whole sweep. SimulateTraining
  // runs with the default step options, whose collective model this is.
  collectives::RehearsalCache rehearsals(&system.fabric,
                                         collectives::CalibratedEfficiency(system.fabric));
  size_t shared_rehearsals = 0;  // Records of `rehearsals` already given to the other ranks.
  workloads::StepOptions step_options;
  step_options.rehearsals = &rehearsals;
  step_options.max_transfers = shown.max_transfers;

  const bool progress =
      !outputs.json() && !outputs.csv() && runner->rank() == 0 && isatty(STDERR_FILENO);
  std::vector<double> best;  // Step times simulated so far, ascending.
  size_t simulated = 0;
  size_t beyond_limits = 0;  // Simulations refused by the work bound or the horizon.
  std::string first_beyond;
  size_t next = 0;
  while (next < fitting.size()) {
    const double kth = best.size() >= top ? best[top - 1] : 0;
    if (!sweep.exhaustive()) refine_next_wave(next, kth);
    // No later layout can make the top: their compute and dependencies alone take longer.
    if (!sweep.exhaustive() && kth > 0 && fitting[next].lower_bound_s > kth) break;
    const size_t end = std::min(fitting.size(), next + kWave);
    const std::vector<std::string> outcomes = runner->Map(
        end - next, [&system, &model, &batch, &step_options, &fitting, next, &base](size_t k) {
          const Entry& entry = fitting[next + k];
          const workloads::OpOptions options = CandidateOptions(base, entry.candidate);
          sim::StatusOr<workloads::TrainingResult> result = workloads::SimulateTraining(
              system, model, entry.candidate.layout, batch, options, step_options);
          if (!result.ok()) {
            return nlohmann::json{
                {"error", result.status().message()},
                {"beyond_limits", result.status().code() == sim::Status::Code::kOutOfRange}}
                .dump();
          }
          return nlohmann::json{
              {"step_time_s", result->step_time_s},
              {"mfu", result->mfu},
              {"bottleneck", Bottleneck(*result)},
              {"exact", result->step.exact},
              {"fidelity",
               StepFidelity(result->step, "podsim train --exact gives a layout's full simulation")}}
              .dump();
        });
    ShareRehearsals(*runner, rehearsals, &shared_rehearsals);
    for (size_t k = 0; k < outcomes.size(); ++k) {
      const nlohmann::json j = nlohmann::json::parse(outcomes[k]);
      Entry& entry = fitting[next + k];
      if (j.contains("error")) {
        entry.error = j["error"].get<std::string>();
        entry.beyond_limits = j["beyond_limits"].get<bool>();
        continue;
      }
      entry.result = Outcome{j["step_time_s"].get<double>(), j["mfu"].get<double>(),
                             j["bottleneck"].get<std::string>(), j["exact"].get<bool>(),
                             j["fidelity"].get<std::string>()};
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
    if (progress) Progress(shown.err, simulated, fitting.size());
  }
  if (progress) shown.err << "\n";

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
  spdlog::info("sweep: {} layouts, {} fit in HBM, {} simulated, {} skipped by their lower bound",
               all.size(), fitting.size(), simulated, skipped);

  if (outputs.has_report() && runner->rank() == 0) {
    std::vector<reports::LayoutPoint> points;
    for (const Entry& entry : fitting) {
      if (!entry.result) continue;
      points.push_back(
          {entry.candidate.Name(), entry.result->step_time_s, entry.memory_bytes, entry.fits});
    }
    reports::Report report("podsim sweep: " + model.name + " on " + system.name, io.command_line);
    report.AddFact("system", system.name + " (" + std::to_string(system.fabric.chip_count()) +
                                 " chips of " + system.chip.name + ")");
    if (!whole_system.empty()) report.AddFact("slice of", whole_system);
    report.AddFact("model", model.name + ", batch " + std::to_string(batch.sequences) + " x " +
                                std::to_string(batch.seq) + " tokens");
    report.AddFact("layouts", std::to_string(candidates.size()) + " valid, " +
                                  std::to_string(too_big) + " do not fit in HBM, " +
                                  std::to_string(simulated) + " simulated, " +
                                  std::to_string(skipped) + " skipped by their lower bound");
    if (!ranked.empty()) {
      report.AddFact("best", ranked.front()->candidate.Name() + ": " +
                                 FormatSeconds(ranked.front()->result->step_time_s));
      report.AddFact("accuracy", ranked.front()->result->fidelity);
      report.AddFact("validation", ValidationLine(system.chip, "training",
                                                  workloads::FrameworkName(base.framework)));
    }
    report.AddChart(reports::ParetoChart(
        points, system.chip.hbm_bytes,
        "Every simulated layout (those that fit in HBM and were not skipped by their lower "
        "bound; the others have no simulated step time), at its memory per chip and step time. "
        "The line is the Pareto front: no other layout is both faster and smaller. The dashed "
        "line is the chip's HBM."));
    PODSIM_RETURN_IF_ERROR(WriteReportFile(outputs.report(), report, source));
  }
  if (outputs.json()) {
    nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
    for (const Entry* e : ranked) {
      // What fsdp does under this layout (torchtitan with pp: train's JSON says the same).
      const workloads::OpOptions laid_out =
          workloads::WithLayoutDefaults(base, e->candidate.layout);
      layouts.push_back({{"layout", e->candidate.layout.ToString()},
                         {"recompute", workloads::RecomputeName(e->candidate.recompute)},
                         {"step_time_s", e->result->step_time_s},
                         {"mfu", e->result->mfu},
                         {"memory_per_chip_bytes", e->memory_bytes},
                         {"fits", e->fits},
                         {"bottleneck", e->result->bottleneck}});
      layouts.back().update(LayoutOptionsJson(laid_out, e->candidate.layout));
    }
    const nlohmann::ordered_json validation =
        ValidationJson(system.chip, "training", workloads::FrameworkName(base.framework));
    nlohmann::ordered_json j{{"system", system.name},
                             {"model", model.name},
                             {"batch_tokens", batch.tokens()},
                             {"seq", batch.seq}};
    j.update(TrainingOptionsJson(base));
    // As stated; each layout says what they become under it (LayoutOptionsJson).
    j["reshard_after_forward"] = base.fsdp_reshard_after_forward;
    j["overlap_grad_reduce"] = base.overlap_grad_reduce;
    j["overlap_param_gather"] = base.overlap_param_gather;
    j.update(nlohmann::ordered_json{{"candidates", candidates.size()},
                                    {"do_not_fit", too_big},
                                    {"simulated", simulated},
                                    {"skipped_by_lower_bound", skipped},
                                    {"beyond_limits", beyond_limits},
                                    {"exact", !ranked.empty() && ranked.front()->result->exact},
                                    {"validation", validation},
                                    {"layouts", layouts}});
    if (!whole_system.empty()) j["slice_of"] = whole_system;
    shown.out << j.dump(2) << "\n";
    return sim::Status::Ok();
  }
  if (outputs.csv()) {
    shown.out << "rank,layout,recompute,step_time_s,mfu,memory_per_chip_bytes,bottleneck\n";
    for (size_t i = 0; i < ranked.size(); ++i) {
      const Entry& e = *ranked[i];
      char line[512];
      std::snprintf(line, sizeof line, "%zu,\"%s\",%s,%.9g,%.6f,%.0f,%s\n", i + 1,
                    e.candidate.layout.ToString().c_str(),
                    std::string(workloads::RecomputeName(e.candidate.recompute)).c_str(),
                    e.result->step_time_s, e.result->mfu, e.memory_bytes,
                    e.result->bottleneck.c_str());
      shown.out << line;
    }
    return sim::Status::Ok();
  }
  shown.out << "system      " << system.name << " (" << system.fabric.chip_count() << " chips)\n";
  if (!whole_system.empty()) {
    shown.out << "            the largest slice with a layout of " << whole_system << "\n";
  }
  shown.out << "model       " << model.name << ", batch " << batch.sequences << " x " << batch.seq
            << " tokens\n";
  shown.out << "options     "
            << (base.framework == workloads::Framework::kBook
                    ? ""
                    : "framework " + std::string(workloads::FrameworkName(base.framework)) + ", ")
            << "precision " << workloads::PrecisionLabel(base.precision)
            << (base.distributed_optimizer ? ", distributed optimizer" : "")
            << (base.overlap_grad_reduce ? "" : ", dp gradient reductions after the backward")
            << (base.distributed_optimizer && !base.overlap_param_gather
                    ? ", dp parameter gathers after the optimizer step"
                    : "")
            << (base.tp_comm_overlap ? ", tp communication overlap (layouts with sp)" : "")
            << (base.ep_comm_overlap ? ", expert all-to-all overlap (1F1B layouts with ep)" : "")
            << (base.fp8 ? ", fp8 linear layers" : "")
            << (base.fp8_all_gather ? ", fp8 weight all-gathers" : "")
            << (base.fp8_dispatch ? ", fp8 expert dispatch (layouts with ep)" : "")
            << (base.loss == workloads::LossKernel::kVocabParallel
                    ? ""
                    : ", the " + std::string(workloads::LossKernelName(base.loss)) + " loss")
            << (base.kernels == workloads::KernelLibrary::kEager ? ", eager PyTorch kernels" : "")
            << (base.fsdp_reshard_after_forward
                    ? ""
                    : ", fsdp keeps gathered weights until the backward")
            << (base.framework == workloads::Framework::kTorchtitan
                    ? ", FSDP2 under pipelining as torch.distributed.pipelining runs it "
                      "(layouts with pp: weights gathered once a step, gradients reduced after "
                      "the last microbatch)"
                    : "")
            << "\n";
  shown.out << "layouts     " << candidates.size() << " valid; " << too_big << " do not fit in HBM";
  if (too_big > 0)
    shown.out << " (the smallest of them needs " << FormatByteSize(smallest_over) << ")";
  shown.out << "; " << simulated << " simulated; " << skipped
            << " skipped (their compute and dependencies alone exceed the top " << top << ")\n";
  if (beyond_limits > 0) {
    shown.out << "unranked    " << beyond_limits
              << " simulated layout(s) beyond podsim's limits, not ranked (" << first_beyond
              << ")\n";
  }
  if (!ranked.empty()) {
    shown.out << "accuracy    " << ranked.front()->result->fidelity << "\n";
    // The default is exact only where the quotient is cheap: say when the ranking mixes methods.
    size_t exact = 0;
    for (const Entry* e : ranked) exact += e->result->exact ? 1 : 0;
    if (exact > 0 && exact < ranked.size()) {
      shown.out << "            " << exact << " of the " << ranked.size()
                << " ranked layouts are exact, the others approximate: their order against each "
                   "other is not the full simulation's\n";
    }
  }
  shown.out << "validation  "
            << ValidationLine(system.chip, "training", workloads::FrameworkName(base.framework))
            << "\n";
  shown.out << "\n";
  int width = 6;
  for (const Entry* e : ranked) {
    width = std::max(width, static_cast<int>(e->candidate.layout.ToString().size()));
  }
  char line[512];
  std::snprintf(line, sizeof line, "%4s  %-*s %-9s %12s %7s %11s  %s\n", "rank", width, "layout",
                "recompute", "step", "MFU", "memory", "bottleneck");
  shown.out << line;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const Entry& e = *ranked[i];
    std::snprintf(line, sizeof line, "%4zu  %-*s %-9s %12s %7s %11s  %s\n", i + 1, width,
                  e.candidate.layout.ToString().c_str(),
                  std::string(workloads::RecomputeName(e.candidate.recompute)).c_str(),
                  FormatSeconds(e.result->step_time_s).c_str(),
                  FormatPercent(e.result->mfu).c_str(), FormatByteSize(e.memory_bytes).c_str(),
                  e.result->bottleneck.c_str());
    shown.out << line;
  }
  if (outputs.has_report()) shown.out << "\nreport      " << outputs.report() << "\n";
  return sim::Status::Ok();
}

}  // namespace

Command AddSweepCommand(CLI::App& app) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Rank the valid layouts of a model on a system by simulated step time");
  sub->add_option("--system", flags->system, "SYSTEM, e.g. tpu-v5p:16x20x28, h100:1024")
      ->required();
  sub->add_option("--model", flags->model, kTrainingModelHelp)->required();
  AddBatchFlags(sub, &flags->batch_tokens, &flags->seq);
  sub->add_option("--jobs", flags->jobs,
                  "Simulations run at once per process (default: all cores, shared among the MPI "
                  "ranks of a machine); the output does not depend on it");
  sub->add_option("--top", flags->top, "Layouts to print (default 10)");
  AddTrainingFlags(sub, &flags->training,
                   " (a sweep overlaps on the layouts with sp; the others run without it)");
  sub->add_flag("--exhaustive", flags->exhaustive,
                "Simulate every layout that fits, skipping none by the lower bound");
  sub->add_flag("--mpi", flags->mpi,
                "Spread the simulations over MPI ranks (implied under mpirun; a build with cmake "
                "-DPODSIM_WITH_MPI=ON): rank 0 prints exactly the single-process output");
  auto* json = sub->add_flag("--json", flags->json, "Print one JSON object");
  sub->add_flag("--csv", flags->csv, "Print CSV")->excludes(json);
  AddReportFlag(sub, &flags->report);
  sub->add_flag("--dump-scenario", flags->dump_scenario,
                "Print the equivalent scenario file (for podsim run) instead of running");
  return Command{sub, [flags](CommandIo& io) {
                   return DumpOrRun(ScenarioOf(*flags), SweepFlagSources(), flags->dump_scenario,
                                    io);
                 }};
}

sim::Status RunSweepScenario(const scenario::Scenario& scenario, const scenario::SourceMap& source,
                             topology::System system, CommandIo& io) {
  return RunSweep(scenario, source, std::move(system), io);
}

}  // namespace podsim::cli
