// RecordValidation: how a test that compares podsim with a reference case feeds docs/validation.md.
//
// When the environment variable PODSIM_VALIDATION_OUT names a file, each call appends one JSON
// line {"case", "what", "predicted", "published", "unit", "tolerance"[, "note"]} to it; otherwise
// it does nothing. tools/validation.py runs the test binaries with the variable set and renders the
// table, so the document always shows what the tests check, from the same numbers.

#ifndef PODSIM_TESTS_TESTING_VALIDATION_RECORD_H_
#define PODSIM_TESTS_TESTING_VALIDATION_RECORD_H_

#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "sim/check.h"

namespace podsim::testing {

// `case_id` is the reference's id (book-cases.yaml "S4", measured.md "V9 vidur DGX-H100 x8"),
// `what` the quantity, `tolerance` the allowed relative error; `note` (optional) says why the row
// misses, for the document's notes. Strings must not need JSON escapes.
inline void RecordValidation(std::string_view case_id, std::string_view what, double predicted,
                             double published, std::string_view unit, double tolerance,
                             std::string_view note = {}) {
  const char* path = std::getenv("PODSIM_VALIDATION_OUT");
  if (path == nullptr || *path == '\0') return;
  for (std::string_view text : {case_id, what, unit, note}) {
    PODSIM_CHECK(text.find_first_of("\"\\\n") == std::string_view::npos)
        << "validation text needs escaping: " << text;
  }
  std::FILE* file = std::fopen(path, "a");
  PODSIM_CHECK(file != nullptr) << "cannot append to " << path;
  std::fprintf(file,
               "{\"case\": \"%.*s\", \"what\": \"%.*s\", \"predicted\": %.9g, \"published\": "
               "%.9g, \"unit\": \"%.*s\", \"tolerance\": %.4g",
               static_cast<int>(case_id.size()), case_id.data(), static_cast<int>(what.size()),
               what.data(), predicted, published, static_cast<int>(unit.size()), unit.data(),
               tolerance);
  if (!note.empty()) {
    std::fprintf(file, ", \"note\": \"%.*s\"", static_cast<int>(note.size()), note.data());
  }
  std::fprintf(file, "}\n");
  std::fclose(file);
}

}  // namespace podsim::testing

#endif  // PODSIM_TESTS_TESTING_VALIDATION_RECORD_H_
