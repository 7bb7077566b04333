// SPDX-License-Identifier: GPL-2.0

#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "config.h"

extern char** environ;

namespace parq::parqd {

namespace {

// Closes what it holds when it goes out of scope.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0)
      close(fd);
    fd = -1;
  }
};

bool MakePipe(Fd& r, Fd& w) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return false;
  r.fd = fds[0];
  w.fd = fds[1];
  return true;
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec +
         static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

Result<ProgramOutput, std::string> RunProgram(
    const std::vector<std::string>& argv, const std::string& input,
    std::chrono::milliseconds timeout) {
  if (argv.empty())
    return Err{std::string("nothing to run")};
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  if (!MakePipe(in_r, in_w) || !MakePipe(out_r, out_w) ||
      !MakePipe(err_r, err_w))
    return Err{std::string("pipe: ") + std::strerror(errno)};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_r.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out_w.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_w.fd, STDERR_FILENO);
  // A process group of its own: at the deadline, its children die with it.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> v;
  v.reserve(argv.size() + 1);
  for (const std::string& s : argv)
    v.push_back(const_cast<char*>(s.c_str()));
  v.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, v[0], &fa, &attr, v.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  in_r.Close();
  out_w.Close();
  err_w.Close();
  if (rc != 0)
    return Err{"cannot run " + argv[0] + ": " + std::strerror(rc)};

  // Feed the input and drain both outputs together: a program that prints
  // much before it reads all its input must not block on a full pipe.
  ProgramOutput res;
  size_t written = 0;
  // A program that exits without reading its input must give EPIPE here,
  // not SIGPIPE.
  struct sigaction ignore {
  }, saved{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &saved);
  if (input.empty())
    in_w.Close();
  else
    fcntl(in_w.fd, F_SETFL, O_NONBLOCK);
  const uint64_t deadline =
      MonotonicNs() + static_cast<uint64_t>(timeout.count()) * kNsPerMs;
  bool late = false;
  while (in_w.fd >= 0 || out_r.fd >= 0 || err_r.fd >= 0) {
    const uint64_t now = MonotonicNs();
    if (now >= deadline) {
      late = true;
      break;
    }
    pollfd p[3] = {
        {in_w.fd, POLLOUT, 0}, {out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
    const int wait_ms =
        static_cast<int>((deadline - now + kNsPerMs - 1) / kNsPerMs);
    if (poll(p, 3, wait_ms) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (in_w.fd >= 0 && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n =
          write(in_w.fd, input.data() + written, input.size() - written);
      if (n > 0)
        written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
          written == input.size())
        in_w.Close();
    }
    for (int i = 1; i < 3; i++) {
      Fd& fd = i == 1 ? out_r : err_r;
      if (fd.fd < 0 || !(p[i].revents & (POLLIN | POLLERR | POLLHUP)))
        continue;
      char buf[4096];
      const ssize_t n = read(fd.fd, buf, sizeof(buf));
      if (n > 0)
        (i == 1 ? res.out : res.err).append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR)
        fd.Close();
    }
  }
  sigaction(SIGPIPE, &saved, nullptr);
  int status = 0;
  // Past the deadline, or it closed its outputs and lingers: it has until
  // the deadline to exit.
  while (!late) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR))
      break;
    const uint64_t now = MonotonicNs();
    if (now >= deadline) {
      late = true;
      break;
    }
    const timespec nap{0, static_cast<long>(std::min<uint64_t>(deadline - now,
                                                               10 * kNsPerMs))};
    nanosleep(&nap, nullptr);
  }
  if (late) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return Err{
        argv[0] + " did not finish within " +
        FormatDuration(static_cast<uint64_t>(timeout.count()) * kNsPerMs) +
        " and was killed; is it stuck on a lock or an unanswered "
        "request?"};
  }
  res.status = WIFEXITED(status)     ? WEXITSTATUS(status)
               : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                     : 255;
  return res;
}

std::string ErrorText(const ProgramOutput& o) {
  std::string s = o.err;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

}  // namespace parq::parqd
