#include "continuation.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"

namespace gradsync::coordinator {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;

bool Ended(v1::JobState s) { return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED; }

std::string Join(const std::string& prefix, const FieldDescriptor& f) {
  return prefix.empty() ? f.json_name() : absl::StrCat(prefix, ".", f.json_name());
}

// The parts of a spec a continued run must share with the run it continues.
struct Shape {
  v1::ModelSpec model;
  v1::DataSpec data;
  v1::TrainingSpec batch;  // microBatch, gradAccumSteps and seed only
};

Shape ShapeOf(const v1::JobSpec& spec) {
  Shape s{spec.model(), spec.data(), {}};
  // Where and in what arithmetic the model computes may change: checkpoints hold fp32 state.
  s.model.clear_device();
  s.model.clear_precision();
  // The starting weights are the checkpoint's either way.
  s.model.clear_init_from();
  s.model.clear_init_optimizer();
  // The held-out set decides nothing about the run.
  s.data.clear_validation();
  s.batch.set_micro_batch(spec.training().micro_batch());
  s.batch.set_grad_accum_steps(spec.training().grad_accum_steps());
  s.batch.set_seed(spec.training().seed());
  return s;
}

}  // namespace

std::string FirstDifference(const Message& a, const Message& b, const std::string& prefix) {
  const google::protobuf::Descriptor* d = a.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor& f = *d->field(i);
    const std::string path = Join(prefix, f);
    if (f.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f.is_repeated()) {
      const std::string inner =
          FirstDifference(a.GetReflection()->GetMessage(a, &f), b.GetReflection()->GetMessage(b, &f), path);
      if (!inner.empty()) return inner;
      continue;
    }
    // The one field on its own: equal exactly when a copy holding only it is.
    std::unique_ptr<Message> x(a.New()), y(b.New());
    x->CopyFrom(a);
    y->CopyFrom(b);
    for (int j = 0; j < d->field_count(); ++j) {
      if (j == i) continue;
      x->GetReflection()->ClearField(x.get(), d->field(j));
      y->GetReflection()->ClearField(y.get(), d->field(j));
    }
    if (!MessageDifferencer::Equals(*x, *y)) return path;
  }
  return "";
}

absl::StatusOr<v1::CheckpointManifest> ContinuationPoint(const v1::JobSpec& next, const v1::Job& previous) {
  const std::string field = "training.resumeFrom";
  const std::string& name = previous.name();
  if (previous.spec().has_script()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", name, " is a script job; a script continues its own "
                                                   "run (gradsync.torch.load)"));
  }
  if (!Ended(previous.state())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", name, " is ", v1::JobState_Name(previous.state()),
                                                   "; a job continues a run that has ended (cancel it first)"));
  }
  if (previous.checkpoints().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", name, " has no committed checkpoint to continue from"));
  }
  const Shape a = ShapeOf(next), b = ShapeOf(previous.spec());
  std::string differs = FirstDifference(a.model, b.model, "model");
  if (differs.empty()) differs = FirstDifference(a.data, b.data, "data");
  if (differs.empty()) differs = FirstDifference(a.batch, b.batch, "training");
  if (!differs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", differs, " differs from ", name,
                                                   "'s; a job continues a run only with the same model, data and "
                                                   "batch shape"));
  }
  return *previous.checkpoints().rbegin();
}

}  // namespace gradsync::coordinator
