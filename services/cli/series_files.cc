#include "series_files.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "gradsync/core/json_depth.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "charts.h"
#include "google/protobuf/util/json_util.h"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

// The shortest text that reads back as the same double.
std::string Num(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return ec == std::errc() ? std::string(buf, end) : "nan";
}

}  // namespace

absl::StatusOr<SeriesFormat> SeriesFormatOf(const std::string& path) {
  const std::string ext = absl::AsciiStrToLower(fs::path(path).extension().string());
  if (ext == ".csv") return SeriesFormat::kCsv;
  if (ext == ".jsonl") return SeriesFormat::kJsonl;
  if (ext == ".svg") return SeriesFormat::kSvg;
  return absl::InvalidArgumentError(absl::StrCat("-o ", path, ": ", ext.empty() ? "no extension" : "extension " + ext,
                                                 "; the format is the extension's: .csv, .jsonl or .svg"));
}

std::string FormatSeries(const v1::JobSeries& series, SeriesFormat format) {
  switch (format) {
    case SeriesFormat::kCsv: return SeriesCsv(series);
    case SeriesFormat::kJsonl: return SeriesJsonl(series);
    case SeriesFormat::kSvg: return SvgReport(series);
  }
  return "";
}

std::string SeriesJsonl(const v1::JobSeries& series) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  for (const v1::ReducedStep& step : series.steps()) {
    std::string line;
    // Printing a valid message cannot fail.
    (void)google::protobuf::util::MessageToJsonString(step, &line, options);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string SeriesCsv(const v1::JobSeries& series) {
  std::string out =
      "generation,step,first_step,merged_steps,epoch,loss,min_loss,max_loss,validation_loss,tokens_per_second,"
      "step_seconds,grad_norm,learning_rate,samples,tokens,partial\n";
  for (const v1::ReducedStep& s : series.steps()) {
    // A step as published (merged_steps 0 from an older service) stands for itself.
    const bool single = s.merged_steps() <= 1;
    absl::StrAppend(
        &out,
        absl::StrJoin(
            std::vector<std::string>{
                absl::StrCat(s.generation()), absl::StrCat(s.step()), absl::StrCat(single ? s.step() : s.first_step()),
                absl::StrCat(single ? 1 : s.merged_steps()), absl::StrCat(s.epoch()), Num(s.loss()),
                Num(single ? s.loss() : s.min_loss()), Num(single ? s.loss() : s.max_loss()),
                s.has_validation_loss() ? Num(s.validation_loss()) : "", Num(s.tokens_per_second()),
                Num(s.step_seconds()), Num(s.grad_norm()), Num(s.learning_rate()), absl::StrCat(s.samples()),
                absl::StrCat(s.tokens()), s.partial() ? "true" : "false"},
            ","),
        "\n");
  }
  return out;
}

absl::StatusOr<v1::JobSeries> ParseSeriesJsonl(std::string_view text, const std::string& source) {
  v1::JobSeries series;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // written by a newer gradsync
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    v1::ReducedStep step;
    if (absl::Status deep = CheckJsonDepth(std::string_view(line.data(), line.size()),
                                           absl::StrCat(source, ": line ", line_number));
        !deep.ok()) {
      return absl::DataLossError(deep.message());
    }
    if (auto s = google::protobuf::util::JsonStringToMessage(std::string(line), &step, options); !s.ok()) {
      return absl::DataLossError(
          absl::StrCat(source, ": line ", line_number, " is not a series point: ", s.ToString()));
    }
    if (series.job_id().empty()) series.set_job_id(step.job_id());
    *series.add_steps() = std::move(step);
  }
  return series;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = absl::StrCat(path, ".tmp-", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return absl::UnavailableError(absl::StrCat("cannot write ", path));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return absl::UnavailableError(absl::StrCat("cannot write ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::JobSeries> ReadSeriesFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return absl::NotFoundError(absl::StrCat("no series file ", path));
  if (const auto size = fs::file_size(path, ec); !ec && size > kMaxSeriesFileBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ", size, " bytes, more than a series file holds (", kMaxSeriesFileBytes, ")"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return ParseSeriesJsonl(text.str(), path);
}

}  // namespace gradsync::cli
