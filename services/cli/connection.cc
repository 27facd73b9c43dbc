#include "connection.h"

#include "absl/strings/str_cat.h"
#include "gradsync/core/env.h"

namespace gradsync::cli {

std::vector<OptionSpec> WithConnectionOptions(std::vector<OptionSpec> options) {
  options.push_back({"address"});
  options.push_back({"token"});
  options.push_back({"tls-ca"});
  return options;
}

absl::StatusOr<std::unique_ptr<JobClient>> ConnectJobClient(const Args& args) {
  JobClientOptions options;
  options.address = args.Get("address", EnvOr("GRADSYNC_ADDRESS", "localhost:7070"));
  options.token = args.Get("token", EnvOr("GRADSYNC_TOKEN", ""));
  options.tls_ca_file = args.Get("tls-ca", EnvOr("GRADSYNC_TLS_CA_FILE", ""));
  return MakeJobClient(options);
}

std::string DescribeError(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kInvalidArgument) return std::string(status.message());
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

}  // namespace gradsync::cli
