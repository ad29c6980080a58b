#include "sim/text_check.h"

#include <gtest/gtest.h>

#include <string>

namespace podsim::sim {
namespace {

// issue 16 D5: invalid UTF-8 is refused where it enters; D10: echoed input stays on one line.
TEST(TextCheckTest, AcceptsWellFormedUtf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("llama3-70b"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
}

TEST(TextCheckTest, RefusesMalformedUtf8) {
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // Truncated.
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // Overlong '/'.
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // Overlong.
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // Surrogate U+D800.
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // Past U+10FFFF.
  EXPECT_FALSE(IsValidUtf8("ok\x80"));            // Stray continuation byte.
}

TEST(TextCheckTest, PrintableEscapesControlsAndBadBytes) {
  EXPECT_EQ(Printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(Printable("\xff"
                      "x\x01"),
            "\\xffx\\x01");
  EXPECT_EQ(Printable("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(Printable("\x7f"), "\\x7f");
}

TEST(TextCheckTest, ValidateTextNamesWhatAndEchoesSafely) {
  EXPECT_TRUE(ValidateText("name", "h100").ok());
  Status bad = ValidateText("model.name", "\xff");
  EXPECT_EQ(bad.message(), "model.name: not valid UTF-8 (got \"\\xff\")");
  EXPECT_EQ(ValidateText("--system", "h100\n:8").message(),
            "--system: holds a control character (got \"h100\\n:8\")");
  EXPECT_TRUE(ValidateText("description", "two\nlines", /*allow_newlines=*/true).ok());
}

}  // namespace
}  // namespace podsim::sim
