#include "gradsync/http/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync::http {
namespace {

// A server that does not accept the connection within this long is unreachable, however long
// the request may take once connected.
constexpr absl::Duration kConnectTimeout = absl::Seconds(15);
// More header lines than any answer of ours carries.
constexpr size_t kMaxHeaders = 256;

// Where the body goes: to the request's on_body for a 2xx answer when it has one, else into
// the response.
struct BodyTarget {
  CURL* curl;
  const HttpRequest* request;
  HttpResponse* response;
  absl::Status failed;
  std::string server;
};

size_t WriteBody(char* data, size_t size, size_t n, void* target) {
  auto* t = static_cast<BodyTarget*>(target);
  long& status = t->response->status;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->request->on_body && status >= 200 && status < 300) {
    t->failed = t->request->on_body(*t->response, absl::string_view(data, size * n));
    if (!t->failed.ok()) return 0;  // ends the transfer with CURLE_WRITE_ERROR
  } else {
    if (t->response->body.size() + size * n > t->request->max_body_bytes) {
      t->failed = absl::ResourceExhaustedError(absl::StrCat(
          t->server, ": the answer's body is larger than ", t->request->max_body_bytes, " bytes; not read further"));
      return 0;
    }
    t->response->body.append(data, size * n);
  }
  return size * n;
}

// One header line; a status line starts the headers afresh (a 100 Continue came before).
size_t WriteHeader(char* data, size_t size, size_t n, void* out) {
  auto* headers = static_cast<std::vector<std::pair<std::string, std::string>>*>(out);
  const absl::string_view line = absl::StripAsciiWhitespace(absl::string_view(data, size * n));
  if (absl::StartsWith(line, "HTTP/")) {
    headers->clear();
  } else if (headers->size() >= kMaxHeaders) {
    return 0;  // a server that sends endless headers: the transfer ends (CURLE_WRITE_ERROR)
  } else if (const size_t colon = line.find(':'); colon != absl::string_view::npos) {
    headers->emplace_back(std::string(absl::StripAsciiWhitespace(line.substr(0, colon))),
                          std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  return size * n;
}

// curl_global_init is not thread-safe; curl_easy_init would otherwise call it lazily.
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

// One part of `url` as libcurl reads it ("" when absent).
std::string UrlPart(CURLU* url, CURLUPart part, unsigned int flags) {
  char* text = nullptr;
  if (curl_url_get(url, part, &text, flags) != CURLUE_OK) return "";
  std::string out = text;
  curl_free(text);
  return out;
}

// `request.url` with its host replaced by `name`, and in `connect_to` the CURLOPT_CONNECT_TO entry
// that still connects to the URL's own host and port: libcurl then verifies the certificate
// against `name` (and sends it as SNI and Host), which is how a port-forward reaches a server
// whose certificate names its Service.
absl::StatusOr<std::string> UrlNamedAs(const std::string& url, const std::string& name, std::string* connect_to) {
  std::unique_ptr<CURLU, UrlDeleter> parsed(curl_url());
  if (parsed == nullptr) return absl::InternalError("cannot initialise libcurl");
  if (curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) {
    return absl::InvalidArgumentError(absl::StrCat("not a URL: ", url));
  }
  const std::string host = UrlPart(parsed.get(), CURLUPART_HOST, 0);
  const std::string port = UrlPart(parsed.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (curl_url_set(parsed.get(), CURLUPART_HOST, name.c_str(), 0) != CURLUE_OK) {
    return absl::InvalidArgumentError(absl::StrCat("not a host name: ", name));
  }
  *connect_to = absl::StrCat(name, ":", port, ":", host, ":", port);
  return UrlPart(parsed.get(), CURLUPART_URL, 0);
}

}  // namespace

absl::StatusOr<HttpResponse> SendHttp(const HttpRequest& request, const std::string& server) {
  if (request.method != "GET" && request.method != "POST") {
    return absl::InvalidArgumentError(absl::StrCat("unsupported HTTP method ", request.method));
  }
  InitCurlOnce();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (curl == nullptr) return absl::InternalError("cannot initialise libcurl");
  CURL* c = curl.get();
  HttpResponse response;
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  if (!request.bearer_token.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Authorization: Bearer ", request.bearer_token).c_str());
  }
  if (request.method == "POST") {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  std::unique_ptr<curl_slist, HeaderListDeleter> header_list(headers);
  std::string url = request.url;
  std::string connect_to;
  if (!request.tls_server_name.empty()) {
    absl::StatusOr<std::string> named = UrlNamedAs(request.url, request.tls_server_name, &connect_to);
    if (!named.ok()) return named.status();
    url = *std::move(named);
  }
  std::unique_ptr<curl_slist, HeaderListDeleter> connect_list(
      connect_to.empty() ? nullptr : curl_slist_append(nullptr, connect_to.c_str()));
  if (connect_list != nullptr) curl_easy_setopt(c, CURLOPT_CONNECT_TO, connect_list.get());
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  BodyTarget body{c, &request, &response, absl::OkStatus(), server};
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &response.headers);
  // Paths are sent as built: a "." or ".." segment (an artifact path the server must refuse) is
  // not squashed away on the way.
  curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(request.timeout)));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(std::min(request.timeout, kConnectTimeout))));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  // Clusters are reached directly; an HTTP proxy from the environment would see the token.
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!request.tls_ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, request.tls_ca_file.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_WRITE_ERROR && !body.failed.ok()) return body.failed;
  if (rc != CURLE_OK) {
    const std::string why = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return absl::DeadlineExceededError(
          absl::StrCat(server, ": no answer within ", absl::FormatDuration(request.timeout), " (", why, ")"));
    }
    return absl::UnavailableError(absl::StrCat(server, ": ", why));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

std::string HttpResponse::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

std::string EscapeUrlComponent(const std::string& text) {
  InitCurlOnce();
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  if (escaped == nullptr) return text;
  std::string out = escaped;
  curl_free(escaped);
  return out;
}

}  // namespace gradsync::http
