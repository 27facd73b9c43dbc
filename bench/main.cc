// gradsync-bench: communication and training benchmarks. Ranks run as local processes.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench_commands.h"
#include "gradsync/core/args.h"
#include "gradsync/core/cpu_set.h"
#include "gradsync/core/secret_file.h"
#include "launcher.h"
#include "rank_env.h"
#include "scale_bench.h"

namespace {

constexpr char kUsage[] =
    "usage: gradsync-bench allreduce [--backend gloo|nccl] [--device cpu|cuda] [--ranks N]\n"
    "                                [--min SIZE] [--max SIZE] [--iters N] [--warmup N] [--wire fp32|bf16]\n"
    "                                [--transport auto|tcp]\n"
    "       gradsync-bench ddp [--spec FILE] [--set path=value ...] [--ranks N] [--steps N]\n"
    "                          [--local-steps N] [--backend gloo|nccl] [--device cpu|cuda]\n"
    "  --backend nccl means --device cuda; rank r uses GPU r mod (GPUs visible), and NCCL needs a\n"
    "  GPU per rank. --device cuda with gloo stages device memory through pinned host buffers.\n"
    "  --transport auto: Gloo all-reduces through shared memory (the ranks share this host); tcp:\n"
    "  over loopback TCP. The ddp bench takes ddp.transport from the spec (--set ddp.transport=tcp);\n"
    "  --local-steps (default --steps; 0 skips them) steps without gradient communication follow.\n"
    "  Rank r runs bound to its even share of the CPUs unless --no-cpu-binding (or fewer CPUs than ranks).\n"
    "       gradsync-bench scale [--workers N,N,...] [--step-seconds S] [--settle-seconds S] [--channels N]\n"
    "                            [--no-watch] [--ranks N,N,...] [--gloo-bytes-cap SIZE] [--only "
    "heartbeats|rendezvous]\n"
    "                            [--coordinator ADDR [--cluster-token-file FILE]] [--quick]\n"
    "  Simulated workers against one coordinator (started here unless --coordinator): heartbeat latency\n"
    "  and lost workers per worker count, then rendezvous time per number of ranks.\n";

using gradsync::bench::BenchArgs;

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n%s", std::string(s.message()).c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string mode = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  if (mode == "scale") {
    auto options = gradsync::bench::ParseScaleOptions(rest);
    if (!options.ok()) return Fail(options.status());
    return gradsync::bench::ScaleBench(*options);
  }
  auto args = gradsync::ParseArgs(mode, rest,
                                  {{"backend"},
                                   {"ranks"},
                                   {"min"},
                                   {"max"},
                                   {"iters"},
                                   {"warmup"},
                                   {"wire"},
                                   {"spec"},
                                   {"set"},
                                   {"steps"},
                                   {"local-steps"},
                                   {"rank"},
                                   {"coordinator"},
                                   {"cluster-token-file"},
                                   {"device"},
                                   {"transport"},
                                   {"cpus"},
                                   {"no-cpu-binding", false}});
  if (!args.ok()) return Fail(args.status());
  BenchArgs b;
  for (auto [name, field, lo, hi] :
       {std::tuple{"ranks", &b.ranks, 1, 64}, std::tuple{"rank", &b.rank, 0, 63},
        std::tuple{"iters", &b.iters, 1, 100000}, std::tuple{"warmup", &b.warmup, 0, 1000},
        std::tuple{"steps", &b.steps, 1, 100000}, std::tuple{"local-steps", &b.local_steps, 0, 100000}}) {
    auto v = args->GetInt(name, *field, lo, hi);
    if (!v.ok()) return Fail(v.status());
    *field = *v;
  }
  for (auto [name, field] : {std::pair{"min", &b.min_bytes}, std::pair{"max", &b.max_bytes}}) {
    if (!args->Has(name)) continue;
    auto v = gradsync::bench::ParseSize(args->Get(name));
    if (!v.ok()) return Fail(v.status());
    *field = *v;
  }
  b.backend = args->Get("backend", "gloo");
  if (b.backend != "gloo" && b.backend != "nccl") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--backend: expected gloo or nccl, got \"", b.backend, "\"")));
  }
  b.device = args->Get("device", b.backend == "nccl" ? "cuda" : "cpu");
  if (b.device != "cpu" && b.device != "cuda") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--device: expected cpu or cuda, got \"", b.device, "\"")));
  }
  if (b.backend == "nccl" && b.device != "cuda") {
    return Fail(absl::InvalidArgumentError("--backend: nccl reduces GPU memory; it needs --device cuda"));
  }
  const std::string wire = args->Get("wire", "fp32");
  if (wire != "fp32" && wire != "bf16") {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--wire: expected fp32 or bf16, got \"", wire, "\"")));
  }
  b.wire_bf16 = wire == "bf16";
  b.transport = args->Get("transport", "auto");
  if (b.transport != "auto" && b.transport != "tcp") {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("--transport: expected auto or tcp, got \"", b.transport, "\"")));
  }
  b.coordinator = args->Get("coordinator");
  if (args->Has("cluster-token-file")) {
    auto token = gradsync::ReadTokenFile(args->Get("cluster-token-file"), "the cluster token");
    if (!token.ok()) return Fail(token.status());
    b.cluster_token = *std::move(token);
  }
  b.spec_path = args->Get("spec");
  b.overrides = args->GetAll("set");

  if (args->Has("cpus")) {
    // A rank process: bind before any thread starts (the launcher gave each rank its share).
    const auto bound = gradsync::BindProcessToCpuList(args->Get("cpus"));
    if (!bound.ok()) return Fail(absl::InvalidArgumentError(absl::StrCat("--cpus: ", bound.status().message())));
  }
  if (mode == "allreduce-rank") return gradsync::bench::AllReduceRank(b);
  if (mode == "ddp-rank") return gradsync::bench::DdpRank(b);
  std::vector<std::string> pass = rest;
  if (mode == "allreduce" || mode == "ddp") {
    absl::Status s = gradsync::bench::LaunchRanks({mode + "-rank", pass, b.ranks, !args->Has("no-cpu-binding")});
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
    return 0;
  }
  std::fprintf(stderr, "gradsync-bench: unknown mode \"%s\"\n%s", mode.c_str(), kUsage);
  return 2;
}
