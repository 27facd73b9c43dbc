// The script job's part of the spec rules (JobSpec.script): its defaults and its checks, with the
// sections a script job leaves to its own code.
#pragma once

#include "checker.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::spec::internal {

// Defaults of a script job: script.workingDir ".", script.stopGraceSeconds, and of training and
// ddp only what applies to a script (the size of the gang, the exchange's backend, transport and
// timeout). Nothing of model or data.
void FillScriptDefaults(v1::JobSpec* spec);

// The rules of a script job, after CheckName: the command, the working directory, the environment,
// and every section or field that only the built-in models read left unset.
void CheckScriptJob(const v1::JobSpec& spec, Checker* check);

}  // namespace gradsync::spec::internal
