#include "spec_input.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gradsync/spec/job_paths.h"
#include "display.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::cli {

namespace {

// `overrides`, and training.worldSize=`workers` unless they set it or `workers` is 0.
std::vector<std::string> WithWorkers(const std::vector<std::string>& overrides, int workers) {
  std::vector<std::string> all = overrides;
  bool sets_world = false;
  for (const auto& o : overrides) {
    sets_world =
        sets_world || absl::StartsWith(o, "training.worldSize=") || absl::StartsWith(o, "training.world_size=");
  }
  if (workers > 0 && !sets_world) all.push_back(absl::StrCat("training.worldSize=", workers));
  return all;
}

// "train_full_sft" for [python3, -u, train_full_sft.py, ...]; "train" for [./train, ...].
std::string ScriptName(const std::vector<std::string>& command) {
  namespace fs = std::filesystem;
  const std::string program = fs::path(command[0]).filename().string();
  const bool interpreter = absl::StartsWith(program, "python") || program == "bash" || program == "sh";
  std::string named = program;
  for (size_t i = 1; interpreter && i < command.size(); ++i) {
    if (command[i] == "-m" && i + 1 < command.size()) {
      named = command[i + 1];
      break;
    }
    if (!absl::StartsWith(command[i], "-")) {
      named = fs::path(command[i]).stem().string();
      break;
    }
  }
  return named.empty() ? "script" : named;
}

}  // namespace

std::vector<std::string> SpecOverrides(const Args& args) {
  std::vector<std::string> overrides = args.GetAll("set");
  if (args.Has("resume-from")) overrides.push_back(absl::StrCat("training.resumeFrom=\"", args.Get("resume-from"), "\""));
  return overrides;
}

absl::StatusOr<v1::JobSpec> LoadSpecFromCommandLine(const std::string& path, const std::vector<std::string>& overrides,
                                                    int workers) {
  auto spec = spec::LoadJobSpecFile(path, WithWorkers(overrides, workers));
  if (!spec.ok()) return spec.status();
  absl::StatusOr<v1::JobSpec> normalized = spec::Normalize(*std::move(spec));
  if (!normalized.ok() || normalized->has_script()) return normalized;
  // What the coordinator plans at submission (the model, the data's shape, ddp.ignoreParams
  // against the model's names), refused here before any server is dialled.
  if (absl::StatusOr<spec::JobPlan> plan = spec::PlanJob(*normalized); !plan.ok()) return plan.status();
  return normalized;
}

std::optional<std::vector<std::string>> CommandAfterDashes(const std::vector<std::string>& argv) {
  const auto dashes = std::find(argv.begin(), argv.end(), "--");
  if (dashes == argv.end()) return std::nullopt;
  return std::vector<std::string>(dashes + 1, argv.end());
}

absl::StatusOr<v1::JobSpec> ScriptSpecFromCommandLine(const std::vector<std::string>& command,
                                                      const std::vector<std::string>& overrides, int workers) {
  if (command.empty()) return absl::InvalidArgumentError("no command after \"--\": name the program to run");
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("the current directory: ", ec.message()));
  v1::JobSpec base;
  base.set_name(ScriptName(command));
  base.mutable_script()->mutable_command()->Assign(command.begin(), command.end());
  base.mutable_script()->set_working_dir(cwd.string());
  // Through the spec's own parser, so that --set reads as it does for a file.
  auto spec = spec::ParseJobSpec(spec::ToJson(base, false), "the command line", WithWorkers(overrides, workers));
  if (!spec.ok()) return spec.status();
  return spec::Normalize(*std::move(spec));
}

void MakeDataPathsAbsolute(v1::JobSpec* spec, const std::string& base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path from = base.empty() ? fs::current_path(ec) : fs::path(base);
  if (ec) return;
  auto absolute = [&](std::string* path) {
    if (!path->empty() && (*path)[0] != '/') *path = (from / *path).string();
  };
  v1::DataSpec& data = *spec->mutable_data();
  if (data.has_text()) {
    for (std::string& p : *data.mutable_text()->mutable_paths()) absolute(&p);
  }
  if (data.has_shards()) {
    for (std::string& p : *data.mutable_shards()->mutable_paths()) absolute(&p);
  }
  if (data.has_validation()) {
    for (std::string& p : *data.mutable_validation()->mutable_paths()) absolute(&p);
  }
  if (spec->has_model()) absolute(spec->mutable_model()->mutable_init_from());
}

std::vector<std::string> RunDataRoots(const v1::JobSpec& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  std::vector<std::string> roots = {cwd.string()};
  for (const spec::DataPath& p : spec::DataPaths(spec)) {
    fs::path dir;
    const fs::path full = cwd / p.path;
    for (const fs::path& part : full) {
      if (part.string().find_first_of("*?[\\") != std::string::npos) break;
      dir /= part;
    }
    roots.push_back((dir == full ? dir.parent_path() : dir).string());
  }
  return roots;
}

std::string CheckpointSizeNote(const v1::JobSpec& spec) {
  const v1::CheckpointSpec& c = spec.checkpoint();
  if (spec.has_script() || (c.every_steps() <= 0 && c.every_seconds() <= 0)) return "";
  absl::StatusOr<nn::ModelPlan> model = spec::PlanModel(spec);
  if (!model.ok()) return "";
  // The parameters and AdamW's first and second moments, fp32 each; the manifest is noise.
  constexpr int64_t kBytesPerParam = 3 * sizeof(float);
  const int64_t each = model->NumParams() * kBytesPerParam;
  const int keep = c.has_keep() ? std::max(1, c.keep()) : spec::kDefaultCheckpointKeep;
  return absl::StrCat("checkpoints: about ", HumanBytes(each), " each (weights and AdamW's two moments: ",
                      kBytesPerParam, " bytes a parameter), checkpoint.keep ", keep, ": up to ",
                      HumanBytes(each * keep), " kept\n");
}

std::vector<std::string> DataDirsOutside(const v1::JobSpec& spec, const std::vector<std::string>& roots) {
  namespace fs = std::filesystem;
  const auto inside = [](const fs::path& dir, const fs::path& root) {
    const fs::path rel = dir.lexically_normal().lexically_relative(root.lexically_normal());
    return !rel.empty() && *rel.begin() != "..";
  };
  std::vector<std::string> dirs = RunDataRoots(spec);
  dirs.erase(dirs.begin());
  std::vector<std::string> outside;
  for (const std::string& dir : dirs) {
    const bool covered = std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return inside(dir, r); });
    if (!covered && std::find(outside.begin(), outside.end(), dir) == outside.end()) outside.push_back(dir);
  }
  return outside;
}

}  // namespace gradsync::cli
