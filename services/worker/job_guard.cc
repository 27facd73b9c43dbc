#include "job_guard.h"

#include <exception>
#include <new>

#include "absl/strings/str_cat.h"

namespace gradsync::worker {

absl::Status StatusOfCurrentException() {
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory (", e.what(), ")"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("uncaught exception: ", e.what()));
  } catch (...) {
    return absl::InternalError("uncaught exception of a type that is no std::exception");
  }
}

}  // namespace gradsync::worker
