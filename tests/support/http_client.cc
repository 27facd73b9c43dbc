#include "http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gradsync::testing {

HttpResponse HttpRequest(const std::string& method, int port, const std::string& path,
                         const std::map<std::string, std::string>& headers, const std::string& body) {
  HttpResponse r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return r;
  }
  std::string req = absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
  for (const auto& [k, v] : headers) absl::StrAppend(&req, k, ": ", v, "\r\n");
  if (!body.empty() || method == "POST") absl::StrAppend(&req, "Content-Length: ", body.size(), "\r\n");
  absl::StrAppend(&req, "\r\n", body);
  for (size_t sent = 0; sent < req.size();) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (e.g. 413) before reading everything
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t split = raw.find("\r\n\r\n");
  if (split == std::string::npos) return r;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, split), "\r\n");
  std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &r.status)) return r;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    r.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  r.body = raw.substr(split + 4);
  return r;
}

}  // namespace gradsync::testing
