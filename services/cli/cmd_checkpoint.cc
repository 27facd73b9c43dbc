// gradsync checkpoint inspect | diff | list | save: reads checkpoint directories and rank parts on
// this machine (libs/ckpt); `list JOB` asks the coordinator for a job's committed checkpoints, and
// `save JOB` asks it for a new one (CheckpointJob), waiting for its commit with --wait.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "display.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/core/args.h"
#include "gradsync/core/shutdown.h"
#include "job_client.h"
#include "output_format.h"

namespace gradsync::cli {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

int Usage(const std::string& problem) {
  std::fprintf(stderr, "%s%s", problem.empty() ? "" : (problem + "\n").c_str(), GroupUsage("checkpoint").c_str());
  return 2;
}

int Failure(const absl::Status& s) {
  std::fprintf(stderr, "gradsync checkpoint: %s\n", std::string(s.message()).c_str());
  return 1;
}

// --- formatting -------------------------------------------------------------------------------

std::string Shape(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

std::string CommitTime(const v1::CheckpointManifest& m) {
  if (!m.has_commit_time() || m.commit_time().seconds() == 0) return "-";
  return google::protobuf::util::TimeUtil::ToString(m.commit_time());
}

// A message as a JSON value (protobuf JSON mapping).
Value MessageValue(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.always_print_primitive_fields = true;
  Value out;
  if (google::protobuf::util::MessageToJsonString(message, &json, print).ok()) {
    (void)google::protobuf::util::JsonStringToMessage(json, &out);
  }
  return out;
}

// JSON has no infinities; a NaN or infinite difference is written as a string.
Value Number(double v) {
  Value out;
  if (std::isfinite(v)) {
    out.set_number_value(v);
  } else {
    out.set_string_value(std::isnan(v) ? "nan" : "inf");
  }
  return out;
}

// `value` as JSON, or as YAML for -o yaml.
void PrintJson(const Value& value, OutputFormat format) {
  std::string out;
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(value, &out, print);
  std::printf("%s", InFormat(out, format).c_str());
}

Value StateValue(const ckpt::RankState& s) {
  Value out;
  auto& f = *out.mutable_struct_value()->mutable_fields();
  f["jobId"].set_string_value(s.job_id);
  f["generation"].set_number_value(s.generation);
  f["rank"].set_number_value(s.rank);
  f["worldSize"].set_number_value(s.world_size);
  f["step"].set_number_value(static_cast<double>(s.step));
  f["epoch"].set_number_value(s.epoch);
  f["cursor"].set_number_value(static_cast<double>(s.cursor));
  f["seed"].set_string_value(absl::StrCat(s.seed));  // 64 bits do not fit a JSON number
  f["adamStep"].set_number_value(static_cast<double>(s.adam_step));
  f["optimizerState"].set_bool_value(!s.adam_m.empty());
  f["params"].set_number_value(static_cast<double>(s.layout.total_numel()));
  f["shardBegin"].set_number_value(static_cast<double>(s.shard_begin));
  f["shardElements"].set_number_value(static_cast<double>(s.params.size()));
  f["model"] = MessageValue(s.model);
  ListValue* tensors = f["tensors"].mutable_list_value();
  for (const nn::ParamInfo& p : s.layout.params()) {
    auto& t = *tensors->add_values()->mutable_struct_value()->mutable_fields();
    t["name"].set_string_value(p.name);
    ListValue* shape = t["shape"].mutable_list_value();
    for (int64_t d : p.shape) shape->add_values()->set_number_value(static_cast<double>(d));
    t["numel"].set_number_value(static_cast<double>(p.numel));
  }
  return out;
}

std::string StateText(const ckpt::RankState& s) {
  std::string out = absl::StrFormat("  %-11s %s (generation %d)\n", "job", s.job_id, s.generation);
  absl::StrAppendFormat(&out, "  %-11s %d of %d\n", "rank", s.rank, s.world_size);
  absl::StrAppendFormat(&out, "  %-11s %d (epoch %d, cursor %d)\n", "step", s.step, s.epoch, s.cursor);
  absl::StrAppendFormat(&out, "  %-11s %d\n", "seed", s.seed);
  absl::StrAppendFormat(&out, "  %-11s %s\n", "optimizer",
                        s.adam_m.empty() ? "none" : absl::StrCat("AdamW moments, step ", s.adam_step));
  absl::StrAppendFormat(&out, "  %-11s %s\n", "model", s.model.preset().empty() ? "-" : s.model.preset());
  absl::StrAppendFormat(&out, "  %-11s %d tensors, %d parameters\n", "params", s.layout.size(), s.layout.total_numel());
  if (!s.whole()) {
    absl::StrAppendFormat(&out, "  %-11s elements [%d, %d) of the flat buffers\n", "shard", s.shard_begin,
                          s.shard_begin + static_cast<int64_t>(s.params.size()));
  }
  size_t width = 0;
  for (const nn::ParamInfo& p : s.layout.params()) width = std::max(width, p.name.size());
  for (const nn::ParamInfo& p : s.layout.params()) {
    absl::StrAppendFormat(&out, "    %-*s  %-16s %d\n", static_cast<int>(width), p.name, Shape(p.shape), p.numel);
  }
  return out;
}

// --- reading ------------------------------------------------------------------------------------

bool IsDir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

// A directory `gradsync export` wrote (model.safetensors, no manifest).
bool IsExportDir(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path dir(path);
  return std::filesystem::exists(dir / ckpt::kSafetensorsFile, ec) &&
         !std::filesystem::exists(dir / ckpt::kManifestFile, ec);
}

// Whether `path` is a file that starts as a rank part does.
bool IsRankPart(const std::string& path) {
  constexpr char kPartMagic[] = "GSCKPART";
  char head[sizeof(kPartMagic) - 1] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return true;  // ReadRankPart says why it cannot be read
  const size_t n = std::fread(head, 1, sizeof(head), f);
  std::fclose(f);
  return n == sizeof(head) && std::equal(head, head + sizeof(head), kPartMagic);
}

// A weights file as a state of step 0 without optimizer state.
absl::StatusOr<ckpt::RankState> LoadWeightsState(const std::string& path) {
  absl::StatusOr<ckpt::WeightsFile> w = ckpt::ReadModelWeights(path);
  if (!w.ok()) return w.status();
  ckpt::RankState s;
  s.model = std::move(w->model);
  s.layout = std::move(w->layout);
  s.params = std::move(w->values);
  return s;
}

// The whole state from a checkpoint directory (every part checked against its manifest, rank 0's
// values where parts overlap), a part file (its shard) or a weights file. An uncommitted
// directory's rank-00000.bin is read on its own checks, with a note on stderr.
absl::StatusOr<ckpt::RankState> LoadRankZero(const std::string& path) {
  if (!IsDir(path)) return IsRankPart(path) ? ckpt::ReadRankPart(path) : LoadWeightsState(path);
  if (IsExportDir(path)) return LoadWeightsState(path);
  absl::StatusOr<v1::CheckpointManifest> manifest = ckpt::ReadManifest(path);
  if (absl::IsNotFound(manifest.status())) {
    std::fprintf(stderr, "note: %s has no manifest (uncommitted); reading %s without manifest checks\n", path.c_str(),
                 ckpt::PartFileName(0).c_str());
    return ckpt::ReadRankPart((std::filesystem::path(path) / ckpt::PartFileName(0)).string());
  }
  if (!manifest.ok()) return manifest.status();
  manifest->set_dir(path);
  return ckpt::ReadCheckpointState(*manifest, 0);
}

// --- inspect ------------------------------------------------------------------------------------

int InspectWeights(const std::string& path, OutputFormat format) {
  const bool json = format != OutputFormat::kTable;
  absl::StatusOr<ckpt::RankState> state = LoadWeightsState(path);
  if (!state.ok()) return Failure(state.status());
  if (json) {
    Value out;
    auto& f = *out.mutable_struct_value()->mutable_fields();
    f["path"].set_string_value(path);
    f["weights"] = StateValue(*state);
    PrintJson(out, format);
    return 0;
  }
  std::string text = StateText(*state);
  text = text.substr(text.find("  model"));  // a weights file has no job, rank, step or optimizer
  std::printf("weights %s\n%s", path.c_str(), text.c_str());
  return 0;
}

int InspectPart(const std::string& path, OutputFormat format) {
  const bool json = format != OutputFormat::kTable;
  if (!IsRankPart(path)) return InspectWeights(path, format);
  absl::StatusOr<ckpt::RankState> state = ckpt::ReadRankPart(path);
  if (!state.ok()) return Failure(state.status());
  std::error_code ec;
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (json) {
    Value out;
    auto& f = *out.mutable_struct_value()->mutable_fields();
    f["path"].set_string_value(path);
    f["bytes"].set_number_value(static_cast<double>(bytes));
    f["part"] = StateValue(*state);
    PrintJson(out, format);
  } else {
    std::printf("part %s (%s, checksum ok)\n%s", path.c_str(), HumanBytes(bytes).c_str(), StateText(*state).c_str());
  }
  return 0;
}

int InspectDir(const std::string& dir, OutputFormat format) {
  const bool json = format != OutputFormat::kTable;
  absl::StatusOr<v1::CheckpointManifest> manifest = ckpt::ReadManifest(dir);
  if (!manifest.ok()) return Failure(manifest.status());
  const absl::Status verified = ckpt::VerifyCheckpoint(dir);
  absl::StatusOr<ckpt::RankState> rank0 = LoadRankZero(dir);
  if (json) {
    Value out;
    auto& f = *out.mutable_struct_value()->mutable_fields();
    f["path"].set_string_value(dir);
    f["manifest"] = MessageValue(*manifest);
    f["verified"].set_bool_value(verified.ok());
    if (!verified.ok()) f["verifyError"].set_string_value(std::string(verified.message()));
    if (rank0.ok()) {
      f["rank0"] = StateValue(*rank0);
    } else {
      f["rank0Error"].set_string_value(std::string(rank0.status().message()));
    }
    PrintJson(out, format);
    return verified.ok() && rank0.ok() ? 0 : 1;
  }
  const v1::CheckpointManifest& m = *manifest;
  std::string out = absl::StrFormat("checkpoint %s\n", dir);
  absl::StrAppendFormat(&out, "  %-11s %s (generation %d)\n", "job", m.job_id(), m.generation());
  absl::StrAppendFormat(&out, "  %-11s %d (epoch %d, cursor %d)\n", "step", m.step(), m.epoch(), m.cursor());
  absl::StrAppendFormat(&out, "  %-11s %d\n", "world size", m.world_size());
  absl::StrAppendFormat(&out, "  %-11s %s\n", "committed",
                        CommitTime(m) == "-" ? "-"
                                             : absl::StrFormat("%s (%.2f s after the step boundary)", CommitTime(m),
                                                               m.duration_seconds()));
  absl::StrAppendFormat(&out, "  %-11s %s\n", "bytes", HumanBytes(m.total_bytes()));
  for (const v1::CheckpointPart& p : m.parts()) {
    absl::StrAppendFormat(&out, "    rank %-4d %-16s %12s  %s\n", p.rank(), p.file(), HumanBytes(p.bytes()),
                          p.checksum());
  }
  absl::StrAppendFormat(&out, "  %-11s %s\n", "verified",
                        verified.ok() ? "yes" : absl::StrCat("NO: ", verified.message()));
  if (rank0.ok()) {
    absl::StrAppendFormat(&out, "rank 0\n%s", StateText(*rank0));
  } else {
    absl::StrAppendFormat(&out, "rank 0: %s\n", rank0.status().message());
  }
  std::printf("%s", out.c_str());
  return verified.ok() && rank0.ok() ? 0 : 1;
}

int Inspect(const Args& args, OutputFormat format) {
  if (args.positional.size() != 2) return Usage("gradsync checkpoint inspect: expected one PATH");
  const std::string& path = args.positional[1];
  if (IsDir(path)) return IsExportDir(path) ? InspectWeights(path, format) : InspectDir(path, format);
  return InspectPart(path, format);
}

// --- diff ---------------------------------------------------------------------------------------

int Diff(const Args& args, OutputFormat format) {
  const bool json = format != OutputFormat::kTable;
  if (args.positional.size() != 3) return Usage("gradsync checkpoint diff: expected two paths A and B");
  const std::string& path_a = args.positional[1];
  const std::string& path_b = args.positional[2];
  absl::StatusOr<ckpt::RankState> a = LoadRankZero(path_a);
  if (!a.ok()) return Failure(a.status());
  absl::StatusOr<ckpt::RankState> b = LoadRankZero(path_b);
  if (!b.ok()) return Failure(b.status());
  absl::StatusOr<std::vector<ckpt::TensorDiff>> diff = ckpt::DiffParams(*a, *b);
  if (!diff.ok()) return Failure(diff.status());

  double max_abs = 0.0, max_rel = 0.0;
  int identical = 0;
  for (const ckpt::TensorDiff& d : *diff) {
    max_abs = std::max(max_abs, d.max_abs);
    max_rel = std::max(max_rel, d.max_rel);
    if (d.max_abs == 0.0) ++identical;
  }
  if (json) {
    Value out;
    auto& f = *out.mutable_struct_value()->mutable_fields();
    f["a"].set_string_value(path_a);
    f["b"].set_string_value(path_b);
    f["stepA"].set_number_value(static_cast<double>(a->step));
    f["stepB"].set_number_value(static_cast<double>(b->step));
    ListValue* tensors = f["tensors"].mutable_list_value();
    for (const ckpt::TensorDiff& d : *diff) {
      auto& t = *tensors->add_values()->mutable_struct_value()->mutable_fields();
      t["name"].set_string_value(d.name);
      t["numel"].set_number_value(static_cast<double>(d.numel));
      t["maxAbs"] = Number(d.max_abs);
      t["maxRel"] = Number(d.max_rel);
    }
    f["maxAbs"] = Number(max_abs);
    f["maxRel"] = Number(max_rel);
    f["identical"].set_bool_value(identical == static_cast<int>(diff->size()));
    PrintJson(out, format);
    return 0;
  }
  size_t width = std::string("overall").size();
  for (const ckpt::TensorDiff& d : *diff) width = std::max(width, d.name.size());
  const int w = static_cast<int>(width);
  std::string out = absl::StrFormat("A %s (step %d)\nB %s (step %d)\n", path_a, a->step, path_b, b->step);
  absl::StrAppendFormat(&out, "%-*s  %12s  %12s\n", w, "tensor", "max abs", "max rel");
  for (const ckpt::TensorDiff& d : *diff) {
    absl::StrAppendFormat(&out, "%-*s  %12.6g  %12.6g\n", w, d.name, d.max_abs, d.max_rel);
  }
  absl::StrAppendFormat(&out, "%-*s  %12.6g  %12.6g  (%d of %d tensors identical)\n", w, "overall", max_abs, max_rel,
                        identical, diff->size());
  std::printf("%s", out.c_str());
  return 0;
}

// --- list ---------------------------------------------------------------------------------------

struct Listed {
  v1::CheckpointManifest manifest;
  bool checked = false;  // false when the directory is not on this machine
  absl::Status verified;
};

int PrintList(const std::vector<Listed>& rows, const std::string& where, OutputFormat format) {
  const bool json = format != OutputFormat::kTable;
  bool all_ok = true;
  for (const Listed& r : rows) all_ok = all_ok && r.verified.ok();
  if (json) {
    Value out;
    ListValue* list = out.mutable_list_value();
    for (const Listed& r : rows) {
      Value* v = list->add_values();
      *v = MessageValue(r.manifest);
      auto& f = *v->mutable_struct_value()->mutable_fields();
      if (r.checked) {
        f["verified"].set_bool_value(r.verified.ok());
      } else {
        f["verified"].set_null_value(google::protobuf::NULL_VALUE);
      }
      if (!r.verified.ok()) f["verifyError"].set_string_value(std::string(r.verified.message()));
    }
    PrintJson(out, format);
    return all_ok ? 0 : 1;
  }
  if (rows.empty()) {
    std::printf("no committed checkpoints in %s\n", where.c_str());
    return 0;
  }
  std::string out = absl::StrFormat("%-10s %-6s %-10s %-6s %-11s %-21s %-9s %s\n", "STEP", "EPOCH", "CURSOR", "WORLD",
                                    "BYTES", "COMMITTED", "VERIFIED", "DIR");
  for (const Listed& r : rows) {
    const v1::CheckpointManifest& m = r.manifest;
    absl::StrAppendFormat(&out, "%-10d %-6d %-10d %-6d %-11s %-21s %-9s %s\n", m.step(), m.epoch(), m.cursor(),
                          m.world_size(), HumanBytes(m.total_bytes()), CommitTime(m),
                          !r.checked ? "-" : (r.verified.ok() ? "yes" : "NO"), m.dir());
  }
  for (const Listed& r : rows) {
    if (!r.verified.ok()) absl::StrAppendFormat(&out, "step %d: %s\n", r.manifest.step(), r.verified.message());
  }
  std::printf("%s", out.c_str());
  return all_ok ? 0 : 1;
}

int List(const Args& args, OutputFormat format) {
  const bool by_root = args.Has("root");
  if (by_root != (args.positional.size() == 1) || args.positional.size() > 2) {
    return Usage("gradsync checkpoint list: give either --root DIR or JOB");
  }
  std::vector<Listed> rows;
  std::string where;
  if (by_root) {
    where = args.Get("root");
    if (!IsDir(where)) return Failure(absl::NotFoundError(absl::StrCat(where, ": no such directory")));
    for (v1::CheckpointManifest& m : ckpt::ListCommitted(where)) {
      const std::string dir = m.dir();
      rows.push_back({std::move(m), true, ckpt::VerifyCheckpoint(dir)});
    }
  } else {
    absl::StatusOr<std::unique_ptr<JobClient>> client = ConnectJobClient(args);
    if (!client.ok()) return Failure(client.status());
    absl::StatusOr<v1::Job> job = (*client)->Get(args.positional[1]);
    if (!job.ok()) return Failure(job.status());
    where = job->name();
    for (const v1::CheckpointManifest& m : job->checkpoints()) {
      // The coordinator may run elsewhere: verify only what this machine can see.
      const bool local = IsDir(m.dir());
      rows.push_back({m, local, local ? ckpt::VerifyCheckpoint(m.dir()) : absl::OkStatus()});
    }
  }
  return PrintList(rows, where, format);
}

// --- save ---------------------------------------------------------------------------------------

// Whether `m` was committed after `before` (nullptr: none was).
bool CommittedAfter(const v1::CheckpointManifest& m, const v1::CheckpointManifest* before) {
  if (before == nullptr) return true;
  if (m.step() != before->step()) return m.step() > before->step();
  return google::protobuf::util::TimeUtil::TimestampToNanoseconds(m.commit_time()) >
         google::protobuf::util::TimeUtil::TimestampToNanoseconds(before->commit_time());
}

// Follows the job until a checkpoint newer than `before` is committed (returned), the job ends
// (nullopt) or Ctrl-C (CANCELLED).
absl::StatusOr<std::optional<v1::CheckpointManifest>> AwaitCheckpoint(JobClient& client, const std::string& job,
                                                                      const v1::CheckpointManifest* before,
                                                                      v1::JobState* ended) {
  InstallShutdownHandlers();
  std::atomic<bool> stop{false};
  std::atomic<bool> interrupted{false};
  std::thread sig([&] {
    while (!stop && !WaitForShutdown(absl::Milliseconds(100))) {
    }
    if (!stop) interrupted = true;
    stop = true;
  });
  std::optional<v1::CheckpointManifest> found;
  absl::StatusOr<v1::Job> last = client.Watch(
      job,
      [&](const v1::Job& j) {
        if (!found.has_value() && !j.checkpoints().empty() && CommittedAfter(*j.checkpoints().rbegin(), before)) {
          found = *j.checkpoints().rbegin();
          stop = true;
        }
      },
      &stop);
  stop = true;
  sig.join();
  if (found.has_value()) return found;
  if (interrupted) return absl::CancelledError("interrupted");
  if (!last.ok()) return last.status();
  *ended = last->state();
  return std::nullopt;
}

int Save(const Args& args, OutputFormat format) {
  if (args.positional.size() != 2) return Usage("gradsync checkpoint save: expected one JOB");
  absl::StatusOr<std::unique_ptr<JobClient>> client = ConnectJobClient(args);
  if (!client.ok()) return Failure(client.status());
  absl::StatusOr<v1::Job> asked = (*client)->Checkpoint(args.positional[1]);
  if (!asked.ok()) return Failure(asked.status());
  if (!args.Has("wait")) {
    if (format != OutputFormat::kTable) {
      PrintJson(MessageValue(*asked), format);
    } else {
      std::printf("%s: checkpoint requested at the next step boundary\n", asked->name().c_str());
    }
    return 0;
  }
  std::fprintf(stderr, "%s: checkpoint requested; waiting for its commit\n", asked->name().c_str());
  const v1::CheckpointManifest* before = asked->checkpoints().empty() ? nullptr : &*asked->checkpoints().rbegin();
  v1::JobState ended = v1::JOB_STATE_UNSPECIFIED;
  absl::StatusOr<std::optional<v1::CheckpointManifest>> found =
      AwaitCheckpoint(**client, asked->name(), before, &ended);
  if (absl::IsCancelled(found.status())) return 130;
  if (!found.ok()) return Failure(found.status());
  if (!found->has_value()) {
    std::fprintf(stderr, "gradsync checkpoint save: %s ended %s before a new checkpoint was committed\n",
                 asked->name().c_str(), v1::JobState_Name(ended).c_str());
    return 1;
  }
  const v1::CheckpointManifest& m = **found;
  if (format != OutputFormat::kTable) {
    PrintJson(MessageValue(m), format);
  } else {
    std::printf("%s: checkpoint at step %lld committed in %s\n", asked->name().c_str(),
                static_cast<long long>(m.step()), m.dir().c_str());
  }
  return 0;
}

// `gradsync NAME`'s arguments parsed with its row's options and -o read, then `body`.
int CheckpointSubcommand(const char* name, int (*body)(const Args&, OutputFormat),
                         const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs(name, argv);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  absl::StatusOr<OutputFormat> format = OutputFormatOf(name, *args);
  if (!format.ok()) return Usage(std::string(format.status().message()));
  return body(*args, *format);
}

int CheckpointInspectCommand(const std::vector<std::string>& argv) {
  return CheckpointSubcommand("checkpoint inspect", Inspect, argv);
}
int CheckpointDiffCommand(const std::vector<std::string>& argv) {
  return CheckpointSubcommand("checkpoint diff", Diff, argv);
}
int CheckpointListCommand(const std::vector<std::string>& argv) {
  return CheckpointSubcommand("checkpoint list", List, argv);
}
int CheckpointSaveCommand(const std::vector<std::string>& argv) {
  return CheckpointSubcommand("checkpoint save", Save, argv);
}

}  // namespace

int CheckpointCommand(const std::vector<std::string>& argv) { return RunSubcommand("checkpoint", argv); }

// Its rows of the command table (command_table.h).
std::vector<Command> CheckpointRows() {
  using F = OutputFormat;
  std::vector<Command> t;
  t.push_back({.name = "checkpoint inspect",
               .synopsis = "PATH",
               .summary = "a checkpoint's manifest, parts and tensors, verified",
               .example = "gradsync checkpoint inspect /tmp/gradsync-local/artifacts/mlp-1a2b3/step-00000100",
               .details = "PATH: a checkpoint directory (rank 0's part is read), a rank part file, or a weights file\n"
                          "(weights.bin, or an export of gradsync export: safetensors or llm.c). Exit 0 when\n"
                          "everything read is intact, 1 when something is missing or corrupt.\n",
               .options = {Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = CheckpointInspectCommand});
  t.push_back({.name = "checkpoint diff",
               .synopsis = "A B",
               .summary = "per-tensor differences (max abs and rel) between two checkpoints or weights files",
               .example = "gradsync checkpoint diff run1/weights.bin run2/weights.bin",
               .options = {Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = CheckpointDiffCommand});
  t.push_back({.name = "checkpoint list",
               .synopsis = "(--root DIR | JOB)",
               .summary = "committed checkpoints, verified when their files are on this machine",
               .example = "gradsync checkpoint list jobs/mlp-1a2b3",
               .details = "--root DIR lists the checkpoints under DIR; JOB asks the coordinator for the job's.\n",
               .options = Plus({{"root", "DIR"}, Output()}, ConnectionOptions()),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = CheckpointListCommand});
  t.push_back({.name = "checkpoint save",
               .synopsis = "JOB [--wait]",
               .summary = "ask a running job to checkpoint at its next step boundary",
               .example = "gradsync checkpoint save jobs/mlp-1a2b3 --wait",
               .details = "With --wait, waits until the checkpoint is committed and prints its step and directory\n"
                          "(exit 1 when the job ends first without one).\n",
               .options = Plus({{"wait", ""}, Output()}, ConnectionOptions()),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = CheckpointSaveCommand});
  return t;
}

}  // namespace gradsync::cli
