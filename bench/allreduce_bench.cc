// gradsync-bench allreduce: all-reduce time and bandwidth per message size, nccl-tests style.
//   algbw = bytes / time;  busbw = algbw x 2(n-1)/n (what each rank's link carries in a ring).
#include <cstdio>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench_commands.h"
#include "gpu_rank.h"
#include "gradsync/device/device.h"
#include "rank_env.h"

namespace gradsync::bench {

int AllReduceRank(const BenchArgs& args) {
  auto env = ConnectRank(args.rank, args.ranks, args.coordinator, args.cluster_token, args.transport == "auto");
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().ToString().c_str());
    return 1;
  }
  // Device buffers through a GPU rank's communicator, or host buffers through Gloo.
  std::unique_ptr<GpuRank> gpu;
  if (args.device == "cuda") {
    const int gpus = static_cast<int>(device::ListGpus().size());
    auto g = ConnectGpuRank(*env, args.backend, gpus > 0 ? args.rank % gpus : 0);
    if (!g.ok()) {
      std::fprintf(stderr, "%s\n", g.status().ToString().c_str());
      return 1;
    }
    gpu = *std::move(g);
  }
  comm::Communicator& comm = gpu != nullptr ? gpu->comm() : *env->comm;
  const comm::WireType wire = args.wire_bf16 ? comm::WireType::kBFloat16 : comm::WireType::kFloat32;
  if (args.rank == 0) {
    std::printf("# gradsync-bench allreduce: backend %s, %d ranks, fp32 %s buffers, %s on the wire\n",
                comm.backend().c_str(), comm.size(), gpu != nullptr ? "GPU" : "host", args.wire_bf16 ? "bf16" : "fp32");
    std::printf("%12s %12s %8s %12s %10s %10s\n", "size", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
  }
  const double bus = comm.size() > 1 ? 2.0 * (comm.size() - 1) / comm.size() : 0.0;
  for (int64_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes *= 2) {
    const size_t count = static_cast<size_t>(bytes / sizeof(float));
    std::vector<float> host;
    std::span<float> data;
    if (gpu != nullptr) {
      auto d = gpu->Buffer(count);
      if (!d.ok()) {
        std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
        return 1;
      }
      data = *d;
    } else {
      host.assign(count, 1.0f);
      data = host;
    }
    for (int i = 0; i < args.warmup; ++i) (void)comm.AllReduce(data, comm::ReduceOp::kSum, wire)->Wait();
    if (!comm.Barrier()->Wait().ok()) return 1;
    const absl::Time start = absl::Now();
    for (int i = 0; i < args.iters; ++i) {
      absl::Status s = comm.AllReduce(data, comm::ReduceOp::kSum, wire)->Wait();
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    const double secs = absl::ToDoubleSeconds(absl::Now() - start) / args.iters;
    const double algbw = static_cast<double>(bytes) / secs / 1e9;
    if (args.rank == 0) {
      std::printf("%12s %12zu %8s %12.1f %10.3f %10.3f\n", FormatBytes(bytes).c_str(), count, "float", secs * 1e6,
                  algbw, algbw * bus);
      std::fflush(stdout);
    }
    if (bytes == 0) break;
  }
  return 0;
}

}  // namespace gradsync::bench
