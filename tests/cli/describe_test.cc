// gradsync get's describe view: the spec's highlights, times, restarts, result, checkpoints and
// events of a job, each where a person looks for it.
#include "describe.h"

#include "gmock/gmock.h"
#include "gradsync/nn/presets.h"
#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

google::protobuf::Timestamp At(int64_t seconds) {
  google::protobuf::Timestamp t;
  t.set_seconds(seconds);
  return t;
}

v1::Job Restarted() {
  v1::Job j;
  j.set_name("jobs/gpt-7f3a");
  j.set_state(v1::SUCCEEDED);
  v1::JobSpec* s = j.mutable_spec();
  s->mutable_model()->set_preset("gpt-tiny");
  s->mutable_model()->set_device("cpu");
  s->mutable_data()->mutable_shards()->add_paths("/data/train_*.bin");
  s->mutable_training()->set_world_size(2);
  s->mutable_training()->set_micro_batch(8);
  s->mutable_training()->set_grad_accum_steps(2);
  s->mutable_training()->set_max_steps(500);
  s->mutable_training()->set_lr(3e-4);
  s->mutable_training()->set_lr_schedule("cosine");
  s->mutable_training()->set_seed(7);
  s->mutable_ddp()->set_backend("gloo");
  s->mutable_ddp()->set_sharding("optimizer");
  s->mutable_checkpoint()->set_every_steps(100);
  s->mutable_checkpoint()->set_keep(3);
  *j.mutable_create_time() = At(1'780'000'000);
  *j.mutable_start_time() = At(1'780'000'010);
  *j.mutable_end_time() = At(1'780'000'010 + 723);
  j.set_generation(2);
  j.set_restarts(1);
  for (int64_t step : {100, 200}) {
    v1::CheckpointManifest* c = j.add_checkpoints();
    c->set_step(step);
    c->set_world_size(2);
    c->set_total_bytes(3 << 20);
    *c->mutable_commit_time() = At(1'780'000'100 + step);
    c->set_dir("/artifacts/gpt-7f3a/step-" + std::to_string(step));
  }
  v1::JobEvent* e = j.add_events();
  e->set_type("WorkerLost");
  e->set_message("rank 1 stopped heartbeating");
  *e->mutable_time() = At(1'780'000'400);
  v1::JobResult* r = j.mutable_result();
  r->set_global_step(500);
  r->set_initial_loss(5.5);
  r->set_final_loss(2.25);
  r->set_weights_path("/artifacts/gpt-7f3a/weights.bin");
  r->set_param_digest("xxh3:1234abcd");
  return j;
}

TEST(Describe, ShowsTheSpecTimesRestartsResultCheckpointsAndEvents) {
  const v1::Job job = Restarted();
  const std::string text = DescribeJob(job);
  const std::string model = nn::DescribeTransformer(*nn::ResolveTransformerConfig(job.spec().model()));
  EXPECT_THAT(text, HasSubstr("Name:        jobs/gpt-7f3a\n"));
  EXPECT_THAT(text, HasSubstr("State:       SUCCEEDED\n"));
  EXPECT_THAT(text, HasSubstr("Model:       gpt-tiny (" + model + "), device cpu\n"));
  EXPECT_THAT(text, HasSubstr("Data:        shards /data/train_*.bin\n"));
  EXPECT_THAT(text,
              HasSubstr("Training:    2 ranks, micro-batch 8 x 2 accumulated, 500 steps, lr 0.0003 cosine, seed 7\n"));
  EXPECT_THAT(text, HasSubstr("DDP:         backend gloo, sharding optimizer\n"));
  EXPECT_THAT(text, HasSubstr("Checkpoint:  every 100 steps, keep 3\n"));
  EXPECT_THAT(text, HasSubstr("Created:     2026-05-28T20:26:40Z\n"));
  EXPECT_THAT(text, HasSubstr("Ran:         started 2026-05-28T20:26:50Z, ended 2026-05-28T20:38:53Z (12m03s)\n"));
  EXPECT_THAT(text, HasSubstr("Generations: 2 (1 restart)\n"));
  EXPECT_THAT(text, HasSubstr("Progress:    step 500, loss 5.5000 -> 2.2500\n"));
  EXPECT_THAT(text, HasSubstr("Weights:     /artifacts/gpt-7f3a/weights.bin\n"));
  EXPECT_THAT(text, HasSubstr("  200      2      3.0 MiB    2026-05-28T20:31:40Z  /artifacts/gpt-7f3a/step-200\n"));
  EXPECT_THAT(text, HasSubstr("2026-05-28T20:33:20Z  WorkerLost           rank 1 stopped heartbeating\n"));
  EXPECT_LT(text.find("Checkpoints:"), text.find("Events:"));
}

TEST(Describe, APendingJobSaysWhyItWaitsAndLeavesOutWhatItHasNot) {
  v1::Job job = Restarted();
  job.set_state(v1::PENDING);
  job.set_state_reason("waiting for 2 idle workers: 1 idle of 1 registered");
  job.clear_start_time();
  job.clear_end_time();
  job.set_generation(0);
  job.clear_checkpoints();
  job.clear_events();
  job.clear_result();
  job.mutable_spec()->mutable_model()->set_precision("bf16");
  job.mutable_spec()->mutable_training()->set_min_workers(1);
  job.mutable_spec()->mutable_training()->set_max_workers(4);
  const std::string text = DescribeJob(job);
  EXPECT_THAT(text, HasSubstr(", device cpu, precision bf16\n"));
  EXPECT_THAT(text, HasSubstr("Training:    2 ranks (elastic 1..4), micro-batch"));
  EXPECT_THAT(text, HasSubstr("State:       PENDING: waiting for 2 idle workers: 1 idle of 1 registered\n"));
  for (const char* absent : {"Ran:", "Generations:", "Progress:", "Weights:", "Checkpoints:", "Events:"}) {
    EXPECT_THAT(text, Not(HasSubstr(absent))) << text;
  }
}

// What ranks report (their errors, in events and the state reason) reaches a terminal only as
// visible text: no escape sequence, no line break that forges another event.
TEST(Describe, WorkerSuppliedTextCannotDriveTheTerminal) {
  v1::Job job = Restarted();
  job.set_state(v1::FAILED);
  job.set_state_reason("rank 0 failed: \x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J");
  v1::JobEvent* e = job.add_events();
  e->set_type("RankFailed");
  e->set_message("boom\n  2026-11-29T00:00:00Z Succeeded           forged");
  const std::string text = DescribeJob(job);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("rank 0 failed: \\x1b]52;c;ZWNobyBoaQ==\\x07\\x1b[2J"));
  EXPECT_THAT(text, HasSubstr("boom\\n  2026-11-29T00:00:00Z Succeeded"));
}

}  // namespace
}  // namespace gradsync::cli
