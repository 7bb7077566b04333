"""Kernel log checks: what the kernel logged since a snapshot, judged by
scripts/check-kmsg (exit 1 on WARNING/BUG/Oops... lines)."""
import os
import re
import tempfile

from . import repo_path
from .netns import run

CHECK_KMSG = repo_path("scripts", "check-kmsg")

# Used only when scripts/check-kmsg is missing.
_BAD = re.compile(r"WARNING:|BUG:|Oops|general protection fault|"
                  r"Kernel panic|UBSAN:|KASAN:|refcount_t:|"
                  r"list_(add|del) corruption|soft lockup|hard LOCKUP|"
                  r"blocked for more than|rcu.*stall|unreferenced object")


def dmesg():
    r = run(["dmesg"], check=False, timeout=30)
    return r.stdout.splitlines()


class KmsgWatch:
    """Snapshot the kernel log now; later, check the lines added since."""

    def __init__(self):
        self.before = set(dmesg())

    def new_lines(self):
        return [line for line in dmesg() if line not in self.before]

    def check(self):
        """(ok, text): ok False when the new lines hold a kernel warning.
        text is check-kmsg's output (or the offending lines)."""
        lines = self.new_lines()
        return check_lines(lines)

    def assert_clean(self):
        """The body of a "kernel log clean" case: print what check-kmsg
        says, and fail if the kernel logged a warning since the snapshot."""
        from .ktap import check, diag
        ok, text = self.check()
        if text:
            diag(text)
        check(ok, "the kernel logged a warning during the test")


def check_lines(lines):
    if os.access(CHECK_KMSG, os.X_OK):
        with tempfile.NamedTemporaryFile("w", suffix=".kmsg",
                                         delete=False) as f:
            f.write("\n".join(lines) + "\n")
            path = f.name
        try:
            r = run([str(CHECK_KMSG), path], check=False, timeout=60)
        finally:
            os.unlink(path)
        return r.returncode == 0, (r.stdout + r.stderr).strip()
    bad = [line for line in lines if _BAD.search(line)]
    return not bad, "\n".join(bad)
