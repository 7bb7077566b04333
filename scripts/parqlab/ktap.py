"""KTAP output for kselftest-style tests.

    suite = Suite("parq_config")
    suite.case("defaults", t_defaults)          # t_defaults(env) -> None
    sys.exit(suite.run(env))

Each case is called with the test's state, run()'s @env (lab.run() passes
a lab.Env): a case reads what it works on from its argument, never from
module globals, so that the order of the cases and the setup are visible in
the call.

run() prints "TAP version 13", the plan "1..N", then one line per case:
"ok N name", "not ok N name" or "ok N name # SKIP reason", with diagnostics
as "# ..." lines before each result.  A case fails by raising any exception
(use the check helpers or plain assert); it is skipped by raising Skip, which
is only for a facility that is genuinely missing.  Exit status: 0 when every
case passed or was skipped, 1 when any failed, 4 (KSFT_SKIP) when the whole
test was skipped (skip_all()).

Under a debug kernel (debug_kernel(): lockdep or KASAN, as
scripts/kernel-debug builds), every step is several times slower: each
case's time limit is multiplied by slowdown(), and a case added with
speed="why" (its verdict needs the CPU to keep up: a rate, a pacing, a load
offered from user space) that fails an assertion or its time limit is
reported as "ok N name # SKIP not judged under the debug kernel: why", with
the failure as a diagnostic.  It still ran in full, under KASAN and lockdep,
which is what the debug kernel is for; other failures fail as anywhere.

A case undoes what it made with defer(fn, *args): the clean-ups run when
the case ends, however it ends, the last registered first, so that a case
needs no try/finally and a failure part-way undoes exactly what was made.

PARQ_CASES, when set, is a regular expression: only the cases whose names it
matches (re.search) are in the plan, for running one case while working on
it.  make check never sets it.  PARQ_QUICK=1 (make quick) leaves the cases
added with speed= out of the plan, and names them: their verdicts depend on
the CPU's speed, and make check judges them.  PARQ_FIGURES=0 (make check)
leaves out the cases added with figure=True, and names them: they measure
and print a figure that no verdict reads, which make bench prints.
"""
import functools
import os
import re
import signal
import subprocess
import time
import traceback

KSFT_PASS = 0
KSFT_FAIL = 1
KSFT_SKIP = 4
DEBUG_SLOWDOWN = 4  # how much longer any step may take under a debug kernel


class Skip(Exception):
    """Raised by a case whose facility is missing; the text is the reason."""


class CaseTimeout(Exception):
    """A case ran past its time bound."""


def diag(*lines):
    """Print diagnostic lines, each as '# ...'."""
    for text in lines:
        for line in str(text).splitlines() or [""]:
            print(f"# {line}".rstrip(), flush=True)


@functools.cache
def debug_kernel():
    """True when the running kernel has lockdep (/proc/lockdep) or KASAN
    (kasan_report in /proc/kallsyms)."""
    if os.path.exists("/proc/lockdep"):
        return True
    try:
        with open("/proc/kallsyms") as f:
            return any(line.rstrip().endswith(" kasan_report") for line in f)
    except OSError:
        return False


def kernel_older(major, minor):
    """True when the running kernel is older than major.minor: for the
    cases that need what older kernels lack (Documentation/kernels.md)."""
    rel = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return (int(rel.group(1)), int(rel.group(2))) < (major, minor)


def needs_kernel(major, minor, what):
    """A case that needs @what, which kernels before major.minor lack: on
    those it is reported as skipped, naming it."""
    def wrap(fn):
        @functools.wraps(fn)
        def case(*args, **kwargs):
            if kernel_older(major, minor):
                raise Skip(f"this kernel lacks {what} ({major}.{minor}; "
                           "Documentation/kernels.md)")
            return fn(*args, **kwargs)
        return case
    return wrap


def slowdown():
    """The factor for time limits and waits: DEBUG_SLOWDOWN under a debug
    kernel, 1 otherwise."""
    return DEBUG_SLOWDOWN if debug_kernel() else 1


def stress_scale():
    """PARQ_STRESS_SCALE (default 1): the factor for parq_stress's loop
    counts and parq_resv's 100 000-class test; make check runs each of
    its kernels' passes at a fraction of them (the Makefile says
    which)."""
    return float(os.environ.get("PARQ_STRESS_SCALE", "1"))


def _alarm(signum, frame):
    raise CaseTimeout("case exceeded its time limit")


class Suite:
    def __init__(self, name):
        self.name = name
        self.cases = []
        self.left_out = []		# timing cases, under PARQ_QUICK=1
        self.figures_out = []		# figure cases, under PARQ_FIGURES=0
        self.results = []		# "pass" | "fail" | "skip"
        self.setup = None
        self.teardown = None

    def case(self, name, fn, timeout=300, speed=None, figure=False):
        """Add a case; fn(env) runs with at most @timeout seconds (times
        slowdown()).  @speed, if given, says why its verdict depends on the
        CPU's speed: it is not judged under a debug kernel.  @figure: the
        case only measures and prints, and no later case reads what it
        measured."""
        only = os.environ.get("PARQ_CASES")
        if only and not re.search(only, name):
            return
        if speed and os.environ.get("PARQ_QUICK") == "1":
            self.left_out.append(name)
            return
        if figure and os.environ.get("PARQ_FIGURES") == "0":
            self.figures_out.append(name)
            return
        self.cases.append((name, fn, timeout * slowdown(), speed))

    def _header(self):
        print("TAP version 13", flush=True)
        print(f"1..{len(self.cases)}", flush=True)

    def skip_all(self, reason):
        """Report every case as skipped; returns KSFT_SKIP."""
        self._header()
        diag(f"{self.name}: skipped: {reason}")
        for i, (name, *_) in enumerate(self.cases, 1):
            print(f"ok {i} {name} # SKIP {reason}", flush=True)
        return KSFT_SKIP

    def run(self, env=None):
        """Run the cases in order, each as fn(@env); returns the kselftest
        exit status."""
        if os.environ.get("PARQ_CASES") and not self.cases:
            return self.skip_all("PARQ_CASES matches no case")
        self._header()
        if os.environ.get("PARQ_CASES"):
            diag(f"PARQ_CASES={os.environ['PARQ_CASES']}: only "
                 f"{len(self.cases)} cases")
        if self.left_out:
            diag(f"PARQ_QUICK=1: not in this plan, make check judges them: "
                 f"{', '.join(self.left_out)}")
        if self.figures_out:
            diag(f"PARQ_FIGURES=0: figures not measured here, make bench "
                 f"prints them: {', '.join(self.figures_out)}")
        t_suite = time.monotonic()
        old = signal.signal(signal.SIGALRM, _alarm)
        try:
            for i, (name, fn, timeout, speed) in enumerate(self.cases, 1):
                self.results.append(self._one(i, name, lambda f=fn: f(env),
                                              timeout, speed))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        n_fail = self.results.count("fail")
        n_skip = self.results.count("skip")
        n_pass = self.results.count("pass")
        diag(f"{self.name}: {n_pass} passed, {n_fail} failed, "
             f"{n_skip} skipped in {time.monotonic() - t_suite:.0f}s")
        if n_fail:
            return KSFT_FAIL
        if n_skip == len(self.cases) and self.cases:
            return KSFT_SKIP
        return KSFT_PASS

    def _one(self, i, name, fn, timeout, speed=None):
        t0 = time.monotonic()
        try:
            verdict, note = self._verdict(name, fn, timeout, speed)
        except KeyboardInterrupt:
            _run_deferred()
            raise
        failed = _run_deferred()
        if failed and verdict != "fail":
            diag(f"{name}: FAILED: {failed} of its clean-ups failed")
            verdict, note = "fail", ""
        if verdict == "pass":
            diag(f"{name}: {time.monotonic() - t0:.1f}s")
            print(f"ok {i} {name}", flush=True)
        elif verdict == "skip":
            print(f"ok {i} {name} # SKIP {note}", flush=True)
        else:
            print(f"not ok {i} {name}", flush=True)
        return verdict

    def _verdict(self, name, fn, timeout, speed):
        """Run one case: ("pass" | "skip" | "fail", the skip's reason)."""
        signal.alarm(timeout)
        try:
            fn()
        except Skip as e:
            return "skip", str(e)
        except BaseException as e:  # noqa: B902 - a case never kills the suite
            signal.alarm(0)
            if isinstance(e, KeyboardInterrupt):
                raise
            # An assertion, the case's time limit, or a program's (a
            # subprocess timeout): what a slow CPU fails.
            if speed and debug_kernel() and isinstance(
                    e, (AssertionError, CaseTimeout,
                        subprocess.TimeoutExpired)):
                diag(f"{name}: under the debug kernel: {type(e).__name__}: "
                     f"{e}")
                return "skip", f"not judged under the debug kernel: {speed}"
            diag(f"{name}: FAILED: {type(e).__name__}: {e}")
            tb = traceback.format_exc().rstrip().splitlines()
            diag(*tb[-12:])
            return "fail", ""
        finally:
            signal.alarm(0)
        return "pass", ""


# --- clean-ups: defer() ------------------------------------------------------

_deferred = []


def defer(fn, *args, **kwargs):
    """Have fn(*args, **kwargs) run when the current case ends, however it
    ends (passed, failed, skipped, out of time), after the clean-ups
    registered after it: the last registered runs first.  Register each
    clean-up right after what it undoes was made.  A clean-up that raises
    is reported, the others still run, and a case that had passed fails.
    Clean-ups run after the case's time limit is disarmed: a slow one
    cannot make the case time out.  Outside a Suite's case (a script),
    run_deferred() runs them."""
    _deferred.append((fn, args, kwargs))


def _run_deferred():
    """Run and forget the deferred clean-ups, last first; how many
    raised."""
    failed = 0
    while _deferred:
        fn, args, kwargs = _deferred.pop()
        try:
            fn(*args, **kwargs)
        except Exception as e:  # noqa: B902 - every clean-up gets its turn
            failed += 1
            what = getattr(fn, "__qualname__", repr(fn))
            diag(f"clean-up {what}: {type(e).__name__}: {e}")
    return failed


run_deferred = _run_deferred


# --- checks: raise AssertionError with a message that says what differed ---

def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def check_eq(got, want, what):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def check_le(got, bound, what):
    if not got <= bound:
        raise AssertionError(f"{what}: {got!r} > {bound!r}")


def check_ge(got, bound, what):
    if not got >= bound:
        raise AssertionError(f"{what}: {got!r} < {bound!r}")


def check_within(got, want, tol, what):
    if abs(got - want) > tol:
        raise AssertionError(
            f"{what}: {got:.4f} is not within {tol:.4f} of {want:.4f}")


def poll(read, done, timeout, interval=0.05):
    """read()'s value, read every @interval seconds until done(value)
    holds or @timeout seconds times slowdown() have passed: the value that
    satisfied done(), else the last one read (the caller's check says what
    it lacks)."""
    deadline = time.monotonic() + timeout * slowdown()
    while True:
        v = read()
        if done(v) or time.monotonic() > deadline:
            return v
        time.sleep(interval)


def wait_for(what, pred, timeout, interval=0.05):
    """pred()'s first true value, asked every @interval seconds for at
    most @timeout seconds times slowdown(); AssertionError naming @what
    when the time runs out."""
    v = poll(pred, bool, timeout, interval)
    if not v:
        raise AssertionError(f"timed out ({timeout * slowdown():.0f} s) "
                             f"waiting for {what}")
    return v
