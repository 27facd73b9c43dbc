// What a node agent runs: one worker process per selected GPU (--gpus), or N CPU workers
// (--workers), each with its own name, device, listen ports and share of the CPUs. Plain values,
// no processes: node_agent.h starts and supervises what PlanNodeWorkers returns.
//
// Why every GPU stays visible to every child (--device cuda:K, not CUDA_VISIBLE_DEVICES=K):
// NCCL moves data between two processes' GPUs directly (NVLink, PCIe peer to peer) only when each
// process can open the other's device; with one GPU visible per process it falls back to copies
// through host shared memory. A child computes on cuda:K alone, since every CUDA call of a rank
// runs after cudaSetDevice(K).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::worker {

// The GPU ordinals --gpus selects among `visible` GPUs: "all", "N" (the first N), or a list of
// ordinals such as "0,2,5" (ascending, no repeats). INVALID_ARGUMENT naming --gpus for other text;
// FAILED_PRECONDITION naming --gpus when no GPU is visible or the selection names one that is not.
// `built_with_cuda` only words the message.
absl::StatusOr<std::vector<int>> SelectGpus(const std::string& request, int visible, bool built_with_cuda);

// `address` ("host:port") with its port raised by `offset`; port 0 (a free port) and an empty
// address (disabled) stay as they are. INVALID_ARGUMENT naming `flag` when the address has no
// numeric port or the port would pass 65535.
absl::StatusOr<std::string> OffsetListenPort(const std::string& flag, const std::string& address, int offset);

// `path` with "-<suffix>" before its extension: "w.json", "gpu3" -> "w-gpu3.json".
std::string SuffixedPath(const std::string& path, const std::string& suffix);

struct NodeLayout {
  std::string binary;                  // gradsync-worker's path
  std::vector<int> gpus;               // GPU ordinals, one worker each; empty: CPU workers
  int cpu_workers = 0;                 // used when `gpus` is empty
  std::string name = "worker";         // --name of the agent; children add "-gpu<K>" or "-cpu<K>"
  std::string metrics_listen;          // the agent's --metrics_listen: child K listens on port + K
  std::string health_listen;           // the agent's --health_listen: likewise
  std::string endpoints_file;          // if set, child K writes SuffixedPath(file, "gpu<K>"/"cpu<K>")
  std::vector<int> cpus;               // --cpus of the agent, split evenly; empty: no binding
  std::vector<std::string> forwarded;  // every other flag, "--flag=value", passed on unchanged
};

// One child of a node agent.
struct NodeWorker {
  std::string name;  // e.g. "node-a-gpu3": its --name, and how the agent's log names it
  std::vector<std::string> argv;
};

// The children of `layout`, in GPU (or CPU worker) order. Errors name the flag at fault.
absl::StatusOr<std::vector<NodeWorker>> PlanNodeWorkers(const NodeLayout& layout);

}  // namespace gradsync::worker
