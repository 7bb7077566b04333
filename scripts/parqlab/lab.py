"""The frame every selftest runs its cases in.

    def main():
        suite = ktap.Suite("parq_x")
        suite.case(...)
        return lab.run(suite, "x", tools=("iperf3",), setup=setup)

lab.run() skips the whole test (KTAP exit 4) unless it runs as root with
@tools installed, snapshots the kernel log, loads sch_parq (unless
@load_module is false), makes the namespaces Topology(@tag, @links) (or
@topology(@tag), e.g. netns.Star), makes the test's Env, calls
@setup(env) (which adds to the Env what the cases need and may return
things with a stop() method, such as servers), runs the cases, each as
case(env), then a last case, "kernel log clean", that fails if the kernel
logged a warning since the snapshot (after calling @before_kmsg(env), if
given), and removes it all.
"""
import os
import types

from . import kmsg, module
from .netns import Topology
from .traffic import have


def emulated():
    """True inside scripts/vm-run's VM under QEMU/TCG (vmaccel=tcg on the
    kernel command line), where the CPU is emulated several times slower
    than a real one: a bound on a time that only holds on real hardware
    (or KVM) is then reported as a figure, not asserted.  False on a real
    host."""
    try:
        with open("/proc/cmdline") as f:
            return "vmaccel=tcg" in f.read().split()
    except OSError:
        return False


class Env(types.SimpleNamespace):
    """A test's state, passed to each of its cases: .topo (the namespaces),
    .kwatch (the kernel log's watch) and, on a Topology, .a (host A's
    namespace) and .dev (A's first veth); a test's setup adds its own."""


def run(suite, tag, tools=(), links=1, load_module=True, setup=None,
        topology=None, before_kmsg=None):
    if os.geteuid() != 0:
        return suite.skip_all("needs root")
    for tool in tools:
        if not have(tool):
            return suite.skip_all(f"{tool} not installed")
    kwatch = kmsg.KmsgWatch()

    def t_kmsg(env):
        if before_kmsg is not None:
            before_kmsg(env)
        kwatch.assert_clean()
    suite.case("kernel log clean", t_kmsg, timeout=60)
    if load_module:
        module.ensure_loaded()
    topo = topology(tag) if topology else Topology(tag, links=links)
    env = Env(topo=topo, kwatch=kwatch)
    if isinstance(topo, Topology):
        env.a, env.dev = topo.a, topo.dev_a()
    started = []
    try:
        if setup is not None:
            started = list(setup(env) or ())
        return suite.run(env)
    finally:
        for s in started:
            s.stop()
        topo.cleanup()
