// What the CLI shows of a validation loss: the progress line (gradsync run and watch), the text and
// -o json summaries, and the SVG report's second loss series with markers and a legend.
#include <cstdio>
#include <string>

#include "charts.h"
#include "display.h"
#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

// What a ProgressView printed for `jobs`, in order, to a file that is not a terminal.
std::string Printed(const std::vector<v1::Job>& jobs) {
  FILE* f = std::tmpfile();
  ProgressView view(f);
  for (const v1::Job& j : jobs) view.Update(j);
  std::string out(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fclose(f);
  return out;
}

v1::Job AtStep(int64_t step, std::optional<double> validation) {
  v1::Job j;
  j.mutable_progress()->set_step(step);
  j.mutable_progress()->set_total_steps(10);
  j.mutable_progress()->set_loss(2.5);
  if (validation) {
    j.mutable_progress()->set_validation_loss(*validation);
    j.mutable_progress()->set_validation_step(step);
  }
  return j;
}

TEST(DisplayValidation, ProgressLinesShowTheNewestValidationLoss) {
  const std::string out = Printed({AtStep(1, std::nullopt), AtStep(5, 2.25)});
  EXPECT_EQ(out.find("val loss"), out.rfind("val loss")) << "only once a loss exists: " << out;
  EXPECT_NE(out.find("loss 2.5000 | val loss 2.2500 (step 5)"), std::string::npos) << out;
}

TEST(DisplayValidation, SummariesCarryTheFinalValidationLoss) {
  v1::Job job;
  job.set_state(v1::SUCCEEDED);
  job.mutable_result()->set_validation_loss(1.875);
  EXPECT_NE(SummaryJson(job).find("\"validationLoss\": 1.875"), std::string::npos) << SummaryJson(job);
  EXPECT_NE(SummaryText(job).find("val loss    1.8750"), std::string::npos) << SummaryText(job);
  job.mutable_result()->clear_validation_loss();
  EXPECT_EQ(SummaryJson(job).find("validationLoss"), std::string::npos) << "no validation data, no field";
}

TEST(DisplayValidation, TheSvgReportDrawsValidationAsASecondSeries) {
  v1::JobSeries series;
  for (int step = 1; step <= 6; ++step) {
    v1::ReducedStep* s = series.add_steps();
    s->set_step(step);
    s->set_loss(3.0 - 0.1 * step);
    if (step % 3 == 0) s->set_validation_loss(3.1 - 0.1 * step);
  }
  const std::string svg = SvgReport(series);
  EXPECT_NE(svg.find("training and validation loss"), std::string::npos);
  EXPECT_NE(svg.find("validation (whole set)"), std::string::npos) << "the legend";
  EXPECT_NE(svg.find("training (mean over ranks)"), std::string::npos) << "the legend";
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1)) ++circles;
  EXPECT_EQ(circles, 2u) << "a marker at each of the two evaluations";

  for (auto& s : *series.mutable_steps()) s.clear_validation_loss();
  const std::string plain = SvgReport(series);
  EXPECT_EQ(plain.find("validation"), std::string::npos) << "no series, no legend, without validation";
}

}  // namespace
}  // namespace gradsync::cli
