#include "scenario/source_map.h"

#include <gtest/gtest.h>

namespace podsim::scenario {
namespace {

TEST(SourceMapTest, WhereFallsBackToTheNearestWrittenAncestor) {
  SourceMap map("run.textproto");
  map.Add("collective", 2, 1);
  map.Add("collective.axes", 4, 3);
  map.Add("collective.axes[0]", 4, 3);
  EXPECT_EQ(map.Where("collective.axes[0]"), "run.textproto:4:3");
  EXPECT_EQ(map.Where("collective.axes[1]"), "run.textproto:4:3");
  EXPECT_EQ(map.Where("collective.op"), "run.textproto:2:1");
  EXPECT_EQ(map.Where("train.model"), "run.textproto");
  EXPECT_EQ(map.Where(""), "run.textproto");
}

TEST(SourceMapTest, FirstRecordWins) {
  SourceMap map("f");
  map.Add("a", 1, 2);
  map.Add("a", 3, 4);
  EXPECT_EQ(map.Where("a"), "f:1:2");
}

TEST(SourceMapTest, AnnotateKeepsTheCode) {
  SourceMap map("run.textproto");
  map.Add("system.preset", 1, 10);
  sim::Status status = map.Annotate(sim::Status::NotFound("unknown"), "system.preset");
  EXPECT_EQ(status.code(), sim::Status::Code::kNotFound);
  EXPECT_EQ(status.message(), "run.textproto:1:10: system.preset: unknown");
  EXPECT_TRUE(map.Annotate(sim::Status::Ok(), "system").ok());
  EXPECT_EQ(map.Annotate(sim::Status::InvalidArgument("x"), "").message(), "run.textproto: x");
}

TEST(SourceMapTest, WithoutAFileOnlyThePath) {
  SourceMap map;
  EXPECT_EQ(map.Where("a.b"), "");
  EXPECT_EQ(map.Annotate(sim::Status::InvalidArgument("bad"), "a.b").message(), "a.b: bad");
  EXPECT_EQ(map.Annotate(sim::Status::InvalidArgument("bad"), "").message(), "bad");
}

// Scenarios built from flags: errors name the flag that set the field, or stay as they are for a
// positional argument.
TEST(SourceMapTest, FlagsNameTheirFields) {
  SourceMap map;
  map.AddFlag("system", "");
  map.AddFlag("collective.bytes", "--bytes");
  map.AddFlag("collective.axes", "--axes");
  EXPECT_EQ(map.Where("collective.axes[1]"), "--axes");
  EXPECT_EQ(map.Annotate(sim::Status::InvalidArgument("bad"), "collective.axes[1]").message(),
            "--axes: bad");
  EXPECT_EQ(map.Annotate(sim::Status::NotFound("system 'q'"), "system.preset").message(),
            "system 'q'");
  EXPECT_EQ(map.Annotate(sim::Status::InvalidArgument("bad"), "collective.op").message(),
            "collective.op: bad");
}

}  // namespace
}  // namespace podsim::scenario
