#include "script_spec.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/text_format.h"
#include "gradsync/spec/choices.h"

namespace gradsync::spec::internal {
namespace {

constexpr char kDefaultWorkingDir[] = ".";
// torchrun gives a worker's processes 30 s by default; a training step of a script job is seconds
// at most, and a child that ignores SIGTERM should not hold its worker for long.
constexpr double kDefaultStopGraceSeconds = 15;
constexpr double kMaxStopGraceSeconds = 3600;
constexpr int kMaxCommandArgs = 4096;
constexpr size_t kMaxCommandBytes = 128 * 1024;
constexpr int kMaxEnv = 1024;
constexpr size_t kMaxEnvBytes = 128 * 1024;

// The fields of training and ddp a script job may set: the gang's size and the restart budget, the
// seed of the sampler, and how the exchange (gradsync.torch) talks.
const std::set<std::string>& ScriptTrainingFields() {
  static const std::set<std::string> fields = {"world_size", "min_workers", "max_workers", "max_restarts", "seed"};
  return fields;
}
const std::set<std::string>& ScriptDdpFields() {
  static const std::set<std::string> fields = {"backend", "transport", "timeout_seconds"};
  return fields;
}

// The variables the worker sets for every child: torchrun's, and gradsync.torch's connection.
bool IsReservedVariable(const std::string& name) {
  static const std::array<const char*, 17> kReserved = {"RANK",
                                                        "LOCAL_RANK",
                                                        "WORLD_SIZE",
                                                        "LOCAL_WORLD_SIZE",
                                                        "GROUP_RANK",
                                                        "GROUP_WORLD_SIZE",
                                                        "ROLE_RANK",
                                                        "ROLE_WORLD_SIZE",
                                                        "ROLE_NAME",
                                                        "MASTER_ADDR",
                                                        "MASTER_PORT",
                                                        "TORCHELASTIC_RESTART_COUNT",
                                                        "TORCHELASTIC_MAX_RESTARTS",
                                                        "TORCHELASTIC_RUN_ID",
                                                        "TORCHELASTIC_USE_AGENT_STORE",
                                                        "TORCHELASTIC_ERROR_FILE",
                                                        "PYTHONPATH"};
  return absl::StartsWith(name, "GRADSYNC_") ||
         std::any_of(kReserved.begin(), kReserved.end(), [&](const char* r) { return name == r; });
}

bool IsVariableName(const std::string& name) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

bool HasControl(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

// Every field of `message` that is set and not in `allowed`: "<section>.<jsonName>: <why>".
void RequireOnly(const google::protobuf::Message& message, const std::string& section,
                 const std::set<std::string>& allowed, const std::string& why, Checker* check) {
  std::vector<const google::protobuf::FieldDescriptor*> set;
  message.GetReflection()->ListFields(message, &set);
  for (const google::protobuf::FieldDescriptor* field : set) {
    if (allowed.count(field->name()) > 0) continue;
    std::vector<std::string> names;
    for (const std::string& name : allowed) {
      names.push_back(message.GetDescriptor()->FindFieldByName(name)->json_name());
    }
    std::string got;
    if (field->is_repeated()) {
      got = absl::StrCat(message.GetReflection()->FieldSize(message, field), " entries");
    } else {
      google::protobuf::TextFormat::PrintFieldValueToString(message, field, -1, &got);
    }
    check->Require(false, absl::StrCat(section, ".", field->json_name()),
                   absl::StrCat(why, "; a script job sets only ", absl::StrJoin(names, ", "), " here"), got);
  }
}

void CheckCommand(const v1::ScriptSpec& script, Checker* check) {
  check->Require(!script.command().empty(), "script.command", "must name the program to run, e.g. [python3, train.py]",
                 "[]");
  check->Require(script.command_size() <= kMaxCommandArgs, "script.command",
                 absl::StrCat("must have at most ", kMaxCommandArgs, " arguments"),
                 absl::StrCat(script.command_size(), " arguments"));
  size_t bytes = 0;
  for (int i = 0; i < script.command_size(); ++i) {
    const std::string& arg = script.command(i);
    bytes += arg.size();
    check->Require(arg.find('\0') == std::string::npos, absl::StrCat("script.command[", i, "]"),
                   "must not contain a NUL byte", Quote(arg));
  }
  if (!script.command().empty()) {
    check->Require(!script.command(0).empty(), "script.command[0]", "must name a program", "\"\"");
  }
  check->Require(bytes <= kMaxCommandBytes, "script.command",
                 absl::StrCat("must be at most ", kMaxCommandBytes, " bytes in all"), absl::StrCat(bytes, " bytes"));
}

void CheckEnv(const v1::ScriptSpec& script, Checker* check) {
  check->Require(script.env_size() <= kMaxEnv, "script.env", absl::StrCat("must have at most ", kMaxEnv, " variables"),
                 absl::StrCat(script.env_size(), " variables"));
  // In name order: the first problem reported is the same whatever order the map iterates in.
  std::vector<std::pair<std::string, std::string>> env(script.env().begin(), script.env().end());
  std::sort(env.begin(), env.end());
  size_t bytes = 0;
  for (const auto& [name, value] : env) {
    const std::string field = absl::StrCat("script.env.", name);
    bytes += name.size() + value.size();
    check->Require(IsVariableName(name), field,
                   "names an environment variable: letters, digits and '_', not starting with a digit", Quote(name));
    check->Require(!IsReservedVariable(name), field,
                   "is set by the worker for every rank (torchrun's variables, PYTHONPATH, GRADSYNC_*)", Quote(name));
    check->Require(value.find('\0') == std::string::npos, field, "must not contain a NUL byte", Quote(value));
  }
  check->Require(bytes <= kMaxEnvBytes, "script.env", absl::StrCat("must be at most ", kMaxEnvBytes, " bytes in all"),
                 absl::StrCat(bytes, " bytes"));
}

void CheckWorkingDir(const v1::ScriptSpec& script, Checker* check) {
  const std::string& dir = script.working_dir();
  check->Require(!dir.empty(), "script.workingDir", "must not be empty", "\"\"");
  check->Require(!HasControl(dir), "script.workingDir", "must not contain control characters", Quote(dir));
  check->Require(dir.find_first_of("*?[\\") == std::string::npos, "script.workingDir",
                 "must name one directory, not a glob", Quote(dir));
}

}  // namespace

void FillScriptDefaults(v1::JobSpec* spec) {
  v1::ScriptSpec* script = spec->mutable_script();
  if (script->working_dir().empty()) script->set_working_dir(kDefaultWorkingDir);
  if (!script->has_stop_grace_seconds()) script->set_stop_grace_seconds(kDefaultStopGraceSeconds);
  v1::DdpSpec* ddp = spec->mutable_ddp();
  if (ddp->backend().empty()) ddp->set_backend(Name(Backend::kAuto));
  if (ddp->transport().empty()) ddp->set_transport(Name(Transport::kAuto));
}

void CheckScriptJob(const v1::JobSpec& spec, Checker* check) {
  const v1::ScriptSpec& script = spec.script();
  CheckCommand(script, check);
  CheckWorkingDir(script, check);
  CheckEnv(script, check);
  const Bound max_grace{kMaxStopGraceSeconds, true};
  check->Number("script.stopGraceSeconds", script.stop_grace_seconds(), Bound{0, false}, &max_grace);
  check->Require(spec.model().ByteSizeLong() == 0, "model",
                 "must not be set with script: the script builds its own model", "a model section");
  check->Require(spec.data().ByteSizeLong() == 0, "data",
                 "must not be set with script: the script reads its own data (gradsync.torch.DistributedSampler "
                 "orders it)",
                 "a data section");
  RequireOnly(spec.training(), "training", ScriptTrainingFields(), "is the script's own choice", check);
  RequireOnly(spec.ddp(), "ddp", ScriptDdpFields(),
              "is the script's own choice (DistributedDataParallel's arguments, "
              "model._ddp_params_and_buffers_to_ignore)",
              check);
  check->Require(spec.checkpoint().every_steps() == 0 && spec.checkpoint().every_seconds() == 0,
                 "checkpoint.everySteps", "a script saves when it chooses (gradsync.torch.save); leave it unset",
                 absl::StrCat(spec.checkpoint().every_steps()));
}

}  // namespace gradsync::spec::internal
