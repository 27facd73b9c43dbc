// The coordinator's job log store (JobLogStore) and artifact paths, as workers and clients reach
// them: batches of log lines with any field values (parsed from the input as a ReportLogsRequest,
// so any bytes a worker could send), reads with any rank, position and limit, and an artifact path
// opened under a job directory with a file inside and one beside it.
//
// Input: a mode byte; mode bit 0: the rest is one artifact path; otherwise a sequence of records
// of (a length byte pair, a serialized ReportLogsRequest, then rank, afterSeq and limit bytes).
// Checks: the store stays within its byte bound, every line read back is within the field bounds
// and prints as JSON; an artifact path never opens a file outside the job's directory.
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_support.h"
#include "google/protobuf/util/json_util.h"
#include "job_artifacts.h"
#include "job_logs.h"

namespace gradsync::fuzz {
namespace {

constexpr size_t kJobBytes = 64 << 10, kTotalBytes = 128 << 10;

void FuzzLogs(ByteReader& in) {
  coordinator::JobLogStore store({.max_job_bytes = kJobBytes, .max_total_bytes = kTotalBytes});
  while (!in.empty()) {
    const size_t length = in.Get<uint16_t>();
    const std::string bytes = in.Take(length);
    v1::ReportLogsRequest batch;
    if (!batch.ParseFromString(bytes)) continue;
    batch.set_job_id(std::to_string(batch.job_id().size() % 3));  // a few jobs, so the total bound acts
    store.Append(batch, absl::FromUnixSeconds(1'800'000'000));
    const int rank = in.Get<int8_t>();
    const v1::GetJobLogsResponse read =
        store.Read(batch.job_id(), rank < 0 ? std::nullopt : std::optional<int>(rank), in.Get<int16_t>(), in.Get<int16_t>());
    GRADSYNC_FUZZ_CHECK(store.total_bytes() <= kTotalBytes, "the store grew past its total bound");
    GRADSYNC_FUZZ_CHECK(read.dropped() >= 0, "a negative drop count");
    for (const v1::LogLine& line : read.lines()) {
      GRADSYNC_FUZZ_CHECK(line.message().size() <= coordinator::kMaxLogMessageBytes, "a message past its bound");
      GRADSYNC_FUZZ_CHECK(line.source().size() <= coordinator::kMaxLogSourceBytes, "a source past its bound");
    }
    std::string json;
    GRADSYNC_FUZZ_CHECK(google::protobuf::util::MessageToJsonString(read, &json).ok(), "an answer that does not print");
  }
}

void FuzzArtifactPath(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string root = ScratchDir() + "/artifacts";
  static const bool made = [&root] {
    fs::create_directories(root + "/job/sub");
    std::ofstream(root + "/job/sub/weights.bin") << "inside";
    std::ofstream(root + "/secret") << "outside";
    fs::create_directories(root + "/other");
    std::ofstream(root + "/other/weights.bin") << "another job's";
    return true;
  }();
  (void)made;
  coordinator::JobArtifacts artifacts(root, "job");
  absl::StatusOr<coordinator::ArtifactFile> file = artifacts.Open(path);
  if (!file.ok()) return;
  std::string bytes;
  GRADSYNC_FUZZ_CHECK(file->Read(1 << 10, &bytes).ok(), "an opened artifact that cannot be read");
  GRADSYNC_FUZZ_CHECK(bytes == "inside", "an artifact path opened a file outside the job's directory");
}

}  // namespace
}  // namespace gradsync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  fuzz::ByteReader in(data, size);
  if (in.Get<uint8_t>() & 1) {
    fuzz::FuzzArtifactPath(in.Rest());
  } else {
    fuzz::FuzzLogs(in);
  }
  return 0;
}
