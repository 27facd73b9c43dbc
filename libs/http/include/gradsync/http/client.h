// One HTTP(S) request with libcurl, for REST clients (the CLI's, the benchmarks'): bearer token, a CA file to verify
// the server with, a timeout, and errors that name the server.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync::http {

struct HttpResponse;

struct HttpRequest {
  std::string method = "GET";  // GET or POST
  std::string url;
  // Sent as application/json with POST (an empty body is sent as such).
  std::string body;
  // Sent as "Authorization: Bearer <token>" when not empty; never part of an error message.
  std::string bearer_token;
  // PEM file of the CA to verify an https server with; empty: the system's CAs.
  std::string tls_ca_file;
  // The name an https server's certificate is verified against (and sent as SNI and Host) while
  // connecting to the URL's host; empty: the URL's host. Must pass rpc::CheckTlsServerName.
  std::string tls_server_name;
  absl::Duration timeout = absl::Seconds(15);
  // The most bytes of a body read into HttpResponse::body (an error's too): a server that sends
  // more (an endless body) ends the transfer with RESOURCE_EXHAUSTED naming it. A body streamed to
  // on_body is the callback's to bound.
  size_t max_body_bytes = size_t{64} << 20;
  // When set, a 2xx answer's body goes to it piece by piece as it arrives instead of into
  // HttpResponse::body, with the answer's status and headers in `head`; an error it returns ends
  // the transfer and is what SendHttp returns. The body of any other answer is read into
  // HttpResponse::body as usual.
  std::function<absl::Status(const HttpResponse& head, absl::string_view piece)> on_body;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  // The answer's headers, in order.
  std::vector<std::pair<std::string, std::string>> headers;

  // The first header named `name` (case-insensitively); "" if absent.
  std::string Header(absl::string_view name) const;
};

// Any answer the server gives, whatever its HTTP status. UNAVAILABLE naming `server` (how the
// caller names it, e.g. its address) when the connection or the TLS handshake fails,
// DEADLINE_EXCEEDED when it takes longer than the timeout, INVALID_ARGUMENT for a URL libcurl
// cannot parse (with tls_server_name). Any thread may call it.
absl::StatusOr<HttpResponse> SendHttp(const HttpRequest& request, const std::string& server);

// `text` percent-encoded for use as one URL path segment or query value.
std::string EscapeUrlComponent(const std::string& text);

}  // namespace gradsync::http
