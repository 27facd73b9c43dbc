// What `watch` leaves on a terminal 80 or 120 columns wide (a pseudo-terminal of that size, played
// onto a screen that wraps as a terminal does): every line of the live block fits, none wraps, and
// after the events and the redraws exactly one progress line is on screen. And the axes of the
// curves carry ticks: the terminal chart's and the SVG report's.
#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "charts.h"
#include "display.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "output_format.h"
#include "terminal_screen.h"

namespace gradsync::cli {
namespace {

using ::testing::HasSubstr;

// A pseudo-terminal `columns` wide; what the view writes comes back from its other side, read as
// it comes (a terminal's buffer is small: a writer nobody reads from blocks).
class SizedTerminal {
 public:
  explicit SizedTerminal(int columns) {
    struct winsize size {};
    size.ws_col = static_cast<unsigned short>(columns);
    size.ws_row = 50;
    EXPECT_EQ(::openpty(&controller_, &device_, nullptr, nullptr, &size), 0);
    out_ = ::fdopen(device_, "w");
    reader_ = std::thread([this] {
      char buffer[4096];
      for (ssize_t n; (n = ::read(controller_, buffer, sizeof buffer)) > 0;) {
        std::lock_guard<std::mutex> lock(mu_);
        text_.append(buffer, static_cast<size_t>(n));
      }
    });
  }
  ~SizedTerminal() {
    if (out_ != nullptr) std::fclose(out_);
    if (reader_.joinable()) reader_.join();
    ::close(controller_);
  }
  FILE* out() { return out_; }
  // Everything written, once the writing side is closed.
  std::string Close() {
    std::fclose(out_);
    out_ = nullptr;
    reader_.join();  // read() fails once the last writer is gone
    std::lock_guard<std::mutex> lock(mu_);
    return text_;
  }

 private:
  int controller_ = -1, device_ = -1;
  FILE* out_ = nullptr;
  std::thread reader_;
  std::mutex mu_;
  std::string text_;
};

// A transformer job at `step` of 4000, with every figure a progress line can carry.
v1::Job Training(int64_t step) {
  v1::Job j;
  j.set_state(v1::RUNNING);
  j.mutable_start_time()->set_seconds(absl::ToUnixSeconds(absl::Now()) - 3725);
  v1::JobProgress* p = j.mutable_progress();
  p->set_step(step);
  p->set_total_steps(4000);
  p->set_epoch(3);
  p->set_loss(3.2 - 0.0004 * static_cast<double>(step));
  p->set_smoothed_loss(3.25 - 0.0004 * static_cast<double>(step));
  p->set_lr(3e-4);
  p->set_grad_norm(0.8123);
  p->set_step_seconds(0.431);
  p->set_samples_per_second(1234.5);
  p->set_tokens_per_second(158012);
  p->set_validation_loss(3.11);
  p->set_validation_step(2000);
  return j;
}

int CountWithProgress(const std::vector<std::string>& rows) {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const std::string& r) {
    return absl::StrContains(r, "step ") && absl::StrContains(r, "/4000");
  }));
}

// Longer than 80 columns with its event type: such an event wraps on the narrower terminal.
constexpr char kCommitted[] = " committed to /var/lib/gradsync/artifacts/job/checkpoints/step-00000100";

class WatchScreen : public ::testing::TestWithParam<int> {};

TEST_P(WatchScreen, EveryLineFitsAndOneProgressLineStays) {
  const int columns = GetParam();
  SizedTerminal terminal(columns);
  {
    ProgressView view(terminal.out());
    v1::Job job;
    for (int64_t step = 10; step <= 400; step += 10) {
      job = Training(step);
      for (int e = 0; e < step / 100; ++e) {
        v1::JobEvent* event = job.add_events();
        event->set_type("CheckpointCommitted");
        event->set_message(absl::StrCat("step ", (e + 1) * 100, kCommitted));
      }
      view.Update(job);
    }
    view.Finish();
  }
  testing::TerminalScreen screen(columns);
  screen.Write(terminal.Close());
  const std::vector<std::string> rows = screen.Rows();
  // An event longer than the terminal wraps, as any printed line does; nothing else may.
  int event_wraps = 0;
  for (int e = 1; e <= 4; ++e) {
    const size_t length = absl::StrCat("[CheckpointCommitted] step ", e * 100, kCommitted).size();
    event_wraps += static_cast<int>((length - 1) / static_cast<size_t>(columns));
  }
  EXPECT_EQ(screen.wraps(), event_wraps) << "a line of the live block wrapped at " << columns << " columns";
  EXPECT_EQ(CountWithProgress(rows), 1) << absl::StrJoin(rows, "\n");
  const std::string all = absl::StrJoin(rows, "\n");
  EXPECT_THAT(all, HasSubstr("step 400/4000"));
  EXPECT_THAT(all, HasSubstr("loss 3.0400")) << all;
  const int events = static_cast<int>(std::count_if(
      rows.begin(), rows.end(), [](const std::string& r) { return absl::StartsWith(r, "[CheckpointCommitted]"); }));
  EXPECT_EQ(events, 4) << "each event once:\n" << all;
  EXPECT_THAT(all, HasSubstr("[#")) << "a bar at any of these widths";
}

INSTANTIATE_TEST_SUITE_P(Columns, WatchScreen, ::testing::Values(80, 120));

// The line says all it can in the room it has, and never more than the room.
TEST(ProgressLine, FewerFiguresInLessRoom) {
  const v1::Job job = Training(2000);
  for (int columns : {40, 60, 80, 100, 120, 160, 240}) {
    const std::string line = ProgressLine(job, columns);
    EXPECT_LT(static_cast<int>(line.size()), columns) << line;
    EXPECT_THAT(line, HasSubstr("2000/4000")) << columns;
  }
  EXPECT_THAT(ProgressLine(job, 80), HasSubstr("loss 2.4000"));
  EXPECT_THAT(ProgressLine(job, 120), HasSubstr("tok/s"));
  EXPECT_THAT(ProgressLine(job, 240), HasSubstr("samples/s"));
  EXPECT_THAT(ProgressLine(job, 240), HasSubstr("val loss 3.1100"));
}

TEST(ProgressLine, ACutLineEndsOnAWholeCharacter) {
  const std::string cut = FitToColumns("ab\xc3\xa9\xc3\xa9", 5);  // "abéé": the cut falls inside é
  EXPECT_EQ(cut, "ab\xc3\xa9");
}

TEST(Ticks, MultiplesOfOneTwoOrFive) {
  EXPECT_EQ(NiceTicks(0, 32410, 4), (std::vector<double>{0, 10000, 20000, 30000}));
  EXPECT_EQ(NiceTicks(2.31, 3.94, 4), (std::vector<double>{2.5, 3.0, 3.5}));
  const std::vector<double> small = NiceTicks(0.0012, 0.0049, 5);
  ASSERT_GE(small.size(), 3u);
  EXPECT_NEAR(small[1] - small[0], 0.001, 1e-12);
  EXPECT_TRUE(NiceTicks(1, 1, 5).empty());
  EXPECT_EQ(TickLabel(30000, 10000), "30000");
  EXPECT_EQ(TickLabel(2.5, 0.5), "2.5");
  EXPECT_EQ(TickLabel(0.05, 0.05), "0.05");
}

TEST(Ticks, TheTerminalChartLabelsTicksOnBothAxes) {
  Series points;
  for (int s = 0; s <= 4000; s += 50) points.emplace_back(s, 3.9 - 0.0004 * s);
  const std::string chart = TerminalChart(points, 60, 8, "step");
  const std::vector<std::string> lines = absl::StrSplit(chart, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 10u) << chart;
  int labelled = 0;
  for (int r = 0; r < 8; ++r) labelled += absl::StrContains(lines[r], " -") ? 1 : 0;
  EXPECT_GE(labelled, 3) << "the ends and at least one tick between them:\n" << chart;
  EXPECT_GE(std::count(lines[8].begin(), lines[8].end(), '+'), 4) << chart;
  EXPECT_THAT(lines[9], HasSubstr("1000")) << chart;
  EXPECT_THAT(lines[9], HasSubstr("3000")) << chart;
}

TEST(Ticks, TheSvgReportHasTicksAndAGridOnEveryAxis) {
  v1::JobSeries series;
  series.set_job_id("j");
  for (int s = 1; s <= 4000; s += 10) {
    v1::ReducedStep* step = series.add_steps();
    step->set_step(s);
    step->set_loss(3.9 - 0.0004 * s);
    step->set_tokens_per_second(30000 + s);
  }
  const std::string svg = SvgReport(series);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_GE(count("class=\"ytick\""), 2 * 3u) << "three or more on each panel's y axis";
  EXPECT_GE(count("class=\"xtick\""), 2 * 4u);
  EXPECT_GE(count("class=\"grid\""), count("class=\"ytick\"") + count("class=\"xtick\""));
  EXPECT_THAT(svg, HasSubstr(">2000</text>"));
}

// -o yaml of a job: its 64-bit integers are integers, strings that look like numbers stay strings.
TEST(YamlOfAJob, SixtyFourBitIntegersAreIntegers) {
  v1::Job job;
  job.set_id("42");
  job.mutable_spec()->mutable_training()->set_max_steps(4000);
  job.mutable_result()->set_global_step(123);
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(job, &json);
  ASSERT_THAT(json, HasSubstr("\"maxSteps\":\"4000\"")) << "protobuf writes them as strings";
  const absl::StatusOr<std::string> yaml = JsonToYaml(json, v1::Job::descriptor());
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_THAT(*yaml, HasSubstr("maxSteps: 4000\n"));
  EXPECT_THAT(*yaml, HasSubstr("globalStep: 123\n"));
  EXPECT_THAT(*yaml, HasSubstr("id: \"42\"\n"));
  v1::ListJobsResponse list;
  *list.add_jobs() = job;
  const std::string items = InFormat(JsonItems({json}), OutputFormat::kYaml, v1::Job::descriptor());
  EXPECT_THAT(items, HasSubstr("maxSteps: 4000"));
}

// The STEP column of an ended job is where it ended, not its last report.
TEST(JobTableStep, AnEndedJobShowsTheStepItEndedAt) {
  v1::ListJobsResponse list;
  v1::Job* j = list.add_jobs();
  j->set_id("done");
  j->set_state(v1::SUCCEEDED);
  j->mutable_progress()->set_step(95);
  j->mutable_progress()->set_total_steps(100);
  j->mutable_result()->set_global_step(100);
  v1::Job* script = list.add_jobs();
  script->set_id("script");
  script->set_state(v1::SUCCEEDED);
  const std::string table = JobTable(list);
  EXPECT_THAT(table, HasSubstr("100/100"));
  EXPECT_THAT(table, ::testing::Not(HasSubstr("95/100")));
}

}  // namespace
}  // namespace gradsync::cli
