#include "gradsync/http/bearer.h"

#include <utility>

namespace gradsync::http {

Handler RequireBearer(TokenAuth auth, Handler inner,
                      std::function<Reply(int status, std::string message)> error_reply) {
  if (!auth.enabled()) return inner;
  return [auth = std::move(auth), inner = std::move(inner), error_reply = std::move(error_reply)](const Request& r) {
    const absl::Status s = auth.Check(r.Header("Authorization"));
    if (s.ok()) return inner(r);
    Reply refused = error_reply ? error_reply(401, std::string(s.message()))
                                : Reply{401, std::string(s.message()) + "\n", "text/plain; charset=utf-8", {}};
    refused.headers.emplace_back("WWW-Authenticate", "Bearer");
    return refused;
  };
}

}  // namespace gradsync::http
