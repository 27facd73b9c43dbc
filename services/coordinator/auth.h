// Bearer-token checks for the job APIs (REST and gRPC) and the workers' calls: the one check every
// gradsync server makes (gradsync/core/token_auth.h), under the coordinator's names.
#pragma once

#include "gradsync/core/token_auth.h"

namespace gradsync::coordinator {

using ::gradsync::ConstantTimeEquals;
using ::gradsync::TokenAuth;

}  // namespace gradsync::coordinator
