// Invariant checks that stay on in release builds.
//
// PODSIM_CHECK(cond) << "context" aborts with file:line, the condition and the streamed context
// when cond is false. It is for programmer errors and engine invariants (time going backwards, a
// flow on an unknown resource), never for bad user input: input errors are a Status (status.h).
// The streamed message is only evaluated when the check fails.

#ifndef PODSIM_SIM_CHECK_H_
#define PODSIM_SIM_CHECK_H_

#include <sstream>

namespace podsim::sim::internal {

// Collects the message of a failed check and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  [[noreturn]] ~CheckFailure();

  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & stream << ...` type-check as a void expression.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace podsim::sim::internal

#define PODSIM_CHECK(condition)                       \
  (__builtin_expect(static_cast<bool>(condition), 1)) \
      ? (void)0                                       \
      : ::podsim::sim::internal::Voidify() &          \
            ::podsim::sim::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()

#endif  // PODSIM_SIM_CHECK_H_
