#include "scheduler/model/json_select.h"

#include <gtest/gtest.h>

#include <string>

namespace taskgov::scheduler::model {
namespace {

std::string Field(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* m = FindMemberExact(v, key);
  if (m == nullptr) return "<absent>";
  if (m->IsString()) return m->GetString();
  return std::string("<") + JsonTypeName(*m) + ">";
}

TEST(FoldJsonKeyTest, FoldsLikeGo) {
  struct Case {
    const char* key;
    const char* folded;
  };
  for (const Case& c : {
           Case{"NodeNames", "nodenames"},
           Case{"nodenames", "nodenames"},
           Case{"NODENAMES", "nodenames"},
           Case{"NodeName\xC5\xBF", "nodenames"},  // ſ (U+017F) folds to s
           Case{"\xE2\x84\xAA"
                "ey",
                "key"},  // Kelvin sign (U+212A) folds to k
           Case{"PodU\xC4\xB0"
                "D",
                "poduid"},  // İ (U+0130)
           Case{"PodU\xC4\xB1"
                "D",
                "poduid"},                      // ı (U+0131)
           Case{"caf\xC3\xA9", "caf\xC3\xA9"},  // other bytes unchanged
           Case{"\xC5", "\xC5"},                // truncated sequence: unchanged
           Case{"", ""},
       }) {
    EXPECT_EQ(FoldJsonKey(c.key), c.folded) << c.key;
  }
}

TEST(FindMemberTest, LastOccurrenceWins) {
  rapidjson::Document doc;
  ASSERT_TRUE(ParseJson(R"({"Pod":1,"pod":2,"POD":3,"x":4,"x":5})", &doc).ok());
  const rapidjson::Value* folded = FindMemberFolded(doc, "pod");
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->GetInt(), 3);
  const rapidjson::Value* exact = FindMemberExact(doc, "Pod");
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ(exact->GetInt(), 1);
  EXPECT_EQ(FindMemberExact(doc, "x")->GetInt(), 5);
  EXPECT_EQ(FindMemberExact(doc, "missing"), nullptr);
  EXPECT_EQ(FindMemberFolded(doc, "missing"), nullptr);
}

TEST(SelectiveParseTest, KeepsOnlySelectedMembers) {
  const FieldSelector selector = Select({
      {"metadata", Select({{"name", KeepAll()}, {"labels", KeepAll()}})},
      {"items", Select({{"id", KeepAll()}})},
  });
  SelectedJson out;
  common::Status s = SelectiveParse(R"({
      "metadata": {"name": "n1", "annotations": {"big": "x"}, "labels": {"a": "1", "b": null}},
      "items": [{"id": "i1", "junk": [1, 2, {"deep": true}]}, {"id": "i2"}, 7],
      "status": {"images": [{"names": ["a", "b"]}]}
  })",
                                    selector, &out);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const rapidjson::Value& root = out.doc;
  ASSERT_TRUE(root.IsObject());
  EXPECT_EQ(root.MemberCount(), 2u);
  const rapidjson::Value& metadata = *FindMemberExact(root, "metadata");
  EXPECT_EQ(metadata.MemberCount(), 2u);
  EXPECT_EQ(Field(metadata, "name"), "n1");
  EXPECT_EQ(Field(metadata, "annotations"), "<absent>");
  const rapidjson::Value& labels = *FindMemberExact(metadata, "labels");
  EXPECT_EQ(labels.MemberCount(), 2u);
  EXPECT_EQ(Field(labels, "b"), "<null>");
  const rapidjson::Value& items = *FindMemberExact(root, "items");
  ASSERT_TRUE(items.IsArray());
  ASSERT_EQ(items.Size(), 3u);  // arrays are transparent; the scalar is kept for type checks
  EXPECT_EQ(items[0].MemberCount(), 1u);
  EXPECT_EQ(Field(items[0], "id"), "i1");
  EXPECT_EQ(Field(items[1], "id"), "i2");
  EXPECT_TRUE(items[2].IsInt());
  EXPECT_TRUE(out.captures.empty());
}

TEST(SelectiveParseTest, ScalarWhereObjectExpectedIsKept) {
  SelectedJson out;
  ASSERT_TRUE(
      SelectiveParse(R"({"metadata": "oops"})", Select({{"metadata", Select({})}}), &out).ok());
  EXPECT_EQ(Field(out.doc, "metadata"), "oops");
}

TEST(SelectiveParseTest, FoldedKeysAndAnyKey) {
  auto victims = std::make_shared<FieldSelector>(SelectFolded({{"Pods", KeepAll()}}));
  FieldSelector map;
  map.any = victims;
  const FieldSelector selector = SelectFolded({{"NodeNameToVictims", map}});
  SelectedJson out;
  ASSERT_TRUE(SelectiveParse(R"({"nodeNameToVictims": {"n1": {"pods": [1], "other": 2},
                                  "n2": {"PODS": []}}, "ignored": 1})",
                             selector, &out)
                  .ok());
  const rapidjson::Value* m = FindMemberFolded(out.doc, "nodenametovictims");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->MemberCount(), 2u);
  EXPECT_EQ(FindMemberExact(*m, "n1")->MemberCount(), 1u);
  EXPECT_NE(FindMemberFolded(*FindMemberExact(*m, "n2"), "pods"), nullptr);
  EXPECT_EQ(FindMemberExact(out.doc, "ignored"), nullptr);
}

TEST(SelectiveParseTest, CapturesExactSpans) {
  FieldSelector node = Select({{"metadata", KeepAll()}});
  node.capture = true;
  const FieldSelector selector = Select({{"items", node}});
  const std::string text =
      "{\"items\": [ {\"metadata\": {\"name\": \"a\\\"}\"}, \"x\": \"}]\"} ,\n"
      "  {\"metadata\":{\"name\":\"b\"}}, \"scalar\", {} ], \"other\": [{\"items\": 1}]}";
  SelectedJson out;
  common::Status s = SelectiveParse(text, selector, &out);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(out.captures.size(), 4u);
  auto span = [&](size_t i) {
    return text.substr(out.captures[i].begin, out.captures[i].end - out.captures[i].begin);
  };
  EXPECT_EQ(span(0), "{\"metadata\": {\"name\": \"a\\\"}\"}, \"x\": \"}]\"}");
  EXPECT_EQ(span(1), "{\"metadata\":{\"name\":\"b\"}}");
  EXPECT_EQ(span(2), "");  // a scalar keeps its place with an empty span
  EXPECT_EQ(span(3), "{}");
}

TEST(SelectiveParseTest, KeepAllBuildsTheWholeDocument) {
  rapidjson::Document doc;
  ASSERT_TRUE(
      ParseJson(R"({"a":[1,-2,3.5,true,false,null,"s\u00e9",{"b":{}}],"c":18446744073709551615})",
                &doc)
          .ok());
  const rapidjson::Value& a = doc["a"];
  ASSERT_EQ(a.Size(), 8u);
  EXPECT_EQ(a[1].GetInt(), -2);
  EXPECT_DOUBLE_EQ(a[2].GetDouble(), 3.5);
  EXPECT_TRUE(a[3].IsTrue());
  EXPECT_TRUE(a[5].IsNull());
  EXPECT_STREQ(a[6].GetString(), "s\xC3\xA9");
  EXPECT_TRUE(a[7]["b"].IsObject());
  EXPECT_TRUE(doc["c"].IsUint64());
}

struct BadCase {
  const char* name;
  std::string text;
  const char* expected;  // substring of the error message
};

class SelectiveParseErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(SelectiveParseErrorTest, FailsWithAMessage) {
  const FieldSelector selector = Select({{"keep", KeepAll()}});
  SelectedJson out;
  common::Status s = SelectiveParse(GetParam().text, selector, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(GetParam().expected), std::string::npos) << s.error().message;
  EXPECT_TRUE(out.captures.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Table, SelectiveParseErrorTest,
    ::testing::Values(
        BadCase{"Empty", "", "the body is empty"},
        BadCase{"Whitespace", "  \n", "the body is empty"},
        BadCase{"Truncated", R"({"keep": {"a": [1, 2)", "malformed JSON at offset"},
        BadCase{"MissingComma", R"({"keep": 1 "x": 2})", "offset 11"},
        BadCase{"TrailingGarbage", R"({"keep": 1} x)", "offset 12"},
        BadCase{"TwoDocuments", R"({} {})", "malformed JSON"},
        BadCase{"SingleQuotes", R"({'keep': 1})", "malformed JSON"},
        BadCase{"TrailingComma", R"({"keep": [1,]})", "malformed JSON"},
        BadCase{"Comment", "{\"keep\": 1 /* c */}", "malformed JSON"},
        BadCase{"NumberTooBig", R"({"keep": 1e400})", "Number too big"},
        BadCase{"InvalidUtf8", "{\"keep\": \"\xC3\x28\"}", "invalid UTF-8"},
        BadCase{"InvalidUtf8Key", "{\"keep\": {\"\xFF\": 1}}", "invalid UTF-8"},
        BadCase{"Surrogate", "{\"keep\": \"\xED\xA0\x80\"}", "invalid UTF-8"},
        BadCase{"Overlong", "{\"keep\": \"\xC0\xAF\"}", "invalid UTF-8"},
        BadCase{"TooHigh", "{\"keep\": \"\xF4\x90\x80\x80\"}", "invalid UTF-8"},
        BadCase{"TruncatedSequence", "{\"keep\": \"\xE2\x82\"}", "invalid UTF-8"},
        BadCase{"BadEscape", R"({"keep": "\x"})", "escape"},
        BadCase{"EmbeddedNul", std::string("{\"keep\": 1}\0{}", 14), "NUL byte"},
        BadCase{"ControlCharInString", std::string("{\"keep\": \"a\x01\"}"), "malformed"},
        BadCase{"DeepArrays", std::string(100000, '['), "nesting deeper than 512"},
        BadCase{"DeepInSkipped",
                "{\"skip\": " + std::string(600, '[') + std::string(600, ']') + "}",
                "nesting deeper than 512"},
        BadCase{"DeepInKept", "{\"keep\": " + std::string(600, '[') + "}", "nesting deeper"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(SelectiveParseTest, Utf8IsCheckedWhereItIsKept) {
  SelectedJson out;
  const FieldSelector selector = Select({{"keep", KeepAll()}});
  // Valid multi-byte sequences (2, 3 and 4 bytes) and escapes pass.
  ASSERT_TRUE(SelectiveParse("{\"keep\": \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80 \\u00e9\"}",
                             selector, &out)
                  .ok());
  EXPECT_EQ(std::string(out.doc["keep"].GetString()),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80 \xC3\xA9");
  // Skipped strings are not read, as Go's decoder would not reject them.
  EXPECT_TRUE(SelectiveParse("{\"skip\": \"\xFF\", \"keep\": 1}", selector, &out).ok());
}

// The check reads ASCII eight bytes at a time: a sequence is judged the same wherever it falls
// against those words, and an ASCII run of any length around it changes nothing.
TEST(SelectiveParseTest, Utf8IsJudgedTheSameAtEveryOffset) {
  const FieldSelector selector = Select({{"keep", KeepAll()}});
  const std::vector<std::string> valid = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x9A\x80",
                                          "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF"};
  const std::vector<std::string> invalid = {
      "\xC3\x28",         "\xFF",     "\xED\xA0\x80", "\xC0\xAF",
      "\xF4\x90\x80\x80", "\xE2\x82", "\x80",         "\xF8\x88\x80\x80\x80"};
  for (size_t before = 0; before <= 17; ++before) {
    for (size_t after : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{16}}) {
      const std::string head(before, 'a');
      const std::string tail(after, 'z');
      for (const std::string& seq : valid) {
        SelectedJson out;
        const std::string text = "{\"keep\": \"" + head + seq + tail + "\"}";
        ASSERT_TRUE(SelectiveParse(text, selector, &out).ok()) << before << "+" << after;
        EXPECT_EQ(out.doc["keep"].GetString(), head + seq + tail);
      }
      for (const std::string& seq : invalid) {
        SelectedJson out;
        const std::string text = "{\"keep\": \"" + head + seq + tail + "\"}";
        const common::Status s = SelectiveParse(text, selector, &out);
        ASSERT_FALSE(s.ok()) << before << "+" << after;
        EXPECT_NE(s.error().message.find("invalid UTF-8"), std::string::npos) << s.error().message;
      }
    }
  }
}

TEST(SelectiveParseTest, StopWhenDoneIgnoresTrailingData) {
  SelectedJson out;
  SelectOptions options;
  options.stop_when_done = true;
  ASSERT_TRUE(SelectiveParse(R"({"keep": 1} trailing)", KeepAll(), &out, options).ok());
  EXPECT_EQ(out.doc["keep"].GetInt(), 1);
}

TEST(SelectiveParseTest, ReusesTheOutput) {
  SelectedJson out;
  FieldSelector capture = KeepAll();
  capture.capture = true;
  ASSERT_TRUE(SelectiveParse("{}", capture, &out).ok());
  EXPECT_EQ(out.captures.size(), 1u);
  ASSERT_TRUE(SelectiveParse("[{},{}]", capture, &out).ok());
  EXPECT_EQ(out.captures.size(), 2u);
  EXPECT_FALSE(SelectiveParse("[{},", capture, &out).ok());
  EXPECT_TRUE(out.captures.empty());
}

}  // namespace
}  // namespace taskgov::scheduler::model
