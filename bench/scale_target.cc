#include "scale_target.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gradsync/cluster/local_tokens.h"
#include "gradsync/core/secret_file.h"
#include "gradsync/http/client.h"

namespace gradsync::bench {
namespace {

// What LoseWorkerLocked logs for each worker it declares lost (coordinator_workers.cc).
constexpr char kLostLine[] = " lost: no heartbeat for ";

absl::StatusOr<std::string> NewStateDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/gradsync-scale-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) return absl::InternalError("cannot create a temporary directory");
  return dir;
}

// The sum of the gradsync_workers samples in a Prometheus text exposition.
int SumWorkers(const std::string& exposition) {
  double total = 0;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (!absl::StartsWith(line, "gradsync_workers{")) continue;
    double v = 0;
    const size_t space = line.rfind(' ');
    if (space != absl::string_view::npos && absl::SimpleAtod(line.substr(space + 1), &v)) total += v;
  }
  return static_cast<int>(total);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ScaleTarget>> ScaleTarget::StartLocal() {
  auto dir = NewStateDir();
  if (!dir.ok()) return dir.status();
  auto t = std::make_unique<ScaleTarget>();
  cluster::LocalClusterOptions options;
  options.workers = 0;
  options.with_metrics = false;
  options.state_dir = *dir;
  t->cluster_ = std::make_unique<cluster::LocalCluster>(options);
  if (absl::Status s = t->cluster_->Start(); !s.ok()) return s;
  auto cluster = ReadTokenFile(t->cluster_->token_files().at(cluster::kClusterToken), "the cluster token");
  if (!cluster.ok()) return cluster.status();
  auto metrics = ReadTokenFile(t->cluster_->token_files().at(cluster::kMetricsToken), "the metrics token");
  if (!metrics.ok()) return metrics.status();
  t->address_ = t->cluster_->coordinator_address();
  t->cluster_token_ = *std::move(cluster);
  t->metrics_token_ = *std::move(metrics);
  t->state_dir_ = *dir;
  t->pid_ = t->cluster_->pids().front();
  return t;
}

absl::StatusOr<std::unique_ptr<ScaleTarget>> ScaleTarget::Attach(const std::string& address,
                                                                 const std::string& token_file) {
  auto t = std::make_unique<ScaleTarget>();
  t->address_ = address;
  if (!token_file.empty()) {
    auto token = ReadTokenFile(token_file, "the cluster token");
    if (!token.ok()) return token.status();
    t->cluster_token_ = *std::move(token);
  }
  return t;
}

int ScaleTarget::LostWorkers() const {
  if (cluster_ == nullptr) return -1;
  std::ifstream log(absl::StrCat(cluster_->log_dir(), "/coordinator.log"));
  int lost = 0;
  for (std::string line; std::getline(log, line);) lost += line.find(kLostLine) != std::string::npos;
  return lost;
}

absl::StatusOr<int> ScaleTarget::RegisteredWorkers() const {
  if (cluster_ == nullptr) return -1;
  const std::string address = cluster_->endpoints().at("coordinatorMetrics");
  auto resp =
      http::SendHttp({.url = absl::StrCat("http://", address, "/metrics"), .bearer_token = metrics_token_}, address);
  if (!resp.ok()) return resp.status();
  if (resp->status != 200) return absl::UnavailableError(absl::StrCat(address, "/metrics: HTTP ", resp->status));
  return SumWorkers(resp->body);
}

}  // namespace gradsync::bench
