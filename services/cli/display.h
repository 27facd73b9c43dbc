// How the CLI shows jobs: live progress, events, the end-of-run summary (text or JSON), tables.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

// The columns of the terminal `out` writes to (TIOCGWINSZ), else $COLUMNS, else 80.
int TerminalColumns(FILE* out);
// `line` cut to fewer than `columns` characters, so that it never wraps.
std::string FitToColumns(const std::string& line, int columns);
// A terminal's progress line for `job`, shorter than `columns`: a bar and every figure where
// they fit, fewer figures (the loss, throughput and time kept longest) where they do not.
std::string ProgressLine(const v1::Job& job, int columns);

// Prints new events and progress of a watched job to `out`: on a terminal a progress bar and the
// loss curve so far, redrawn in place below the events (so it stays on screen after the last
// one), each line of them narrower than the terminal; otherwise one line per reported step, and the loss curve once at the end. A progress line
// holds the step, the loss and its moving average, lr, gradient norm, step time, throughput, the
// elapsed time and an ETA. A waiting job shows why it waits and since when.
class ProgressView {
 public:
  explicit ProgressView(FILE* out);
  void Update(const v1::Job& job);
  // Redraws a terminal's waiting line with its elapsed time; call about once a second.
  void Tick();
  // Replaces the loss points gathered from progress updates with a complete series (e.g. every
  // reduced step from the metrics service), for the curve Finish() prints.
  void SetLossCurve(std::vector<std::pair<double, double>> points) { losses_ = std::move(points); }
  // Prints the loss curve when the output is not a terminal (on a terminal it is on screen).
  void Finish();
  // SetLossCurve from the metrics service's series of `job` at `metrics_api` (presenting `token`
  // when not empty) when it answers; returns the series (for a report) or the reason it could not
  // be read.
  absl::StatusOr<v1::JobSeries> UseSeriesFrom(const std::string& metrics_api, const std::string& token,
                                              const std::string& job);

 private:
  FILE* out_;
  void Erase();
  // The live block on a terminal: the last progress line and the curve under it.
  void Draw();
  // Why a PENDING or RESTARTING job waits, and for how long: on a terminal a line of the live
  // block, elsewhere a line whenever the reason changes.
  void ShowWaiting(const v1::Job& job);
  std::string WaitingLine() const;

  bool tty_;
  int events_shown_ = 0;
  int64_t last_step_ = -1;
  // Lines of the live block (bar + chart) drawn last, to move back over on a terminal.
  int drawn_lines_ = 0;
  std::vector<std::pair<double, double>> losses_;
  std::string line_;            // the progress line drawn last (terminal)
  std::string waiting_reason_;  // "PENDING: waiting for ...", empty while the job is not waiting
  absl::Time waiting_since_;
  std::mutex mu_;  // Update and Tick come from two threads
};

// A file's transfer shown on `out` (stderr) once it is large (kLargeTransferBytes or more): on a
// terminal one line redrawn in place, "weights.bin  12.0 MiB / 48.0 MiB  25%", otherwise that
// line at every further tenth. Nothing for smaller files.
class TransferProgress {
 public:
  static constexpr int64_t kLargeTransferBytes = 8 << 20;

  // `total` is the size announced (negative: unknown, nothing shown).
  TransferProgress(FILE* out, std::string name, int64_t total);
  void Update(int64_t done);
  // Shows the last state and ends a terminal's line.
  void Finish();

 private:
  void Show();

  FILE* out_;
  std::string name_;
  int64_t total_;
  bool shown_;
  bool tty_;
  int64_t done_ = 0;
  int tenths_shown_ = -1;
  int64_t last_draw_ = 0;  // done_ at the last redraw on a terminal
};

// "512 B", "8.4 KiB", "120.0 MiB", "1.25 GiB".
std::string HumanBytes(int64_t bytes);

// "2026-11-28T15:04:05Z": a time as every CLI table and view prints it (UTC, whole seconds).
std::string UtcTime(const google::protobuf::Timestamp& t);

// "45s", "12m03s", "3h07m": a duration at the precision a person reads it.
std::string HumanDuration(double seconds);

// The job's wall time in seconds: from its first generation's start to its end, or to now while it
// runs; 0 before it started.
double WallSeconds(const v1::Job& job);

// Multi-line human summary of a finished job.
std::string SummaryText(const v1::Job& job);

// One JSON object: name, id, state, stateReason, globalStep, initialLoss, finalLoss,
// validationLoss (only when the job evaluated), paramDigest, weightsPath, samplesPerSecond,
// tokensPerSecond, worldSize, trainSeconds (the last generation's), wallSeconds (from the first
// generation's start to the end), generations, restarts, modelFlopsPerSecond (transformers) and
// mfu (where the GPUs' bf16 peak is known), memory (each rank's v1::RankMemory with numbers for
// values: rank, paramBytes, gradBytes, optimizerBytes, peakRssBytes, and peakDeviceBytes on a GPU
// rank; absent when the ranks reported none), logDir (when given).
std::string SummaryJson(const v1::Job& job, const std::string& log_dir = "");

// A job as protobuf JSON.
std::string JobJson(const v1::Job& job);

// One line per job: id, state, step/total, loss, name, reason; `wide` adds the world size (min-max
// for an elastic job), the restarts and the creation time (UTC).
std::string JobTable(const v1::ListJobsResponse& jobs, bool wide = false);

}  // namespace gradsync::cli
