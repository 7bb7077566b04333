// SPDX-License-Identifier: GPL-2.0
//
// parq-bench timer: how late the host's high-resolution timers fire.  A
// thread sleeps to absolute deadlines on CLOCK_MONOTONIC, --interval
// apart, with its timer slack set to --slack (parq's watchdog is armed
// with a range of 10 us), and records how long after each deadline it
// ran again.  That is the hrtimer's own lateness plus one wake-up and one
// context switch (with --realtime, under SCHED_FIFO, ahead of every
// ordinary task): an upper estimate of the lateness of parq's shaper
// watchdog, which runs its callback from the timer interrupt itself.
#include <sched.h>
#include <sys/prctl.h>

#include <cerrno>
#include <ctime>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "roles.h"
#include "timing.h"

namespace parqbench {

namespace {

timespec Timespec(uint64_t ns) {
  timespec ts;
  ts.tv_sec = time_t(ns / 1000000000u);
  ts.tv_nsec = long(ns % 1000000000u);
  return ts;
}

// The measurement, on the thread that calls it (slack and policy are per
// thread).
Result<json, std::string> Measure(const Config& c) {
  if (c.interval_us == 0)
    return Err{"the timer needs an interval above 0"};
  if (prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(c.slack_ns), 0, 0,
            0) != 0)
    return Err{ErrnoText("PR_SET_TIMERSLACK")};
  if (c.realtime) {
    sched_param sp{};
    sp.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
      return Err{ErrnoText("--realtime: SCHED_FIFO (needs CAP_SYS_NICE)")};
  }
  const uint64_t interval = c.interval_us * 1000;
  std::vector<uint64_t> late;
  late.reserve(c.count);
  uint64_t overruns = 0;
  const uint64_t start = NowNs();
  uint64_t deadline = start + interval;
  while (late.size() < c.count) {
    const timespec ts = Timespec(deadline);
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    if (rc == EINTR)
      continue;
    if (rc != 0) {
      errno = rc;
      return Err{ErrnoText("clock_nanosleep")};
    }
    const uint64_t now = NowNs();
    late.push_back(now - deadline);
    deadline += interval;
    // Woken past the next deadline as well: that one is not a sample of
    // the timer (it would fire at once); the schedule restarts from now.
    if (now >= deadline) {
      ++overruns;
      deadline = now + interval;
    }
  }
  json j;
  j["tool"] = "parq-bench";
  j["format"] = 1;
  j["mode"] = "timer";
  j["count"] = c.count;
  j["interval_us"] = c.interval_us;
  j["slack_ns"] = c.slack_ns;
  j["realtime"] = c.realtime;
  j["overruns"] = overruns;
  j["elapsed_ns"] = NowNs() - start;
  Summary s = Summarize(late);
  j["lateness_ns"] = SummaryJson(s);
  return j;
}

}  // namespace

// On a thread of its own, so that the caller keeps its timer slack and its
// scheduling policy; its result, or its error, reaches the caller.
Result<json, std::string> RunTimer(const Config& c) {
  return std::async(std::launch::async, Measure, std::cref(c)).get();
}

}  // namespace parqbench
