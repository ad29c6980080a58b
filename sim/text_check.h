// Checks and quoting for text that comes from users: argv, scenario and schedule files.
//
// Everything podsim prints (JSON, traces, error lines) must be valid UTF-8 and one line per
// error, so input text is checked where it enters (ValidateText) and echoed through Printable.

#ifndef PODSIM_SIM_TEXT_CHECK_H_
#define PODSIM_SIM_TEXT_CHECK_H_

#include <string>
#include <string_view>

#include "sim/status.h"

namespace podsim::sim {

// True iff `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// `text` with control characters (below U+0020 and U+007F) and bytes of malformed UTF-8 written
// as \n, \t, \r or \xNN, so an echoed input can never break a line or an encoding.
std::string Printable(std::string_view text);

// OK, or InvalidArgument "<what>: <problem> (got "<Printable(text)>")" when `text` is not valid
// UTF-8 or, unless `allow_newlines`, holds a control character.
Status ValidateText(std::string_view what, std::string_view text, bool allow_newlines = false);

}  // namespace podsim::sim

#endif  // PODSIM_SIM_TEXT_CHECK_H_
