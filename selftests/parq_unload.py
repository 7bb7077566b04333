#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parq lifetime under traffic: delete, replace, add/delete loops, module
unload and reload, while iperf3 keeps A's veths busy.

  - deleting parq while TCP flows: the default qdisc takes over and the
    transfer goes on;
  - rmmod sch_parq is refused while a parq qdisc exists and succeeds once
    it is gone, while other qdiscs keep forwarding traffic; the next
    "tc qdisc add ... parq" loads the module again (autoload);
  - generic netlink dumps from threads that load the module themselves
    (the family's alias) get a list or a clean refusal, never a table
    that module init has not made yet;
  - 20 add/delete cycles under traffic;
  - replace parq -> fq_codel -> parq under traffic.
Afterwards the kernel log must hold no warning.
"""
import errno
import sys
import threading
import time

from parqlab import ktap, lab, module
from parqlab import tc as tclib
from parqlab.ktap import Skip, check, check_eq, diag
from parqlab.genl import GenlError, ParqGenl
from parqlab.netns import run
from parqlab.tc import tc
from parqlab.traffic import Iperf3Client, Iperf3Server

PORTS = (5201, 5202)
MIN_BYTES = 100000  # a link counts as carrying traffic above this per s


def dev(env, i=0):
    return env.topo.dev_a(i)


def tx_bytes(env, i=0):
    return env.a.tx_counts(dev(env, i))[1]


def flowing(env, i=0, secs=1.0):
    """Bytes per second A's veth i sent over about @secs."""
    b0, t0 = tx_bytes(env, i), time.monotonic()
    time.sleep(secs)
    b1, t1 = tx_bytes(env, i), time.monotonic()
    return (b1 - b0) / (t1 - t0)


def check_flowing(env, i, what, within=15.0):
    """Traffic on link i: a 1 s window with more than MIN_BYTES, within
    @within seconds (TCP may first have to retransmit what a deleted
    qdisc dropped).  Returns the bytes of that window."""
    deadline = time.monotonic() + within
    while True:
        n = flowing(env, i)
        if n > MIN_BYTES:
            return n
        check(time.monotonic() < deadline,
              f"{what}: no traffic on {dev(env, i)} for {within:.0f}s "
              f"(last: {n:.0f} bytes/s)")


class Bulk:
    """iperf3 -P 2 from A to B over link i for the length of a case (its
    server and client are stopped at the end).  Capped at 2 x 100 Mbit/s
    by iperf3 itself, so that the traffic stays the same whatever qdisc is
    in place and does not eat the CPU of a small (emulated) machine when
    no qdisc limits it."""

    def __init__(self, env, i):
        topo = env.topo
        self.server = Iperf3Server(topo.b, topo.ip_b(i), PORTS[i])
        self.client = Iperf3Client(env.a, topo.ip_b(i), PORTS[i], 900,
                                   parallel=2, bitrate="100M")

    def check_running(self, what):
        self.client.check_running(what)

    def stop(self):
        self.client.stop()
        self.server.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


def root_kind(env, i=0):
    q = tclib.root_qdisc(env.a, dev(env, i))
    return q["kind"] if q else None


def add_parq(env, i=0, *args):
    tc(env.a, "qdisc", "add", "dev", dev(env, i), "root", "handle", "1:",
       "parq", *args)


def del_root(env, i=0, check_=False):
    return tc(env.a, "qdisc", "del", "dev", dev(env, i), "root",
              check=check_)


def t_delete_under_traffic(env):
    del_root(env)
    add_parq(env, 0, "rate", "100mbit")
    with Bulk(env, 0) as b:
        time.sleep(2)
        n = check_flowing(env, 0, "through parq")
        diag(f"through parq: {n * 8 / 1e6:.1f} Mbit/s")
        del_root(env, 0, check_=True)
        check(tclib.parq_qdisc(env.a, dev(env)) is None, "parq still there")
        diag(f"root qdisc after delete: {root_kind(env)}")
        n = check_flowing(env, 0, "after delete")
        diag(f"after delete: {n * 8 / 1e6:.1f} Mbit/s")
        b.check_running("after the delete")


def t_rmmod_in_use(env):
    if not module.loaded():
        module.ensure_loaded()
    del_root(env, 0)
    del_root(env, 1)
    if module.refcnt():
        raise Skip(f"sch_parq is in use outside this test "
                   f"({module.refcnt()} qdiscs)")
    add_parq(env, 0)
    # Traffic on the other link, through a qdisc of another kind.
    tc(env.a, "qdisc", "add", "dev", dev(env, 1), "root", "handle", "1:",
       "fq_codel")
    with Bulk(env, 1) as b:
        time.sleep(1)
        r = module.rmmod()
        diag(f"rmmod with parq in use: exit {r.returncode}: "
             f"{r.stderr.strip()}")
        check(r.returncode != 0, "rmmod sch_parq succeeded with a parq qdisc")
        check(module.loaded(), "sch_parq gone although rmmod failed")
        check_eq(root_kind(env, 0), "parq", "root qdisc of link 0")
        del_root(env, 0, check_=True)
        r = module.rmmod()
        check(r.returncode == 0, f"rmmod sch_parq: {r.stderr.strip()}")
        check(not module.loaded(), "sch_parq still loaded")
        n = check_flowing(env, 1, "fq_codel link after rmmod")
        diag(f"fq_codel link after rmmod: {n * 8 / 1e6:.1f} Mbit/s")
        b.check_running("after rmmod")
    del_root(env, 1)


def t_reload(env):
    if module.loaded():
        users = module.refcnt()
        if users:
            raise AssertionError(f"sch_parq still has {users} users")
        check(module.rmmod().returncode == 0, "rmmod sch_parq")
    if not module.installed():
        module.ensure_loaded()
        raise Skip("module not installed")
    add_parq(env, 0)
    lsmod = run(["lsmod"]).stdout.splitlines()
    check(any(line.split()[:1] == ["sch_parq"] for line in lsmod),
          "tc qdisc add ... parq did not load sch_parq again")
    check_eq(root_kind(env, 0), "parq", "root qdisc")
    del_root(env, 0, check_=True)


# Each cycle waits for traffic to flow again: about 11 s under TCG.
CYCLES = 20


def t_add_del_loop(env):
    module.ensure_loaded()
    del_root(env, 0)
    variants = [("rate", "100mbit"), (), ("rate", "50mbit", "threshold", "1"),
                ("threshold", "inf", "no-split-gso", "rate", "1gbit"),
                ("unit", "packets", "limit", "100", "flow-limit", "10",
                 "rate", "20mbit")]
    with Bulk(env, 0) as b:
        time.sleep(1)
        t0 = time.monotonic()
        for i in range(CYCLES):
            add_parq(env, 0, *variants[i % len(variants)])
            if i % 10 == 0:
                time.sleep(0.2)
            del_root(env, 0, check_=True)
            b.check_running(f"in cycle {i}")
            if i % 10 == 9:
                diag(f"cycle {i + 1}: {time.monotonic() - t0:.1f}s")
        diag(f"{CYCLES} add/delete cycles in {time.monotonic() - t0:.1f}s")
        check(module.refcnt() == 0, f"module refcnt {module.refcnt()} "
              f"after the loop")
        n = check_flowing(env, 0, "after the loop")
        diag(f"after the loop: {n * 8 / 1e6:.1f} Mbit/s")
        b.check_running("after the loop")


def t_replace_chain(env):
    module.ensure_loaded()
    del_root(env, 0)
    with Bulk(env, 0) as b:
        time.sleep(1)
        steps = [
            (["replace", "dev", dev(env), "root", "handle", "1:", "parq",
              "rate", "100mbit"], "parq"),
            (["replace", "dev", dev(env), "root", "fq_codel"], "fq_codel"),
            (["replace", "dev", dev(env), "root", "handle", "1:", "parq",
              "rate", "100mbit", "threshold", "2"], "parq"),
        ]
        for argv, kind in steps:
            tc(env.a, "qdisc", *argv)
            check_eq(root_kind(env, 0), kind, f"root after 'tc qdisc "
                     f"{argv[0]} ... {kind}'")
            time.sleep(0.5)
            n = check_flowing(env, 0, f"through {kind}")
            diag(f"through {kind}: {n * 8 / 1e6:.1f} Mbit/s")
        q = tclib.parq_qdisc(env.a, dev(env))
        check_eq(q["options"]["threshold"], 2, "threshold of the new parq")
        check(q["packets"] > 0, "the new parq sent nothing")
        b.check_running("after the replacements")
    del_root(env, 0)


LOAD_RACES = 10


def t_dump_while_loading(env):
    """Generic netlink dumps of the credit table and the monitor's peers,
    from three threads, each of which loads the module by asking for the
    family (its genl alias) while the others dump: a dump that comes
    before module init has made the tables is refused (ESHUTDOWN), never a
    walk of memory that is not a table yet.  Any answer but a list or a
    clean error fails, and the kernel log must stay clean.  The window is
    short, so this runs LOAD_RACES times and cannot prove its absence."""
    del_root(env, 0)
    bad = []
    answers = {"lists": 0, "refused": 0}
    lock = threading.Lock()

    def dumper():
        for _ in range(200):
            try:
                g = ParqGenl()
            except (GenlError, OSError):
                continue		# not registered yet, or going
            try:
                for _ in range(20):
                    try:
                        g.dump()
                        g.peers()
                        with lock:
                            answers["lists"] += 1
                    except (GenlError, OSError) as e:
                        with lock:
                            answers["refused"] += 1
                        # ESHUTDOWN (init not done), ENOENT (no family)
                        if e.errno not in (errno.ESHUTDOWN, errno.ENOENT):
                            bad.append(str(e))
            finally:
                g.close()
            if module.loaded() and answers["lists"]:
                return

    for i in range(LOAD_RACES):
        if module.loaded():
            check(module.rmmod().returncode == 0, f"rmmod in round {i}")
        threads = [threading.Thread(target=dumper) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        check(not bad, f"round {i}: dumps failed oddly: {bad[:3]}")
    diag(f"{LOAD_RACES} loads: {answers['lists']} dumps answered, "
         f"{answers['refused']} refused")
    module.ensure_loaded()


def main():
    suite = ktap.Suite("parq_unload")
    suite.case("delete under traffic", t_delete_under_traffic)
    suite.case("rmmod refused in use, then succeeds", t_rmmod_in_use)
    suite.case("re-add autoloads the module", t_reload)
    suite.case("genl dumps while the module loads", t_dump_while_loading)
    suite.case(f"{CYCLES} add/delete cycles under traffic", t_add_del_loop,
               timeout=600)
    suite.case("replace parq -> fq_codel -> parq under traffic",
               t_replace_chain)
    return lab.run(suite, "unl", tools=("iperf3",), links=2)


if __name__ == "__main__":
    sys.exit(main())
