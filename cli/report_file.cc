#include "cli/report_file.h"

#include <CLI/CLI.hpp>

#include "cli/run_command.h"
#include "sim/atomic_file.h"

namespace podsim::cli {

void AddReportFlag(CLI::App* sub, std::string* report) {
  sub->add_option("--report", *report,
                  "Write FILE.html: one self-contained page of charts (docs/reports.md)");
}

sim::Status CheckReportFlag(const std::string& path, const scenario::SourceMap& source) {
  sim::Status status = reports::CheckReportPath(path);
  if (status.ok()) status = sim::CheckCreatable(path);
  return FieldError(status.WithContext("--report"), source, "--report", "outputs.report");
}

sim::Status WriteReportFile(const std::string& path, const reports::Report& report,
                            const scenario::SourceMap& source) {
  return FieldError(reports::WriteReport(path, report).WithContext("--report"), source, "--report",
                    "outputs.report");
}

StepReportFile::StepReportFile(const topology::System* system)
    : system_(system), links_(&system->fabric) {}

void StepReportFile::Attach(workloads::StepOptions* options) {
  step_tee_ = std::make_unique<reports::StepObserverTee>(
      std::vector<workloads::StepObserver*>{options->observer, &recorder_});
  flow_tee_ = std::make_unique<sim::FlowObserverTee>(
      std::vector<sim::FlowObserver*>{options->flow_observer, &links_});
  options->observer = step_tee_.get();
  options->flow_observer = flow_tee_.get();
}

reports::Report StepReportFile::Build(const reports::StepReportInput& input,
                                      const schedule::Schedule& schedule,
                                      const workloads::StepResult& step) const {
  return reports::StepReport(input, *system_, schedule, step, recorder_, &links_);
}

}  // namespace podsim::cli
