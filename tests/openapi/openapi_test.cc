// The coordinator's OpenAPI description against its real routes: every documented operation is
// answered by RestApi with a documented status and a body its schema accepts, every method a path
// does not document is refused with 405, paths outside the description are not routes, and every
// error follows the one Error schema. The schemas come from the protos, so a proto field the
// description lacks, or a reply field the proto lacks, fails here.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "json_schema_check.h"
#include "openapi.h"
#include "rest_gateway.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Struct;
using google::protobuf::Value;
using gradsync::testing::Resolve;
using gradsync::testing::SchemaErrors;

constexpr char kToken[] = "openapi-token";
constexpr char kSpec[] = R"({"name": "openapi", "training": {"worldSize": 2, "maxSteps": 5}})";
const std::vector<std::string> kMethods = {"get", "post", "put", "patch", "delete"};

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

Value ParseJson(const std::string& text) {
  Value v;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &v);
  EXPECT_TRUE(status.ok()) << status << " in " << text.substr(0, 200);
  return v;
}

class OpenApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    document_ = ParseJson(OpenApiDocument()).struct_value();
    ASSERT_GT(document_.fields_size(), 0);
  }
  void TearDown() override { fs::remove_all(root_); }

  http::Reply Call(const std::string& method, const std::string& path, const std::string& body = "",
                   bool with_token = true) const {
    http::Request r;
    r.method = method;
    r.path = path;
    r.body = body;
    if (with_token) r.headers.emplace_back("Authorization", absl::StrCat("Bearer ", kToken));
    http::Reply reply = api_.Handle(r);
    // A streamed body (an artifact), as the server would write it.
    if (reply.stream != nullptr) {
      std::string piece;
      while (reply.body.size() < reply.stream->size &&
             reply.stream->read(reply.body.size(), 1 << 20, &piece).ok() && !piece.empty()) {
        reply.body += piece;
      }
    }
    return reply;
  }

  // A new job with a file in its artifact directory; returns its id.
  std::string NewJob() {
    const http::Reply created = Call("POST", "/v1/jobs", kSpec);
    EXPECT_EQ(created.status, 200) << created.body;
    const std::string id = Field(ParseJson(created.body).struct_value(), "id")->string_value();
    fs::create_directories(fs::path(root_) / id);
    std::ofstream(fs::path(root_) / id / "weights.bin") << "not really weights";
    return id;
  }

  // The documented JSON schema of `operation`'s answer `status`; a null kind when the answer has
  // no JSON body.
  Value JsonSchemaOf(const Struct& operation, int status) const {
    const Value* responses = Field(operation, "responses");
    const Value* response = Field(responses->struct_value(), std::to_string(status));
    if (response == nullptr) return Value();
    Value resolved = *response;
    if (const Value* ref = Field(resolved.struct_value(), "$ref")) resolved = Resolve(document_, ref->string_value());
    const Value* content = Field(resolved.struct_value(), "content");
    if (content == nullptr) return Value();
    const Value* json = Field(content->struct_value(), "application/json");
    return json == nullptr ? Value() : *Field(json->struct_value(), "schema");
  }

  void ExpectConforms(const std::string& body, const Value& schema, const std::string& what) const {
    for (const std::string& e : SchemaErrors(ParseJson(body), schema, document_)) ADD_FAILURE() << what << ": " << e;
  }

  void ExpectDocumentedError(const http::Reply& r, const std::string& what) const {
    ExpectConforms(r.body, Resolve(document_, "#/components/schemas/Error"), what);
    const Struct error = ParseJson(r.body).struct_value();
    const auto code = static_cast<absl::StatusCode>(static_cast<int>(Field(error, "code")->number_value()));
    EXPECT_EQ(Field(error, "status")->string_value(), absl::StatusCodeToString(code)) << what;
  }

  std::string root_ = (fs::temp_directory_path() / ("gradsync-openapi-" + std::to_string(::getpid()))).string();
  Coordinator c_{[this] {
                   CoordinatorOptions o;
                   o.artifact_root = root_;
                   return o;
                 }(),
                 std::make_unique<InMemoryJobStore>()};
  RestApi api_{&c_, TokenAuth(kToken)};
  Struct document_;
};

void CollectRefs(const Value& v, std::vector<std::string>* refs) {
  if (v.kind_case() == Value::kListValue) {
    for (const Value& e : v.list_value().values()) CollectRefs(e, refs);
  }
  if (v.kind_case() != Value::kStructValue) return;
  for (const auto& [key, field] : v.struct_value().fields()) {
    if (key == "$ref") refs->push_back(field.string_value());
    CollectRefs(field, refs);
  }
}

TEST_F(OpenApiTest, EveryRefResolvesAndTheSchemasHaveEveryProtoField) {
  EXPECT_EQ(Field(document_, "openapi")->string_value(), "3.0.3");
  Value whole;
  *whole.mutable_struct_value() = document_;
  std::vector<std::string> refs;
  CollectRefs(whole, &refs);
  EXPECT_GT(refs.size(), 20u);
  for (const std::string& ref : refs) EXPECT_EQ(Resolve(document_, ref).kind_case(), Value::kStructValue) << ref;
  // The message schemas are the protos': each field under its JSON name.
  for (const google::protobuf::Descriptor* d : {v1::Job::descriptor(), v1::JobSpec::descriptor(),
                                                v1::TrainingSpec::descriptor(), v1::JobResult::descriptor()}) {
    const Value schema = Resolve(document_, "#/components/schemas/" + d->full_name());
    ASSERT_EQ(schema.kind_case(), Value::kStructValue) << d->full_name();
    const Struct& properties = Field(schema.struct_value(), "properties")->struct_value();
    EXPECT_EQ(properties.fields_size(), d->field_count()) << d->full_name();
    for (int i = 0; i < d->field_count(); ++i) {
      EXPECT_NE(Field(properties, d->field(i)->json_name()), nullptr)
          << d->full_name() << "." << d->field(i)->json_name();
    }
  }
}

TEST_F(OpenApiTest, EveryDocumentedOperationIsARouteAndAnswersAsDocumented) {
  int operations = 0;
  for (const auto& [templ, item] : Field(document_, "paths")->struct_value().fields()) {
    for (const std::string& method : kMethods) {
      const std::string path = absl::StrReplaceAll(templ, {{"{id}", NewJob()}, {"{path}", "weights.bin"}});
      const std::string body = templ == "/v1/jobs" && method == "post" ? kSpec : "";
      const http::Reply r = Call(absl::AsciiStrToUpper(method), path, body);
      const std::string what = absl::StrCat(method, " ", templ, " -> ", r.status, " ", r.body.substr(0, 300));
      const Value* operation = Field(item.struct_value(), method);
      if (operation == nullptr) {
        EXPECT_EQ(r.status, 405) << what;
        ExpectDocumentedError(r, what);
        continue;
      }
      ++operations;
      const Struct& responses = Field(operation->struct_value(), "responses")->struct_value();
      ASSERT_NE(Field(responses, std::to_string(r.status)), nullptr) << "an undocumented status: " << what;
      if (r.status >= 400) {
        // Only asking a job that does not run to checkpoint is refused, as documented.
        EXPECT_EQ(absl::StrCat(method, " ", templ, " ", r.status), "post /v1/jobs/{id}/checkpoints 409") << what;
        ExpectDocumentedError(r, what);
        continue;
      }
      const Value schema = JsonSchemaOf(operation->struct_value(), r.status);
      if (schema.kind_case() == Value::kStructValue) {
        EXPECT_EQ(r.content_type, "application/json") << what;
        ExpectConforms(r.body, schema, what);
      } else {
        EXPECT_EQ(r.content_type, "application/octet-stream") << what;
        EXPECT_EQ(r.body, "not really weights");
      }
    }
  }
  EXPECT_EQ(operations, 13);
}

TEST_F(OpenApiTest, PathsOutsideTheDescriptionAreNotRoutes) {
  const std::string id = NewJob();
  for (const std::string& path : std::vector<std::string>{"/v1/job", "/v2/jobs", "/v1/jobs/" + id + "/bogus",
                                                          "/v1/jobs/" + id + "/events/1", "/v1/workers/w1", "/v1"}) {
    const http::Reply r = Call("GET", path);
    EXPECT_EQ(r.status, 404) << path << " -> " << r.body;
    ExpectDocumentedError(r, path);
  }
}

TEST_F(OpenApiTest, EveryErrorFollowsTheErrorSchemaWithTheCodesNumberAndName) {
  const std::string id = NewJob();
  struct Case {
    std::string method, path, body;
    bool token;
    int status;
    absl::StatusCode code;
  };
  const std::vector<Case> cases = {
      {"POST", "/v1/jobs", R"({"training": {"worldSize": 0}})", true, 400, absl::StatusCode::kInvalidArgument},
      {"GET", "/v1/jobs", "", false, 401, absl::StatusCode::kUnauthenticated},
      {"GET", "/v1/jobs/none-such", "", true, 404, absl::StatusCode::kNotFound},
      {"GET", "/v1/jobs/" + id + "/artifacts/../../etc/passwd", "", true, 400, absl::StatusCode::kInvalidArgument},
      {"DELETE", "/v1/jobs/" + id, "", true, 405, absl::StatusCode::kUnimplemented},
  };
  for (const Case& c : cases) {
    const http::Reply r = Call(c.method, c.path, c.body, c.token);
    const std::string what = absl::StrCat(c.method, " ", c.path, " -> ", r.status, " ", r.body);
    EXPECT_EQ(r.status, c.status) << what;
    ExpectDocumentedError(r, what);
    const Struct error = ParseJson(r.body).struct_value();
    EXPECT_EQ(Field(error, "code")->number_value(), static_cast<int>(c.code)) << what;
  }
  ASSERT_EQ(Call("POST", "/v1/jobs/" + id + ":cancel").status, 200);
  const http::Reply again = Call("POST", "/v1/jobs/" + id + ":cancel");
  EXPECT_EQ(again.status, 409) << again.body;
  ExpectDocumentedError(again, "a second cancel");
}

TEST_F(OpenApiTest, IsServedWithoutAToken) {
  const http::Reply r = Call("GET", "/v1/openapi.json", "", /*with_token=*/false);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, OpenApiDocument());
}

}  // namespace
}  // namespace gradsync::coordinator
