// A full disk, for real and unprivileged: while a FullDisk lives, every write this process makes
// to a file fails (RLIMIT_FSIZE of 0; SIGXFSZ ignored, so the write returns EFBIG instead of
// killing the process), as SQLite's writes do on a disk with no room left.
#pragma once

#include <signal.h>
#include <sys/resource.h>

#include "gtest/gtest.h"

namespace gradsync::coordinator {

class FullDisk {
 public:
  FullDisk() {
    ::signal(SIGXFSZ, SIG_IGN);
    EXPECT_EQ(::getrlimit(RLIMIT_FSIZE, &saved_), 0);
    rlimit full = saved_;
    full.rlim_cur = 0;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &full), 0);
  }
  ~FullDisk() { Free(); }
  FullDisk(const FullDisk&) = delete;
  FullDisk& operator=(const FullDisk&) = delete;

  // The disk has room again.
  void Free() { EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &saved_), 0); }

 private:
  rlimit saved_{};
};

}  // namespace gradsync::coordinator
