#include <chrono>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/rpc/status.h"

namespace gradsync::comm {
namespace {

using gradsync::v1::CoordinatorService;

// Headroom on top of the server-side wait so the server, not the transport, reports a timeout.
constexpr absl::Duration kRpcSlack = absl::Seconds(5);

class CoordinatorKvClient : public KvClient {
 public:
  CoordinatorKvClient(std::shared_ptr<CoordinatorService::StubInterface> stub, std::string job_id, int generation)
      : stub_(std::move(stub)) {
    ns_.set_job_id(std::move(job_id));
    ns_.set_generation(generation);
  }

  absl::Status Set(const std::string& key, const std::string& value) override {
    v1::KvSetRequest req;
    *req.mutable_ns() = ns_;
    req.set_key(key);
    req.set_value(value);
    v1::KvSetResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, absl::ZeroDuration());
    return rpc::FromGrpc(stub_->KvSet(&ctx, req, &resp));
  }

  absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout) override {
    v1::KvGetRequest req;
    *req.mutable_ns() = ns_;
    req.set_key(key);
    req.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
    v1::KvGetResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, timeout);
    absl::Status s = rpc::FromGrpc(stub_->KvGet(&ctx, req, &resp));
    if (!s.ok()) return s;
    return std::move(*resp.mutable_value());
  }

  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    v1::KvWaitRequest req;
    *req.mutable_ns() = ns_;
    for (const auto& k : keys) req.add_keys(k);
    req.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
    v1::KvWaitResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, timeout);
    return rpc::FromGrpc(stub_->KvWait(&ctx, req, &resp));
  }

  absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) override {
    v1::KvAddRequest req;
    *req.mutable_ns() = ns_;
    req.set_key(key);
    req.set_delta(delta);
    v1::KvAddResponse resp;
    grpc::ClientContext ctx;
    SetDeadline(&ctx, absl::ZeroDuration());
    absl::Status s = rpc::FromGrpc(stub_->KvAdd(&ctx, req, &resp));
    if (!s.ok()) return s;
    return resp.value();
  }

 private:
  static void SetDeadline(grpc::ClientContext* ctx, absl::Duration wait) {
    ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(wait + kRpcSlack));
  }

  std::shared_ptr<CoordinatorService::StubInterface> stub_;
  v1::KvNamespace ns_;
};

}  // namespace

std::unique_ptr<KvClient> NewCoordinatorKvClient(std::shared_ptr<v1::CoordinatorService::StubInterface> stub,
                                                 std::string job_id, int generation) {
  return std::make_unique<CoordinatorKvClient>(std::move(stub), std::move(job_id), generation);
}

}  // namespace gradsync::comm
