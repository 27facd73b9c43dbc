// Token shards (llm.c's .bin format) as a worker's dataset loader reads them (ReadShard), and the
// loader itself (TokenDataset::Load) over the same file.
//
// Input: one mode byte, three bytes of vocabulary size (up to 2^24, past uint16), then the file.
// Mode bit 0 sets the header's token count to what the file holds at the width its magic names,
// so the fuzzer reaches the token checks behind it.
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
  const int vocab = 1 + static_cast<int>(in.Get<uint16_t>()) + (static_cast<int>(in.Get<uint8_t>()) << 16);
  std::string file = in.Rest();
  constexpr size_t kHeaderBytes = data::kShardHeaderInts * sizeof(int32_t);
  if ((mode & 1) && file.size() >= kHeaderBytes) {
    int32_t magic = 0;
    std::memcpy(&magic, file.data(), sizeof(magic));
    const size_t width = magic == data::kUint32Shard.magic ? 4 : 2;
    const auto count = static_cast<int32_t>((file.size() - kHeaderBytes) / width);
    std::memcpy(file.data() + 2 * sizeof(int32_t), &count, sizeof(count));
  }
  const std::string path = fuzz::WriteScratchFile("shard.bin", file);
  const absl::StatusOr<data::TokenStream> tokens = data::ReadShard(path, vocab);
  if (tokens.ok()) {
    for (uint32_t t : tokens->ToVector())
      GRADSYNC_FUZZ_CHECK(t < static_cast<uint32_t>(vocab), "a token outside the vocabulary");
  }
  const int seq_len = 1 + (mode >> 1);
  const auto dataset = data::TokenDataset::Load({path}, /*shards=*/true, seq_len, vocab);
  // Windows of seq_len + 1 tokens start seq_len apart (each window's last token is the next one's first).
  if (dataset.ok()) GRADSYNC_FUZZ_CHECK((*dataset)->size() * seq_len < (*dataset)->total_tokens(), "windows");
  return 0;
}
