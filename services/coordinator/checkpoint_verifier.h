// Checkpoint verification off the coordinator's lock. Verifying re-hashes every part of a
// checkpoint (the whole model state); a thread of its own does it, and the scheduler only asks
// for the verdict: a job whose resume checkpoint is not yet verified waits (with a reason) while
// everything else goes on. The coordinator asks for each checkpoint as it commits, so by the
// time a job resumes its verdict is usually known.
//
// A verdict holds while the checkpoint's files keep their sizes and modification times, and for
// one `epoch` (the job's restart count): after a failure the checkpoint is verified again, since
// a rank may have failed reading a part whose bytes rotted without a new modification time.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gradsync::coordinator {

class CheckpointVerifier {
 public:
  enum class Verdict { kVerified, kCorrupt, kPending };
  struct Result {
    Verdict verdict = Verdict::kPending;
    absl::Status status;  // why it is corrupt (ckpt::VerifyCheckpoint's words)
  };

  // `on_verdict` runs on the verifier's thread, with no lock of the verifier held, after each
  // verdict it reaches (the coordinator schedules the jobs that waited for it).
  explicit CheckpointVerifier(std::function<void()> on_verdict);
  ~CheckpointVerifier();

  // What is known of `dir` for `epoch`. kPending queues its verification (once) when nothing
  // is known, when its files changed since, or when the verdict was for an older epoch. Cheap:
  // a stat of each file. Thread-safe.
  Result Check(const std::string& dir, int64_t epoch);
  // The verdict now, verifying on the caller's thread if need be (a checkpoint that changed
  // between Check and its use).
  Result CheckNow(const std::string& dir, int64_t epoch);
  // Stops the thread; later checks stay pending. Call without holding a lock `on_verdict` takes.
  void Shutdown();

 private:
  struct Known {
    int64_t epoch = 0;
    std::string fingerprint;  // sizes and modification times of the manifest and parts
    Result result;
  };
  void Loop();
  void Record(const std::string& dir, int64_t epoch, const std::string& fingerprint, absl::Status status);

  const std::function<void()> on_verdict_;
  absl::Mutex mu_;
  std::map<std::string, Known> known_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<std::string, int64_t>> queue_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> queued_ ABSL_GUARDED_BY(mu_);  // dir -> epoch queued
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gradsync::coordinator
