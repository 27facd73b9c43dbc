#include "describe.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "display.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/nn/presets.h"

namespace gradsync::cli {
namespace {

// Every value came from the server, so each is made fit for a terminal here, once.
void Line(std::string* out, absl::string_view label, absl::string_view value) {
  if (value.empty()) return;
  absl::StrAppend(out, absl::StrFormat("%-13s%s\n", absl::StrCat(label, ":"), TerminalSafe(std::string_view(value.data(), value.size()))));
}

std::string ModelText(const v1::ModelSpec& m) {
  std::string what = m.preset().empty() ? "mlp" : m.preset();
  if (nn::IsTransformerPreset(m.preset())) {
    if (auto config = nn::ResolveTransformerConfig(m); config.ok() && nn::ValidateTransformerConfig(*config).ok()) {
      what = absl::StrCat(m.preset(), " (", nn::DescribeTransformer(*config), ")");
    }
  } else if (m.mlp().hidden_dims_size() > 0) {
    absl::StrAppend(&what, " (hidden ", absl::StrJoin(m.mlp().hidden_dims(), "x"), ")");
  }
  absl::StrAppend(&what, ", device ", m.device().empty() ? "auto" : m.device());
  if (!m.precision().empty()) absl::StrAppend(&what, ", precision ", m.precision());
  if (!m.init_from().empty()) absl::StrAppend(&what, ", from ", m.init_from());
  return what;
}

std::string DataText(const v1::DataSpec& d) {
  std::string out;
  switch (d.source_case()) {
    case v1::DataSpec::kSynthetic: out = absl::StrCat("synthetic, ", d.synthetic().num_samples(), " samples"); break;
    case v1::DataSpec::kText: out = absl::StrCat("text ", absl::StrJoin(d.text().paths(), ", ")); break;
    case v1::DataSpec::kShards: out = absl::StrCat("shards ", absl::StrJoin(d.shards().paths(), ", ")); break;
    default: return "";
  }
  if (d.validation().disabled()) {
    absl::StrAppend(&out, "; no validation");
  } else if (d.validation().paths_size() > 0) {
    absl::StrAppend(&out, "; validation ", absl::StrJoin(d.validation().paths(), ", "));
  }
  return out;
}

std::string TrainingText(const v1::TrainingSpec& t) {
  std::string out = absl::StrFormat("%d ranks", t.world_size());
  if (t.min_workers() < t.max_workers()) {
    absl::StrAppend(&out, absl::StrFormat(" (elastic %d..%d)", t.min_workers(), t.max_workers()));
  }
  absl::StrAppend(&out, absl::StrFormat(", micro-batch %d x %d accumulated", t.micro_batch(), t.grad_accum_steps()));
  if (t.max_steps() > 0) absl::StrAppend(&out, ", ", t.max_steps(), " steps");
  if (t.epochs() > 0) absl::StrAppend(&out, ", ", t.epochs(), " epochs");
  absl::StrAppend(&out, absl::StrFormat(", lr %g", t.lr()));
  if (!t.lr_schedule().empty()) absl::StrAppend(&out, " ", t.lr_schedule());
  if (t.warmup_steps() > 0) absl::StrAppend(&out, " after ", t.warmup_steps(), " warm-up steps");
  absl::StrAppend(&out, ", seed ", t.seed());
  return out;
}

// "python3 train.py --epochs 2 in /data/run (env: HF_HOME)".
std::string ScriptText(const v1::ScriptSpec& script) {
  std::string out = absl::StrCat(absl::StrJoin(script.command(), " "), " in ", script.working_dir());
  if (!script.env().empty()) {
    std::vector<std::string> names;
    for (const auto& [name, value] : script.env()) names.push_back(name);
    std::sort(names.begin(), names.end());
    absl::StrAppend(&out, " (env: ", absl::StrJoin(names, ", "), ")");
  }
  return out;
}

std::string ScriptRanksText(const v1::TrainingSpec& t) {
  std::string out = absl::StrFormat("%d", t.world_size());
  if (t.min_workers() < t.max_workers()) {
    absl::StrAppend(&out, absl::StrFormat(" (elastic %d..%d)", t.min_workers(), t.max_workers()));
  }
  if (t.has_max_restarts()) absl::StrAppend(&out, ", at most ", t.max_restarts(), " restarts");
  return out;
}

std::string DdpText(const v1::DdpSpec& d) {
  std::vector<std::string> parts;
  if (!d.backend().empty()) parts.push_back(absl::StrCat("backend ", d.backend()));
  if (!d.sharding().empty()) parts.push_back(absl::StrCat("sharding ", d.sharding()));
  if (d.has_bucket_cap_mb()) parts.push_back(absl::StrFormat("buckets %g MB", d.bucket_cap_mb()));
  if (!d.grad_compression().empty()) parts.push_back(absl::StrCat("compression ", d.grad_compression()));
  return absl::StrJoin(parts, ", ");
}

std::string CheckpointText(const v1::CheckpointSpec& c) {
  std::vector<std::string> parts;
  if (c.every_steps() > 0) parts.push_back(absl::StrCat("every ", c.every_steps(), " steps"));
  if (c.every_seconds() > 0) parts.push_back(absl::StrCat("every ", HumanDuration(c.every_seconds())));
  if (parts.empty()) return "";
  if (c.has_keep()) parts.push_back(absl::StrCat("keep ", c.keep()));
  if (!c.dir().empty()) parts.push_back(absl::StrCat("in ", c.dir()));
  return absl::StrJoin(parts, ", ");
}

std::string TimesText(const v1::Job& job) {
  std::string out;
  if (job.has_start_time()) absl::StrAppend(&out, "started ", UtcTime(job.start_time()));
  if (job.has_end_time()) absl::StrAppend(&out, ", ended ", UtcTime(job.end_time()));
  if (job.has_start_time()) absl::StrAppend(&out, " (", HumanDuration(WallSeconds(job)), ")");
  return out;
}

std::string ProgressText(const v1::Job& job) {
  if (job.has_result()) {
    const v1::JobResult& r = job.result();
    return absl::StrFormat("step %d, loss %.4f -> %.4f%s", r.global_step(), r.initial_loss(), r.final_loss(),
                           r.has_validation_loss() ? absl::StrFormat(", val loss %.4f", r.validation_loss()) : "");
  }
  if (!job.has_progress()) return "";
  const v1::JobProgress& p = job.progress();
  return absl::StrFormat("step %d/%d, epoch %d, loss %.4f%s", p.step(), p.total_steps(), p.epoch(), p.loss(),
                         p.has_validation_loss() ? absl::StrFormat(", val loss %.4f", p.validation_loss()) : "");
}

void CheckpointTable(std::string* out, const v1::Job& job) {
  if (job.checkpoints().empty()) return;
  absl::StrAppend(out, "Checkpoints:\n",
                  absl::StrFormat("  %-8s %-6s %-10s %-21s %s\n", "STEP", "RANKS", "SIZE", "COMMITTED", "DIR"));
  for (const v1::CheckpointManifest& c : job.checkpoints()) {
    absl::StrAppend(out, absl::StrFormat("  %-8d %-6d %-10s %-21s %s\n", c.step(), c.world_size(),
                                         HumanBytes(c.total_bytes()), UtcTime(c.commit_time()), TerminalSafe(c.dir())));
  }
}

void EventTable(std::string* out, const v1::Job& job) {
  if (job.events().empty()) return;
  absl::StrAppend(out, "Events:\n", absl::StrFormat("  %-21s %-20s %s\n", "TIME", "TYPE", "MESSAGE"));
  for (const v1::JobEvent& e : job.events()) {
    absl::StrAppend(out, absl::StrFormat("  %-21s %-20s %s\n", UtcTime(e.time()), TerminalSafe(e.type()),
                                         TerminalSafe(e.message())));
  }
}

// "2 live, 1 from a checkpoint; 37 steps lost; 6.4s recovering (the last 1.9s)"; empty before a
// failure.
std::string RecoveryText(const v1::RecoveryStats& r) {
  if (r.live_recoveries() + r.checkpoint_recoveries() == 0) return "";
  return absl::StrFormat("%d live, %d from a checkpoint or the start; %d step%s lost; %.1fs recovering (the last %.1fs)",
                         r.live_recoveries(), r.checkpoint_recoveries(), r.steps_lost(), r.steps_lost() == 1 ? "" : "s",
                         r.recovery_seconds(), r.last_recovery_seconds());
}

}  // namespace

std::string DescribeJob(const v1::Job& job) {
  std::string out;
  Line(&out, "Name", job.name());
  Line(&out, "State",
       absl::StrCat(v1::JobState_Name(job.state()), job.state_reason().empty() ? "" : ": " + job.state_reason()));
  if (job.spec().has_script()) {
    Line(&out, "Script", ScriptText(job.spec().script()));
    Line(&out, "Ranks", ScriptRanksText(job.spec().training()));
  } else {
    Line(&out, "Model", ModelText(job.spec().model()));
    Line(&out, "Data", DataText(job.spec().data()));
    Line(&out, "Training", TrainingText(job.spec().training()));
  }
  Line(&out, "DDP", DdpText(job.spec().ddp()));
  Line(&out, "Checkpoint", CheckpointText(job.spec().checkpoint()));
  Line(&out, "Created", job.has_create_time() ? UtcTime(job.create_time()) : "");
  Line(&out, "Ran", TimesText(job));
  Line(&out, "Generations",
       job.generation() > 0
           ? absl::StrFormat("%d (%d restart%s)", job.generation(), job.restarts(), job.restarts() == 1 ? "" : "s")
           : "");
  Line(&out, "Recovery", RecoveryText(job.recovery()));
  Line(&out, "Progress", ProgressText(job));
  Line(&out, "Weights", job.result().weights_path());
  Line(&out, "Digest", job.result().param_digest());
  CheckpointTable(&out, job);
  EventTable(&out, job);
  return out;
}

}  // namespace gradsync::cli
