#include "cli/logging.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string_view>

#include "topology/names.h"
#include "workloads/compute_model.h"

namespace podsim::cli {

namespace {

constexpr std::string_view kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};

// One stderr logger for the process, made once: RunMain may run on several threads at once (the
// Python module), and a logger replaced under a running one would dangle.
void InstallLogger() {
  static const bool installed = [] {
    auto logger = spdlog::stderr_logger_mt("podsim");
    logger->set_pattern("podsim: %l: %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)installed;
}

}  // namespace

void AddLogFlags(CLI::App& app, LogFlags* flags) {
  app.add_flag("-v,--verbose", flags->verbose,
               "Log what the simulation decides on stderr: -v the calibration and how steps are "
               "simulated, -vv every collective's algorithm too")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--log-level", flags->level,
                 "trace, debug, info, warn (default), error or off; -v is info, -vv debug");
}

sim::Status ConfigureLogging(const LogFlags& flags) {
  InstallLogger();
  spdlog::level::level_enum level = spdlog::level::warn;
  if (!flags.level.empty()) {
    if (flags.verbose > 0) {
      return sim::Status::InvalidArgument("--log-level: give -v or --log-level, not both");
    }
    bool known = false;
    for (std::string_view name : kLevels) known = known || name == flags.level;
    if (!known) {
      return sim::Status::InvalidArgument("--log-level: unknown level '" + flags.level + "'" +
                                          topology::DidYouMean(flags.level, kLevels) +
                                          "; expected trace, debug, info, warn, error or off");
    }
    level = spdlog::level::from_str(flags.level);
  } else if (flags.verbose == 1) {
    level = spdlog::level::info;
  } else if (flags.verbose > 1) {
    level = spdlog::level::debug;
  }
  spdlog::set_level(level);
  return sim::Status::Ok();
}

void LogCalibration(const topology::ChipSpec& chip) {
  const workloads::ComputeEfficiency efficiency = workloads::DefaultComputeEfficiency(chip);
  spdlog::info("compute: {} steps use the {} calibration: {}", chip.name, efficiency.family,
               workloads::CalibrationSource(efficiency.family));
}

}  // namespace podsim::cli
