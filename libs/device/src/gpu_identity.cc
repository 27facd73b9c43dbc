#include "gradsync/device/gpu_identity.h"

#include "absl/strings/str_cat.h"

namespace gradsync::device {

std::string FormatGpuUuid(std::span<const unsigned char, kGpuUuidBytes> bytes) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (size_t i = 0; i < bytes.size(); ++i) {
    // The 8-4-4-4-12 grouping of an RFC 4122 UUID, as nvidia-smi writes it.
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xf];
  }
  return out;
}

bool SameGpu(std::string_view host_a, const v1::Device& a, std::string_view host_b, const v1::Device& b) {
  if (a.kind() != v1::Device::CUDA || b.kind() != v1::Device::CUDA) return false;
  if (!a.gpu_uuid().empty() && !b.gpu_uuid().empty()) return a.gpu_uuid() == b.gpu_uuid();
  return host_a == host_b && a.gpu_index() == b.gpu_index();
}

std::string GpuName(const v1::Device& d) {
  return absl::StrCat("GPU ", d.gpu_index(), d.gpu_uuid().empty() ? "" : absl::StrCat(" (", d.gpu_uuid(), ")"));
}

}  // namespace gradsync::device
