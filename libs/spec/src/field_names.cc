#include "field_names.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::spec::internal {

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

const std::string* Closest(absl::string_view name, const std::vector<const std::string*>& candidates,
                           size_t max_distance) {
  const std::string* best = nullptr;
  size_t best_distance = max_distance + 1;
  for (const std::string* candidate : candidates) {
    const size_t d = EditDistance(name, *candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

namespace {

// A name other tools give a field, and where it is in a job spec.
struct ForeignName {
  const char* key;
  const char* path;
  const char* origin;
};

// Hugging Face's config.json names (as written and in camelCase), GPT-2's, and the training
// arguments of Transformers and torchrun. Each key is matched case-sensitively; `path` is the
// JSON path from the spec's top.
constexpr ForeignName kForeignNames[] = {
    {"hidden_size", "model.transformer.width", "Hugging Face's"},
    {"hiddenSize", "model.transformer.width", "Hugging Face's"},
    {"n_embd", "model.transformer.width", "GPT-2's"},
    {"dModel", "model.transformer.width", "the Transformer paper's"},
    {"d_model", "model.transformer.width", "the Transformer paper's"},
    {"intermediate_size", "model.transformer.mlpWidth", "Hugging Face's"},
    {"intermediateSize", "model.transformer.mlpWidth", "Hugging Face's"},
    {"n_inner", "model.transformer.mlpWidth", "GPT-2's"},
    {"num_hidden_layers", "model.transformer.layers", "Hugging Face's"},
    {"numHiddenLayers", "model.transformer.layers", "Hugging Face's"},
    {"n_layer", "model.transformer.layers", "GPT-2's"},
    {"num_attention_heads", "model.transformer.heads", "Hugging Face's"},
    {"numAttentionHeads", "model.transformer.heads", "Hugging Face's"},
    {"n_head", "model.transformer.heads", "GPT-2's"},
    {"num_key_value_heads", "model.transformer.kvHeads", "Hugging Face's"},
    {"numKeyValueHeads", "model.transformer.kvHeads", "Hugging Face's"},
    {"max_position_embeddings", "model.transformer.seqLen", "Hugging Face's"},
    {"maxPositionEmbeddings", "model.transformer.seqLen", "Hugging Face's"},
    {"n_positions", "model.transformer.seqLen", "GPT-2's"},
    {"n_ctx", "model.transformer.seqLen", "GPT-2's"},
    {"block_size", "model.transformer.seqLen", "nanoGPT's"},
    {"blockSize", "model.transformer.seqLen", "nanoGPT's"},
    {"max_seq_len", "model.transformer.seqLen", "MiniMind's"},
    {"rope_base", "model.transformer.ropeTheta", "the RoPE paper's"},
    {"ropeBase", "model.transformer.ropeTheta", "the RoPE paper's"},
    {"rms_norm_eps", "model.transformer.normEps", "Hugging Face's"},
    {"rmsNormEps", "model.transformer.normEps", "Hugging Face's"},
    {"layer_norm_epsilon", "model.transformer.normEps", "GPT-2's"},
    {"layerNormEpsilon", "model.transformer.normEps", "GPT-2's"},
    {"learning_rate", "training.lr", "Transformers' TrainingArguments"},
    {"learningRate", "training.lr", "Transformers' TrainingArguments"},
    {"per_device_train_batch_size", "training.microBatch", "Transformers' TrainingArguments"},
    {"batch_size", "training.microBatch", "PyTorch's DataLoader"},
    {"batchSize", "training.microBatch", "PyTorch's DataLoader"},
    {"gradient_accumulation_steps", "training.gradAccumSteps", "Transformers' TrainingArguments"},
    {"gradientAccumulationSteps", "training.gradAccumSteps", "Transformers' TrainingArguments"},
    {"accumulation_steps", "training.gradAccumSteps", "MiniMind's"},
    {"num_train_epochs", "training.epochs", "Transformers' TrainingArguments"},
    {"numTrainEpochs", "training.epochs", "Transformers' TrainingArguments"},
    {"max_grad_norm", "training.gradClip", "Transformers' TrainingArguments"},
    {"maxGradNorm", "training.gradClip", "Transformers' TrainingArguments"},
    {"grad_clip", "training.gradClip", "MiniMind's"},
    {"nproc_per_node", "training.worldSize", "torchrun's"},
    {"nprocPerNode", "training.worldSize", "torchrun's"},
    {"max_restarts", "training.maxRestarts", "torchrun's"},
    {"bucket_cap_mb", "ddp.bucketCapMb", "DistributedDataParallel's"},
    {"find_unused_parameters", "ddp.ignoreParams", "DistributedDataParallel's (list the unused ones)"},
};

// The fields of `descriptor` and the messages under it whose JSON or proto name is `key`, as JSON
// paths below `path`; `depth` bounds the walk.
void FindEverywhere(const google::protobuf::Descriptor& descriptor, absl::string_view key, const std::string& path,
                    int depth, std::vector<std::string>* out) {
  for (int i = 0; i < descriptor.field_count() && depth > 0; ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor.field(i);
    const std::string here = JoinPath(path, field->json_name());
    if (field->json_name() == key || field->name() == key) out->push_back(here);
    if (field->message_type() != nullptr && !field->is_map()) {
      FindEverywhere(*field->message_type(), key, here, depth - 1, out);
    }
  }
}

}  // namespace

const google::protobuf::FieldDescriptor* FindField(const google::protobuf::Descriptor& descriptor,
                                                   absl::string_view key) {
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor.field(i);
    if (field->json_name() == key || field->name() == key) return field;
  }
  return nullptr;
}

std::string SuggestField(const google::protobuf::Descriptor& descriptor, absl::string_view key) {
  // A suggestion further than this from what was typed is more confusing than helpful.
  const size_t max_distance = std::min<size_t>(2, std::max<size_t>(1, key.size() / 3));
  // Both spellings of every field, each leading back to its JSON name.
  std::vector<const std::string*> names;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    names.push_back(&descriptor.field(i)->json_name());
    names.push_back(&descriptor.field(i)->name());
  }
  if (const std::string* best = Closest(key, names, max_distance)) {
    const size_t at = static_cast<size_t>(std::find(names.begin(), names.end(), best) - names.begin());
    return absl::StrCat("; did you mean ", descriptor.field(static_cast<int>(at / 2))->json_name(), "?");
  }
  for (const ForeignName& name : kForeignNames) {
    if (key == name.key) return absl::StrCat("; ", key, " is ", name.origin, " name for ", name.path);
  }
  // A field of the spec written at the wrong level (lr at the top for training.lr).
  std::vector<std::string> elsewhere;
  FindEverywhere(*v1::JobSpec::descriptor(), key, "", 4, &elsewhere);
  if (elsewhere.empty()) return "";
  return absl::StrCat("; did you mean ", absl::StrJoin(elsewhere, " or "), "?");
}

std::string JoinPath(absl::string_view parent, absl::string_view name) {
  if (parent.empty()) return std::string(name);
  return absl::StrCat(parent, ".", name);
}

}  // namespace gradsync::spec::internal
