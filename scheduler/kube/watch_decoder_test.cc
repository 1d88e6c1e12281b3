#include "scheduler/kube/watch_decoder.h"

#include <gtest/gtest.h>

#include <random>

namespace taskgov::scheduler::kube {
namespace {

const char kStream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
    "\"resourceVersion\":\"10\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
    "\"resourceVersion\":\"11\"},\"note\":\"caf\xc3\xa9 \\u00e9\"}}\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":"
    "\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
    "\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
    "\"Failure\",\"message\":\"too old resource version: 5 (13)\",\"reason\":\"Expired\","
    "\"code\":410}}\n";

std::vector<std::string> Types(LineSplitter* splitter) {
  std::vector<std::string> out;
  while (auto line = splitter->NextLine()) {
    if (line->empty()) continue;
    common::Result<WatchEvent> event = ParseWatchEvent(*line);
    EXPECT_TRUE(event.ok()) << (event.ok() ? "" : event.error().message);
    if (event.ok()) {
      out.push_back(std::string(WatchEventTypeName(event->type)) + "@" + event->resource_version());
    }
  }
  return out;
}

const std::vector<std::string> kExpected = {"ADDED@10", "MODIFIED@11", "BOOKMARK@12", "DELETED@13",
                                            "ERROR@"};

TEST(LineSplitter, EveryTwoWaySplitYieldsTheSameEvents) {
  const std::string stream = kStream;
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    LineSplitter splitter;
    std::vector<std::string> got;
    splitter.Feed(std::string_view(stream).substr(0, cut));
    for (auto& t : Types(&splitter)) got.push_back(t);
    splitter.Feed(std::string_view(stream).substr(cut));
    for (auto& t : Types(&splitter)) got.push_back(t);
    EXPECT_EQ(got, kExpected) << "cut at " << cut;
    EXPECT_TRUE(splitter.blank());
  }
}

TEST(LineSplitter, RandomSplitsIntoManyPiecesYieldTheSameEvents) {
  const std::string stream = kStream;
  std::mt19937 rng(42);
  for (int round = 0; round < 300; ++round) {
    LineSplitter splitter;
    std::vector<std::string> got;
    size_t pos = 0;
    while (pos < stream.size()) {
      size_t n = std::uniform_int_distribution<size_t>(1, 7)(rng);
      splitter.Feed(std::string_view(stream).substr(pos, n));
      pos += n;
      for (auto& t : Types(&splitter)) got.push_back(t);
    }
    EXPECT_EQ(got, kExpected) << "round " << round;
  }
}

TEST(LineSplitter, ReportsAnOverlongLine) {
  LineSplitter splitter(16);
  splitter.Feed("{\"type\":\"ADDED\",\"object\":");
  EXPECT_FALSE(splitter.NextLine().has_value());
  EXPECT_TRUE(splitter.overflow());
}

TEST(ParseWatchEvent, ErrorEventCarriesTheStatus) {
  common::Result<WatchEvent> event = ParseWatchEvent(
      "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"message\":\"too old\","
      "\"reason\":\"Expired\",\"code\":410}}");
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->type, WatchEventType::kError);
  EXPECT_EQ(event->error_code, 410);
  EXPECT_EQ(event->error_reason, "Expired");
  EXPECT_EQ(event->error_message, "too old");
}

TEST(ParseWatchEvent, RejectsMalformedEventsWithAReason) {
  struct Case {
    const char* line;
    const char* why;
  };
  const Case cases[] = {
      {"not json", "not valid JSON"},
      {"[1,2]", "not a JSON object"},
      {"{\"object\":{}}", "missing string 'type'"},
      {"{\"type\":7,\"object\":{}}", "missing string 'type'"},
      {"{\"type\":\"RENAMED\",\"object\":{}}", "unknown type 'RENAMED'"},
      {"{\"type\":\"ADDED\"}", "missing object 'object'"},
      {"{\"type\":\"ADDED\",\"object\":\"pod\"}", "missing object 'object'"},
      {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":5}}}", "metadata.name"},
      {"{\"type\":\"ADDED\",\"object\":{\"metadata\":[]}}", "metadata: expected an object"},
      {"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{}}}", "object has no name"},
      {"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"uid\":{}}}}",
       "metadata.uid"},
  };
  for (const Case& c : cases) {
    common::Result<WatchEvent> event = ParseWatchEvent(c.line);
    ASSERT_FALSE(event.ok()) << c.line;
    EXPECT_NE(event.error().message.find(c.why), std::string::npos)
        << c.line << " → " << event.error().message;
  }
}

TEST(ParseWatchEvent, ArbitraryBytesNeverCrash) {
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,.0123456789abcdeftrunlTYPEobjectmetadata \\\n\xff";
  for (int i = 0; i < 2000; ++i) {
    std::string line;
    size_t n = std::uniform_int_distribution<size_t>(0, 80)(rng);
    for (size_t j = 0; j < n; ++j) {
      line.push_back(alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() - 1)(rng)]);
    }
    common::Result<WatchEvent> event = ParseWatchEvent(line);
    if (event.ok()) {
      EXPECT_TRUE(event->object().IsObject());
    }
  }
}

TEST(ReadStatus, ReadsCausesAndRetryAfterSkippingWrongTypes) {
  rapidjson::Document doc;
  doc.Parse(
      "{\"kind\":\"Status\",\"code\":429,\"reason\":\"TooManyRequests\",\"message\":7,"
      "\"details\":{\"causes\":[{\"reason\":\"DisruptionBudget\"},{\"reason\":3},\"x\"],"
      "\"retryAfterSeconds\":4}}");
  StatusInfo info = ReadStatus(doc);
  EXPECT_EQ(info.code, 429);
  EXPECT_EQ(info.reason, "TooManyRequests");
  EXPECT_EQ(info.message, "");
  EXPECT_EQ(info.causes, std::vector<std::string>{"DisruptionBudget"});
  EXPECT_EQ(info.retry_after_seconds, 4);
}

}  // namespace
}  // namespace taskgov::scheduler::kube
