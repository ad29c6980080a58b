// NamedChoice: an option's values and the names the command line and scenario files give them,
// as one table that names a value, lists the names and parses a name back.

#ifndef PODSIM_WORKLOADS_NAMED_CHOICE_H_
#define PODSIM_WORKLOADS_NAMED_CHOICE_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/status.h"

namespace podsim::workloads {

template <typename T>
struct NamedChoice {
  T value;
  std::string_view name;
};

// The name of `value` in `table`. REQUIRES: `value` is in it.
template <typename T>
std::string_view ChoiceName(std::span<const NamedChoice<T>> table, T value) {
  for (const NamedChoice<T>& choice : table) {
    if (choice.value == value) return choice.name;
  }
  return table.front().name;
}

// The names of `table`, in order.
template <typename T>
std::vector<std::string> ChoiceNames(std::span<const NamedChoice<T>> table) {
  std::vector<std::string> names;
  for (const NamedChoice<T>& choice : table) names.emplace_back(choice.name);
  return names;
}

// The value named `name`, or InvalidArgument "unknown <what> '<name>'; expected a, b or c".
template <typename T>
sim::StatusOr<T> ChoiceNamed(std::span<const NamedChoice<T>> table, std::string_view name,
                             std::string_view what) {
  std::string expected;
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return table[i].value;
    if (i > 0) expected += i + 1 == table.size() ? " or " : ", ";
    expected += table[i].name;
  }
  return sim::Status::InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) +
                                      "'; expected " + expected);
}

}  // namespace podsim::workloads

#endif  // PODSIM_WORKLOADS_NAMED_CHOICE_H_
