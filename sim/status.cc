#include "sim/status.h"

#include <ostream>

namespace podsim::sim {

namespace {

const char* CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "invalid argument";
    case Status::Code::kNotFound:
      return "not found";
    case Status::Code::kParseError:
      return "parse error";
    case Status::Code::kOutOfRange:
      return "out of range";
    case Status::Code::kIoError:
      return "I/O error";
    case Status::Code::kUsage:
      return "usage";
  }
  return "unknown";
}

}  // namespace

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, message);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string text = CodeName(code_);
  text += ": ";
  text += message_;
  return text;
}

std::ostream& operator<<(std::ostream& os, const Status& status) { return os << status.ToString(); }

}  // namespace podsim::sim
