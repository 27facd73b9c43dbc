// The coordinator's gRPC handlers. They only translate between the wire and Coordinator.
#pragma once

#include "auth.h"
#include "coordinator.h"
#include "gradsync/rpc/server.h"
#include "gradsync/v1/coordinator.grpc.pb.h"
#include "gradsync/v1/job.grpc.pb.h"
#include "gradsync/v1/logs.grpc.pb.h"

namespace gradsync::coordinator {

class JobServiceImpl final : public v1::JobService::Service {
 public:
  // Calls must carry `auth`'s bearer token in the "authorization" metadata when it has one.
  explicit JobServiceImpl(Coordinator* coordinator, TokenAuth auth = TokenAuth())
      : c_(coordinator), auth_(std::move(auth)) {}

  grpc::Status CreateJob(grpc::ServerContext*, const v1::CreateJobRequest*, v1::Job*) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest*, v1::Job*) override;
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*, v1::ListJobsResponse*) override;
  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest*, v1::Job*) override;
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*, grpc::ServerWriter<v1::Job>*) override;
  grpc::Status CheckpointJob(grpc::ServerContext*, const v1::CheckpointJobRequest*, v1::Job*) override;
  grpc::Status ListArtifacts(grpc::ServerContext*, const v1::ListArtifactsRequest*,
                             v1::ListArtifactsResponse*) override;
  grpc::Status GetArtifact(grpc::ServerContext*, const v1::GetArtifactRequest*,
                           grpc::ServerWriter<v1::GetArtifactResponse>*) override;
  grpc::Status ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*, v1::ListWorkersResponse*) override;

 private:
  Coordinator* c_;
  TokenAuth auth_;
};

// The worker-facing service. With a cluster token, every call must carry it as a bearer token, so
// only the cluster's workers join jobs, read the rendezvous store and report results. Every call
// after RegisterWorker must also carry the caller's worker session: heartbeats, assignment
// streams and reports name a worker and must be that worker's; the rendezvous store of a job's
// generation and its epoch plans are open only to the workers running its ranks.
class CoordinatorServiceImpl final : public v1::CoordinatorService::Service {
 public:
  CoordinatorServiceImpl(Coordinator* coordinator, TokenAuth cluster_auth)
      : c_(coordinator), auth_(std::move(cluster_auth)) {}

  grpc::Status RegisterWorker(grpc::ServerContext*, const v1::RegisterWorkerRequest*,
                              v1::RegisterWorkerResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*, v1::HeartbeatResponse*) override;
  grpc::Status WatchAssignments(grpc::ServerContext*, const v1::WatchAssignmentsRequest*,
                                grpc::ServerWriter<v1::Assignment>*) override;
  grpc::Status KvSet(grpc::ServerContext*, const v1::KvSetRequest*, v1::KvSetResponse*) override;
  grpc::Status KvGet(grpc::ServerContext*, const v1::KvGetRequest*, v1::KvGetResponse*) override;
  grpc::Status KvWait(grpc::ServerContext*, const v1::KvWaitRequest*, v1::KvWaitResponse*) override;
  grpc::Status KvAdd(grpc::ServerContext*, const v1::KvAddRequest*, v1::KvAddResponse*) override;
  grpc::Status GetEpochPlan(grpc::ServerContext*, const v1::EpochPlanRequest*, v1::EpochPlan*) override;
  grpc::Status ReportResult(grpc::ServerContext*, const v1::ReportResultRequest*, v1::ReportResultResponse*) override;
  grpc::Status ReportCheckpoint(grpc::ServerContext*, const v1::ReportCheckpointRequest*,
                                v1::ReportCheckpointResponse*) override;

 private:
  Coordinator* c_;
  TokenAuth auth_;
};

// Job logs for clients, with JobService's token.
class JobLogServiceImpl final : public v1::JobLogService::Service {
 public:
  explicit JobLogServiceImpl(Coordinator* coordinator, TokenAuth auth = TokenAuth())
      : c_(coordinator), auth_(std::move(auth)) {}

  grpc::Status GetJobLogs(grpc::ServerContext*, const v1::GetJobLogsRequest*, v1::GetJobLogsResponse*) override;

 private:
  Coordinator* c_;
  TokenAuth auth_;
};

// Job logs from the workers, with CoordinatorService's cluster token and worker session.
class WorkerLogServiceImpl final : public v1::WorkerLogService::Service {
 public:
  WorkerLogServiceImpl(Coordinator* coordinator, TokenAuth cluster_auth)
      : c_(coordinator), auth_(std::move(cluster_auth)) {}

  grpc::Status ReportLogs(grpc::ServerContext*, const v1::ReportLogsRequest*, v1::ReportLogsResponse*) override;

 private:
  Coordinator* c_;
  TokenAuth auth_;
};

}  // namespace gradsync::coordinator
