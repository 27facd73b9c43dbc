// One table per choice: its names, in the order error messages list them, and their values.
#include "gradsync/spec/choices.h"

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "checker.h"

namespace gradsync::spec {
namespace {

template <typename E>
struct Choice {
  absl::string_view name;
  E value;
};

constexpr Choice<Device> kDevices[] = {{"auto", Device::kAuto}, {"cpu", Device::kCpu}, {"cuda", Device::kCuda}};
constexpr Choice<Precision> kPrecisions[] = {
    {"auto", Precision::kAuto}, {"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}};
constexpr Choice<LastBatch> kLastBatches[] = {
    {"partial", LastBatch::kPartial}, {"drop", LastBatch::kDrop}, {"pad", LastBatch::kPad}};
constexpr Choice<LrSchedule> kLrSchedules[] = {{"cosine", LrSchedule::kCosine}, {"constant", LrSchedule::kConstant}};
constexpr Choice<Backend> kBackends[] = {{"auto", Backend::kAuto}, {"gloo", Backend::kGloo}, {"nccl", Backend::kNccl}};
constexpr Choice<GradCompression> kGradCompressions[] = {{"none", GradCompression::kNone},
                                                         {"bf16", GradCompression::kBf16}};
constexpr Choice<Transport> kTransports[] = {{"auto", Transport::kAuto}, {"tcp", Transport::kTcp}};
constexpr Choice<Sharding> kShardings[] = {{"none", Sharding::kNone},
                                           {"optimizer", Sharding::kOptimizer},
                                           {"gradients", Sharding::kGradients},
                                           {"full", Sharding::kFull}};
constexpr Choice<Recovery> kRecoveries[] = {{"live", Recovery::kLive}, {"checkpoint", Recovery::kCheckpoint}};

// What a placement may hold: the coordinator has resolved every "auto".
constexpr Choice<Device> kPlacedDevices[] = {{"cpu", Device::kCpu}, {"cuda", Device::kCuda}};
constexpr Choice<Backend> kPlacedBackends[] = {{"gloo", Backend::kGloo}, {"nccl", Backend::kNccl}};
constexpr Choice<Precision> kPlacedPrecisions[] = {{"fp32", Precision::kFp32}, {"bf16", Precision::kBf16}};

template <typename E>
absl::StatusOr<E> Parse(absl::Span<const Choice<E>> table, absl::string_view text, absl::string_view field) {
  std::vector<absl::string_view> names;
  for (const Choice<E>& c : table) {
    if (c.name == text) return c.value;
    names.push_back(c.name);
  }
  internal::Checker check;
  check.OneOf(field, text, names);
  return check.status();
}

template <typename E>
std::string NameIn(absl::Span<const Choice<E>> table, E value) {
  for (const Choice<E>& c : table) {
    if (c.value == value) return std::string(c.name);
  }
  return "?";
}

// Sets *value from `text`; an empty placement field leaves it as it is.
template <typename E>
absl::Status ParsePlaced(absl::Span<const Choice<E>> table, absl::string_view text, absl::string_view field, E* value) {
  if (text.empty()) return absl::OkStatus();
  absl::StatusOr<E> parsed = Parse(table, text, field);
  if (!parsed.ok()) return parsed.status();
  *value = *parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Device> ParseDevice(absl::string_view text, absl::string_view field) {
  return Parse<Device>(kDevices, text, field);
}
absl::StatusOr<Precision> ParsePrecision(absl::string_view text, absl::string_view field) {
  return Parse<Precision>(kPrecisions, text, field);
}
absl::StatusOr<LastBatch> ParseLastBatch(absl::string_view text, absl::string_view field) {
  return Parse<LastBatch>(kLastBatches, text, field);
}
absl::StatusOr<LrSchedule> ParseLrSchedule(absl::string_view text, absl::string_view field) {
  return Parse<LrSchedule>(kLrSchedules, text, field);
}
absl::StatusOr<Backend> ParseBackend(absl::string_view text, absl::string_view field) {
  return Parse<Backend>(kBackends, text, field);
}
absl::StatusOr<GradCompression> ParseGradCompression(absl::string_view text, absl::string_view field) {
  return Parse<GradCompression>(kGradCompressions, text, field);
}
absl::StatusOr<Transport> ParseTransport(absl::string_view text, absl::string_view field) {
  return Parse<Transport>(kTransports, text, field);
}

absl::StatusOr<Sharding> ParseSharding(absl::string_view text, absl::string_view field) {
  return Parse<Sharding>(kShardings, text, field);
}

absl::StatusOr<Recovery> ParseRecovery(absl::string_view text, absl::string_view field) {
  return Parse<Recovery>(kRecoveries, text, field);
}

std::string Name(Device value) { return NameIn<Device>(kDevices, value); }
std::string Name(Precision value) { return NameIn<Precision>(kPrecisions, value); }
std::string Name(LastBatch value) { return NameIn<LastBatch>(kLastBatches, value); }
std::string Name(LrSchedule value) { return NameIn<LrSchedule>(kLrSchedules, value); }
std::string Name(Backend value) { return NameIn<Backend>(kBackends, value); }
std::string Name(GradCompression value) { return NameIn<GradCompression>(kGradCompressions, value); }
std::string Name(Transport value) { return NameIn<Transport>(kTransports, value); }
std::string Name(Sharding value) { return NameIn<Sharding>(kShardings, value); }
std::string Name(Recovery value) { return NameIn<Recovery>(kRecoveries, value); }

absl::StatusOr<Placement> ParsePlacement(const gradsync::v1::Placement& placement) {
  Placement p;
  for (const absl::Status& s :
       {ParsePlaced<Device>(kPlacedDevices, placement.device(), "placement.device", &p.device),
        ParsePlaced<Backend>(kPlacedBackends, placement.backend(), "placement.backend", &p.backend),
        ParsePlaced<Precision>(kPlacedPrecisions, placement.precision(), "placement.precision", &p.precision)}) {
    if (!s.ok()) return s;
  }
  return p;
}

}  // namespace gradsync::spec
