"""parqlab: the shared lab library of the parq selftests and experiments.

Modules:
  ktap     KTAP output (TAP version 13, ok/not ok/SKIP, diagnostics, exit
           codes)
  netns    network namespaces joined by veth pairs, static neighbours, cleanup
  tc       tc(8) with the repository's q_parq.so, parsed output, snapshots
  rtnl     hand-built netlink requests (tc messages bypassing the plugin)
  kernel_ynl  the kernel's YNL library (tools/net/ynl/lib of
           linux-source-6.12) where scripts/kernel-fetch ynl put it
  genl     the parq generic netlink family (credits, monitor) through the
           kernel's YnlFamily and its spec (Documentation/netlink/specs/)
  traffic  UDP sockets inside a netns, iperf3, sockperf, class counter sampler
  module   sch_parq module state (loaded, installed, autoload, rmmod)
  kmsg     kernel log snapshots and the scripts/check-kmsg verdict
  uapi     constants read from kmod/include/uapi/linux/parq.h
  params   the qdisc's parameters from their table (tc-plugin/parq-params)
  scenarios  measurement scenarios shared by tests, demo and experiments
  resv     reserved classes: tc lines, packets into a class, memory
  bench    parq-bench in namespaces: servers, exchanges, collectives, bulk
  parqd    parqd on the hosts of a Star: key, configurations, metrics
  jobs     parqctl job in namespaces: the cgroup2 tree, parqctl's path
  mpi      Open MPI across namespaces (scripts/mpi-netns-rsh), NetPIPE

Everything here runs as root on the machine under test (a VM or a real host)
and, apart from loading and unloading sch_parq, touches nothing outside the
namespaces it creates.  Every external command has a timeout.
"""
import os
from pathlib import Path

# The repository root: scripts/parqlab/__init__.py -> ../..
REPO = Path(__file__).resolve().parents[2]

# Debian's interpreter (a python3 earlier in PATH may lack Debian's packages).
PYTHON = "/usr/bin/python3"


def repo_path(*parts):
    """Path of a file in the repository."""
    return REPO.joinpath(*parts)


def sbin(name):
    """Path of parqd or parqctl: in $PARQ_SBIN when it is set (what a
    package installed, scripts/deb-test), else in the build tree
    $PARQ_USERSPACE_BUILD (default build/userspace)."""
    if os.environ.get("PARQ_SBIN"):
        return Path(os.environ["PARQ_SBIN"]) / name
    return repo_path(os.environ.get("PARQ_USERSPACE_BUILD", "build/userspace"),
                     "parqd", name)


def _tc_lib_dir():
    # tc dlopen()s $TC_LIB_DIR/q_parq.so: prefer the freshly built plugin
    # unless the caller chose another directory.
    if "TC_LIB_DIR" not in os.environ:
        plugin = repo_path("tc-plugin", "q_parq.so")
        if plugin.exists():
            os.environ["TC_LIB_DIR"] = str(plugin.parent)


_tc_lib_dir()
