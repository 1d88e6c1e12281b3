#include "scheduler/kube/access_review.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "scheduler/kube/client.h"

namespace taskgov::scheduler::kube {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr char kTokenReviews[] = "/apis/authentication.k8s.io/v1/tokenreviews";
constexpr char kAccessReviews[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

void Str(Writer& w, const std::string& s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void Strings(Writer& w, const std::vector<std::string>& values) {
  w.StartArray();
  for (const std::string& v : values) Str(w, v);
  w.EndArray();
}

ApiError Malformed(const std::string& what, const std::string& why) {
  ApiError e;
  e.status = 200;
  e.reason = "Malformed";
  e.what = what;
  e.message = what + ": " + why;
  return e;
}

std::vector<std::string> StringArray(const rapidjson::Value& v) {
  std::vector<std::string> out;
  if (!v.IsArray()) return out;
  for (const rapidjson::Value& s : v.GetArray()) {
    if (s.IsString()) out.emplace_back(s.GetString(), s.GetStringLength());
  }
  return out;
}

}  // namespace

std::string TokenReviewBody(const std::string& token, const std::vector<std::string>& audiences) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authentication.k8s.io/v1");
  w.Key("kind");
  w.String("TokenReview");
  w.Key("spec");
  w.StartObject();
  w.Key("token");
  Str(w, token);
  if (!audiences.empty()) {
    w.Key("audiences");
    Strings(w, audiences);
  }
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

std::string SubjectAccessReviewBody(const ReviewedUser& user,
                                    const ResourceAttributes& attributes) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("apiVersion");
  w.String("authorization.k8s.io/v1");
  w.Key("kind");
  w.String("SubjectAccessReview");
  w.Key("spec");
  w.StartObject();
  w.Key("user");
  Str(w, user.username);
  w.Key("uid");
  Str(w, user.uid);
  w.Key("groups");
  Strings(w, user.groups);
  w.Key("extra");
  w.StartObject();
  for (const auto& [key, values] : user.extra) {
    w.Key(key.c_str());
    Strings(w, values);
  }
  w.EndObject();
  w.Key("resourceAttributes");
  w.StartObject();
  w.Key("verb");
  Str(w, attributes.verb);
  w.Key("group");
  Str(w, attributes.group);
  w.Key("resource");
  Str(w, attributes.resource);
  if (!attributes.namespace_.empty()) {
    w.Key("namespace");
    Str(w, attributes.namespace_);
  }
  w.EndObject();
  w.EndObject();
  w.EndObject();
  return buffer.GetString();
}

ApiResult<std::optional<ReviewedUser>> DecodeTokenReview(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return Malformed("TokenReview", "not a JSON object");
  auto status = doc.FindMember("status");
  if (status == doc.MemberEnd() || !status->value.IsObject()) {
    return Malformed("TokenReview", "no status");
  }
  auto authenticated = status->value.FindMember("authenticated");
  if (authenticated == status->value.MemberEnd() || !authenticated->value.IsBool() ||
      !authenticated->value.GetBool()) {
    return std::optional<ReviewedUser>();  // absent or false: not authenticated
  }
  auto user = status->value.FindMember("user");
  if (user == status->value.MemberEnd() || !user->value.IsObject()) {
    return Malformed("TokenReview", "authenticated without status.user");
  }
  ReviewedUser out;
  const rapidjson::Value& u = user->value;
  if (auto n = u.FindMember("username"); n != u.MemberEnd() && n->value.IsString()) {
    out.username = n->value.GetString();
  }
  if (out.username.empty()) return Malformed("TokenReview", "status.user.username is empty");
  if (auto n = u.FindMember("uid"); n != u.MemberEnd() && n->value.IsString()) {
    out.uid = n->value.GetString();
  }
  if (auto g = u.FindMember("groups"); g != u.MemberEnd()) out.groups = StringArray(g->value);
  if (auto a = status->value.FindMember("audiences"); a != status->value.MemberEnd()) {
    out.audiences = StringArray(a->value);
  }
  if (auto e = u.FindMember("extra"); e != u.MemberEnd() && e->value.IsObject()) {
    for (const auto& m : e->value.GetObject()) {
      out.extra[std::string(m.name.GetString(), m.name.GetStringLength())] = StringArray(m.value);
    }
  }
  return std::optional<ReviewedUser>(std::move(out));
}

ApiResult<bool> DecodeSubjectAccessReview(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Malformed("SubjectAccessReview", "not a JSON object");
  }
  auto status = doc.FindMember("status");
  if (status == doc.MemberEnd() || !status->value.IsObject()) {
    return Malformed("SubjectAccessReview", "no status");
  }
  auto allowed = status->value.FindMember("allowed");
  return allowed != status->value.MemberEnd() && allowed->value.IsBool() &&
         allowed->value.GetBool();
}

ApiResult<std::optional<ReviewedUser>> ApiAccessReviewer::ReviewToken(
    const std::string& token, const std::vector<std::string>& audiences) {
  ApiResult<HttpResponse> reply =
      client_->Call("POST", kTokenReviews, TokenReviewBody(token, audiences));
  if (!reply.ok()) return reply.error();
  return DecodeTokenReview(reply.value().body);
}

ApiResult<bool> ApiAccessReviewer::Allowed(const ReviewedUser& user,
                                           const ResourceAttributes& attributes) {
  ApiResult<HttpResponse> reply =
      client_->Call("POST", kAccessReviews, SubjectAccessReviewBody(user, attributes));
  if (!reply.ok()) return reply.error();
  return DecodeSubjectAccessReview(reply.value().body);
}

}  // namespace taskgov::scheduler::kube
