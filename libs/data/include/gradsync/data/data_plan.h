// A job's data as the libraries build it: the source and the held-out set resolved from the spec once
// (libs/spec's job_plan.h), sizes checked and the model's sequence length and vocabulary attached.
// data::CreateDataset and data::CreateValidationSet take this, never the spec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gradsync::data {

// data.synthetic: labels from a fixed random teacher network (synthetic_teacher.h). Every size is
// positive, num_classes at least 2.
struct SyntheticPlan {
  int64_t num_samples = 0;
  int64_t input_dim = 0;
  int64_t num_classes = 0;
  int64_t teacher_hidden = 0;
  uint64_t seed = 0;
};

// data.text (UTF-8 files, tokenised bytewise) or data.shards (llm.c .bin files): windows of
// seq_len tokens, every token below vocab. `paths` is not empty; each may be a glob.
struct TokenPlan {
  std::vector<std::string> paths;
  bool shards = false;
  int64_t seq_len = 0;
  int64_t vocab = 0;
};

// data.validation: llm.c shards held out, read with the model's seq_len and vocab. `paths` is not
// empty.
struct ValidationPlan {
  std::vector<std::string> paths;
  int64_t seq_len = 0;
  int64_t vocab = 0;
};

struct DataPlan {
  std::variant<SyntheticPlan, TokenPlan> source;
  // None when the spec names no validation data or disables it.
  std::optional<ValidationPlan> validation;
};

}  // namespace gradsync::data
