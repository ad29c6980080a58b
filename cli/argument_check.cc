#include "cli/argument_check.h"

#include <string>
#include <string_view>

#include "sim/text_check.h"

namespace podsim::cli {

sim::Status CheckArguments(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    const std::string what = "argument " + std::to_string(i);
    if (argument.empty()) {
      return sim::Status::InvalidArgument(what + ": empty; podsim takes no empty arguments");
    }
    PODSIM_RETURN_IF_ERROR(sim::ValidateText(what, argument));
  }
  return sim::Status::Ok();
}

}  // namespace podsim::cli
