#include "cli/main_command.h"

#include <CLI/CLI.hpp>
#include <ostream>

namespace podsim::cli {

int RunMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"podsim: discrete-event simulator of accelerator pods"};
  app.set_version_flag("--version", "podsim 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  return 0;
}

}  // namespace podsim::cli
