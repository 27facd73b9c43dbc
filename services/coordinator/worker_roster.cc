#include "worker_roster.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"

namespace gradsync::coordinator {
namespace {

using google::protobuf::util::TimeUtil;

google::protobuf::Timestamp Stamp(absl::Time t) { return TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t)); }

google::protobuf::Duration Age(absl::Duration d) {
  return TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(std::max(d, absl::ZeroDuration())));
}

}  // namespace

v1::Worker DescribeLease(const WorkerLease& lease, absl::Time now) {
  v1::Worker w;
  w.set_name(absl::StrCat("workers/", lease.id()));
  w.set_id(lease.id());
  w.set_hostname(lease.info().hostname());
  w.set_pid(lease.info().pid());
  *w.mutable_device() = lease.info().device();
  w.set_state(lease.idle() ? v1::WORKER_IDLE : v1::WORKER_BUSY);
  if (!lease.idle()) {
    w.set_job_id(lease.job_id());
    w.set_generation(lease.generation());
    w.set_rank(lease.rank());
  }
  *w.mutable_register_time() = Stamp(lease.registered_at());
  *w.mutable_last_heartbeat_time() = Stamp(lease.last_seen());
  *w.mutable_heartbeat_age() = Age(lease.SilentFor(now));
  return w;
}

void LostWorkers::Add(const WorkerLease& lease, absl::Time now) {
  Entry e{DescribeLease(lease, now), lease.last_seen(), now};
  e.worker.set_state(v1::WORKER_LOST);
  *e.worker.mutable_lost_time() = Stamp(now);
  lost_.push_back(std::move(e));
  while (lost_.size() > kMaxKept) lost_.pop_front();
}

std::vector<v1::Worker> LostWorkers::Recent(absl::Time now) {
  while (!lost_.empty() && now - lost_.front().lost_at > kKeptFor) lost_.pop_front();
  std::vector<v1::Worker> recent;
  recent.reserve(lost_.size());
  for (const Entry& e : lost_) {
    recent.push_back(e.worker);
    *recent.back().mutable_heartbeat_age() = Age(now - e.last_seen);
  }
  return recent;
}

}  // namespace gradsync::coordinator
