// A device as a user asks for one: "auto", "cpu", "cuda" or "cuda:N". The text is parsed once,
// where it enters a process (the worker's --device, the CLI's --device); past that point only
// the typed request travels, and ResolveDevice (device.h) turns it into a device of this host.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync::device {

struct DeviceRequest {
  enum class Kind { kAuto, kCpu, kCuda };
  // kAuto: a GPU when one is visible, else the CPU.
  Kind kind = Kind::kAuto;
  // kCuda only: the N of "cuda:N"; -1 for plain "cuda", which takes the first GPU (a local
  // cluster spreads its workers over the GPUs instead).
  int ordinal = -1;

  static DeviceRequest Cpu() { return {.kind = Kind::kCpu}; }
  static DeviceRequest Gpu(int ordinal) { return {.kind = Kind::kCuda, .ordinal = ordinal}; }

  // The text ParseDeviceRequest reads back: "auto", "cpu", "cuda" or "cuda:N".
  std::string ToString() const;
  bool operator==(const DeviceRequest&) const = default;
};

// INVALID_ARGUMENT for any other text, naming `field` and the text:
// `--device: expected auto, cpu, cuda or cuda:N, got "gpu"`.
absl::StatusOr<DeviceRequest> ParseDeviceRequest(absl::string_view text, absl::string_view field);

}  // namespace gradsync::device
