#include "scenario/scenario_file.h"

#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "scenario/text_proto.h"

namespace podsim::scenario {

namespace {

namespace pb = google::protobuf;

constexpr std::string_view kHeader =
    "# proto-file: scenario/scenario.proto\n"
    "# proto-message: podsim.scenario.Scenario\n"
    "\n";

}  // namespace

sim::StatusOr<LoadedScenario> ParseScenarioFile(std::string_view text, std::string_view filename) {
  const std::string name(filename);
  if (text.size() > kMaxScenarioBytes) {
    return sim::Status::OutOfRange(name + ": " + std::to_string(text.size()) +
                                   " bytes; scenario files are limited to " +
                                   std::to_string(kMaxScenarioBytes));
  }
  LoadedScenario loaded;
  PODSIM_RETURN_IF_ERROR(ParseTextProto(text, filename, &loaded.scenario, &loaded.source));
  PODSIM_ASSIGN_OR_RETURN(loaded.system, CheckScenario(loaded.scenario, loaded.source));
  return loaded;
}

sim::StatusOr<Scenario> ParseScenarioText(std::string_view text, std::string_view filename) {
  PODSIM_ASSIGN_OR_RETURN(LoadedScenario loaded, ParseScenarioFile(text, filename));
  return std::move(loaded.scenario);
}

sim::StatusOr<LoadedScenario> LoadScenarioFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return sim::Status::IoError("cannot read scenario '" + path + "': it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return sim::Status::IoError("cannot read scenario '" + path + "': " + std::strerror(errno));
  }
  // Read at most one byte past the limit, so that a huge file or an endless pipe stops early.
  std::string text;
  char buffer[1 << 16];
  while (text.size() <= kMaxScenarioBytes && in.read(buffer, sizeof buffer).gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    return sim::Status::IoError("cannot read scenario '" + path + "': " + std::strerror(errno));
  }
  if (text.size() > kMaxScenarioBytes) {
    return sim::Status::OutOfRange(path + ": more than " + std::to_string(kMaxScenarioBytes) +
                                   " bytes; scenario files are limited to " +
                                   std::to_string(kMaxScenarioBytes));
  }
  return ParseScenarioFile(text, path);
}

sim::StatusOr<Scenario> LoadScenario(const std::string& path) {
  PODSIM_ASSIGN_OR_RETURN(LoadedScenario loaded, LoadScenarioFile(path));
  return std::move(loaded.scenario);
}

std::string DumpScenario(const Scenario& scenario) {
  pb::TextFormat::Printer printer;
  printer.SetUseShortRepeatedPrimitives(true);
  printer.SetUseUtf8StringEscaping(true);
  std::string text;
  printer.PrintToString(scenario, &text);
  return std::string(kHeader) + text;
}

}  // namespace podsim::scenario
