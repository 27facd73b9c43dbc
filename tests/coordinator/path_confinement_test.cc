// A job's paths are confined: its checkpoints and weights go to <artifact root>/<job id> and
// nowhere else (checkpoint.dir is at most a subdirectory name), and its data paths must resolve
// inside the data root. Each attack of issue 18 is tried against a real coordinator on real
// directories: writing into /etc-like or another job's directory, climbing with "..", reading a
// file outside the data root directly, through a symlink or through a glob.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "root:$6$not-for-your-eyes";

class PathConfinementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::weakly_canonical(fs::path(::testing::TempDir()) / ("path-confinement-" + std::to_string(::getpid())));
    fs::remove_all(base_);
    fs::create_directories(DataRoot() / "corpus");
    fs::create_directories(Outside());
    std::ofstream(DataRoot() / "corpus" / "a.txt") << "inside the data root";
    std::ofstream(Outside() / "shadow") << kSecret;
    CoordinatorOptions options;
    options.artifact_root = ArtifactRoot().string();
    options.data_roots = {DataRoot().string()};
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path ArtifactRoot() const { return base_ / "artifacts"; }
  fs::path DataRoot() const { return base_ / "data"; }
  fs::path Outside() const { return base_ / "etc"; }

  static v1::JobSpec Mlp(const std::string& checkpoint_dir = "") {
    v1::JobSpec spec;
    spec.mutable_training()->set_max_steps(100);
    spec.mutable_checkpoint()->set_dir(checkpoint_dir);
    spec.mutable_checkpoint()->set_keep(1);
    return spec;
  }

  static v1::JobSpec Text(const std::string& path) {
    v1::JobSpec spec;
    spec.mutable_model()->set_preset("gpt-tiny");
    spec.mutable_model()->set_device("cpu");
    spec.mutable_data()->mutable_text()->add_paths(path);
    spec.mutable_training()->set_max_steps(10);
    return spec;
  }

  // The message of a refused submission, which must be INVALID_ARGUMENT and quote no file.
  std::string Refused(const v1::JobSpec& spec) {
    absl::StatusOr<v1::Job> job = c_->CreateJob(spec);
    EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument)
        << "accepted as " << (job.ok() ? job->DebugString() : "");
    EXPECT_THAT(std::string(job.status().message()), Not(HasSubstr(kSecret)));
    return std::string(job.status().message());
  }

  fs::path base_;
  std::unique_ptr<Coordinator> c_;
};

TEST_F(PathConfinementTest, ACheckpointDirElsewhereIsRefusedAndNothingIsWrittenThere) {
  const fs::path victim = Outside() / "x";
  EXPECT_THAT(Refused(Mlp(victim.string())),
              HasSubstr("checkpoint.dir: must be the name of a subdirectory of the job's own directory"));
  EXPECT_THAT(Refused(Mlp("/etc/x")), HasSubstr("got \"/etc/x\""));
  EXPECT_THAT(Refused(Mlp("../..")), HasSubstr("checkpoint.dir"));
  EXPECT_THAT(Refused(Mlp("..")), HasSubstr("checkpoint.dir"));
  const std::string worker = RegisterTestWorker(*c_, "h0");
  EXPECT_FALSE(c_->NextAssignment(worker, absl::ZeroDuration())->has_value()) << "no job was queued";
  EXPECT_FALSE(fs::exists(victim));
}

TEST_F(PathConfinementTest, AnotherJobsDirectoryCannotBeNamed) {
  const std::string victim = c_->CreateJob(Mlp())->id();
  EXPECT_THAT(Refused(Mlp((ArtifactRoot() / victim).string())), HasSubstr("checkpoint.dir"));
  EXPECT_THAT(Refused(Mlp("../" + victim)), HasSubstr("checkpoint.dir"));
  EXPECT_THAT(Refused(Mlp(victim + "/checkpoints")), HasSubstr("checkpoint.dir"));
}

TEST_F(PathConfinementTest, EachJobWritesToItsOwnDirectoryAndASubdirectoryNameStaysInIt) {
  const std::string w0 = RegisterTestWorker(*c_, "h0"), w1 = RegisterTestWorker(*c_, "h1");
  const std::string plain = c_->CreateJob(Mlp())->id();
  const std::string named = c_->CreateJob(Mlp("run-1"))->id();
  const v1::Assignment a = TakeTestAssignment(*c_, w0), b = TakeTestAssignment(*c_, w1);
  EXPECT_EQ(a.job_id(), plain);
  EXPECT_EQ(a.weights_path(), (ArtifactRoot() / plain / "weights.bin").string());
  EXPECT_EQ(a.checkpoint_root(), (ArtifactRoot() / plain / "checkpoints").string());
  EXPECT_EQ(b.weights_path(), (ArtifactRoot() / named / "run-1" / "weights.bin").string());
  EXPECT_EQ(b.checkpoint_root(), (ArtifactRoot() / named / "run-1" / "checkpoints").string());
}

TEST_F(PathConfinementTest, RetentionDeletesOnlyTheJobsOwnStepDirectories) {
  const std::string w0 = RegisterTestWorker(*c_, "h0"), w1 = RegisterTestWorker(*c_, "h1");
  ASSERT_TRUE(c_->CreateJob(Mlp()).ok());
  ASSERT_TRUE(c_->CreateJob(Mlp()).ok());
  const v1::Assignment a = TakeTestAssignment(*c_, w0), b = TakeTestAssignment(*c_, w1);
  ASSERT_TRUE(ReportTestCheckpoint(*c_, w1, b, 10).ok());
  for (int64_t step : {10, 20, 30}) ASSERT_TRUE(ReportTestCheckpoint(*c_, w0, a, step).ok());
  EXPECT_FALSE(fs::exists(ckpt::CheckpointDir(a.checkpoint_root(), 10))) << "keep 1: the job's own old step goes";
  EXPECT_TRUE(fs::exists(ckpt::CheckpointDir(a.checkpoint_root(), 30)));
  EXPECT_TRUE(fs::exists(ckpt::CheckpointDir(b.checkpoint_root(), 10))) << "the other job's checkpoint stays";
}

// A job stored before checkpoint.dir became a name (here: pointing at another directory, with a
// checkpoint recorded there) resumes in its own directory and never touches the old one.
TEST_F(PathConfinementTest, AJobStoredWithACheckpointDirElsewhereKeepsToItsOwnDirectory) {
  const fs::path victim = Outside() / "victim";
  const std::string victim_step = ckpt::CheckpointDir((victim / "checkpoints").string(), 10);
  fs::create_directories(victim_step);
  v1::Job legacy;
  legacy.set_id("legacy-00001");
  legacy.set_name("jobs/legacy-00001");
  legacy.set_state(v1::RUNNING);
  *legacy.mutable_spec() = Mlp();
  spec::FillDefaults(legacy.mutable_spec());
  legacy.mutable_spec()->mutable_checkpoint()->set_dir(victim.string());
  legacy.mutable_checkpoints()->Add()->set_dir(victim_step);
  legacy.mutable_checkpoints(0)->set_step(10);
  auto store = std::make_unique<InMemoryJobStore>();
  ASSERT_TRUE(store->Insert(legacy).ok());
  CoordinatorOptions options;
  options.artifact_root = ArtifactRoot().string();
  Coordinator recovered(options, std::move(store));
  const std::string worker = RegisterTestWorker(recovered, "h0");
  const v1::Assignment a = TakeTestAssignment(recovered, worker);
  EXPECT_EQ(a.weights_path(), (ArtifactRoot() / "legacy-00001" / "weights.bin").string());
  EXPECT_FALSE(a.has_resume_from()) << "a checkpoint outside the job's directory is not resumed from";
  EXPECT_TRUE(fs::exists(victim_step)) << "nor renamed";
  ASSERT_TRUE(ReportTestCheckpoint(recovered, worker, a, 20).ok());
  EXPECT_TRUE(fs::exists(victim_step)) << "retention runs in the job's own directory only";
}

TEST_F(PathConfinementTest, DataOutsideTheDataRootIsRefusedNamingFieldPathAndRoot) {
  const std::string shadow = (Outside() / "shadow").string();
  EXPECT_THAT(Refused(Text(shadow)),
              HasSubstr("data.text.paths[0]: \"" + shadow + "\" lies outside the data root " + DataRoot().string()));
  EXPECT_THAT(Refused(Text("../etc/shadow")), HasSubstr("lies outside the data root"));
  EXPECT_THAT(Refused(Text("corpus/../../etc/shadow")), HasSubstr("lies outside the data root"));
  EXPECT_THAT(Refused(Text("/etc/shadow")), HasSubstr("\"/etc/shadow\" lies outside"));
  EXPECT_THAT(Refused(Text("missing/../../etc/shadow")), HasSubstr("climbs"));
  EXPECT_THAT(Refused(Text(".*/etc/shadow")), HasSubstr("climbs"));
}

TEST_F(PathConfinementTest, DataReachedThroughASymlinkOrAGlobMatchOutsideIsRefused) {
  fs::create_directory_symlink(Outside(), DataRoot() / "escape");
  EXPECT_THAT(Refused(Text("escape/shadow")), HasSubstr("lies outside the data root"));
  fs::create_symlink(Outside() / "shadow", DataRoot() / "corpus" / "b.txt");
  EXPECT_THAT(Refused(Text("corpus/b.txt")), HasSubstr("lies outside the data root"));
  EXPECT_THAT(Refused(Text("corpus/*.txt")),
              HasSubstr("matches \"" + (DataRoot() / "corpus" / "b.txt").string() + "\", which resolves outside"));
}

TEST_F(PathConfinementTest, DataPathsAreResolvedAndTheWorkersGetTheRoots) {
  const std::string worker = RegisterTestWorker(*c_, "h0");
  absl::StatusOr<v1::Job> job = c_->CreateJob(Text("corpus/*.txt"));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec().data().text().paths(0), (DataRoot() / "corpus" / "*.txt").string());
  const v1::Assignment a = TakeTestAssignment(*c_, worker);
  EXPECT_EQ(a.spec().data().text().paths(0), (DataRoot() / "corpus" / "*.txt").string());
  EXPECT_THAT(a.data_roots(), ::testing::ElementsAre(DataRoot().string()));
}

}  // namespace
}  // namespace gradsync::coordinator
