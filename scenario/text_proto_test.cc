#include "scenario/text_proto.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "scenario.pb.h"
#include "schedule.pb.h"

namespace podsim::scenario {
namespace {

using testing::StartsWith;

// The message of parsing `text` as "f.textproto" into `message`; "" when it parses.
std::string ErrorOf(const std::string& text, google::protobuf::Message* message) {
  const sim::Status status = ParseTextProto(text, "f.textproto", message);
  return status.ok() ? "" : status.message();
}

// Any message type works, not only scenarios: the names come from its own descriptor.
TEST(TextProtoTest, UnknownFieldOfAnySchemaSuggestsFromItsDescriptor) {
  schedule::Schedule schedule;
  EXPECT_EQ(ErrorOf("system: 'tpu-v5e:2x2'\nprograms { nme: 'p' }\n", &schedule),
            "f.textproto:2:12: unknown field 'nme' in Program (did you mean 'name'?); fields: "
            "name, where, ops, static_hbm_bytes");
  EXPECT_THAT(ErrorOf("programs { ops { kind: MATMULL } }\n", &schedule),
              StartsWith("f.textproto:1:24: unknown value 'MATMULL' for field 'kind' (did you mean "
                         "'MATMUL'?); values: MATMUL,"));
}

TEST(TextProtoTest, ErrorsPointAtTheStartOfTheName) {
  Scenario scenario;
  // protobuf notices the unknown name at the ':' after it; the tab counts to column 9.
  EXPECT_EQ(
      ErrorOf("collective {\n\tbites: 1\n}\n", &scenario),
      "f.textproto:2:9: unknown field 'bites' in Collective (did you mean 'bytes'?); fields: "
      "op, bytes, axes, algorithm, src, dst, sweep_bytes, ideal, reference, min_bytes, max_bytes, "
      "step_factor");
  // A hyphenated name is reported whole.
  EXPECT_THAT(ErrorOf("train { batch-tokens: 1 }\n", &scenario),
              StartsWith("f.textproto:1:9: unknown field 'batch-tokens' in Train (did you mean "
                         "'batch_tokens'?); fields: model, layout, batch_tokens, seq,"));
}

TEST(TextProtoTest, OtherErrorsKeepTheParsersWords) {
  Scenario scenario;
  EXPECT_EQ(ErrorOf("collective { bytes: \"1GiB\" }\n", &scenario),
            "f.textproto:1:21: expected double, got: \"1GiB\"");
  EXPECT_EQ(ErrorOf("collective {\n", &scenario),
            "f.textproto:2:1: expected identifier, got: the end of the file");
}

TEST(TextProtoTest, RecordsWhereEachFieldWasWritten) {
  Scenario scenario;
  SourceMap source;
  ASSERT_TRUE(ParseTextProto("system { preset: 'h100:8' }\ncollective {\n  axes: ['x', 'y']\n}\n",
                             "f.textproto", &scenario, &source)
                  .ok());
  EXPECT_EQ(source.filename(), "f.textproto");
  EXPECT_EQ(source.Where("system.preset"), "f.textproto:1:10");
  EXPECT_EQ(source.Where("collective.axes[1]"), "f.textproto:3:3");
  EXPECT_EQ(source.Where("collective.op"), "f.textproto:2:1");
}

TEST(TextProtoTest, ClearsTheMessageFirst) {
  Scenario scenario;
  scenario.set_description("old");
  ASSERT_TRUE(ParseTextProto("topology {}\n", "f", &scenario).ok());
  EXPECT_FALSE(scenario.has_description());
  EXPECT_TRUE(scenario.has_topology());
}

}  // namespace
}  // namespace podsim::scenario
