// Job spec text (YAML or JSON) through the path every spec takes: the bounds on the text, yaml-cpp,
// the conversion to the proto, defaults and validation. Beyond not crashing it checks that
//  - text the pre-parser scan lets through never nests deeper in yaml-cpp's parser than the scan's
//    bound promises (so a parse is safe on a small stack), and
//  - a valid spec printed by ToJson parses back to the same proto.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_support.h"
#include "google/protobuf/util/message_differencer.h"
#include "gradsync/spec/job_spec.h"
#include "spec_text.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/exceptions.h"
#include "yaml-cpp/parser.h"
#include "yaml_shape.h"

namespace gradsync::fuzz {
namespace {

// The deepest nesting of collections yaml-cpp's parser reaches, from its events.
class DepthMeter : public YAML::EventHandler {
 public:
  int max_depth() const { return max_depth_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open();
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override { Open(); }
  void OnMapEnd() override { --depth_; }

 private:
  void Open() { max_depth_ = std::max(max_depth_, ++depth_); }
  int depth_ = 0;
  int max_depth_ = 0;
};

int YamlCppDepth(const std::string& text) {
  std::istringstream in(text);
  DepthMeter meter;
  try {
    // Two documents at most, as ParseJobSpec reads: on some text the parser never runs out of them.
    YAML::Parser parser(in);
    for (int read = 0; read < 2 && parser.HandleNextDocument(meter); ++read) {
    }
  } catch (const YAML::Exception&) {
    // Its depth up to the error still counts.
  }
  return meter.max_depth();
}

void CheckScanBoundsTheParser(std::string_view raw) {
  const absl::StatusOr<std::string> text = spec::internal::CheckSpecText(absl::string_view(raw.data(), raw.size()));
  if (!text.ok()) return;
  // Each level the scan counts is at most two in the parser (a flow list entry `key: value` is a map).
  const int depth = YamlCppDepth(*text);
  GRADSYNC_FUZZ_CHECK(depth <= 2 * spec::internal::kMaxNesting, "yaml-cpp nested " + std::to_string(depth));
}

void CheckJsonRoundTrip(const v1::JobSpec& spec) {
  const absl::StatusOr<v1::JobSpec> normalized = spec::Normalize(spec);
  if (!normalized.ok()) return;
  const std::string json = spec::ToJson(*normalized);
  const absl::StatusOr<v1::JobSpec> again = spec::ParseJobSpec(json, "ToJson");
  GRADSYNC_FUZZ_CHECK(again.ok(), again.status().ToString() + " for " + json);
  GRADSYNC_FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(*again, *normalized), json);
}

}  // namespace
}  // namespace gradsync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gradsync::fuzz::QuietLibraryLogs();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  gradsync::fuzz::CheckScanBoundsTheParser(text);
  const absl::StatusOr<gradsync::v1::JobSpec> spec = gradsync::spec::ParseJobSpec(text, "fuzz");
  if (spec.ok()) gradsync::fuzz::CheckJsonRoundTrip(*spec);
  return 0;
}
