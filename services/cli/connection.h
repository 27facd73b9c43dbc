// The options that name a coordinator and how to reach it, shared by every job command:
// --address (GRADSYNC_ADDRESS), --token (GRADSYNC_TOKEN), --tls-ca (GRADSYNC_TLS_CA_FILE).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "args.h"
#include "job_client.h"

namespace gradsync::cli {

// `options` plus "address", "token" and "tls-ca", for ParseArgs.
std::vector<OptionSpec> WithConnectionOptions(std::vector<OptionSpec> options);

// The client the options (or their environment variables) describe; the address defaults to
// localhost:7070. Errors as MakeJobClient's.
absl::StatusOr<std::unique_ptr<JobClient>> ConnectJobClient(const Args& args);

// How a failed client call reads on stderr: "CODE: message", except INVALID_ARGUMENT, which is
// already about the user's input and reads better alone.
std::string DescribeError(const absl::Status& status);

}  // namespace gradsync::cli
