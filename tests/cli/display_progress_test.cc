// What `gradsync run` and `watch` show while a job runs and when it ends: the progress line's
// figures, why a job waits, the loss curve kept on a real terminal (a pseudo-terminal) after the
// last event, and the summary's wall time, restarts, FLOP/s and MFU.
#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "display.h"
#include "gmock/gmock.h"
#include "gradsync/nn/presets.h"
#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(FILE* f) {
  std::fflush(f);
  std::string out(static_cast<size_t>(std::ftell(f)), '\0');
  std::rewind(f);
  out.resize(std::fread(out.data(), 1, out.size(), f));
  return out;
}

google::protobuf::Timestamp SecondsAgo(int64_t seconds) {
  google::protobuf::Timestamp t;
  t.set_seconds(absl::ToUnixSeconds(absl::Now()) - seconds);
  return t;
}

v1::Job Running(int64_t step) {
  v1::Job j;
  j.set_state(v1::RUNNING);
  *j.mutable_start_time() = SecondsAgo(125);
  v1::JobProgress* p = j.mutable_progress();
  p->set_step(step);
  p->set_total_steps(100);
  p->set_loss(2.5 - 0.01 * static_cast<double>(step));
  p->set_smoothed_loss(2.6);
  p->set_lr(3e-4);
  p->set_grad_norm(0.812);
  p->set_step_seconds(0.5);
  return j;
}

TEST(DisplayProgress, ALineCarriesSmoothedLossLrNormStepTimeElapsedAndEta) {
  FILE* f = std::tmpfile();
  ProgressView view(f);
  view.Update(Running(40));
  const std::string out = ReadAll(f);
  std::fclose(f);
  EXPECT_THAT(out,
              HasSubstr("step 40/100 | epoch 0 | loss 2.1000 (avg 2.6000) | lr 3.00e-04 | norm 0.812 | 0.5 s/step"));
  // 60 steps left at 0.5 s each; started 125 s ago (a second of slack for a slow test machine).
  EXPECT_THAT(out, HasSubstr("ETA 30s")) << out;
  EXPECT_TRUE(out.find("2m05s elapsed") != std::string::npos || out.find("2m06s elapsed") != std::string::npos) << out;
}

TEST(DisplayProgress, AWaitingJobSaysWhyOnceEachTimeTheReasonChanges) {
  FILE* f = std::tmpfile();
  ProgressView view(f);
  v1::Job pending;
  pending.set_state(v1::PENDING);
  *pending.mutable_create_time() = SecondsAgo(42);
  pending.set_state_reason("waiting for 2 idle workers: 1 idle of 1 registered");
  view.Update(pending);
  view.Update(pending);
  pending.set_state_reason("waiting for 2 idle workers: 1 idle of 2 registered");
  view.Update(pending);
  view.Update(Running(1));
  const std::string out = ReadAll(f);
  std::fclose(f);
  EXPECT_THAT(out, HasSubstr("] PENDING: waiting for 2 idle workers: 1 idle of 1 registered\n"));
  EXPECT_EQ(out.find("1 idle of 1 registered"), out.rfind("1 idle of 1 registered")) << out;
  // Waited since its creation, 42 s ago (or 43 on a slow machine).
  EXPECT_THAT(out, ::testing::ContainsRegex("\\[waiting 4[23]s\\] PENDING")) << out;
  EXPECT_THAT(out, HasSubstr("1 idle of 2 registered"));
  EXPECT_THAT(out, HasSubstr("step 1/100"));
}

// Everything the view wrote to a pseudo-terminal.
class Terminal {
 public:
  Terminal() {
    EXPECT_EQ(::openpty(&controller_, &device_, nullptr, nullptr, nullptr), 0);
    ::fcntl(controller_, F_SETFL, O_NONBLOCK);
    out_ = ::fdopen(device_, "w");
  }
  ~Terminal() {
    std::fclose(out_);
    ::close(controller_);
  }
  FILE* out() { return out_; }
  std::string Drain() {
    std::fflush(out_);
    char buffer[4096];
    for (ssize_t n; (n = ::read(controller_, buffer, sizeof buffer)) > 0;) text_.append(buffer, static_cast<size_t>(n));
    return text_;
  }

 private:
  int controller_ = -1, device_ = -1;
  FILE* out_ = nullptr;
  std::string text_;
};

TEST(DisplayProgress, OnATerminalTheCurveStaysBelowTheLastEvent) {
  Terminal terminal;
  {
    ProgressView view(terminal.out());
    v1::Job job = Running(1);
    for (int64_t step = 1; step <= 5; ++step) {
      job = Running(step);
      view.Update(job);
    }
    v1::JobEvent* e = job.add_events();
    e->set_type("Succeeded");
    e->set_message("5 steps");
    job.set_state(v1::SUCCEEDED);
    view.Update(job);
    view.Finish();
  }
  const std::string out = terminal.Drain();
  const size_t event = out.rfind("[Succeeded] 5 steps");
  ASSERT_NE(event, std::string::npos) << out;
  const std::string after = out.substr(event);
  EXPECT_THAT(after, HasSubstr("step 5/100")) << "the progress line is drawn again below the event";
  EXPECT_THAT(after, HasSubstr("loss")) << after;
  // The chart's axis label comes with it.
  EXPECT_THAT(after, HasSubstr("step")) << after;
  EXPECT_EQ(after.find("\033[J", 1), std::string::npos) << "nothing erases it afterwards";
}

v1::Job Finished() {
  v1::Job j;
  j.set_id("j1");
  j.set_state(v1::SUCCEEDED);
  j.mutable_spec()->mutable_model()->set_preset("gpt-tiny");
  j.mutable_start_time()->set_seconds(1000);
  j.mutable_end_time()->set_seconds(1000 + 723);
  j.set_generation(3);
  j.set_restarts(1);
  v1::JobResult* r = j.mutable_result();
  r->set_global_step(500);
  r->set_world_size(2);
  r->set_train_seconds(300);
  r->set_samples_per_second(100);
  r->set_tokens_per_second(12800);
  return j;
}

TEST(DisplayProgress, TheSummaryCountsEveryGenerationAndTheModelsFlops) {
  v1::Job job = Finished();
  const std::string text = SummaryText(job);
  EXPECT_THAT(text, HasSubstr("wall time   12m03s over 3 generations, 1 restart\n")) << text;
  EXPECT_THAT(text, HasSubstr("the last generation in 5m00s")) << text;
  const double flops = nn::FlopsPerToken(*nn::ResolveTransformerConfig(job.spec().model())) * 12800;
  char tflops[64];
  std::snprintf(tflops, sizeof tflops, "%.3g TFLOP/s", flops / 1e12);
  EXPECT_THAT(text, HasSubstr(std::string("100 samples/s, 12.8K tokens/s, ") + tflops)) << text;
  EXPECT_EQ(text.find("MFU"), std::string::npos) << "no peak known, no MFU";

  job.mutable_result()->set_peak_flops(flops * 4);
  EXPECT_THAT(SummaryText(job), HasSubstr("(MFU 25.0%)"));
  const std::string json = SummaryJson(job);
  EXPECT_THAT(json, HasSubstr("\"wallSeconds\": 723"));
  EXPECT_THAT(json, HasSubstr("\"generations\": 3"));
  EXPECT_THAT(json, HasSubstr("\"restarts\": 1"));
  EXPECT_THAT(json, HasSubstr("\"mfu\": 0.25"));
}

TEST(DisplayProgress, AnMlpHasNoFlopsFigure) {
  v1::Job job = Finished();
  job.mutable_spec()->mutable_model()->set_preset("mlp");
  job.mutable_result()->set_tokens_per_second(100);
  const std::string text = SummaryText(job);
  EXPECT_THAT(text, HasSubstr("throughput  100 samples/s (steady state)")) << text;
  EXPECT_EQ(SummaryJson(job).find("modelFlopsPerSecond"), std::string::npos);
}

}  // namespace
}  // namespace gradsync::cli
