// The job spec's enumerated choices as C++ enums, and the one place their text is read.
//
// A process turns these strings into enums once, where a spec or a placement enters it:
// ValidateJobSpec, the coordinator's PlaceRanks, the worker's TrainConfig. Past that boundary code
// compares enums, never the strings; a spec or placement written out again takes its text from
// Name().
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::spec {

// model.device: "auto", "cpu", "cuda".
enum class Device { kAuto, kCpu, kCuda };
// model.precision: "auto", "fp32", "bf16".
enum class Precision { kAuto, kFp32, kBf16 };
// data.lastBatch: "partial", "drop", "pad"; what the sampler does with an epoch's last, short
// global batch (gradsync/ddp/sampler.h).
enum class LastBatch { kPartial, kDrop, kPad };
// training.lrSchedule: "cosine" (decay after warmup) or "constant" (the peak rate throughout).
enum class LrSchedule { kCosine, kConstant };
// ddp.backend: "auto", "gloo", "nccl".
enum class Backend { kAuto, kGloo, kNccl };
// ddp.gradCompression: "none" (fp32 on the wire) or "bf16".
enum class GradCompression { kNone, kBf16 };
// ddp.transport: "auto" (Gloo's all-reduce through shared memory where every rank can map it) or
// "tcp".
enum class Transport { kAuto, kTcp };
// ddp.sharding: "none", "optimizer" (ZeRO-1), "gradients" (ZeRO-2), "full" (ZeRO-3).
enum class Sharding { kNone, kOptimizer, kGradients, kFull };
// training.recovery: what a lost worker costs (see job.proto).
enum class Recovery { kLive, kCheckpoint };

// Each reads the text of its spec field. INVALID_ARGUMENT otherwise, in ValidateJobSpec's words:
//   "model.device: must be one of auto, cpu, cuda, got \"tpu\""
// `field` names the field in that message.
absl::StatusOr<Device> ParseDevice(absl::string_view text, absl::string_view field = "model.device");
absl::StatusOr<Precision> ParsePrecision(absl::string_view text, absl::string_view field = "model.precision");
absl::StatusOr<LastBatch> ParseLastBatch(absl::string_view text, absl::string_view field = "data.lastBatch");
absl::StatusOr<LrSchedule> ParseLrSchedule(absl::string_view text, absl::string_view field = "training.lrSchedule");
absl::StatusOr<Backend> ParseBackend(absl::string_view text, absl::string_view field = "ddp.backend");
absl::StatusOr<GradCompression> ParseGradCompression(absl::string_view text,
                                                     absl::string_view field = "ddp.gradCompression");
absl::StatusOr<Transport> ParseTransport(absl::string_view text, absl::string_view field = "ddp.transport");
absl::StatusOr<Sharding> ParseSharding(absl::string_view text, absl::string_view field = "ddp.sharding");
absl::StatusOr<Recovery> ParseRecovery(absl::string_view text, absl::string_view field = "training.recovery");

// The spec's text of a value: what its Parse function reads back.
std::string Name(Device value);
std::string Name(Precision value);
std::string Name(LastBatch value);
std::string Name(LrSchedule value);
std::string Name(Backend value);
std::string Name(GradCompression value);
std::string Name(Transport value);
std::string Name(Sharding value);
std::string Name(Recovery value);

// A gradsync.v1.Placement (the coordinator's resolution of the spec's "auto" choices for one rank)
// as enums. Never kAuto: the device is kCpu or kCuda, the backend kGloo or kNccl, the precision
// kFp32 or kBf16.
struct Placement {
  Device device = Device::kCpu;
  Backend backend = Backend::kGloo;
  Precision precision = Precision::kFp32;
};

// Reads `placement`. An empty field keeps the default above (a placement from a coordinator that
// predates placements: the CPU and Gloo). INVALID_ARGUMENT naming "placement.device",
// "placement.backend" or "placement.precision" for any other text, "auto" included.
absl::StatusOr<Placement> ParsePlacement(const gradsync::v1::Placement& placement);

}  // namespace gradsync::spec
