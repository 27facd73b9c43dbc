#include "gradsync/comm/gloo_store.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gloo/common/error.h"

namespace gradsync::comm {
namespace {

[[noreturn]] void Throw(const absl::Status& status) {
  throw gloo::IoException(absl::StrCat("rendezvous through the coordinator: ", status.ToString()));
}

}  // namespace

KvGlooStore::KvGlooStore(KvClient* kv, std::chrono::milliseconds timeout) : kv_(kv), timeout_(timeout) {}

void KvGlooStore::set(const std::string& key, const std::vector<char>& data) {
  absl::Status s = kv_->Set(key, std::string(data.begin(), data.end()));
  if (!s.ok()) Throw(s);
}

std::vector<char> KvGlooStore::get(const std::string& key) {
  auto value = kv_->Get(key, absl::FromChrono(timeout_));
  if (!value.ok()) Throw(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void KvGlooStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void KvGlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  absl::Status s = kv_->Wait(keys, absl::FromChrono(timeout));
  if (!s.ok()) Throw(s);
}

}  // namespace gradsync::comm
