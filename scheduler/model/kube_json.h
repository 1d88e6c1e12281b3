#pragma once

// Decoding Kubernetes objects from JSON (RapidJSON values) into the value types of objects.h.
// Shared by the webhook codec (a v1.Pod / v1.Node inside an extender request) and the API client
// (list and watch responses), so there is one decoder per object.
//
// Keys are the API's own (json tags, lowerCamelCase) and match exactly. Unknown fields are
// ignored; absent and null fields take their zero values. A field of the wrong JSON type or an
// unparsable quantity is an error whose message names the path inside the object, e.g.
// `spec.containers[1].resources.requests["nvidia.com/gpu"]: invalid quantity '1.5.3': ...`.
//
// Pure functions; thread-safe.

#include <rapidjson/document.h>

#include <string>

#include "scheduler/common/result.h"
#include "scheduler/model/objects.h"

namespace taskgov::scheduler::model {

// Parses an RFC 3339 timestamp ("2026-11-29T22:11:31Z", optional fraction and offset) into Unix
// milliseconds.
[[nodiscard]] common::Result<int64_t> ParseTimestamp(std::string_view text);

// A v1.ResourceList object ({"cpu": "500m", ...}) in canonical units. `path` prefixes errors.
[[nodiscard]] common::Result<ResourceList> DecodeResourceList(const rapidjson::Value& value,
                                                              const std::string& path);

[[nodiscard]] common::Result<Pod> DecodePod(const rapidjson::Value& value);
[[nodiscard]] common::Result<Node> DecodeNode(const rapidjson::Value& value);

}  // namespace taskgov::scheduler::model
