#include "rank_link.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/ckpt/checksum.h"
#include "gradsync/ckpt/names.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/core/bounded_file.h"
#include "gradsync/rpc/late_header.h"
#include "gradsync/rpc/server.h"
#include "gradsync/rpc/status.h"

namespace gradsync::python {
namespace {

constexpr int64_t kMaxContextBytes = 64 << 20;
constexpr absl::Duration kCallDeadline = absl::Seconds(30);

// A small file of the runtime directory ("" when absent: the cluster has no token, no TLS).
std::string Read(const std::string& dir, const std::string& name) {
  return ReadBoundedFile(dir + "/" + name, kMaxContextBytes, "a runtime file").value_or("");
}

void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoSeconds(kCallDeadline));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RankLink>> RankLink::Open(const std::string& runtime_dir) {
  const std::string context_file = runtime_dir + "/rank.json";
  absl::StatusOr<std::string> json = ReadBoundedFile(context_file, kMaxContextBytes, "the rank's context");
  if (!json.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("not a gradsync script rank (", json.status().message(), ")"));
  }
  v1::ScriptRankContext context;
  if (const auto s = google::protobuf::util::JsonStringToMessage(*json, &context); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(context_file, ": ", std::string(s.message())));
  }
  return std::unique_ptr<RankLink>(new RankLink(runtime_dir, std::move(context)));
}

RankLink::RankLink(std::string dir, v1::ScriptRankContext context)
    : dir_(std::move(dir)), context_(std::move(context)) {
  rpc::ChannelOptions channel;
  channel.bearer_token = Read(dir_, "cluster-token");
  channel.tls_ca_pem = Read(dir_, "ca.pem");
  if (!channel.tls_ca_pem.empty()) channel.tls_server_name = context_.tls_server_name();
  auto session = std::make_shared<rpc::LateHeader>(rpc::kWorkerSessionMetadata);
  session->Set(Read(dir_, "session"));
  channel.late_header = session;
  stub_ = v1::CoordinatorService::NewStub(rpc::MakeChannel(context_.coordinator(), channel));
  telemetry::MetricsReporterOptions metrics;
  metrics.address = context_.metrics();
  metrics.bearer_token = channel.bearer_token;
  metrics_ = std::make_unique<telemetry::MetricsReporter>(metrics);
  publisher_ = std::thread([this] { PublishCounters(); });
}

RankLink::~RankLink() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  publisher_.join();
}

void RankLink::PublishCounters() {
  const std::string path = dir_ + "/exchange", tmp = path + ".tmp";
  std::string last;
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; })) {
    int64_t issued = 0, done = 0;
    bool any = false;
    for (const std::weak_ptr<Exchange>& weak : exchanges_) {
      if (std::shared_ptr<Exchange> x = weak.lock()) {
        issued += x->issued();
        done += x->finished();
        any = true;
      }
    }
    const std::string text = absl::StrCat(issued, " ", done, "\n");
    if (!any || text == last) continue;
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << text;
    }
    if (std::rename(tmp.c_str(), path.c_str()) == 0) last = text;
  }
}

absl::StatusOr<uint64_t> RankLink::EpochSeed(int epoch) {
  v1::EpochPlanRequest req;
  req.set_job_id(assignment().job_id());
  req.set_epoch(epoch);
  v1::EpochPlan plan;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  if (absl::Status s = rpc::FromGrpc(stub_->GetEpochPlan(&ctx, req, &plan)); !s.ok()) return s;
  return plan.seed();
}

std::string RankLink::CheckpointDir(int64_t step) const {
  return ckpt::CheckpointDir(assignment().checkpoint_root(), step);
}

absl::StatusOr<bool> RankLink::ReportCheckpoint(int64_t step, int epoch, int64_t cursor, const std::string& path,
                                                double initial_loss) {
  const std::filesystem::path file(path);
  if (file.parent_path().string() != CheckpointDir(step)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not in step ", step, "'s directory ", CheckpointDir(step)));
  }
  absl::StatusOr<ckpt::FileDigest> sum = ckpt::DigestFile(path, ckpt::kWriteChecksum);
  if (!sum.ok()) return sum.status();
  v1::ReportCheckpointRequest req;
  req.set_worker_id(context_.worker_id());
  req.set_job_id(assignment().job_id());
  req.set_generation(assignment().generation());
  req.set_rank(rank());
  req.set_step(step);
  req.set_epoch(epoch);
  req.set_cursor(cursor);
  req.set_dir(CheckpointDir(step));
  req.set_initial_loss(initial_loss);
  *req.mutable_boundary_time() = google::protobuf::util::TimeUtil::GetCurrentTime();
  v1::CheckpointPart* part = req.mutable_part();
  part->set_rank(rank());
  part->set_file(file.filename().string());
  part->set_bytes(sum->bytes);
  part->set_checksum(sum->digest);
  v1::ReportCheckpointResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  if (absl::Status s = rpc::FromGrpc(stub_->ReportCheckpoint(&ctx, req, &resp)); !s.ok()) return s;
  return resp.committed();
}

absl::Status RankLink::ReportStep(const StepFigures& f, double initial_loss) {
  v1::StepReport report;
  report.set_job_id(assignment().job_id());
  report.set_generation(assignment().generation());
  report.set_rank(rank());
  report.set_world_size(world_size());
  report.set_step(f.step);
  report.set_epoch(f.epoch);
  report.set_loss(f.loss);
  report.set_samples(f.samples);
  report.set_tokens(f.tokens);
  report.set_step_seconds(f.step_seconds);
  report.set_learning_rate(f.learning_rate);
  report.set_grad_norm(f.grad_norm);
  *report.mutable_time() = google::protobuf::util::TimeUtil::GetCurrentTime();
  metrics_->Report(report);
  v1::ScriptProgress progress;
  v1::JobProgress& p = *progress.mutable_progress();
  p.set_step(f.step);
  p.set_epoch(f.epoch);
  p.set_loss(f.loss);
  p.set_lr(f.learning_rate);
  p.set_grad_norm(f.grad_norm);
  p.set_step_seconds(f.step_seconds);
  if (f.step_seconds > 0) {
    p.set_samples_per_second(static_cast<double>(f.samples) * world_size() / f.step_seconds);
    p.set_tokens_per_second(static_cast<double>(f.tokens) * world_size() / f.step_seconds);
  }
  progress.set_initial_loss(initial_loss);
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(progress, &json);
  const std::string path = dir_ + "/progress.json", tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return absl::InternalError(absl::StrCat("cannot rename ", tmp));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Exchange>> RankLink::ConnectExchange(const std::string& name, int device,
                                                                    uintptr_t stream) {
  ExchangeOptions options;
  options.name = name;
  options.device = device;
  options.stream = stream;
  options.backend = assignment().placement().backend().empty() ? "gloo" : assignment().placement().backend();
  options.host = context_.comm_host();
  const v1::DdpSpec& ddp = assignment().spec().ddp();
  if (ddp.has_timeout_seconds()) options.timeout = absl::Seconds(ddp.timeout_seconds());
  options.shared_memory = ddp.transport() != "tcp";
  absl::StatusOr<std::unique_ptr<Exchange>> connected =
      Exchange::Connect(comm::NewCoordinatorKvClient(stub_, assignment().job_id(), assignment().generation()), rank(),
                        world_size(), options);
  if (!connected.ok()) return connected.status();
  std::shared_ptr<Exchange> exchange = *std::move(connected);
  std::lock_guard lock(mu_);
  exchanges_.push_back(exchange);
  return exchange;
}

}  // namespace gradsync::python
