#include "display.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "charts.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "metrics_client.h"

namespace gradsync::cli {
namespace {

std::string Bar(double fraction, int width) {
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width);
  return absl::StrCat(std::string(filled, '#'), std::string(width - filled, '.'));
}

std::string Rate(double per_second) {
  if (per_second >= 1e6) return absl::StrFormat("%.2fM", per_second / 1e6);
  if (per_second >= 1e3) return absl::StrFormat("%.1fK", per_second / 1e3);
  return absl::StrFormat("%.0f", per_second);
}

// " | val loss X (step S)" once the job has a validation loss, else empty.
std::string ValidationText(const v1::JobProgress& p) {
  if (!p.has_validation_loss()) return "";
  return absl::StrFormat(" | val loss %.4f (step %d)", p.validation_loss(), p.validation_step());
}

// Each figure's largest value over the ranks: what the fullest rank holds (shards differ by a
// float or so when the parameter count does not divide).
v1::RankMemory MostOnAnyRank(const v1::JobResult& r) {
  v1::RankMemory most;
  for (const v1::RankMemory& m : r.memory()) {
    most.set_param_bytes(std::max(most.param_bytes(), m.param_bytes()));
    most.set_grad_bytes(std::max(most.grad_bytes(), m.grad_bytes()));
    most.set_optimizer_bytes(std::max(most.optimizer_bytes(), m.optimizer_bytes()));
    most.set_peak_rss_bytes(std::max(most.peak_rss_bytes(), m.peak_rss_bytes()));
    most.set_peak_device_bytes(std::max(most.peak_device_bytes(), m.peak_device_bytes()));
  }
  return most;
}

std::string MemoryText(const v1::JobResult& r) {
  if (r.memory().empty()) return "";
  const v1::RankMemory m = MostOnAnyRank(r);
  return absl::StrFormat("  memory      %s params, %s grads, %s optimizer on the fullest rank; peak RSS %s%s\n",
                         HumanBytes(m.param_bytes()), HumanBytes(m.grad_bytes()), HumanBytes(m.optimizer_bytes()),
                         HumanBytes(m.peak_rss_bytes()),
                         m.peak_device_bytes() > 0 ? ", device " + HumanBytes(m.peak_device_bytes()) : "");
}

// Each rank's memory as numbers (not protobuf JSON's int64 strings), peakDeviceBytes on GPU ranks.
google::protobuf::Value MemoryJson(const v1::JobResult& r) {
  google::protobuf::Value list;
  for (const v1::RankMemory& m : r.memory()) {
    auto& f = *list.mutable_list_value()->add_values()->mutable_struct_value()->mutable_fields();
    f["rank"].set_number_value(m.rank());
    f["paramBytes"].set_number_value(static_cast<double>(m.param_bytes()));
    f["gradBytes"].set_number_value(static_cast<double>(m.grad_bytes()));
    f["optimizerBytes"].set_number_value(static_cast<double>(m.optimizer_bytes()));
    f["peakRssBytes"].set_number_value(static_cast<double>(m.peak_rss_bytes()));
    if (m.peak_device_bytes() > 0) f["peakDeviceBytes"].set_number_value(static_cast<double>(m.peak_device_bytes()));
  }
  return list;
}

}  // namespace

TransferProgress::TransferProgress(FILE* out, std::string name, int64_t total)
    : out_(out),
      name_(std::move(name)),
      total_(total),
      shown_(total >= kLargeTransferBytes),
      tty_(::isatty(::fileno(out)) != 0) {}

void TransferProgress::Update(int64_t done) {
  done_ = done;
  if (!shown_) return;
  if (tty_) {
    // A redraw per MiB at most: a terminal is slower than a loopback transfer.
    if (done_ - last_draw_ < (1 << 20) && done_ < total_) return;
    last_draw_ = done_;
    Show();
    return;
  }
  const int tenths = static_cast<int>(std::min<int64_t>(10, done_ * 10 / total_));
  if (tenths <= tenths_shown_) return;
  tenths_shown_ = tenths;
  Show();
}

void TransferProgress::Show() {
  const double percent = 100.0 * static_cast<double>(done_) / static_cast<double>(total_);
  std::fprintf(out_, "%s%s  %s / %s  %3.0f%%%s", tty_ ? "\r\033[K" : "", name_.c_str(), HumanBytes(done_).c_str(),
               HumanBytes(total_).c_str(), percent, tty_ ? "" : "\n");
  std::fflush(out_);
}

void TransferProgress::Finish() {
  if (!shown_) return;
  if (tty_) {
    Show();
    std::fputc('\n', out_);
  } else if (tenths_shown_ < 10) {
    Show();
  }
  std::fflush(out_);
}

std::string HumanBytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < (1 << 20)) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  if (bytes < (1LL << 30)) return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  return absl::StrFormat("%.2f GiB", bytes / 1073741824.0);
}

ProgressView::ProgressView(FILE* out) : out_(out), tty_(::isatty(::fileno(out)) != 0) {}

constexpr int kChartWidth = 60;
constexpr int kChartHeight = 8;

void ProgressView::Erase() {
  // Up to the first line of the live block, then clear to the end of the screen.
  if (drawn_lines_ > 0) std::fprintf(out_, "\033[%dA\r\033[J", drawn_lines_);
  drawn_lines_ = 0;
}

void ProgressView::Update(const v1::Job& job) {
  if (events_shown_ < job.events_size() && tty_) Erase();
  for (; events_shown_ < job.events_size(); ++events_shown_) {
    const v1::JobEvent& e = job.events(events_shown_);
    std::fprintf(out_, "[%s] %s\n", e.type().c_str(), e.message().c_str());
  }
  const v1::JobProgress& p = job.progress();
  if (!job.has_progress() || p.step() == last_step_ || p.total_steps() <= 0) {
    std::fflush(out_);
    return;
  }
  last_step_ = p.step();
  losses_.emplace_back(static_cast<double>(p.step()), p.loss());
  const double frac = static_cast<double>(p.step()) / static_cast<double>(p.total_steps());
  const std::string val = ValidationText(p);
  if (tty_) {
    Erase();
    const std::string chart = TerminalChart(losses_, kChartWidth, kChartHeight, "step");
    std::fprintf(out_, "[%s] %5.1f%% step %lld/%lld | epoch %d | loss %.4f%s | %s samples/s | %s tokens/s\n%s",
                 Bar(frac, 24).c_str(), 100.0 * frac, static_cast<long long>(p.step()),
                 static_cast<long long>(p.total_steps()), p.epoch(), p.loss(), val.c_str(),
                 Rate(p.samples_per_second()).c_str(), Rate(p.tokens_per_second()).c_str(), chart.c_str());
    drawn_lines_ = 1 + static_cast<int>(std::count(chart.begin(), chart.end(), '\n'));
  } else {
    std::fprintf(out_, "step %lld/%lld (%.0f%%) | epoch %d | loss %.4f%s | %s samples/s | %s tokens/s\n",
                 static_cast<long long>(p.step()), static_cast<long long>(p.total_steps()), 100.0 * frac, p.epoch(),
                 p.loss(), val.c_str(), Rate(p.samples_per_second()).c_str(), Rate(p.tokens_per_second()).c_str());
  }
  std::fflush(out_);
}

absl::StatusOr<v1::JobSeries> ProgressView::UseSeriesFrom(const std::string& metrics_api, const std::string& token,
                                                          const std::string& job) {
  auto series = FetchSeries(metrics_api, token, job);
  if (!series.ok()) return series.status();
  std::vector<std::pair<double, double>> curve;
  for (const auto& s : series->steps()) curve.emplace_back(static_cast<double>(s.step()), s.loss());
  if (curve.size() >= 2) losses_ = std::move(curve);
  return series;
}

void ProgressView::Finish() {
  // On a terminal the live chart stays on screen; elsewhere the curve is printed once.
  if (!tty_ && losses_.size() >= 2) {
    std::fprintf(out_, "loss curve:\n%s", TerminalChart(losses_, kChartWidth, kChartHeight, "step").c_str());
  }
  drawn_lines_ = 0;
  std::fflush(out_);
}

std::string SummaryText(const v1::Job& job) {
  const v1::JobResult& r = job.result();
  std::string out = absl::StrFormat("job %s (%s): %s\n", job.id(), job.spec().name(), v1::JobState_Name(job.state()));
  if (job.state() != v1::SUCCEEDED) {
    absl::StrAppend(&out, "  reason      ", job.state_reason(), "\n");
    // What a failed or cancelled job reached; a cancelled job's ranks may also have saved weights.
    if (r.global_step() > 0) {
      absl::StrAppend(&out, absl::StrFormat("  reached     step %d, loss %.4f -> %.4f\n", r.global_step(),
                                            r.initial_loss(), r.final_loss()));
    }
    if (!r.weights_path().empty()) absl::StrAppend(&out, absl::StrFormat("  weights     %s\n", r.weights_path()));
    return out;
  }
  absl::StrAppend(&out, absl::StrFormat("  steps       %d on %d ranks in %.1fs\n", r.global_step(), r.world_size(),
                                        r.train_seconds()));
  absl::StrAppend(&out, absl::StrFormat("  loss        %.4f -> %.4f\n", r.initial_loss(), r.final_loss()));
  if (r.has_validation_loss()) absl::StrAppend(&out, absl::StrFormat("  val loss    %.4f\n", r.validation_loss()));
  absl::StrAppend(&out, absl::StrFormat("  throughput  %s samples/s (steady state)\n", Rate(r.samples_per_second())));
  absl::StrAppend(&out, MemoryText(r));
  absl::StrAppend(&out, absl::StrFormat("  digest      %s (all ranks agree)\n", r.param_digest()));
  absl::StrAppend(&out, absl::StrFormat("  weights     %s\n", r.weights_path()));
  return out;
}

std::string SummaryJson(const v1::Job& job, const std::string& log_dir) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  const v1::JobResult& r = job.result();
  f["name"].set_string_value(job.spec().name());
  f["id"].set_string_value(job.id());
  f["state"].set_string_value(v1::JobState_Name(job.state()));
  f["stateReason"].set_string_value(job.state_reason());
  f["globalStep"].set_number_value(static_cast<double>(r.global_step()));
  f["initialLoss"].set_number_value(r.initial_loss());
  f["finalLoss"].set_number_value(r.final_loss());
  if (r.has_validation_loss()) f["validationLoss"].set_number_value(r.validation_loss());
  f["paramDigest"].set_string_value(r.param_digest());
  f["weightsPath"].set_string_value(r.weights_path());
  f["samplesPerSecond"].set_number_value(r.samples_per_second());
  f["tokensPerSecond"].set_number_value(r.tokens_per_second());
  f["worldSize"].set_number_value(r.world_size());
  f["trainSeconds"].set_number_value(r.train_seconds());
  if (!r.memory().empty()) f["memory"] = MemoryJson(r);
  if (!log_dir.empty()) f["logDir"].set_string_value(log_dir);
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(s, &out, opts);
  return out;
}

std::string JobJson(const v1::Job& job) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(job, &out, opts);
  return out;
}

std::string JobTable(const v1::ListJobsResponse& jobs, bool wide) {
  std::string out = absl::StrFormat("%-24s %-10s %-13s %-9s ", "ID", "STATE", "STEP", "LOSS");
  if (wide) absl::StrAppend(&out, absl::StrFormat("%-7s %-8s %-20s ", "WORLD", "RESTARTS", "CREATED"));
  absl::StrAppend(&out, "NAME / REASON\n");
  for (const v1::Job& j : jobs.jobs()) {
    const v1::JobProgress& p = j.progress();
    const std::string step = p.total_steps() > 0 ? absl::StrCat(p.step(), "/", p.total_steps()) : "-";
    const double loss = j.state() == v1::SUCCEEDED ? j.result().final_loss() : p.loss();
    const std::string loss_text =
        (p.total_steps() > 0 || j.state() == v1::SUCCEEDED) ? absl::StrFormat("%.4f", loss) : "-";
    absl::StrAppend(&out,
                    absl::StrFormat("%-24s %-10s %-13s %-9s ", j.id(), v1::JobState_Name(j.state()), step, loss_text));
    if (wide) {
      const v1::TrainingSpec& t = j.spec().training();
      const bool elastic = t.min_workers() > 0 && t.max_workers() > t.min_workers();
      const std::string world =
          elastic ? absl::StrCat(t.min_workers(), "-", t.max_workers()) : absl::StrCat(t.world_size());
      const std::string created =
          j.has_create_time() ? absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(j.create_time().seconds()),
                                                 absl::UTCTimeZone())
                              : "-";
      absl::StrAppend(&out, absl::StrFormat("%-7s %-8d %-20s ", world, j.restarts(), created));
    }
    absl::StrAppend(&out, j.spec().name(), j.state_reason().empty() ? "" : absl::StrCat(" (", j.state_reason(), ")"),
                    "\n");
  }
  return out;
}

}  // namespace gradsync::cli
