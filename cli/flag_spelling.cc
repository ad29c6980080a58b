#include "cli/flag_spelling.h"

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "topology/names.h"

namespace podsim::cli {

namespace {

// Option groups (CLI11 keeps them as nameless subcommands) hold flags of their command.
std::vector<const CLI::App*> OptionGroups(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); });
}

const CLI::Option* FindFlag(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->nonpositional() && option->check_name(name)) return option;
  }
  for (const CLI::App* group : OptionGroups(app)) {
    if (const CLI::Option* option = FindFlag(*group, name)) return option;
  }
  return nullptr;
}

// "--name" and "-n" of every flag of `app`, in definition order.
void AddFlagNames(const CLI::App& app, std::vector<std::string>* names) {
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) continue;
    for (const std::string& name : option->get_lnames()) names->push_back("--" + name);
    for (const std::string& name : option->get_snames()) names->push_back("-" + name);
  }
  for (const CLI::App* group : OptionGroups(app)) AddFlagNames(*group, names);
}

std::string Suggestion(std::string_view given, const std::vector<std::string>& names) {
  const std::vector<std::string_view> views(names.begin(), names.end());
  return topology::DidYouMean(given, views);
}

}  // namespace

sim::Status CheckSpelling(const CLI::App& app, int argc, const char* const* argv) {
  const std::vector<const CLI::App*> commands =
      app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
  const CLI::App* command = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    const bool flag = word.size() > 1 && word[0] == '-' && !topology::ParseNumber(word);
    if (!flag) {
      if (command != nullptr) continue;  // A positional argument of the command.
      for (const CLI::App* c : commands) {
        if (c->get_name() == word) command = c;
      }
      if (command != nullptr) continue;
      std::vector<std::string> names;
      std::string list;
      for (const CLI::App* c : commands) {
        names.push_back(c->get_name());
        list += (list.empty() ? "" : ", ") + c->get_name();
      }
      return sim::Status::Usage("unknown command '" + word + "'" + Suggestion(word, names) +
                                "; commands: " + list + " (podsim --help describes them)");
    }
    const std::string name = word.substr(0, word.find('='));
    const CLI::Option* option = command != nullptr ? FindFlag(*command, name) : nullptr;
    if (option == nullptr) option = FindFlag(app, name);
    // Short flags given together, as CLI11 reads them: value-less flags ("-vv"), the last or
    // only one of which may take the rest of the word as its value ("-b8", "-vb8").
    if (option == nullptr && name.size() > 2 && name[1] != '-') {
      bool known = true;
      for (size_t c = 1; c < name.size() && known; ++c) {
        const std::string letter = {'-', name[c]};
        const CLI::Option* o = command != nullptr ? FindFlag(*command, letter) : nullptr;
        if (o == nullptr) o = FindFlag(app, letter);
        known = o != nullptr;
        if (known && o->get_expected_min() > 0) break;  // The rest of the word is its value.
      }
      if (known) continue;
    }
    if (option == nullptr) {
      std::vector<std::string> names;
      if (command != nullptr) AddFlagNames(*command, &names);
      AddFlagNames(app, &names);
      std::string where = "podsim";
      std::string help = "podsim --help";
      if (command != nullptr) {
        where += " " + command->get_name();
        help = "podsim help " + command->get_name();
      }
      return sim::Status::Usage("unknown flag '" + name + "' of '" + where + "'" +
                                Suggestion(name, names) + "; " + help + " lists its flags");
    }
    // The flag's value is the next word unless given as --flag=value.
    if (name.size() == word.size() && option->get_expected_min() > 0) ++i;
  }
  return sim::Status::Ok();
}

}  // namespace podsim::cli
