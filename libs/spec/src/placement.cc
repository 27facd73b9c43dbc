#include "gradsync/spec/placement.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gradsync/device/gpu_identity.h"
#include "gradsync/spec/choices.h"

namespace gradsync::spec {
namespace {

std::string Where(const RankHost& r) { return absl::StrCat(r.worker_id, " on ", r.hostname); }

absl::StatusOr<std::vector<v1::Placement>> Place(const absl::StatusOr<spec::Device>& device,
                                                 const absl::StatusOr<spec::Precision>& precision,
                                                 const absl::StatusOr<spec::Backend>& asked, bool gpu_model,
                                                 const std::vector<RankHost>& ranks) {
  for (const absl::Status& s : {device.status(), precision.status(), asked.status()}) {
    if (!s.ok()) return s;
  }
  std::vector<v1::Placement> out(ranks.size());
  std::vector<std::string> without_gpu;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].device.kind() != v1::Device::CUDA) {
      without_gpu.push_back(absl::StrCat("rank ", r, " (", Where(ranks[r]), ")"));
    }
  }
  // One device kind for the whole generation (see the header).
  const bool cuda =
      *device == spec::Device::kCuda || (*device == spec::Device::kAuto && without_gpu.empty() && gpu_model);
  const spec::Precision placed =
      *precision != spec::Precision::kAuto ? *precision : (cuda ? spec::Precision::kBf16 : spec::Precision::kFp32);
  for (size_t r = 0; r < ranks.size(); ++r) {
    out[r].set_device(spec::Name(cuda ? spec::Device::kCuda : spec::Device::kCpu));
    out[r].set_precision(spec::Name(placed));
    if (!cuda && placed == spec::Precision::kBf16) {
      return absl::FailedPreconditionError(absl::StrCat("model.precision: bf16 runs on a GPU only, and rank ", r, " (",
                                                        Where(ranks[r]), ") computes on its CPU"));
    }
  }
  if (cuda && !without_gpu.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("model.device: \"cuda\" needs a GPU on every worker; ",
                                                      absl::StrJoin(without_gpu, ", "), " registered without one"));
  }

  // NCCL: every rank on a GPU, and no GPU twice (told apart by UUID, see gpu_identity.h).
  std::string nccl_obstacle;
  for (size_t r = 0; r < ranks.size() && nccl_obstacle.empty(); ++r) {
    if (!cuda) {
      nccl_obstacle = absl::StrCat("rank ", r, " (", Where(ranks[r]), ") computes on its CPU");
    }
    for (size_t q = 0; q < r && nccl_obstacle.empty(); ++q) {
      if (device::SameGpu(ranks[q].hostname, ranks[q].device, ranks[r].hostname, ranks[r].device)) {
        nccl_obstacle = absl::StrCat("rank ", r, " (", Where(ranks[r]), ") shares GPU ", ranks[r].device.gpu_index(),
                                     " with another rank (rank ", q, ", ", Where(ranks[q]), ": its ",
                                     device::GpuName(ranks[q].device), "), which NCCL refuses");
      }
    }
  }
  if (*asked == spec::Backend::kNccl && !nccl_obstacle.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("ddp.backend: \"nccl\" needs every rank on a GPU of its own, and ", nccl_obstacle,
                     "; use \"auto\" or \"gloo\""));
  }
  const spec::Backend backend =
      *asked == spec::Backend::kGloo || !nccl_obstacle.empty() ? spec::Backend::kGloo : spec::Backend::kNccl;
  for (v1::Placement& p : out) p.set_backend(spec::Name(backend));
  return out;
}

}  // namespace

absl::StatusOr<std::vector<v1::Placement>> PlaceRanks(const v1::JobSpec& spec, const nn::ModelPlan& plan,
                                                      const std::vector<RankHost>& ranks) {
  return Place(spec::ParseDevice(spec.model().device()), spec::ParsePrecision(spec.model().precision()),
               spec::ParseBackend(spec.ddp().backend()), plan.has_gpu_model(), ranks);
}

absl::StatusOr<std::vector<v1::Placement>> PlaceScriptRanks(const v1::JobSpec& spec,
                                                            const std::vector<RankHost>& ranks) {
  return Place(spec::Device::kAuto, spec::Precision::kFp32, spec::ParseBackend(spec.ddp().backend()), true, ranks);
}

}  // namespace gradsync::spec
