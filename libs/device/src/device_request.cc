#include "gradsync/device/device_request.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync::device {

std::string DeviceRequest::ToString() const {
  switch (kind) {
    case Kind::kAuto: return "auto";
    case Kind::kCpu: return "cpu";
    case Kind::kCuda: return ordinal < 0 ? "cuda" : absl::StrCat("cuda:", ordinal);
  }
  return "auto";
}

absl::StatusOr<DeviceRequest> ParseDeviceRequest(absl::string_view text, absl::string_view field) {
  if (text == "auto") return DeviceRequest{};
  if (text == "cpu") return DeviceRequest::Cpu();
  if (text == "cuda") return DeviceRequest::Gpu(-1);
  int ordinal = -1;
  if (absl::StartsWith(text, "cuda:") && absl::SimpleAtoi(text.substr(5), &ordinal) && ordinal >= 0 &&
      absl::StrCat(ordinal) == text.substr(5)) {
    return DeviceRequest::Gpu(ordinal);
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": expected auto, cpu, cuda or cuda:N, got \"", text, "\""));
}

}  // namespace gradsync::device
