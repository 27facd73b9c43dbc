#include "openapi.h"

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/v1/artifact.pb.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/logs.pb.h"
#include "gradsync/v1/worker.pb.h"
#include "proto_json_schema.h"

namespace gradsync::embedded {
extern const char* const kOpenApiPaths;
}  // namespace gradsync::embedded

namespace gradsync::coordinator {
namespace {

std::string Build() {
  google::protobuf::Struct document;
  // The text is part of the binary and a test parses it: it is valid JSON.
  (void)google::protobuf::util::JsonStringToMessage(embedded::kOpenApiPaths, &document);
  google::protobuf::Struct* schemas =
      (*(*document.mutable_fields())["components"].mutable_struct_value()->mutable_fields())["schemas"]
          .mutable_struct_value();
  // The messages the routes name; the ones they refer to follow.
  AddMessageSchemas(*v1::JobSpec::descriptor(), schemas);
  AddMessageSchemas(*v1::Job::descriptor(), schemas);
  AddMessageSchemas(*v1::ListJobsResponse::descriptor(), schemas);
  AddMessageSchemas(*v1::ListArtifactsResponse::descriptor(), schemas);
  AddMessageSchemas(*v1::ListWorkersResponse::descriptor(), schemas);
  AddMessageSchemas(*v1::GetJobLogsResponse::descriptor(), schemas);
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(document, &json, options);
  return json;
}

}  // namespace

const std::string& OpenApiDocument() {
  static const std::string* document = new std::string(Build());
  return *document;
}

}  // namespace gradsync::coordinator
