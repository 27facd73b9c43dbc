// Reading job specs: text to YAML tree, overrides, then the tree to the proto.
#include "gradsync/spec/job_spec.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "overrides.h"
#include "spec_text.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"
#include "yaml_to_proto.h"

namespace gradsync::spec {
namespace {

// Prefixes a conversion error with the name of the text it came from.
absl::Status InSource(absl::string_view source, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", status.message()));
}

// yaml-cpp's exceptions, as the only kind of error this module lets out: a Status.
absl::Status FromYamlException(absl::string_view source, const YAML::Exception& e) {
  if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.msg));
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
}

// Where each document starts and whether its root is null, from the parser's events.
class DocumentMarks : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark start;
    bool null_root = false;
  };
  const std::vector<Document>& documents() const { return documents_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    documents_.push_back({mark, false});
    depth_ = 0;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { NullAtRoot(); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    ++depth_;
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    ++depth_;
  }
  void OnMapEnd() override { --depth_; }

 private:
  void NullAtRoot() {
    if (depth_ == 0 && !documents_.empty()) documents_.back().null_root = true;
  }
  std::vector<Document> documents_;
  int depth_ = 0;
};

// The first YAML document of `text`, refusing a second one that is not empty (as YAML::LoadAll
// counts them). yaml-cpp's LoadAll cannot be used: on some malformed text its parser returns empty
// documents at one place forever, and LoadAll keeps them all until memory runs out. So the parser
// reads at most two documents here, and YAML::Load builds the first.
absl::StatusOr<YAML::Node> LoadOneDocument(const std::string& text, absl::string_view source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentMarks marks;
  for (int read = 0; read < 2 && parser.HandleNextDocument(marks); ++read) {
  }
  const std::vector<DocumentMarks::Document>& documents = marks.documents();
  if (documents.size() > 1 && !documents[0].null_root && !documents[1].null_root) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": expected one YAML document, found a second at line ",
                                                   documents[1].start.line + 1, ", column ",
                                                   documents[1].start.column + 1));
  }
  YAML::Node root = YAML::Load(text);
  if (!root.IsDefined() || root.IsNull()) return absl::InvalidArgumentError(absl::StrCat(source, ": empty job spec"));
  return root;
}

absl::StatusOr<gradsync::v1::JobSpec> ParseTree(absl::string_view raw, absl::string_view source,
                                                const std::vector<std::string>& overrides) {
  // Size, bytes and nesting are bounded before yaml-cpp, whose parser recurses per level.
  const absl::StatusOr<std::string> text = internal::CheckSpecText(raw);
  if (!text.ok()) return InSource(source, text.status());
  absl::StatusOr<YAML::Node> loaded = LoadOneDocument(*text, source);
  if (!loaded.ok()) return loaded.status();
  YAML::Node root = *loaded;
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": the job spec must be a map of fields, got ", internal::DescribeNode(root)));
  }
  gradsync::v1::JobSpec spec;
  absl::Status status = internal::ApplyOverrides(overrides, *spec.GetDescriptor(), root);
  if (!status.ok()) return InSource(source, status);
  status = internal::YamlToMessage(root, "", &spec);
  if (!status.ok()) return InSource(source, status);
  return spec;
}

}  // namespace

absl::StatusOr<gradsync::v1::JobSpec> ParseJobSpec(std::string_view text, std::string_view source,
                                                   const std::vector<std::string>& overrides) {
  // The installed Abseil's string_view is its own type, not std::string_view.
  const absl::string_view name(source.data(), source.size());
  try {
    return ParseTree(absl::string_view(text.data(), text.size()), name, overrides);
  } catch (const YAML::Exception& e) {
    return FromYamlException(name, e);
  }
}

absl::StatusOr<gradsync::v1::JobSpec> LoadJobSpecFile(const std::string& path,
                                                      const std::vector<std::string>& overrides) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  // One byte past the limit is enough for ParseJobSpec to refuse it: a huge file is never read whole.
  std::string text;
  char buffer[8192];
  size_t n = 0;
  while (text.size() <= internal::kMaxSpecBytes && (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
    text.append(buffer, n);
  }
  // fread reports errors (such as the path being a directory) only through ferror and errno.
  const int read_error = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_error != 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(read_error)));
  }
  return ParseJobSpec(text, path, overrides);
}

absl::StatusOr<gradsync::v1::JobSpec> Normalize(gradsync::v1::JobSpec spec) {
  FillDefaults(&spec);
  absl::Status status = ValidateJobSpec(spec);
  if (!status.ok()) return status;
  return spec;
}

std::string ToJson(const gradsync::v1::JobSpec& spec, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = false;
  std::string json;
  // Printing fails only for Any fields without a type resolver, which JobSpec does not have.
  if (!google::protobuf::util::MessageToJsonString(spec, &json, options).ok()) return "{}";
  return json;
}

}  // namespace gradsync::spec
