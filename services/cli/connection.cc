#include "connection.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "absl/strings/str_cat.h"
#include "gradsync/cluster/current_cluster.h"
#include "gradsync/cluster/local_cluster_file.h"
#include "gradsync/cluster/local_tokens.h"
#include "gradsync/core/env.h"
#include "gradsync/core/secret_file.h"
#include "job_names.h"

namespace gradsync::cli {
namespace {

// What names the server, by rank: an option (--state-dir or one of `options`), then the
// environment (GRADSYNC_STATE_DIR or one of `envs`), then the current cluster (current_cluster.h).
enum class Named { kOption, kEnvironment, kCurrentCluster };

// The cluster file of --state-dir, of GRADSYNC_STATE_DIR when no option names a server, or of
// the current cluster when nothing does (no option of `options`, no variable of `envs`); none
// otherwise.
absl::StatusOr<std::optional<cluster::LocalClusterFile>> LocalClusterOf(const Args& args,
                                                                        std::initializer_list<const char*> options,
                                                                        std::initializer_list<const char*> envs) {
  const bool option = std::any_of(options.begin(), options.end(), [&](const char* o) { return args.Has(o); });
  const bool env = std::any_of(envs.begin(), envs.end(), [](const char* e) { return !EnvOr(e, "").empty(); });
  std::string dir;
  Named named = Named::kOption;
  if (args.Has("state-dir")) {
    dir = args.Get("state-dir");
  } else if (option) {
    return std::nullopt;
  } else if (dir = EnvOr("GRADSYNC_STATE_DIR", ""); !dir.empty()) {
    named = Named::kEnvironment;
  } else if (!env && !(dir = cluster::CurrentCluster()).empty()) {
    named = Named::kCurrentCluster;
  }
  if (dir.empty()) return std::nullopt;
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  // The current cluster stopped since CurrentCluster looked: as if none were current. And
  // GRADSYNC_STATE_DIR names a local cluster only while one runs there: the services read it as
  // their own state directory (a coordinator's database), and a CLI beside them goes on to
  // GRADSYNC_ADDRESS.
  if (file.status().code() == absl::StatusCode::kNotFound && named != Named::kOption) return std::nullopt;
  if (file.status().code() == absl::StatusCode::kNotFound) {
    return absl::NotFoundError(absl::StrCat("--state-dir ", dir,
                                            ": no local cluster runs there (no ", cluster::LocalClusterFilePath(dir),
                                            "; start one with gradsync local up)"));
  }
  if (!file.ok()) return file.status();
  return std::optional<cluster::LocalClusterFile>(*std::move(file));
}

// The token in the file `path`, or "" when `path` is empty.
absl::StatusOr<std::string> TokenIn(const std::string& path, const std::string& what) {
  if (path.empty()) return std::string();
  return ReadTokenFile(path, what);
}

// The local cluster's token file `name`, or "".
std::string LocalTokenFile(const std::optional<cluster::LocalClusterFile>& local, const std::string& name) {
  if (!local.has_value()) return "";
  auto it = local->token_files.find(name);
  return it == local->token_files.end() ? "" : it->second;
}

// --token-file, --token, the local cluster's, GRADSYNC_AUTH_TOKEN_FILE (GRADSYNC_TOKEN_FILE),
// GRADSYNC_TOKEN: the first given.
absl::StatusOr<std::string> JobApiToken(const Args& args, const std::optional<cluster::LocalClusterFile>& local) {
  if (args.Has("token-file") && args.Has("token")) {
    return absl::InvalidArgumentError("give --token-file or --token, not both");
  }
  if (args.Has("token-file")) return TokenIn(args.Get("token-file"), "the token (--token-file)");
  if (args.Has("token")) return args.Get("token");
  if (const std::string file = LocalTokenFile(local, cluster::kAuthToken); !file.empty()) {
    return TokenIn(file, "the local cluster's token");
  }
  // The coordinator's variable for its token file, and the CLI's older name for it.
  for (const char* env : {"GRADSYNC_AUTH_TOKEN_FILE", "GRADSYNC_TOKEN_FILE"}) {
    if (const std::string file = EnvOr(env, ""); !file.empty()) return TokenIn(file, absl::StrCat("the token (", env, ")"));
  }
  return EnvOr("GRADSYNC_TOKEN", "");
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobClient>> ConnectJobClient(const Args& args) {
  if (args.Has("address") && args.Has("state-dir")) {
    return absl::InvalidArgumentError("give --address or --state-dir (a local cluster's address), not both");
  }
  absl::StatusOr<std::optional<cluster::LocalClusterFile>> local =
      LocalClusterOf(args, {"address"}, {"GRADSYNC_ADDRESS"});
  if (!local.ok()) return local.status();
  absl::StatusOr<std::string> token = JobApiToken(args, *local);
  if (!token.ok()) return token.status();
  JobClientOptions options;
  options.address = local->has_value() ? (*local)->endpoints["coordinator"]
                                       : args.Get("address", EnvOr("GRADSYNC_ADDRESS", "localhost:7070"));
  options.token = *std::move(token);
  options.tls_ca_file = args.Get("tls-ca", EnvOr("GRADSYNC_TLS_CA_FILE", ""));
  options.tls_server_name = args.Get("tls-server-name", EnvOr("GRADSYNC_TLS_SERVER_NAME", ""));
  absl::StatusOr<std::unique_ptr<JobClient>> client = MakeJobClient(options);
  if (!client.ok()) return client.status();
  return ResolvingJobNames(*std::move(client));
}

absl::StatusOr<std::optional<cluster::LocalClusterFile>> TargetLocalCluster(const Args& args) {
  return LocalClusterOf(args, {"address"}, {"GRADSYNC_ADDRESS"});
}

absl::StatusOr<MetricsApi> MetricsApiFromArgs(const Args& args, const std::string& fallback) {
  absl::StatusOr<std::optional<cluster::LocalClusterFile>> local =
      LocalClusterOf(args, {"metrics-api", "address"}, {"GRADSYNC_METRICS_API", "GRADSYNC_ADDRESS"});
  if (!local.ok()) return local.status();
  MetricsApi api;
  const std::string local_api = local->has_value() ? (*local)->endpoints["metricsApi"] : "";
  api.address = args.Get("metrics-api", !local_api.empty() ? local_api : EnvOr("GRADSYNC_METRICS_API", ""));
  api.named = !api.address.empty();
  if (!api.named) api.address = fallback;
  std::string file = args.Get("metrics-token-file", LocalTokenFile(*local, cluster::kMetricsToken));
  if (file.empty()) file = EnvOr("GRADSYNC_METRICS_TOKEN_FILE", "");
  absl::StatusOr<std::string> token = TokenIn(file, "the metrics token");
  if (!token.ok()) return token.status();
  api.token = *std::move(token);
  return api;
}

std::string DescribeError(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kInvalidArgument) return std::string(status.message());
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

}  // namespace gradsync::cli
