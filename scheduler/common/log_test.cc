#include "scheduler/common/log.h"

#include <gtest/gtest.h>

namespace taskgov::common::log {
namespace {

TEST(LogTest, FormatsOneJsonObjectWithFields) {
  std::string line =
      Format(Level::kWarn, "extender", "slow \"client\"\n",
             {{"peer", "127.0.0.1"}, {"bytes", int64_t{42}}, {"tls", true}}, 1764454291123);
  EXPECT_EQ(line,
            "{\"time\":\"2025-11-29T22:11:31.123Z\",\"level\":\"warn\",\"component\":\"extender\","
            "\"msg\":\"slow \\\"client\\\"\\n\",\"peer\":\"127.0.0.1\",\"bytes\":42,\"tls\":true}");
}

TEST(LogTest, EscapesControlCharacters) {
  std::string out;
  AppendJsonEscaped(std::string_view("a\x01z", 3), &out);
  EXPECT_EQ(out, "a\\u0001z");
}

TEST(LogTest, ParsesLevelsAndRejectsOthers) {
  Level level = Level::kInfo;
  EXPECT_TRUE(ParseLevel("debug", &level));
  EXPECT_EQ(level, Level::kDebug);
  EXPECT_TRUE(ParseLevel("error", &level));
  EXPECT_EQ(level, Level::kError);
  EXPECT_FALSE(ParseLevel("verbose", &level));
  EXPECT_EQ(level, Level::kError);
}

TEST(LogTest, ThresholdFiltersLowerLevels) {
  SetLevel(Level::kWarn);
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kWarn));
  EXPECT_TRUE(Enabled(Level::kError));
  SetLevel(Level::kInfo);
}

TEST(LogTest, NonFiniteDoubleBecomesNull) {
  Field f("x", 1.0 / 0.0);
  EXPECT_EQ(f.value, "null");
}

TEST(LogTest, ScopedCaptureKeepsLinesAndRestoresThePreviousOne) {
  ScopedCapture outer;
  Warn("test", "to the outer");
  {
    ScopedCapture inner;
    Warn("test", "to the inner", {{"n", 1}});
    ASSERT_EQ(inner.Lines().size(), 1u);
    EXPECT_NE(inner.Lines()[0].find("\"msg\":\"to the inner\",\"n\":1}"), std::string::npos);
  }
  Warn("test", "to the outer again");
  EXPECT_EQ(outer.Count("to the outer"), 2u);
  EXPECT_EQ(outer.Count("to the inner"), 0u);
  outer.Clear();
  EXPECT_TRUE(outer.Lines().empty());
}

}  // namespace
}  // namespace taskgov::common::log
