// Jobs named as people name them: "jobs/demo-1a2b3", its id "demo-1a2b3", or its spec's name
// "demo", which stands for the newest job of that name.
#pragma once

#include <memory>

#include "job_client.h"

namespace gradsync::cli {

// The name ("jobs/{id}") of the job `given` names on `client`: the job of that id when the
// coordinator knows one, otherwise the newest job whose spec name it is (saying on stderr which, when several have it). NOT_FOUND
// naming `given` when neither.
absl::StatusOr<std::string> ResolveJobName(JobClient& client, const std::string& given);

// `inner`, every call that names a job taking what ResolveJobName makes of the name when the
// coordinator knows no job by it.
std::unique_ptr<JobClient> ResolvingJobNames(std::unique_ptr<JobClient> inner);

}  // namespace gradsync::cli
