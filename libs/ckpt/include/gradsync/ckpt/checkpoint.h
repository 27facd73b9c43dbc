// Two-phase checkpoints. Every rank writes its part (WriteRankPart) into the checkpoint's
// directory and reports it; once every rank has reported, the coordinator writes MANIFEST.json
// (WriteManifest) last. A directory is a committed checkpoint only when its manifest exists, so
// a crash at any moment leaves either the previous committed checkpoint or the new one.
//
// Parts are sharded: rank r of N writes elements [begin, end) of the flat parameter and moment
// buffers, comm::BlockRange(total, N, r), so the ranks write one copy of the state between
// them, in parallel, whatever ddp.sharding is. ReadCheckpointState lays the shards of every part
// into whole buffers, and ReadCheckpointRange into the range one rank resumes, so any world size
// resumes from any checkpoint (a job that grows or shrinks reshards). A rank with rank-local parameters
// (ddp.ignoreParams) writes a whole part.
//
// A rank part, "rank-%05d.bin" (little-endian):
//   "GSCKPART" | u32 version (3) | u64 file bytes (trailer included)
//   u32 length | job id | i32 generation | i32 rank | i32 world size
//   i64 step | i32 epoch | i64 cursor | u64 seed | i64 adam step
//   u32 length | serialized gradsync.v1.ModelSpec
//   u32 parameter count | u64 total elements | u64 layout hash
//   per parameter: u32 name length | name | u8 weight decay | u32 rank | i64 dims[rank]
//   u64 shard begin | u64 shard elements | u8 1 with optimizer state, 0 without
//   f32 params[shard] | f32 adam_m[shard] | f32 adam_v[shard] (the moments only with state)
//   u64 XXH3-64 of every byte before it (checksum.h)
// Version 2 parts (the same with an FNV-1a trailer) and version 1 parts (whole: no shard fields,
// then u64 moment elements, 0 or the total; FNV-1a trailer) still read.
//
// Every function may be called from any thread; concurrent writers must use different files
// (one part per rank; one manifest writer, the coordinator).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/ckpt/names.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/v1/checkpoint.pb.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::ckpt {

// One rank's part of a checkpoint, or (whole()) everything a rank needs to resume exactly where
// it stopped.
struct RankState {
  v1::ModelSpec model;
  nn::ParamLayout layout;
  // Elements [shard_begin, shard_begin + params.size()) of the flat buffers: all of them in a
  // whole state, a rank's shard in a sharded part.
  int64_t shard_begin = 0;
  std::vector<float> params;  // the shard's values
  std::vector<float> adam_m;  // empty (no optimizer state) or as many values as params
  std::vector<float> adam_v;  // same size as adam_m
  int64_t adam_step = 0;      // the optimizer's step count (bias correction)
  int64_t step = 0;           // optimizer steps completed
  int32_t epoch = 0;          // where the data plan resumes
  int64_t cursor = 0;         // global sample cursor within `epoch`
  int32_t rank = 0;
  int32_t world_size = 1;
  uint64_t seed = 0;
  std::string job_id;
  int32_t generation = 0;

  bool whole() const { return shard_begin == 0 && static_cast<int64_t>(params.size()) == layout.total_numel(); }
};

// Writes `state` to `dir`/rank-%05d.bin atomically (temporary file in `dir`, fsync, rename,
// fsync of `dir`), creating `dir` and its parents; an existing file of the same name is
// replaced. Returns the part to report: file name, bytes and "xxh3-64:<hex>" of the whole file.
// INVALID_ARGUMENT when the buffers do not match the layout or the rank is outside the world;
// INTERNAL / PERMISSION_DENIED naming the path on I/O errors.
absl::StatusOr<v1::CheckpointPart> WriteRankPart(const std::string& dir, const RankState& state);

// Reads a part file and checks its own structure and trailing checksum. NOT_FOUND when the file
// is missing; DATA_LOSS naming the file and the problem (bad magic, unsupported version,
// truncated, checksum mismatch, inconsistent layout).
absl::StatusOr<RankState> ReadRankPart(const std::string& path);

// As above for the file `part` names in `dir`, and also checks it against the manifest: its size,
// its whole-file checksum by the algorithm the manifest's digest names (checksum.h), and the rank
// it holds (DATA_LOSS naming the file otherwise, also for a digest of an unknown algorithm).
absl::StatusOr<RankState> ReadRankPart(const std::string& dir, const v1::CheckpointPart& part);

// The whole state of the committed checkpoint `m` (in m.dir()): every part read and checked
// against the manifest (ReadRankPart), its shard laid into whole buffers. Where parts overlap
// (whole parts of version 1, rank-local parameters), `prefer_rank`'s values win; the run fields
// (rank, world size, generation) are that part's, or rank 0's when the checkpoint has no such
// rank. ReadRankPart's errors; DATA_LOSS naming the checkpoint when parts disagree on the model,
// leave elements uncovered, or some carry optimizer state and others not.
absl::StatusOr<RankState> ReadCheckpointState(const v1::CheckpointManifest& m, int prefer_rank);

// As ReadCheckpointState, but only elements [begin, end) of the state (shard_begin = begin): what
// one rank of a sharded job resumes. The parts are read one at a time and each dropped once its
// elements in the range are copied, so the caller never holds more than the range and one part,
// whatever world size wrote them. INVALID_ARGUMENT when [begin, end) is no range,
// FAILED_PRECONDITION when it ends beyond the checkpoint's model; then as ReadCheckpointState.
absl::StatusOr<RankState> ReadCheckpointRange(const v1::CheckpointManifest& m, int prefer_rank, int64_t begin,
                                              int64_t end);

// Writes `dir`/MANIFEST.json (protobuf JSON mapping) atomically: this commits the checkpoint.
// INTERNAL / PERMISSION_DENIED naming the path on I/O errors.
absl::Status WriteManifest(const std::string& dir, const v1::CheckpointManifest& manifest);

// NOT_FOUND when `dir` has no manifest (an uncommitted checkpoint); DATA_LOSS naming the file when
// it cannot be parsed.
absl::StatusOr<v1::CheckpointManifest> ReadManifest(const std::string& dir);

// OK when `dir` holds a readable manifest listing one part per rank of its world size and every
// part's file exists with the recorded size and checksum (by the algorithm each digest names).
// Otherwise the manifest's status from ReadManifest, or DATA_LOSS naming the first bad part and
// what is wrong with it (an unknown digest algorithm too). Reads every part in full.
absl::Status VerifyCheckpoint(const std::string& dir);

// The committed checkpoints under `root` (step-* directories with a readable manifest), oldest
// step first. Each manifest's `dir` is set to the directory it was found in. Directories without
// a manifest or with an unreadable one are left out; parts are not verified (VerifyCheckpoint).
// An absent root gives an empty list.
std::vector<v1::CheckpointManifest> ListCommitted(const std::string& root);

// Deletes the committed checkpoints under `root` beyond the newest `keep` (at least 1 is always
// kept, whatever `keep` says), and step-* directories without a readable manifest whose step is
// older than the newest committed one: leftovers of aborted checkpoints. Newer uncommitted
// directories may be checkpoints in progress and are kept. Returns the first deletion error,
// after trying every deletion.
absl::Status ApplyRetention(const std::string& root, int keep);

// How far one parameter tensor moved between two states.
struct TensorDiff {
  std::string name;
  double max_abs = 0.0;  // max |a - b|
  double max_rel = 0.0;  // max |a - b| / max(|a|, |b|, kDiffTiny)
  int64_t numel = 0;
};

// The floor of the denominator of TensorDiff::max_rel, so that two zeros differ by 0.
inline constexpr double kDiffTiny = 1e-30;

// Per parameter of `a`'s layout, in order. Values differing where one is NaN count as an
// infinite difference; bitwise-equal values (NaNs included) as none. FAILED_PRECONDITION naming
// the first parameter whose name or shape differs, or the parameter counts.
absl::StatusOr<std::vector<TensorDiff>> DiffParams(const RankState& a, const RankState& b);

}  // namespace gradsync::ckpt
