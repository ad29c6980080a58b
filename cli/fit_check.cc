#include "cli/fit_check.h"

#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/byte_size.h"
#include "cli/run_command.h"

namespace podsim::cli {

void AddRequireFitFlag(CLI::App* sub, bool* require_fit) {
  sub->add_flag("--require-fit", *require_fit,
                "Fail, writing nothing, when the step's memory per chip exceeds HBM (default: "
                "run it and warn)");
}

sim::Status CheckFit(bool fits, double bytes_per_chip, double hbm_bytes, const std::string& what,
                     bool require_fit, const scenario::SourceMap& source, CommandIo& io) {
  if (fits) return sim::Status::Ok();
  std::string why = what;
  why += " does not fit: ";
  why += FormatByteSize(bytes_per_chip);
  why += " per chip over the ";
  why += FormatByteSize(hbm_bytes);
  why += " of HBM";
  if (require_fit) {
    return FieldError(sim::Status::InvalidArgument("--require-fit: " + why), source,
                      "--require-fit", "outputs.require_fit");
  }
  io.warnings.push_back(why + "; the result assumes it would (--require-fit makes this an error)");
  return sim::Status::Ok();
}

}  // namespace podsim::cli
