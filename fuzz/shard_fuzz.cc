// Token shards (llm.c's .bin format) as a worker's dataset loader reads them (ReadShard), and the
// loader itself (TokenDataset::Load) over the same file.
//
// Input: one mode byte, two bytes of vocabulary size, then the file. Mode bit 0 sets the header's
// token count to what the file holds, so the fuzzer reaches the token checks behind it.
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_support.h"
#include "gradsync/data/token_dataset.h"
#include "gradsync/data/token_shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  fuzz::ByteReader in(data, size);
  const auto mode = in.Get<uint8_t>();
  const int vocab = 1 + in.Get<uint16_t>();
  std::string file = in.Rest();
  constexpr size_t kHeaderBytes = data::kShardHeaderInts * sizeof(int32_t);
  if ((mode & 1) && file.size() >= kHeaderBytes) {
    const auto count = static_cast<int32_t>((file.size() - kHeaderBytes) / sizeof(uint16_t));
    std::memcpy(file.data() + 2 * sizeof(int32_t), &count, sizeof(count));
  }
  const std::string path = fuzz::WriteScratchFile("shard.bin", file);
  const absl::StatusOr<std::vector<uint16_t>> tokens = data::ReadShard(path, vocab);
  if (tokens.ok()) {
    for (uint16_t t : *tokens) GRADSYNC_FUZZ_CHECK(t < vocab, "a token outside the vocabulary");
  }
  const int seq_len = 1 + (mode >> 1);
  const auto dataset = data::TokenDataset::Load({path}, /*shards=*/true, seq_len, vocab);
  // Windows of seq_len + 1 tokens start seq_len apart (each window's last token is the next one's first).
  if (dataset.ok()) GRADSYNC_FUZZ_CHECK((*dataset)->size() * seq_len < (*dataset)->total_tokens(), "windows");
  return 0;
}
