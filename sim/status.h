// Status and StatusOr<T>: the result of an operation that can fail on bad input.
//
// A Status is OK or carries a code and a message that names what was wrong, where, what was
// expected and what was given ("--bytes: must be > 0 (got -3)"). Library code never throws or
// aborts on user input; it returns a Status, and the CLI turns it into one line on stderr and
// exit code 1. Invariant violations inside the engine are PODSIM_CHECK failures instead (check.h).
//
// Thread safety: a const Status may be read from several threads; mutation needs external sync.

#ifndef PODSIM_SIM_STATUS_H_
#define PODSIM_SIM_STATUS_H_

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sim/check.h"

namespace podsim::sim {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk,
    kInvalidArgument,  // A value is malformed or out of its valid range.
    kNotFound,         // A name (preset, axis, file) does not exist.
    kParseError,       // A file or string does not follow its grammar.
    kOutOfRange,       // A size exceeds what podsim can simulate.
    kIoError,          // A file could not be read or written.
    kUsage,            // The command line names no such command, flag or kind (exit code 2).
  };

  Status() = default;  // OK.

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string_view message) {
    return Status(Code::kInvalidArgument, message);
  }
  static Status NotFound(std::string_view message) { return Status(Code::kNotFound, message); }
  static Status ParseError(std::string_view message) { return Status(Code::kParseError, message); }
  static Status OutOfRange(std::string_view message) { return Status(Code::kOutOfRange, message); }
  static Status IoError(std::string_view message) { return Status(Code::kIoError, message); }
  static Status Usage(std::string_view message) { return Status(Code::kUsage, message); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // A copy whose message is "<context>: <message>"; OK stays OK. Used to add the flag or file
  // position as an error travels outward.
  Status WithContext(std::string_view context) const;

  // "OK", or "<code name>: <message>".
  std::string ToString() const;

  friend bool operator==(const Status&, const Status&) = default;

 private:
  Status(Code code, std::string_view message) : code_(code), message_(message) {}

  Code code_ = Code::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// Either a value or a non-OK Status. Accessing the value of an error aborts (a programmer error).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok(); an OK status without a value is a programmer error.
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    PODSIM_CHECK(!status_.ok()) << "StatusOr built from an OK status without a value";
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & { return CheckedValue(); }
  const T& value() const& { return const_cast<StatusOr*>(this)->CheckedValue(); }
  T&& value() && { return std::move(CheckedValue()); }
  T& operator*() & { return CheckedValue(); }
  T&& operator*() && { return std::move(CheckedValue()); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &CheckedValue(); }
  const T* operator->() const { return &value(); }

 private:
  T& CheckedValue() {
    PODSIM_CHECK(ok()) << "value() of an error StatusOr: " << status_.ToString();
    return *value_;
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace podsim::sim

// Returns from the enclosing function if the expression yields a non-OK Status.
#define PODSIM_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::podsim::sim::Status podsim_status_ = (expr);   \
    if (!podsim_status_.ok()) return podsim_status_; \
  } while (false)

#define PODSIM_STATUS_CONCAT_INNER_(a, b) a##b
#define PODSIM_STATUS_CONCAT_(a, b) PODSIM_STATUS_CONCAT_INNER_(a, b)

// PODSIM_ASSIGN_OR_RETURN(auto x, Compute()); declares x from a StatusOr or returns its error.
#define PODSIM_ASSIGN_OR_RETURN(lhs, expr) \
  PODSIM_ASSIGN_OR_RETURN_IMPL_(PODSIM_STATUS_CONCAT_(podsim_statusor_, __LINE__), lhs, expr)
#define PODSIM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return statusor.status();            \
  lhs = std::move(statusor).value()

#endif  // PODSIM_SIM_STATUS_H_
