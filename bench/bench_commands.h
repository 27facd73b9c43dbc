// gradsync-bench subcommands. The launcher runs each benchmark's ranks as processes of this
// binary ("<mode>-rank"); these functions are what one rank does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradsync::bench {

struct BenchArgs {
  int rank = 0;
  int ranks = 2;
  std::string coordinator;
  // The coordinator's cluster token, which its key-value store wants (read from
  // --cluster-token-file, which the launcher passes).
  std::string cluster_token;
  // "gloo" or "nccl" (which implies device "cuda").
  std::string backend = "gloo";
  // "cpu" or "cuda": where the buffers (allreduce) or the model (ddp) live; rank r takes GPU
  // r mod (GPUs visible).
  std::string device = "cpu";
  // Gloo's all-reduce: "auto" (shared memory between ranks on one host) or "tcp". The ddp bench
  // takes ddp.transport from the spec instead.
  std::string transport = "auto";
  // allreduce
  int64_t min_bytes = 1 << 10;
  int64_t max_bytes = 64 << 20;
  int warmup = 5;
  int iters = 20;
  bool wire_bf16 = false;
  // ddp
  std::string spec_path;
  std::vector<std::string> overrides;
  int steps = 30;
  // Steps run without gradient communication after the measured ones; -1: as many as `steps`,
  // 0: none (large models, where each step takes seconds).
  int local_steps = -1;
};

int AllReduceRank(const BenchArgs& args);
int DdpRank(const BenchArgs& args);

}  // namespace gradsync::bench
