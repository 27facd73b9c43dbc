// The defaults table of libs/spec/README.md names every field of the sections a newcomer tunes
// first, checkpointing and DDP: a field added to the proto without a row fails here.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

TEST(DefaultsTable, EveryCheckpointAndDdpFieldHasARow) {
  std::ifstream in(std::string(GRADSYNC_SOURCE_DIR) + "/libs/spec/README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(readme.empty());
  for (const auto& [section, message] :
       {std::pair{"checkpoint", v1::CheckpointSpec::descriptor()}, std::pair{"ddp", v1::DdpSpec::descriptor()}}) {
    for (int i = 0; i < message->field_count(); ++i) {
      const std::string row = absl::StrCat("| `", section, ".", message->field(i)->json_name(), "` |");
      EXPECT_NE(readme.find(row), std::string::npos) << "no row " << row << " in libs/spec/README.md";
    }
  }
}

}  // namespace
}  // namespace gradsync::spec
