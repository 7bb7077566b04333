// SPDX-License-Identifier: GPL-2.0
//
// Tests of RunProgram() (subprocess.cc): output and status, and a program
// that never ends (a hung tc), which is killed at its deadline and reaped:
// the caller gets an error in time and no child is left behind.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "subprocess.h"

namespace {

using namespace parq::parqd;
using namespace std::chrono_literals;

TEST(RunProgramTest, CollectsOutputAndStatus) {
  auto r = RunProgram({"sh", "-c", "cat; echo oops >&2; exit 3"}, "hello");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r.value().status, 3);
  EXPECT_EQ(r.value().out, "hello");
  EXPECT_EQ(ErrorText(r.value()), "oops");
  EXPECT_EQ(RunProgram({"/nonexistent/tc"}).error(),
            "cannot run /nonexistent/tc: No such file or directory");
}

// A program that sleeps for ever, and one whose child does too while
// holding its output open: each is killed at the deadline, with its
// children, and reaped.
TEST(RunProgramTest, AProgramThatNeverEndsIsKilledAtItsDeadline) {
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"sleep", "1000"},
        std::vector<std::string>{"sh", "-c", "sleep 1000 & sleep 1000"}}) {
    const auto start = std::chrono::steady_clock::now();
    auto r = RunProgram(argv, "", 300ms);
    const auto took = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(r.ok()) << argv.back();
    EXPECT_EQ(r.error(), argv[0] +
                             " did not finish within 300ms and was killed; "
                             "is it stuck on a lock or an unanswered request?");
    EXPECT_GE(took, 300ms);
    EXPECT_LT(took, 5s);  // generous: the deadline is 300 ms
    // Reaped: this process has no child left.
    errno = 0;
    EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD);
  }
}

}  // namespace
