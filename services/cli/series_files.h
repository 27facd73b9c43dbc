// A job's series as files: the formats `gradsync report -o` writes, and the series file a job
// leaves beside its weights (`gradsync run`), which `gradsync report` reads when no metrics
// service has the job. One format serves both: JSON Lines, one point a line, each the protobuf
// JSON of a gradsync.v1.ReducedStep as the metrics API serves it (lowerCamelCase names, int64 as
// strings), oldest first.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

// The series file in a job's artifact directory.
inline constexpr char kSeriesFileName[] = "series.jsonl";
// What a series file may hold: far more than any series the metrics service keeps (2000 points
// of a few hundred bytes, more with per-rank detail).
inline constexpr size_t kMaxSeriesFileBytes = 256u << 20;

enum class SeriesFormat { kCsv, kJsonl, kSvg };

// By the extension of `path`, in any case: .csv, .jsonl or .svg. INVALID_ARGUMENT naming the
// extension found and those accepted.
absl::StatusOr<SeriesFormat> SeriesFormatOf(const std::string& path);

// The series in `format`. CSV: a header, then a row per point: generation, step, first_step,
// merged_steps, epoch, loss, min_loss, max_loss, validation_loss (empty without one),
// tokens_per_second, step_seconds, grad_norm, learning_rate, samples, tokens, partial; numbers in
// their shortest exact form.
std::string FormatSeries(const v1::JobSeries& series, SeriesFormat format);
std::string SeriesJsonl(const v1::JobSeries& series);
std::string SeriesCsv(const v1::JobSeries& series);

// SeriesJsonl's text back (blank lines skipped); the job id is the first point's. DATA_LOSS
// naming `source` and the line that is not a point.
absl::StatusOr<v1::JobSeries> ParseSeriesJsonl(std::string_view text, const std::string& source);

// Writes `text` to a temporary file beside `path`, then renames it into place.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text);
// NOT_FOUND when there is no file at `path`; FAILED_PRECONDITION beyond kMaxSeriesFileBytes;
// otherwise ParseSeriesJsonl's errors.
absl::StatusOr<v1::JobSeries> ReadSeriesFile(const std::string& path);

}  // namespace gradsync::cli
