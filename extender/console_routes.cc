#include "extender/console_assets.h"

#include <string>

namespace taskgov::extender {

std::vector<Route> ConsoleRoutes() {
  std::vector<Route> routes;
  for (const ConsoleAsset& asset : ConsoleAssets()) {
    auto serve = [asset](const HttpRequest&) {
      return HttpResponse{
          200,
          std::string(asset.content_type),
          std::string(asset.body),
          {{"Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"},
           {"X-Content-Type-Options", "nosniff"},
           {"Referrer-Policy", "no-referrer"},
           {"Cache-Control", "no-cache"}}};
    };
    routes.push_back(Route{std::string(asset.path), "GET", 0, serve});
    if (asset.path == "/index.html") routes.push_back(Route{"/", "GET", 0, serve});
  }
  return routes;
}

}  // namespace taskgov::extender
