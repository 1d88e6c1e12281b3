#include "extender/console_assets.h"
#include "scheduler/common/testing/files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace taskgov::extender {
namespace {

using common::testing::ReadFile;

// The binary serves the console's files byte for byte, with their types.
TEST(ConsoleAssetsTest, TheBinaryHoldsTheSourceFiles) {
  std::map<std::string, std::string> types;
  for (const ConsoleAsset& a : ConsoleAssets()) {
    const std::string source = ReadFile("extender/console" + std::string(a.path));
    ASSERT_FALSE(source.empty()) << a.path;
    EXPECT_EQ(std::string(a.body), source) << a.path;
    types[std::string(a.path)] = std::string(a.content_type);
  }
  EXPECT_EQ(types,
            (std::map<std::string, std::string>{{"/app.js", "text/javascript; charset=utf-8"},
                                                {"/favicon.svg", "image/svg+xml"},
                                                {"/index.html", "text/html; charset=utf-8"},
                                                {"/style.css", "text/css; charset=utf-8"}}));
}

// Nothing is fetched from elsewhere: no absolute URL in the files, except the SVG namespace.
TEST(ConsoleAssetsTest, NothingIsLoadedFromAnotherOrigin) {
  const std::regex url(R"((https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,})");
  for (const ConsoleAsset& a : ConsoleAssets()) {
    std::string body(a.body);
    for (auto it = std::sregex_iterator(body.begin(), body.end(), url);
         it != std::sregex_iterator(); ++it) {
      EXPECT_EQ(it->str(), "http://www.w3.org") << a.path;  // createElementNS's namespace
    }
  }
}

TEST(ConsoleAssetsTest, RoutesServeThePageWithAStrictPolicy) {
  std::map<std::string, Route> routes;
  for (Route& r : ConsoleRoutes()) routes[r.path] = r;
  ASSERT_TRUE(routes.count("/"));
  ASSERT_TRUE(routes.count("/app.js"));
  const HttpResponse page = routes["/"].handler(HttpRequest{});
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script src=\"/app.js\" defer></script>"), std::string::npos);
  std::map<std::string, std::string> headers(page.headers.begin(), page.headers.end());
  EXPECT_NE(headers["Content-Security-Policy"].find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(headers["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(routes["/"].method, "GET");
}

}  // namespace
}  // namespace taskgov::extender
