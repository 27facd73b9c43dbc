// TrainLoop's validation: after the checkpoint of a step and before its log line and report, the
// ranks evaluate when the evaluator says it is due (evaluator.h). Every rank decides alike from the
// step and done(), which the ranks agree on.
#include "gradsync/train/train_loop.h"

namespace gradsync::train {

absl::Status TrainLoop::EvaluateIfDue(StepFigures* f) {
  if (!evaluator_->Due(at_.step, done())) return absl::OkStatus();
  absl::StatusOr<Evaluation> e = evaluator_->Evaluate(at_.step, replica_.model(), replica_.comm());
  if (!e.ok()) return e.status();
  f->validation_loss = e->loss;
  result_.set_validation_loss(e->loss);
  return absl::OkStatus();
}

}  // namespace gradsync::train
