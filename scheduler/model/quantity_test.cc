#include "scheduler/model/quantity.h"

#include <gtest/gtest.h>

namespace taskgov::scheduler::model {
namespace {

struct Case {
  const char* text;
  QuantityUnit unit;
  int64_t expected;
};

constexpr QuantityUnit U = QuantityUnit::kUnits;
constexpr QuantityUnit M = QuantityUnit::kMillis;

class QuantityValidTest : public ::testing::TestWithParam<Case> {};

TEST_P(QuantityValidTest, Parses) {
  common::Result<int64_t> r = ParseQuantity(GetParam().text, GetParam().unit);
  ASSERT_TRUE(r.ok()) << GetParam().text << ": " << r.error().message;
  EXPECT_EQ(*r, GetParam().expected) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityValidTest,
    ::testing::Values(
        // plain numbers
        Case{"0", U, 0}, Case{"1", U, 1}, Case{"8", U, 8}, Case{"+8", U, 8}, Case{"007", U, 7},
        Case{"-0", U, 0},
        // cpu in millicores
        Case{"1", M, 1000}, Case{"250m", M, 250}, Case{"0.5", M, 500}, Case{".5", M, 500},
        Case{"5.", M, 5000}, Case{"0.1", M, 100}, Case{"1.0001", M, 1001},  // rounds up
        Case{"0.0001", M, 1}, Case{"1m", M, 1}, Case{"1500m", M, 1500}, Case{"192", M, 192000},
        Case{"100u", M, 1}, Case{"1000000n", M, 1}, Case{"1n", M, 1}, Case{"2k", M, 2000000},
        // decimal suffixes in units
        Case{"1k", U, 1000}, Case{"1M", U, 1000000}, Case{"1G", U, 1000000000},
        Case{"1T", U, 1000000000000}, Case{"1P", U, 1000000000000000},
        Case{"1E", U, 1000000000000000000}, Case{"1500m", U, 2}, Case{"1m", U, 1},
        Case{"999m", U, 1}, Case{"1000m", U, 1}, Case{"1001m", U, 2}, Case{"1u", U, 1},
        Case{"0m", U, 0},
        // binary suffixes
        Case{"1Ki", U, 1024}, Case{"1Mi", U, 1048576}, Case{"1Gi", U, 1073741824},
        Case{"2Ti", U, 2199023255552}, Case{"1Pi", U, 1125899906842624},
        Case{"1Ei", U, 1152921504606846976}, Case{"1.5Ki", U, 1536}, Case{"0.1Ki", U, 103},
        Case{"2048Gi", U, 2199023255552}, Case{"0.5Gi", U, 536870912}, Case{"1Ki", M, 1024000},
        // exponents
        Case{"1e3", U, 1000}, Case{"1E3", U, 1000}, Case{"1e+3", U, 1000}, Case{"1e-3", M, 1},
        Case{"12e-1", U, 2}, Case{"1.5e2", U, 150}, Case{"1e0", U, 1}, Case{"1e-400", U, 1},
        Case{"0e999", U, 0},
        // the largest value that fits
        Case{"9223372036854775807", U, 9223372036854775807},
        Case{"9223372036854775", M, 9223372036854775000}, Case{"7Ei", U, 8070450532247928832},
        Case{"0.000000000000000000000000000000001", U, 1}));

class QuantityInvalidTest : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(QuantityInvalidTest, ErrorNamesTheString) {
  const auto& [text, why] = GetParam();
  common::Result<int64_t> r = ParseQuantity(text, QuantityUnit::kUnits);
  ASSERT_FALSE(r.ok()) << text << " parsed as " << *r;
  EXPECT_NE(r.error().message.find(std::string("'") + text + "'"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityInvalidTest,
    ::testing::Values(
        std::pair{"1.5.3", "unknown suffix"}, std::pair{"-4", "negative"},
        std::pair{"1e400", "too large"}, std::pair{"1e9999999", "exponent out of range"},
        std::pair{"1e40", "too large"}, std::pair{"12XB", "unknown suffix"},
        std::pair{"abc", "no digits"}, std::pair{".", "no digits"}, std::pair{"Gi", "no digits"},
        std::pair{"1ki", "unknown suffix"}, std::pair{"1K", "unknown suffix"},
        std::pair{"1 Gi", "unknown suffix"}, std::pair{"1e", "unknown suffix"},
        std::pair{"1e+", "exponent without digits"}, std::pair{"1e3.5", "unknown suffix"},
        std::pair{"9223372036854775808", "too large"}, std::pair{"8Ei", "too large"},
        std::pair{"10E", "too large"}, std::pair{"100000000000000000000", "too large"},
        std::pair{"1Gi ", "unknown suffix"}, std::pair{"--1", "no digits"},
        std::pair{"1Mii", "unknown suffix"}));

TEST(QuantityTest, EmptyAndOverlongAreErrors) {
  EXPECT_NE(ParseQuantity("", U).error().message.find("empty"), std::string::npos);
  common::Result<int64_t> r = ParseQuantity(std::string(200, '1'), U);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("longer than 64"), std::string::npos);
}

TEST(QuantityTest, CpuIsMillisEverythingElseUnits) {
  EXPECT_EQ(*ParseResourceQuantity("cpu", "2"), 2000);
  EXPECT_EQ(*ParseResourceQuantity("memory", "2Gi"), 2147483648);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "8"), 8);
}

TEST(QuantityTest, FormatsForPeople) {
  EXPECT_EQ(FormatQuantity("cpu", 1500), "1500m");
  EXPECT_EQ(FormatQuantity("cpu", 192000), "192");
  EXPECT_EQ(FormatQuantity("memory", int64_t{2048} << 30), "2Ti");
  EXPECT_EQ(FormatQuantity("memory", 1000), "1000");
  EXPECT_EQ(FormatQuantity("nvidia.com/gpu", 8), "8");
}

}  // namespace
}  // namespace taskgov::scheduler::model
