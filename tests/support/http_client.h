// A minimal HTTP/1.1 client for tests (one request per connection), so tests talk to the real
// servers over real sockets.
#pragma once

#include <map>
#include <string>

namespace gradsync::testing {

struct HttpResponse {
  int status = 0;                              // 0 when the connection failed
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
};

HttpResponse HttpRequest(const std::string& method, int port, const std::string& path,
                         const std::map<std::string, std::string>& headers = {}, const std::string& body = "");

}  // namespace gradsync::testing
