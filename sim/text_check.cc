#include "sim/text_check.h"

#include <cstdint>
#include <cstdio>

namespace podsim::sim {

namespace {

// Length of the well-formed UTF-8 sequence at text[i], or 0 (RFC 3629, section 4's grammar).
size_t SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // Overlong.
    if (lead == 0xED) high = 0x9F;  // Surrogates.
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // Overlong.
    if (lead == 0xF4) high = 0x8F;  // Past U+10FFFF.
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

bool IsControl(char c) {
  const auto byte = static_cast<uint8_t>(c);
  return byte < 0x20 || byte == 0x7F;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = SequenceLength(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t length = SequenceLength(text, i);
    if (length > 1) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    const char c = text[i++];
    if (length == 1 && !IsControl(c)) {
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(uint8_t(c)));
      out += escaped;
    }
  }
  return out;
}

Status ValidateText(std::string_view what, std::string_view text, bool allow_newlines) {
  auto bad = [&](std::string_view problem) {
    return Status::InvalidArgument(std::string(what) + ": " + std::string(problem) + " (got \"" +
                                   Printable(text) + "\")");
  };
  if (!IsValidUtf8(text)) return bad("not valid UTF-8");
  for (char c : text) {
    if (IsControl(c) && !(allow_newlines && (c == '\n' || c == '\t' || c == '\r'))) {
      return bad("holds a control character");
    }
  }
  return Status::Ok();
}

}  // namespace podsim::sim
