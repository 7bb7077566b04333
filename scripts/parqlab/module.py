"""The sch_parq module: loaded? installed (so that the kernel can autoload
it)? and the ways to get it loaded or unloaded."""
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from . import repo_path
from .netns import run

NAME = "sch_parq"


def built_ko():
    """The module built in this repository (make -C kmod), or the one that
    PARQ_KO names (an older build, to see a test fail against it, or one
    built for another kernel)."""
    if os.environ.get("PARQ_KO"):
        return Path(os.environ["PARQ_KO"]).resolve()
    return repo_path("kmod", NAME + ".ko")


def loaded():
    try:
        with open("/proc/modules") as f:
            return any(line.split()[0] == NAME for line in f)
    except FileNotFoundError:
        return False


def refcnt():
    """Users of the module (one per parq qdisc), or None if not loaded."""
    try:
        with open(f"/sys/module/{NAME}/refcnt") as f:
            return int(f.read())
    except (FileNotFoundError, ValueError):
        return None


def installed_path():
    """Path of the module modprobe would load, or None (not installed)."""
    r = run(["modinfo", "-n", NAME], check=False)
    path = r.stdout.strip()
    return path if r.returncode == 0 and path else None


def installed():
    return installed_path() is not None


def rmmod(timeout=30):
    """rmmod sch_parq; returns the CompletedProcess (never raises, but for
    subprocess.TimeoutExpired after @timeout seconds)."""
    return run(["rmmod", NAME], timeout=timeout, check=False)


def ensure_loaded():
    """Load the module if it is not: modprobe when installed, else insmod
    the built one.  Returns how: "loaded", "modprobe" or "insmod"."""
    if loaded():
        return "loaded"
    if installed():
        run(["modprobe", NAME])
        return "modprobe"
    ko = built_ko()
    if not ko.exists():
        raise FileNotFoundError(f"{ko} missing: run make -C kmod")
    run(["insmod", str(ko)])
    return "insmod"


@contextlib.contextmanager
def load_built(who):
    """Insmod the built module (or PARQ_KO's), never an installed one: for
    a benchmark that compares builds; rmmod it on the way out, so that the
    next run (or the other build) starts from no module.  Refuses, naming
    @who, when a module is loaded already.  Yields the path loaded."""
    if loaded():
        raise SystemExit(f"{who}: sch_parq is loaded already: unload it "
                         "first")
    ko = built_ko()
    run(["insmod", str(ko)])
    try:
        yield ko
    finally:
        # A namespace's qdiscs go when the kernel's cleanup_net() gets to
        # them, after the namespace is deleted.
        end = time.monotonic() + 60
        while refcnt() and time.monotonic() < end:
            time.sleep(0.2)
        try:
            r = rmmod()
            why = r.stderr.strip() if r.returncode else ""
        except subprocess.TimeoutExpired:
            why = "no answer within 30 s"
        if why:
            print(f"{who}: rmmod sch_parq: {why}", file=sys.stderr)


def vermagic(path):
    r = run(["modinfo", "-F", "vermagic", str(path)], check=False)
    return r.stdout.split()[0] if r.returncode == 0 and r.stdout.split() \
        else None


def srcversion(path_or_name):
    r = run(["modinfo", "-F", "srcversion", str(path_or_name)], check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def kernel_release():
    return os.uname().release
