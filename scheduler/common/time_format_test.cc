#include "scheduler/common/time_format.h"

#include <gtest/gtest.h>

namespace taskgov::common {
namespace {

TEST(TimeFormat, ParsesTheFormsTheApiWrites) {
  struct Case {
    const char* text;
    int64_t micros;
  };
  const Case cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"2026-01-01T00:00:00Z", 1'767'225'600'000'000},
      {"2026-01-01T00:00:00.5Z", 1'767'225'600'500'000},
      {"2026-01-01T00:00:00.123456Z", 1'767'225'600'123'456},
      {"2026-01-01T00:00:00.123456789Z", 1'767'225'600'123'456},  // nanoseconds truncated
      {"2026-01-01T02:00:00+02:00", 1'767'225'600'000'000},
      {"2025-12-31T19:00:00-05:00", 1'767'225'600'000'000},
      {"2024-02-29T12:00:00Z", 1'709'208'000'000'000},
  };
  for (const Case& c : cases) {
    Result<int64_t> r = ParseRfc3339Micros(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.error().message;
    EXPECT_EQ(*r, c.micros) << c.text;
  }
}

TEST(TimeFormat, RejectsMalformedTextNamingIt) {
  for (const char* text :
       {"", "2026-01-01", "2026-01-01T00:00:00", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00Zjunk", "2026-01-01T00:00:00+0200", "yesterday"}) {
    Result<int64_t> r = ParseRfc3339Micros(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("invalid timestamp"), std::string::npos);
  }
}

TEST(TimeFormat, FormatsMicroTimeAndTimeAndRoundTrips) {
  EXPECT_EQ(FormatMicroTime(1'767'225'600'123'456), "2026-01-01T00:00:00.123456Z");
  EXPECT_EQ(FormatTime(1'767'225'600'123'456), "2026-01-01T00:00:00Z");
  EXPECT_EQ(FormatMicroTime(0), "1970-01-01T00:00:00.000000Z");
  for (int64_t t : {int64_t{0}, int64_t{951'782'400'000'001}, int64_t{4'102'444'799'999'999}}) {
    Result<int64_t> back = ParseRfc3339Micros(FormatMicroTime(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
  }
}

}  // namespace
}  // namespace taskgov::common
