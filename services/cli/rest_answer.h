// What the CLI makes of a coordinator's REST answer, apart from the transport so that any bytes a
// server could send can be tried against it (fuzz/cli_answer_fuzz.cc): an error answer becomes the
// status it stands for, and a success the message its JSON holds. Whatever a server sends, error
// messages come out fit for a terminal (TerminalSafe): a hostile server cannot write escape
// sequences or forged lines through them.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace gradsync::cli {

// The status a REST error answer (HTTP `http_status`, not 2xx) stands for: the code and message of
// its {"code", "status", "message", "details"} body (http::ErrorJson), or, when the body is not one
// (e.g. from a proxy), a code derived from the HTTP status and the body's first 200 bytes.
absl::Status StatusFromHttpError(long http_status, const std::string& body, const std::string& url);

// A 2xx answer: `out` filled from the JSON `body` (unknown fields ignored: a newer coordinator may
// add some); DATA_LOSS naming `url` when it is nested too deep or does not parse. Any other status:
// StatusFromHttpError.
absl::Status ParseRestAnswer(long http_status, const std::string& body, const std::string& url,
                             google::protobuf::Message* out);

}  // namespace gradsync::cli
