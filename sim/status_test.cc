#include "sim/status.h"

#include <gtest/gtest.h>

#include <string>

namespace podsim::sim {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status status = Status::InvalidArgument("--bytes: must be > 0 (got -3)");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(status.ToString(), "invalid argument: --bytes: must be > 0 (got -3)");
}

TEST(StatusTest, WithContextPrefixesErrorsOnly) {
  EXPECT_EQ(Status::NotFound("no preset 'h101'").WithContext("--system").message(),
            "--system: no preset 'h101'");
  EXPECT_TRUE(Status::Ok().WithContext("--system").ok());
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  PODSIM_ASSIGN_OR_RETURN(int half, Half(x));
  return Half(half);
}

TEST(StatusOrTest, HoldsValueOrError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6).ok());
  EXPECT_EQ(Quarter(6).status().message(), "odd");
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> error = Status::NotFound("x");
  EXPECT_DEATH((void)error.value(), "value\\(\\) of an error StatusOr");
}

}  // namespace
}  // namespace podsim::sim
