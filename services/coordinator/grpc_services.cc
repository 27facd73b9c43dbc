#include "grpc_services.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gradsync/rpc/status.h"

namespace gradsync::coordinator {
namespace {

using rpc::ToGrpc;

// Long waits are cut into slices so a cancelled client or a shutdown is noticed promptly.
constexpr absl::Duration kWaitSlice = absl::Milliseconds(500);
// Rendezvous waits are bounded so a forgotten client cannot pin a server thread.
constexpr int64_t kMaxKvWaitMs = 10 * 60 * 1000;

template <typename T>
grpc::Status Unwrap(absl::StatusOr<T> value, T* out) {
  if (!value.ok()) return ToGrpc(value.status());
  *out = *std::move(value);
  return grpc::Status::OK;
}

absl::Status CheckNamespace(const v1::KvNamespace& ns) {
  if (ns.job_id().empty()) return absl::InvalidArgumentError("ns.jobId: required");
  return absl::OkStatus();
}

std::string NsOf(const v1::KvNamespace& ns) { return KvNamespaceOf(ns.job_id(), ns.generation()); }

absl::Duration KvTimeout(int64_t ms) { return absl::Milliseconds(std::clamp<int64_t>(ms, 0, kMaxKvWaitMs)); }

// The worker session a call carries; empty when none.
absl::string_view SessionOf(const grpc::ServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(rpc::kWorkerSessionMetadata);
  return it == md.end() ? absl::string_view() : absl::string_view(it->second.data(), it->second.size());
}

// A worker call must carry the session of the worker it names. Unknown workers get NOT_FOUND, so
// that a worker the coordinator forgot (restart, lost lease) registers again.
grpc::Status AuthorizeWorker(Coordinator* c, grpc::ServerContext* ctx, const std::string& worker_id) {
  return ToGrpc(c->CheckWorkerSession(SessionOf(ctx), worker_id));
}

grpc::Status Authorize(const TokenAuth& auth, grpc::ServerContext* ctx) {
  if (!auth.enabled()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  const std::string value = it == md.end() ? "" : std::string(it->second.data(), it->second.size());
  return ToGrpc(auth.Check(value));
}

}  // namespace

grpc::Status JobServiceImpl::CreateJob(grpc::ServerContext* ctx, const v1::CreateJobRequest* req, v1::Job* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  return Unwrap(c_->CreateJob(req->spec()), out);
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::Job* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  return Unwrap(c_->GetJob(req->name()), out);
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                      v1::ListJobsResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  return Unwrap(c_->ListJobs(req->page_size(), req->page_token()), out);
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req, v1::Job* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  return Unwrap(c_->CancelJob(req->name()), out);
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                                      grpc::ServerWriter<v1::Job>* writer) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  int64_t seen = 0;
  while (!ctx->IsCancelled()) {
    auto change = c_->WaitJobChange(req->name(), seen, seen == 0 ? absl::ZeroDuration() : kWaitSlice);
    if (!change.ok()) return ToGrpc(change.status());
    auto& [job, version] = *change;
    if (version == seen) continue;
    seen = version;
    if (!writer->Write(job)) return grpc::Status::OK;
    if (job.state() == v1::SUCCEEDED || job.state() == v1::FAILED || job.state() == v1::CANCELLED) {
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
}

grpc::Status JobServiceImpl::CheckpointJob(grpc::ServerContext* ctx, const v1::CheckpointJobRequest* req,
                                           v1::Job* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  return Unwrap(c_->RequestCheckpoint(req->name()), out);
}

grpc::Status JobServiceImpl::ListArtifacts(grpc::ServerContext* ctx, const v1::ListArtifactsRequest* req,
                                           v1::ListArtifactsResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  absl::StatusOr<JobArtifacts> artifacts = c_->Artifacts(req->name());
  if (!artifacts.ok()) return ToGrpc(artifacts.status());
  return Unwrap(artifacts->List(req->prefix(), req->sha256()), out);
}

grpc::Status JobServiceImpl::GetArtifact(grpc::ServerContext* ctx, const v1::GetArtifactRequest* req,
                                         grpc::ServerWriter<v1::GetArtifactResponse>* writer) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  absl::StatusOr<JobArtifacts> artifacts = c_->Artifacts(req->name());
  if (!artifacts.ok()) return ToGrpc(artifacts.status());
  absl::StatusOr<ArtifactFile> file = artifacts->Open(req->path());
  if (!file.ok()) return ToGrpc(file.status());
  return ToGrpc(SendArtifact(
      *file, [writer](const v1::GetArtifactResponse& m) { return writer->Write(m); },
      [ctx] { return ctx->IsCancelled(); }));
}

grpc::Status JobServiceImpl::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest*,
                                         v1::ListWorkersResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  *out = c_->ListWorkers();
  return grpc::Status::OK;
}

grpc::Status CoordinatorServiceImpl::RegisterWorker(grpc::ServerContext* ctx, const v1::RegisterWorkerRequest* req,
                                                    v1::RegisterWorkerResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  // A worker that runs a rank claims it with the session it held (coordinator.h, AdoptWorker).
  if (req->has_running()) return Unwrap(c_->AdoptWorker(*req, SessionOf(ctx)), out);
  *out = c_->RegisterWorker(*req);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServiceImpl::Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest* req,
                                               v1::HeartbeatResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (absl::Status s = c_->CheckWorkerSession(SessionOf(ctx), req->worker_id()); !s.ok() && !absl::IsNotFound(s)) {
    return ToGrpc(s);
  }
  *out = c_->Heartbeat(*req);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServiceImpl::WatchAssignments(grpc::ServerContext* ctx, const v1::WatchAssignmentsRequest* req,
                                                      grpc::ServerWriter<v1::Assignment>* writer) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (grpc::Status s = AuthorizeWorker(c_, ctx, req->worker_id()); !s.ok()) return s;
  while (!ctx->IsCancelled()) {
    auto next = c_->NextAssignment(req->worker_id(), kWaitSlice);
    if (!next.ok()) return ToGrpc(next.status());
    if (next->has_value() && !writer->Write(**next)) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker stream closed");
    }
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "worker went away");
}

grpc::Status CoordinatorServiceImpl::KvSet(grpc::ServerContext* ctx, const v1::KvSetRequest* req, v1::KvSetResponse*) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (absl::Status s = CheckNamespace(req->ns()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = c_->CheckRendezvousAccess(SessionOf(ctx), req->ns().job_id(), req->ns().generation()); !s.ok()) {
    return ToGrpc(s);
  }
  c_->kv().Set(NsOf(req->ns()), req->key(), req->value());
  return grpc::Status::OK;
}

grpc::Status CoordinatorServiceImpl::KvGet(grpc::ServerContext* ctx, const v1::KvGetRequest* req,
                                           v1::KvGetResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (absl::Status s = CheckNamespace(req->ns()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = c_->CheckRendezvousAccess(SessionOf(ctx), req->ns().job_id(), req->ns().generation()); !s.ok()) {
    return ToGrpc(s);
  }
  auto value = c_->kv().Get(NsOf(req->ns()), req->key(), KvTimeout(req->timeout_ms()));
  if (!value.ok()) return ToGrpc(value.status());
  out->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status CoordinatorServiceImpl::KvWait(grpc::ServerContext* ctx, const v1::KvWaitRequest* req,
                                            v1::KvWaitResponse*) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (absl::Status s = CheckNamespace(req->ns()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = c_->CheckRendezvousAccess(SessionOf(ctx), req->ns().job_id(), req->ns().generation()); !s.ok()) {
    return ToGrpc(s);
  }
  std::vector<std::string> keys(req->keys().begin(), req->keys().end());
  return ToGrpc(c_->kv().Wait(NsOf(req->ns()), keys, KvTimeout(req->timeout_ms())));
}

grpc::Status CoordinatorServiceImpl::KvAdd(grpc::ServerContext* ctx, const v1::KvAddRequest* req,
                                           v1::KvAddResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (absl::Status s = CheckNamespace(req->ns()); !s.ok()) return ToGrpc(s);
  if (absl::Status s = c_->CheckRendezvousAccess(SessionOf(ctx), req->ns().job_id(), req->ns().generation()); !s.ok()) {
    return ToGrpc(s);
  }
  auto value = c_->kv().Add(NsOf(req->ns()), req->key(), req->delta());
  if (!value.ok()) return ToGrpc(value.status());
  out->set_value(*value);
  return grpc::Status::OK;
}

grpc::Status CoordinatorServiceImpl::GetEpochPlan(grpc::ServerContext* ctx, const v1::EpochPlanRequest* req,
                                                  v1::EpochPlan* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (absl::Status s = c_->CheckJobMember(SessionOf(ctx), req->job_id()); !s.ok()) return ToGrpc(s);
  return Unwrap(c_->GetEpochPlan(req->job_id(), req->epoch()), out);
}

grpc::Status CoordinatorServiceImpl::ReportResult(grpc::ServerContext* ctx, const v1::ReportResultRequest* req,
                                                  v1::ReportResultResponse*) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (grpc::Status s = AuthorizeWorker(c_, ctx, req->worker_id()); !s.ok()) return s;
  return ToGrpc(c_->ReportResult(*req));
}

grpc::Status CoordinatorServiceImpl::ReportCheckpoint(grpc::ServerContext* ctx, const v1::ReportCheckpointRequest* req,
                                                      v1::ReportCheckpointResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (grpc::Status s = AuthorizeWorker(c_, ctx, req->worker_id()); !s.ok()) return s;
  return Unwrap(c_->ReportCheckpoint(*req), out);
}

grpc::Status JobLogServiceImpl::GetJobLogs(grpc::ServerContext* ctx, const v1::GetJobLogsRequest* req,
                                           v1::GetJobLogsResponse* out) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  return Unwrap(c_->GetJobLogs(*req), out);
}

grpc::Status WorkerLogServiceImpl::ReportLogs(grpc::ServerContext* ctx, const v1::ReportLogsRequest* req,
                                              v1::ReportLogsResponse*) {
  if (grpc::Status s = Authorize(auth_, ctx); !s.ok()) return s;
  if (grpc::Status s = AuthorizeWorker(c_, ctx, req->worker_id()); !s.ok()) return s;
  return ToGrpc(c_->ReportLogs(*req));
}

}  // namespace gradsync::coordinator
