#include "grpc_service.h"

#include "gradsync/core/log.h"

namespace gradsync::metrics {

grpc::Status MetricsServiceImpl::ReportSteps(grpc::ServerContext* context, grpc::ServerReader<v1::StepReport>* reader,
                                             v1::ReportStepsResponse* response) {
  const auto& metadata = context->client_metadata();
  const auto authorization = metadata.find("authorization");
  if (absl::Status s = auth_.Check(authorization == metadata.end()
                                       ? ""
                                       : std::string(authorization->second.data(), authorization->second.size()));
      !s.ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(s.message()));
  }
  v1::StepReport report;
  bool warned = false;
  while (reader->Read(&report)) {
    absl::Status s = collector_->Ingest(report);
    if (s.ok()) {
      response->set_accepted(response->accepted() + 1);
    } else if (!warned) {  // once per stream: a buggy worker would otherwise flood the log
      GS_LOG(WARNING) << "from " << context->peer() << ": " << s;
      warned = true;
    }
  }
  if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
  return grpc::Status::OK;
}

}  // namespace gradsync::metrics
