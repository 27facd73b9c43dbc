#include "display.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "charts.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/nn/presets.h"
#include "job_client.h"
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

// "ETA 4m10s" from the recent step time, "" before there is one or after the last step.
std::string EtaText(const v1::JobProgress& p) {
  if (p.step_seconds() <= 0 || p.total_steps() <= p.step()) return "";
  return absl::StrCat("ETA ", HumanDuration(p.step_seconds() * static_cast<double>(p.total_steps() - p.step())));
}

// " | 12m03s elapsed, ETA 4m10s" from the job's start and the recent step time.
std::string TimeText(const v1::Job& job) {
  const v1::JobProgress& p = job.progress();
  std::string out;
  if (job.has_start_time()) absl::StrAppend(&out, " | ", HumanDuration(WallSeconds(job)), " elapsed");
  if (const std::string eta = EtaText(p); !eta.empty()) absl::StrAppend(&out, out.empty() ? " | " : ", ", eta);
  return out;
}

// "loss 2.3456 (avg 2.4012) | lr 3.00e-04 | norm 0.812 | 0.45 s/step": what the step did.
std::string StepText(const v1::JobProgress& p) {
  std::string out = absl::StrFormat("loss %.4f", p.loss());
  if (p.smoothed_loss() > 0) absl::StrAppend(&out, absl::StrFormat(" (avg %.4f)", p.smoothed_loss()));
  if (p.lr() > 0) absl::StrAppend(&out, absl::StrFormat(" | lr %.2e | norm %.3f", p.lr(), p.grad_norm()));
  if (p.step_seconds() > 0) absl::StrAppend(&out, absl::StrFormat(" | %.3g s/step", p.step_seconds()));
  return out;
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

// Model FLOPs per second the job achieved (6N + attention per token, nn::FlopsPerToken, times its
// tokens/s); 0 for a model that is not a transformer.
double ModelFlopsPerSecond(const v1::Job& job) {
  if (!nn::IsTransformerPreset(job.spec().model().preset())) return 0;
  const absl::StatusOr<v1::TransformerConfig> config = nn::ResolveTransformerConfig(job.spec().model());
  if (!config.ok()) return 0;
  return nn::FlopsPerToken(*config) * job.result().tokens_per_second();
}

// "  wall time   12m03s over 3 generations, 1 restart\n", when the job ran.
std::string WallText(const v1::Job& job) {
  if (!job.has_start_time()) return "";
  return absl::StrFormat("  wall time   %s over %d generation%s, %d restart%s\n", HumanDuration(WallSeconds(job)),
                         job.generation(), job.generation() == 1 ? "" : "s", job.restarts(),
                         job.restarts() == 1 ? "" : "s");
}

// "1.2K samples/s, 30.0K tokens/s, 1.23 TFLOP/s (MFU 41.2%)": tokens only for token models, FLOP/s
// for transformers, MFU where the GPUs' peak is known.
std::string ThroughputText(const v1::Job& job) {
  const v1::JobResult& r = job.result();
  std::string out = absl::StrCat(Rate(r.samples_per_second()), " samples/s");
  if (r.tokens_per_second() > r.samples_per_second())
    absl::StrAppend(&out, ", ", Rate(r.tokens_per_second()), " tokens/s");
  const double flops = ModelFlopsPerSecond(job);
  if (flops > 0) absl::StrAppend(&out, absl::StrFormat(", %.3g TFLOP/s", flops / 1e12));
  if (flops > 0 && r.peak_flops() > 0)
    absl::StrAppend(&out, absl::StrFormat(" (MFU %.1f%%)", 100 * flops / r.peak_flops()));
  return out;
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

std::string UtcTime(const google::protobuf::Timestamp& t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t.seconds()), absl::UTCTimeZone());
}

std::string HumanDuration(double seconds) {
  // A server's figure may be anything: NaN counts as 0, and past 10^12 s (31,000 years) as that.
  const double bounded = std::isnan(seconds) ? 0.0 : std::clamp(seconds, 0.0, 1e12);
  const auto s = static_cast<int64_t>(bounded + 0.5);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

double WallSeconds(const v1::Job& job) {
  if (!job.has_start_time()) return 0;
  const auto seconds = [](const google::protobuf::Timestamp& t) {
    return static_cast<double>(t.seconds()) + static_cast<double>(t.nanos()) * 1e-9;
  };
  const double end =
      job.has_end_time() ? seconds(job.end_time()) : absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  return end - seconds(job.start_time());
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

int TerminalColumns(FILE* out) {
  struct winsize size {};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  int columns = 0;
  if (const char* env = std::getenv("COLUMNS"); env != nullptr && absl::SimpleAtoi(env, &columns) && columns > 0) {
    return columns;
  }
  return 80;
}

std::string FitToColumns(const std::string& line, int columns) {
  const size_t room = static_cast<size_t>(std::max(columns - 1, 1));
  if (line.size() <= room) return line;
  size_t cut = room;  // bytes: a UTF-8 character counts at least one column, never less
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return line.substr(0, cut);
}

std::string ProgressLine(const v1::Job& job, int columns) {
  const v1::JobProgress& p = job.progress();
  const double frac = p.total_steps() > 0 ? static_cast<double>(p.step()) / static_cast<double>(p.total_steps()) : 0;
  const std::string step = absl::StrFormat("step %lld/%lld", static_cast<long long>(p.step()),
                                           static_cast<long long>(p.total_steps()));
  std::string loss = absl::StrFormat("loss %.4f", p.loss());
  if (p.smoothed_loss() > 0) absl::StrAppend(&loss, absl::StrFormat(" (avg %.4f)", p.smoothed_loss()));
  const std::string rate = p.tokens_per_second() > p.samples_per_second()
                               ? absl::StrCat(Rate(p.tokens_per_second()), " tok/s")
                               : absl::StrCat(Rate(p.samples_per_second()), " samples/s");
  const std::string eta = EtaText(p).empty() ? "" : absl::StrCat(" | ", EtaText(p));
  // From the most said to the least, the first that fits the terminal's width.
  const std::vector<std::string> forms = {
      absl::StrFormat("[%s] %5.1f%% %s | epoch %d | %s%s | %s samples/s | %s tokens/s%s", Bar(frac, 24), 100.0 * frac,
                      step, p.epoch(), StepText(p), ValidationText(p), Rate(p.samples_per_second()),
                      Rate(p.tokens_per_second()), TimeText(job)),
      absl::StrFormat("[%s] %5.1f%% %s | %s%s | %s%s", Bar(frac, 16), 100.0 * frac, step, loss, ValidationText(p), rate,
                      TimeText(job)),
      absl::StrFormat("[%s] %3.0f%% %s | %s | %s%s", Bar(frac, 10), 100.0 * frac, step, loss, rate, eta),
      absl::StrFormat("[%s] %3.0f%% %s | loss %.4f%s", Bar(frac, 10), 100.0 * frac, step, p.loss(), eta),
      absl::StrFormat("%3.0f%% %s | loss %.4f", 100.0 * frac, step, p.loss()),
  };
  for (const std::string& form : forms) {
    if (static_cast<int>(form.size()) < columns) return form;
  }
  return FitToColumns(forms.back(), columns);
}

void ProgressView::Erase() {
  // Up to the first line of the live block, then clear to the end of the screen.
  if (drawn_lines_ > 0) std::fprintf(out_, "\033[%dA\r\033[J", drawn_lines_);
  drawn_lines_ = 0;
}

void ProgressView::Update(const v1::Job& job) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool new_events = events_shown_ < job.events_size();
  if (new_events && tty_) Erase();
  for (; events_shown_ < job.events_size(); ++events_shown_) {
    const v1::JobEvent& e = job.events(events_shown_);
    std::fprintf(out_, "[%s] %s\n", TerminalSafe(e.type()).c_str(), TerminalSafe(e.message()).c_str());
  }
  ShowWaiting(job);
  const v1::JobProgress& p = job.progress();
  if (!job.has_progress() || p.step() == last_step_ || p.total_steps() <= 0) {
    // The events printed above the live block: draw it again below them, so that the curve stays
    // on screen through checkpoints and after the job ends.
    if (new_events && tty_ && drawn_lines_ == 0) Draw();
    std::fflush(out_);
    return;
  }
  last_step_ = p.step();
  // A curve backfilled from the metrics service may already hold this step.
  if (losses_.empty() || static_cast<double>(p.step()) > losses_.back().first) {
    losses_.emplace_back(static_cast<double>(p.step()), p.loss());
  }
  if (tty_) {
    Erase();
    line_ = ProgressLine(job, TerminalColumns(out_));
    Draw();
  } else {
    std::fprintf(out_, "step %lld/%lld | epoch %d | %s%s | %s samples/s | %s tokens/s%s\n",
                 static_cast<long long>(p.step()), static_cast<long long>(p.total_steps()), p.epoch(),
                 StepText(p).c_str(), ValidationText(p).c_str(), Rate(p.samples_per_second()).c_str(),
                 Rate(p.tokens_per_second()).c_str(), TimeText(job).c_str());
  }
  std::fflush(out_);
}

void ProgressView::ShowWaiting(const v1::Job& job) {
  const bool waiting = (job.state() == v1::PENDING || job.state() == v1::RESTARTING) && !job.state_reason().empty();
  const std::string reason =
      waiting ? absl::StrCat(v1::JobState_Name(job.state()), ": ", TerminalSafe(job.state_reason())) : "";
  // A pending job has waited since it was submitted; a restarting one since it last stopped.
  if (waiting && waiting_reason_.empty()) {
    waiting_since_ = job.state() == v1::PENDING && job.has_create_time()
                         ? absl::FromUnixSeconds(job.create_time().seconds())
                         : absl::Now();
  }
  if (reason == waiting_reason_) return;
  waiting_reason_ = reason;
  if (tty_) {
    Erase();
    Draw();
  } else if (waiting) {
    std::fprintf(out_, "%s\n", WaitingLine().c_str());
  }
}

std::string ProgressView::WaitingLine() const {
  return absl::StrFormat("[waiting %s] %s", HumanDuration(absl::ToDoubleSeconds(absl::Now() - waiting_since_)),
                         waiting_reason_);
}

void ProgressView::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tty_ || waiting_reason_.empty()) return;
  Erase();
  Draw();
  std::fflush(out_);
}

void ProgressView::Draw() {
  // Every line of the block shorter than the terminal is wide: one that wrapped would take two
  // rows, and Erase would move back over too few of them.
  const int columns = TerminalColumns(out_);
  std::string block;
  if (!waiting_reason_.empty()) absl::StrAppend(&block, FitToColumns(WaitingLine(), columns), "\n");
  if (!line_.empty()) {
    absl::StrAppend(&block, FitToColumns(line_, columns), "\n");
    const int width = std::min(kChartWidth, columns - 18);
    if (losses_.size() >= 2 && width >= 8) {
      for (absl::string_view row : absl::StrSplit(TerminalChart(losses_, width, kChartHeight, "step"), '\n', absl::SkipEmpty())) {
        absl::StrAppend(&block, FitToColumns(std::string(row), columns), "\n");
      }
    }
  }
  std::fputs(block.c_str(), out_);
  drawn_lines_ = static_cast<int>(std::count(block.begin(), block.end(), '\n'));
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
  std::lock_guard<std::mutex> lock(mu_);
  // On a terminal the live chart stays on screen; elsewhere the curve is printed once.
  if (!tty_ && losses_.size() >= 2) {
    std::fprintf(out_, "loss curve:\n%s", TerminalChart(losses_, kChartWidth, kChartHeight, "step").c_str());
  }
  drawn_lines_ = 0;
  std::fflush(out_);
}

namespace {

// A script job's summary: its command, how it ended, and what its reports reached (if it sent any).
std::string ScriptSummaryText(const v1::Job& job) {
  const v1::JobResult& r = job.result();
  std::string out = absl::StrFormat("job %s (%s): %s\n", TerminalSafe(job.id()), TerminalSafe(job.spec().name()),
                                    v1::JobState_Name(job.state()));
  absl::StrAppend(&out, "  command     ", TerminalSafe(absl::StrJoin(job.spec().script().command(), " ")), "\n");
  absl::StrAppend(&out, "  outcome     ", TerminalSafe(job.state_reason()), "\n");
  if (r.global_step() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  reached     step %d, loss %.4f -> %.4f\n", r.global_step(),
                                          r.initial_loss(), r.final_loss()));
  }
  absl::StrAppend(&out, WallText(job));
  return out;
}

}  // namespace

std::string SummaryText(const v1::Job& job) {
  if (job.spec().has_script()) return ScriptSummaryText(job);
  const v1::JobResult& r = job.result();
  std::string out = absl::StrFormat("job %s (%s): %s\n", TerminalSafe(job.id()), TerminalSafe(job.spec().name()),
                                    v1::JobState_Name(job.state()));
  if (job.state() != v1::SUCCEEDED) {
    absl::StrAppend(&out, "  reason      ", TerminalSafe(job.state_reason()), "\n");
    // What a failed or cancelled job reached; a cancelled job's ranks may also have saved weights.
    if (r.global_step() > 0) {
      absl::StrAppend(&out, absl::StrFormat("  reached     step %d, loss %.4f -> %.4f\n", r.global_step(),
                                            r.initial_loss(), r.final_loss()));
    }
    if (!r.weights_path().empty()) {
      absl::StrAppend(&out, absl::StrFormat("  weights     %s\n", TerminalSafe(r.weights_path())));
    }
    absl::StrAppend(&out, WallText(job));
    return out;
  }
  absl::StrAppend(&out, absl::StrFormat("  steps       %d on %d ranks, the last generation in %s\n", r.global_step(),
                                        r.world_size(), HumanDuration(r.train_seconds())));
  absl::StrAppend(&out, WallText(job));
  absl::StrAppend(&out, absl::StrFormat("  loss        %.4f -> %.4f\n", r.initial_loss(), r.final_loss()));
  if (r.has_validation_loss()) absl::StrAppend(&out, absl::StrFormat("  val loss    %.4f\n", r.validation_loss()));
  absl::StrAppend(&out, absl::StrFormat("  throughput  %s (steady state)\n", ThroughputText(job)));
  absl::StrAppend(&out, MemoryText(r));
  absl::StrAppend(&out, absl::StrFormat("  digest      %s (all ranks agree)\n", TerminalSafe(r.param_digest())));
  absl::StrAppend(&out, absl::StrFormat("  weights     %s\n", TerminalSafe(r.weights_path())));
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
  f["wallSeconds"].set_number_value(WallSeconds(job));
  f["generations"].set_number_value(job.generation());
  f["restarts"].set_number_value(job.restarts());
  f["liveRecoveries"].set_number_value(job.recovery().live_recoveries());
  f["stepsLost"].set_number_value(static_cast<double>(job.recovery().steps_lost()));
  f["recoverySeconds"].set_number_value(job.recovery().recovery_seconds());
  if (job.spec().has_script()) {
    auto& command = *f["command"].mutable_list_value();
    for (const std::string& arg : job.spec().script().command()) command.add_values()->set_string_value(arg);
  }
  if (const double flops = ModelFlopsPerSecond(job); flops > 0) {
    f["modelFlopsPerSecond"].set_number_value(flops);
    if (r.peak_flops() > 0) f["mfu"].set_number_value(flops / r.peak_flops());
  }
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

// The STEP column: while the job runs, the last step reported of its total; once it ended, the
// step it ended at (the last report may be a few steps before it), of all its steps when it
// succeeded; "-" for a job without steps.
std::string StepColumn(const v1::Job& j) {
  const v1::JobProgress& p = j.progress();
  int64_t step = p.step();
  if (IsTerminal(j.state()) && j.result().global_step() > 0) step = j.result().global_step();
  if (p.total_steps() > 0) return absl::StrCat(step, "/", p.total_steps());
  if (!IsTerminal(j.state()) || step <= 0) return "-";
  // A job that succeeded ran every step it had.
  return j.state() == v1::SUCCEEDED ? absl::StrCat(step, "/", step) : absl::StrCat(step);
}

std::string JobTable(const v1::ListJobsResponse& jobs, bool wide) {
  std::string out = absl::StrFormat("%-24s %-10s %-13s %-9s ", "ID", "STATE", "STEP", "LOSS");
  if (wide) absl::StrAppend(&out, absl::StrFormat("%-7s %-8s %-20s ", "WORLD", "RESTARTS", "CREATED"));
  absl::StrAppend(&out, "NAME / REASON\n");
  for (const v1::Job& j : jobs.jobs()) {
    const v1::JobProgress& p = j.progress();
    const std::string step = StepColumn(j);
    const double loss = j.state() == v1::SUCCEEDED ? j.result().final_loss() : p.loss();
    const std::string loss_text =
        (p.total_steps() > 0 || j.state() == v1::SUCCEEDED) ? absl::StrFormat("%.4f", loss) : "-";
    absl::StrAppend(&out,
                    absl::StrFormat("%-24s %-10s %-13s %-9s ", TerminalSafe(j.id()), v1::JobState_Name(j.state()), step,
                                    loss_text));
    if (wide) {
      const v1::TrainingSpec& t = j.spec().training();
      const bool elastic = t.min_workers() > 0 && t.max_workers() > t.min_workers();
      const std::string world =
          elastic ? absl::StrCat(t.min_workers(), "-", t.max_workers()) : absl::StrCat(t.world_size());
      const std::string created = j.has_create_time() ? UtcTime(j.create_time()) : "-";
      absl::StrAppend(&out, absl::StrFormat("%-7s %-8d %-20s ", world, j.restarts(), created));
    }
    absl::StrAppend(&out, TerminalSafe(j.spec().name()),
                    j.state_reason().empty() ? "" : absl::StrCat(" (", TerminalSafe(j.state_reason()), ")"), "\n");
  }
  return out;
}

}  // namespace gradsync::cli
