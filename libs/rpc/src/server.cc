#include "gradsync/rpc/server.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gradsync/core/secret_file.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/support/client_interceptor.h"

namespace gradsync::rpc {

RunningServer::RunningServer(std::unique_ptr<grpc::Server> server, int port)
    : server_(std::move(server)), port_(port) {}

RunningServer::~RunningServer() { Shutdown(absl::ZeroDuration()); }

void RunningServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  if (auto* health = server_->GetHealthCheckService()) health->Shutdown();
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
  server_->Wait();
}

absl::StatusOr<ServerTls> ServerTls::FromFiles(const std::string& cert_file, const std::string& key_file) {
  ServerTls tls;
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate file and a key file, or neither");
  }
  if (cert_file.empty()) return tls;
  auto cert = ReadSecretFile(cert_file, "the TLS certificate");
  if (!cert.ok()) return cert.status();
  auto key = ReadSecretFile(key_file, "the TLS key");
  if (!key.ok()) return key.status();
  tls.cert_pem = *std::move(cert);
  tls.key_pem = *std::move(key);
  return tls;
}

absl::StatusOr<ChannelOptions> ChannelOptions::FromFiles(const std::string& ca_file, const std::string& token_file) {
  ChannelOptions options;
  if (!ca_file.empty()) {
    auto ca = ReadSecretFile(ca_file, "the TLS CA certificate");
    if (!ca.ok()) return ca.status();
    // gRPC would only log a bad root and then fail every call with a vague error.
    if (!absl::StrContains(*ca, "-----BEGIN CERTIFICATE-----")) {
      return absl::InvalidArgumentError(absl::StrCat(ca_file, ": not a PEM certificate (the TLS CA certificate)"));
    }
    options.tls_ca_pem = *std::move(ca);
  }
  if (!token_file.empty()) {
    auto token = ReadTokenFile(token_file, "the token");
    if (!token.ok()) return token.status();
    options.bearer_token = *std::move(token);
  }
  return options;
}

absl::Status CheckTlsServerName(const std::string& name) {
  constexpr size_t kMaxDnsName = 253;
  if (name.size() > kMaxDnsName) {
    return absl::InvalidArgumentError(
        absl::StrCat("a name of ", name.size(), " characters; a DNS name has at most 253"));
  }
  // Anything else would be a URL's port or path to libcurl, or a name no certificate carries.
  const bool allowed =
      std::all_of(name.begin(), name.end(), [](char c) { return absl::ascii_isalnum(c) || c == '-' || c == '.'; });
  if (!allowed || absl::StartsWith(name, ".") || absl::StartsWith(name, "-")) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", name, "\" is not a DNS name or IPv4 address (letters, digits, '-' and '.')"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RunningServer>> StartServer(const std::string& address,
                                                           const std::vector<grpc::Service*>& services,
                                                           const ServerTls& tls) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (tls.enabled()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({tls.key_pem, tls.cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort(address, creds, &port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(true);
  return std::make_unique<RunningServer>(std::move(server), port);
}

namespace {

// Adds the bearer token and the late header to every call's metadata. Metadata rather than call
// credentials, which gRPC refuses to send over plaintext channels.
class MetadataInterceptor : public grpc::experimental::Interceptor {
 public:
  MetadataInterceptor(const std::string* authorization, const LateHeader* late)
      : authorization_(authorization), late_(late) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      auto* md = methods->GetSendInitialMetadata();
      if (!authorization_->empty()) md->emplace("authorization", *authorization_);
      if (late_ != nullptr) {
        std::string value = late_->value();
        if (!value.empty()) md->emplace(late_->key(), std::move(value));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string* authorization_;
  const LateHeader* late_;
};

class MetadataInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  MetadataInterceptorFactory(const std::string& token, std::shared_ptr<const LateHeader> late)
      : authorization_(token.empty() ? "" : "Bearer " + token), late_(std::move(late)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo*) override {
    return new MetadataInterceptor(&authorization_, late_.get());
  }

 private:
  const std::string authorization_;
  const std::shared_ptr<const LateHeader> late_;
};

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const ChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  args.SetMaxReceiveMessageSize(64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca_pem;
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  }
  if (options.bearer_token.empty() && options.late_header == nullptr) {
    return grpc::CreateCustomChannel(address, creds, args);
  }
  // The channel owns the factory; each call's interceptor reads the headers from it.
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<MetadataInterceptorFactory>(options.bearer_token, options.late_header));
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, creds, args, std::move(interceptors));
}

}  // namespace gradsync::rpc
