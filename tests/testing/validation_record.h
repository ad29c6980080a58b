// RecordValidation: how a test that compares podsim with a reference case feeds docs/validation.md.
//
// When the environment variable PODSIM_VALIDATION_OUT names a file, each call appends one JSON
// line {"case", "what", "predicted", "published", "unit", "tolerance", "kind", "family",
// "command"[, "sets"][, "note"]} to it; otherwise it does nothing. tools/validation.py runs the
// test binaries with the variable set and renders the document, so it always shows what the tests
// check, from the same numbers.
//
// Every row is one of four kinds (issue 14's protocol), and only validation rows count in the
// document's summary figures:
//   kCalibration  a measurement that sets a constant (`sets` names it): it agrees by construction.
//   kConsistency  a closed form of the book at its own case, computed by podsim under the book's
//                 assumptions (its rates, no latency), at exactly its tag's tolerance.
//   kValidation   an independent measurement that sets nothing.
//   kSimulation   podsim's simulation (its default model, or the book's rates on a real fabric)
//                 against a closed form of the book that leaves out what the simulation pays:
//                 neither a measurement nor the same arithmetic, so no verdict; `note` says what
//                 the difference is, and the recording test guards it one-sided.

#ifndef PODSIM_TESTS_TESTING_VALIDATION_RECORD_H_
#define PODSIM_TESTS_TESTING_VALIDATION_RECORD_H_

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/check.h"

namespace podsim::testing {

enum class RowKind { kCalibration, kConsistency, kValidation, kSimulation };

struct ValidationRow {
  // The reference's id (book-cases.yaml "S4", measured.md "V9 vidur DGX-H100 x8").
  std::string case_id = {};
  std::string what = {};  // The quantity.
  double predicted = 0;
  double published = 0;
  std::string unit = {};
  // Allowed relative error: the tag's (book) or the target's (measured); unused by kSimulation.
  double tolerance = 0;
  RowKind kind = RowKind::kConsistency;
  // The chip family whose figures the row speaks for ("a100", "hopper", "blackwell", "tpu-v5e"),
  // empty for generic fabrics.
  std::string family = {};
  // The podsim command line (after "podsim") that prints the predicted value; empty where the
  // value comes from a library call no command prints (the document says which test).
  std::string command = {};
  std::string sets = {};  // kCalibration: the constant the row sets.
  std::string note = {};  // Why the row misses (differs, kSimulation), for the document's notes.
};

// Strings must not need JSON escapes (checked).
inline void RecordValidation(const ValidationRow& row) {
  const char* path = std::getenv("PODSIM_VALIDATION_OUT");
  if (path == nullptr || *path == '\0') return;
  for (const std::string* text :
       {&row.case_id, &row.what, &row.unit, &row.family, &row.command, &row.sets, &row.note}) {
    PODSIM_CHECK(text->find_first_of("\"\\\n") == std::string::npos)
        << "validation text needs escaping: " << *text;
  }
  static constexpr const char* kKinds[] = {"calibration", "consistency", "validation",
                                           "simulation"};
  std::FILE* file = std::fopen(path, "a");
  PODSIM_CHECK(file != nullptr) << "cannot append to " << path;
  std::fprintf(file,
               "{\"case\": \"%s\", \"what\": \"%s\", \"predicted\": %.9g, \"published\": %.9g, "
               "\"unit\": \"%s\", \"tolerance\": %.4g, \"kind\": \"%s\", \"family\": \"%s\", "
               "\"command\": \"%s\"",
               row.case_id.c_str(), row.what.c_str(), row.predicted, row.published,
               row.unit.c_str(), row.tolerance, kKinds[static_cast<int>(row.kind)],
               row.family.c_str(), row.command.c_str());
  if (!row.sets.empty()) std::fprintf(file, ", \"sets\": \"%s\"", row.sets.c_str());
  if (!row.note.empty()) std::fprintf(file, ", \"note\": \"%s\"", row.note.c_str());
  std::fprintf(file, "}\n");
  std::fclose(file);
}

}  // namespace podsim::testing

#endif  // PODSIM_TESTS_TESTING_VALIDATION_RECORD_H_
