// What a prediction's output says about the model's record on measured runs of its chip's
// family (workloads/measured_accuracy.h): the `validation` line of the text and its JSON.

#ifndef PODSIM_CLI_VALIDATION_LINE_H_
#define PODSIM_CLI_VALIDATION_LINE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "topology/chip_spec.h"

namespace podsim::cli {

// The record of `chip`'s calibration family for `workload` ("training", "inference",
// "collectives"), as one line of text. The record is of preset chips as they are (under any
// name): a custom chip, or one of no preset, gets "none" and why.
// With a `framework` (training), the record of the rows run as it too.
std::string ValidationLine(const topology::ChipSpec& chip, std::string_view workload,
                           std::string_view framework = "");

// The same as JSON: null for a chip the record does not describe (ValidationLine), else
// {"family", "workload", "rows"} and, where rows > 0, "mean_abs_error", "bias" and "worst" as
// fractions (bias negative: podsim optimistic), and under training "memory", the family's memory
// record in the same form ({"rows": 0} where none), and with a `framework` "framework", the
// record of the rows run as it ({"name", "rows", ...}).
nlohmann::ordered_json ValidationJson(const topology::ChipSpec& chip, std::string_view workload,
                                      std::string_view framework = "");

}  // namespace podsim::cli

#endif  // PODSIM_CLI_VALIDATION_LINE_H_
