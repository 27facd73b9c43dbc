// How the CLI shows jobs: live progress, events, the end-of-run summary (text or JSON), tables.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

// Prints new events and progress of a watched job to `out`: on a terminal a progress bar and the
// loss curve so far, redrawn in place; otherwise one line per reported step, and the loss curve
// once at the end.
class ProgressView {
 public:
  explicit ProgressView(FILE* out);
  void Update(const v1::Job& job);
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

  bool tty_;
  int events_shown_ = 0;
  int64_t last_step_ = -1;
  // Lines of the live block (bar + chart) drawn last, to move back over on a terminal.
  int drawn_lines_ = 0;
  std::vector<std::pair<double, double>> losses_;
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

// Multi-line human summary of a finished job.
std::string SummaryText(const v1::Job& job);

// One JSON object: name, id, state, stateReason, globalStep, initialLoss, finalLoss,
// validationLoss (only when the job evaluated), paramDigest, weightsPath, samplesPerSecond,
// tokensPerSecond, worldSize, trainSeconds, memory (each rank's v1::RankMemory with numbers for
// values: rank, paramBytes, gradBytes, optimizerBytes, peakRssBytes, and peakDeviceBytes on a GPU
// rank; absent when the ranks reported none), logDir (when given).
std::string SummaryJson(const v1::Job& job, const std::string& log_dir = "");

// A job as protobuf JSON.
std::string JobJson(const v1::Job& job);

// One line per job: id, state, step/total, loss, name, reason; `wide` adds the world size (min-max
// for an elastic job), the restarts and the creation time (UTC).
std::string JobTable(const v1::ListJobsResponse& jobs, bool wide = false);

}  // namespace gradsync::cli
