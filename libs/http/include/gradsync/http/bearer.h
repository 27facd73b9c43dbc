// Bearer-token guard for any Handler: the /metrics servers and the metrics JSON API put it in front
// of their routes, so that no request reaches them without the token.
#pragma once

#include <functional>
#include <string>

#include "gradsync/core/token_auth.h"
#include "gradsync/http/server.h"

namespace gradsync::http {

// Passes a request that carries `auth`'s token ("Authorization: Bearer <token>") to `inner`, and
// refuses any other with 401 and "WWW-Authenticate: Bearer", its body rendered by `error_reply`
// (the service's error format; plain text when null) with the reason and never the token. With
// `auth` disabled every request passes.
Handler RequireBearer(TokenAuth auth, Handler inner,
                      std::function<Reply(int status, std::string message)> error_reply = nullptr);

}  // namespace gradsync::http
