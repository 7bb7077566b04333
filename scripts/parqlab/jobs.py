"""parqctl job in the namespaces: the cgroup2 tree and parqctl's path.

`ip netns exec` mounts a /sys of its own, without /sys/fs/cgroup, so every
command here mounts cgroup2 there again first.  parqctl is parqlab.sbin()'s:
$PARQ_SBIN, else $PARQ_USERSPACE_BUILD/parqd (default build/userspace).
"""
import os

from . import sbin

CG = "/sys/fs/cgroup"
MOUNT = f"mountpoint -q {CG} || mount -t cgroup2 none {CG}"
PARQCTL = os.path.realpath(sbin("parqctl"))


def sh(ns, script, check_rc=True):
    """Shell @script in @ns, with the cgroup2 root mounted at CG."""
    return ns.run(["sh", "-ec", f"{MOUNT}\n{script}"], check=check_rc)


def run_mounted(ns, argv, check_rc=False):
    """@argv in @ns, with the cgroup2 root mounted at CG."""
    return ns.run(["sh", "-c", f'{MOUNT}\nexec "$@"', "sh"] + list(argv),
                  check=check_rc)


def parqctl(ns, *args):
    """parqctl @args in @ns; the CompletedProcess, whatever its status."""
    return run_mounted(ns, [PARQCTL] + list(args))
