// The gRPC handler of MetricsService: it only moves reports from the stream to the collector.
#pragma once

#include "gradsync/core/token_auth.h"
#include "gradsync/v1/metrics.grpc.pb.h"
#include "metrics_collector.h"

namespace gradsync::metrics {

class MetricsServiceImpl final : public v1::MetricsService::Service {
 public:
  // `collector` must outlive the service. With `auth` enabled a stream must carry its bearer
  // token (the cluster token): reports from anyone else could fake any job's figures.
  explicit MetricsServiceImpl(MetricsCollector* collector, TokenAuth auth = TokenAuth())
      : collector_(collector), auth_(std::move(auth)) {}

  // UNAUTHENTICATED, before reading a report, without the token. Otherwise reads until the worker
  // half-closes; answers how many reports were well formed. A malformed
  // report is counted and skipped rather than ending the stream, so one bad report cannot cost
  // the reports behind it.
  grpc::Status ReportSteps(grpc::ServerContext* context, grpc::ServerReader<v1::StepReport>* reader,
                           v1::ReportStepsResponse* response) override;

 private:
  MetricsCollector* collector_;
  const TokenAuth auth_;
};

}  // namespace gradsync::metrics
