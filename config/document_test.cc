#include "config/document.h"

#include <gtest/gtest.h>

#include "config/reader.h"

namespace taskgov::config {
namespace {

TEST(ParseDocuments, JsonWithTabsAndMarks) {
  ParsedText p = ParseDocuments("{\n\t\"Name\": \"x\",\n\t\"Count\": 2,\n\t\"Q\": \"8\"\n}");
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.documents.size(), 1u);
  const Node& doc = p.documents[0];
  ASSERT_TRUE(doc.is_map());
  const Node* count = doc.Find("Count");
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(count->text(), "2");
  EXPECT_FALSE(count->quoted());
  EXPECT_EQ(count->mark().line, 3);
  EXPECT_TRUE(doc.Find("Q")->quoted());
  EXPECT_EQ(doc.Find("Q")->TypeName(), "string");
  EXPECT_EQ(count->TypeName(), "number");
}

TEST(ParseDocuments, MultipleDocumentsAndEmptyOnes) {
  ParsedText p = ParseDocuments("a: 1\n---\n---\nb: [1, 2]\n");
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.documents.size(), 3u);
  EXPECT_TRUE(p.documents[0].is_map());
  EXPECT_TRUE(p.documents[1].is_null());
  ASSERT_TRUE(p.documents[2].Find("b")->is_sequence());
  EXPECT_EQ(p.documents[2].Find("b")->items().size(), 2u);
}

TEST(ParseDocuments, EmptyTextHasNoDocuments) {
  ParsedText p = ParseDocuments("");
  ASSERT_TRUE(p.ok);
  EXPECT_TRUE(p.documents.empty());
}

TEST(ParseDocuments, SyntaxErrorHasLineAndColumn) {
  ParsedText p = ParseDocuments("a: 1\nb: [1, 2\nc: 3\n");
  EXPECT_FALSE(p.ok);
  EXPECT_FALSE(p.error.empty());
  EXPECT_GT(p.error_mark.line, 0);
}

// Found by config_hyperpod_fuzz: yaml-cpp 0.7 reads a stray flow indicator as endless empty
// documents, so LoadAll never returned and the loader used memory until it was killed.
TEST(ParseDocuments, StrayFlowIndicatorIsAnErrorNotAnEndlessStream) {
  struct Case {
    const char* text;
    int line;
    int column;
  };
  for (const Case& c :
       {Case{",", 1, 1}, Case{"[a],", 1, 4}, Case{"- a\n,", 2, 1},
        // the fuzzer's input, minimised by lines
        Case{"{\n        \"ComputeQuotaResources\": [\n        ],\n    \"Clght\": 30},\n", 4,
             17}}) {
    ParsedText p = ParseDocuments(c.text);
    EXPECT_FALSE(p.ok) << c.text;
    EXPECT_EQ(p.error, "unexpected ',' outside a flow collection ([...] or {...})") << c.text;
    EXPECT_EQ(p.error_mark.line, c.line) << c.text;
    EXPECT_EQ(p.error_mark.column, c.column) << c.text;
  }
}

TEST(ParseDocuments, DuplicateKeysAreKept) {
  ParsedText p = ParseDocuments("a: 1\na: 2\n");
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.documents[0].entries().size(), 2u);
}

TEST(ParseDocuments, ComplexKeysAreRefused) {
  ParsedText p = ParseDocuments("? [a, b]\n: 1\n");
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("keys"), std::string::npos);
}

TEST(ParseDocuments, DeepNestingIsRefused) {
  std::string text(200, '[');
  text += std::string(200, ']');
  ParsedText p = ParseDocuments(text);
  EXPECT_FALSE(p.ok);
}

TEST(ParseDocuments, AliasBombHitsTheNodeLimit) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  std::string prev = "a";
  for (int i = 0; i < 8; ++i) {
    const std::string name = "l" + std::to_string(i);
    text += name + ": &" + name + " [";
    for (int j = 0; j < 10; ++j) text += (j ? ", *" : "*") + prev;
    text += "]\n";
    prev = name;
  }
  ParsedText p = ParseDocuments(text);
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("nodes"), std::string::npos) << p.error;
}

TEST(ParseDocuments, SelfReferencingAliasIsRefused) {
  ParsedText p = ParseDocuments("a: &x [1, *x]\n");
  EXPECT_FALSE(p.ok);
}

TEST(ParseDocuments, OversizedTextIsRefused) {
  ParsedText p = ParseDocuments(std::string(kMaxDocumentBytes + 1, ' '));
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.error.find("larger"), std::string::npos);
}

TEST(ParseDocuments, BinaryGarbageNeverThrows) {
  std::string text;
  for (int i = 0; i < 512; ++i) text.push_back(static_cast<char>((i * 37) % 256));
  ParsedText p = ParseDocuments(text);  // ok or not, it returns
  SUCCEED() << p.error;
}

// The reader reports type errors with paths, unknown fields and duplicates.
TEST(ObjectReader, ReportsTypeErrorsUnknownAndDuplicateKeys) {
  ParsedText p = ParseDocuments(
      "count: \"3\"\nweight: -1\nok: true\nname: team\nextra: 1\nname: again\n"
      "res: {cpu: 2, nvidia.com/gpu: abc}\n");
  ASSERT_TRUE(p.ok) << p.error;
  Diagnostics d;
  DocContext ctx("f.yaml", 0, &d);
  {
    ObjectReader r(&ctx, &p.documents[0], "teams[0]");
    EXPECT_FALSE(r.Integer("count", 0, 10).has_value());
    EXPECT_FALSE(r.Number("weight", 0, 10).has_value());
    EXPECT_EQ(r.Bool("ok"), true);
    EXPECT_EQ(r.String("name"), "team");
    auto res = r.ResourceMap("res");
    ASSERT_TRUE(res.has_value());
    ASSERT_EQ(res->size(), 1u);
    EXPECT_EQ((*res)[0].second, 2000);
  }
  std::vector<std::string> paths;
  for (const Diagnostic& diag : d.items()) paths.push_back(diag.path + ": " + diag.message);
  auto has = [&](const std::string& s) {
    return std::any_of(paths.begin(), paths.end(),
                       [&](const std::string& p) { return p.find(s) != std::string::npos; });
  };
  EXPECT_TRUE(has("teams[0].count: must be an integer")) << ::testing::PrintToString(paths);
  EXPECT_TRUE(has("teams[0].weight: must not be negative"));
  EXPECT_TRUE(has("teams[0].name: duplicate key"));
  EXPECT_TRUE(has("teams[0].extra: unknown field"));
  EXPECT_TRUE(has("teams[0].res[\"nvidia.com/gpu\"]"));
}

TEST(Diagnostic, FormatsFileDocumentPathAndLine) {
  Diagnostic d{Severity::kError, "teams.yaml",        1, "teams[2].compute[0].accelerators",
               {14, 7},          "must be an integer"};
  EXPECT_EQ(d.ToString(3),
            "teams.yaml: document 2: teams[2].compute[0].accelerators (line 14, column 7): must "
            "be an integer");
  EXPECT_EQ(d.ToString(1),
            "teams.yaml: teams[2].compute[0].accelerators (line 14, column 7): must be an integer");
}

}  // namespace
}  // namespace taskgov::config
