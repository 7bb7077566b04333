#!/usr/bin/python3
"""Experiment 8, a real application (seed 002, figures 8, 9 and 13): meep
(Debian's meep-openmpi, unmodified) on 4 and 8 hosts, its run time against
the bandwidth reserved for each of its flows, and two runs of it at once
beside background traffic, each with its reservation, against pfifo,
fq_codel and cake.

N hosts h0 ... h(N-1) joined through a switch namespace (netns.Star),
and host E with an etcd member.  Every host's interface has the scheduler
under test behind a LINK_MBIT bottleneck; parq's admits reserved classes
against that rate (linkrate), parqd's admission role runs on every host
(a topology of the N hosts with NICs and ports of LINK_MBIT, reservable
RESERVABLE %).  The application, meep-openmpi propagating a wave down a
waveguide (exp8-waveguide.ctl: SX by 8 at resolution 5, UNTIL time units,
100 time steps), has one rank per host, exchanging the fields at its
chunk's borders with its neighbours at every step.  It runs in a cgroup
that `parqctl job add` made a job on every host (its packets leave with
DSCP EF), as a user of its own (USERS: parqd knows who reserves by the
socket, and nftables matches the reservation's sockets by their user),
with libparq-mpi preloaded; a reservation is asked through the
environment alone: PARQ_MPI_RATE, every ordered pair of its hosts at that
rate, admitted as one job in MPI_Init and released in MPI_Finalize.  The
background: BACKGROUND parq-bench bulk streams from each host to the next
(DSCP 0, as root, which reserves nothing).

The sweep (figures 8 and 9): under parq, application A alone; beside the
background in parq's parallel class (its cgroup) without a reservation;
and beside it with each per-flow reservation of RATES; under pfifo,
beside the background.  Together (figure 13): under each scheduler, A and
B alone, then both at once beside the background, each with its own
reservation under parq (TOGETHER_RATES; the others have no way to
express one: cake's diffserv4 puts their EF in its Voice tin).
The run time is meep's own ("Elapsed run time", its time steps, not its
start); a slowdown is a run time over the same application's alone, same
scheduler, hosts and repetition.

    scripts/experiments/exp8_application.py [--quick] [--hosts N,...]
        [--out DIR]

(--hosts: at most MAX_HOSTS.)
"""
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import SimpleNamespace

import common
from common import Panel, Params, Step
from parqlab import bench, etcd, mpi, parqd, repo_path, scenarios
from parqlab import jobs as joblib
from parqlab import tc as tclib
from parqlab.netns import Star

NAME = "exp8"
TITLE = "Experiment 8: a real application (meep) with reservations"
LINK_MBIT = 10
RESERVABLE = 80			# percent
CTL = Path(__file__).with_name("exp8-waveguide.ctl")
SX = 32				# a grid of 160 x 40
UNTIL = 10			# time units: 100 time steps
USERS = {"a": "parq-exp8-a", "b": "parq-exp8-b"}
# The applications' cgroup (not named as Slurm's job_N: parqd would take
# its processes for Slurm job N's, which must name their jobs N.NAME).
JOB = "parqexp8/meep"
BULK_SIZE = 16384
# Per-flow reservations, Mbit/s: a host's N - 1 flows of one application
# (and two applications' under TOGETHER_RATES) fit RESERVABLE % of
# LINK_MBIT at 8 hosts.
RATES = (0.125, 0.25, 0.5, 1.0)
# --hosts: beyond 8 hosts the largest rates no longer fit.
MAX_HOSTS = 8
TOGETHER_RATES = {"a": 0.5, "b": 0.25}
SCHEDULERS = ("pfifo", "fq_codel", "cake", "parq")
# The quick run: 4 hosts, one repetition.  The smoke run: one step, a
# reservation through the environment beside the background, 50 time
# steps (its slowdown is left empty).
PARAMS = {
    "full": Params(reps=3, hosts=(4, 8), schedulers=SCHEDULERS,
                   background=1, extra={"rates": RATES, "until": UNTIL}),
    "quick": Params(reps=1, hosts=(4,), schedulers=SCHEDULERS,
                    background=1, extra={"rates": RATES, "until": UNTIL}),
    "smoke": Params(reps=1, hosts=(4,), schedulers=(),
                    background=1, extra={"rates": (0.5,), "until": 5,
                                         "sweep_alone": False}),
}
# What parq_experiments checks of each row (finite and positive), and the
# smoke run's time limit.
VALUES = ("run_s",)
SMOKE_TIMEOUT = 600
# s per host, one run of meep: within the step's limit (common._attempt:
# ten times its estimate), so that a run cut short is killed before a
# retry starts.
RUN_TIMEOUT_PER_HOST = 75
FIELDS = ["rep", "hosts", "part", "scheduler", "app", "condition",
          "rate_mbit", "admitted", "flows", "run_s", "wall_s", "slowdown",
          "refusal"]


def unavailable():
    if shutil.which("meep") is None:
        return "meep-openmpi is not installed"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    if not etcd.available():
        return "etcd-server and etcd-client are not installed"
    return mpi.have_mpi()


def hosts_of(n):
    return [f"h{i}" for i in range(n)]


def steps(p):
    out = []
    for n in p.hosts:
        for rep in range(1, p.reps + 1):
            plan = []
            if p.extra.get("sweep_alone", True):
                plan += [("sweep", "parq", "a", "alone", 0),
                         ("sweep", "parq", "a", "parallel", 0)]
            plan += [("sweep", "parq", "a", "reserved", r)
                     for r in p.extra["rates"]]
            if "pfifo" in p.schedulers:
                plan += [("sweep", "pfifo", "a", "background", 0)]
            for cfg in p.schedulers:
                plan += [("together", cfg, app, "alone",
                          _rate(cfg, app)) for app in USERS]
                plan += [("together", cfg, "a+b", "together", 0)]
            for part, cfg, app, cond, rate in plan:
                out.append(Step(
                    f"{NAME} {n} hosts {part} {cfg} {app} {cond}"
                    + (f" {rate:g} Mbit/s" if rate else "")
                    + f" rep {rep}/{p.reps}", 30 + 10 * n,
                    common.measuring(cfg, app, cond, rate),
                    {"rep": rep, "hosts": n, "part": part,
                     "condition": cond}, group=n))
    return out


def step_rows(step):
    """How many rows @step makes: one per application it runs."""
    return len(USERS) if step.fields["condition"] == "together" else 1


def _rate(cfg, app):
    """An application's reservation in the together part: under parq its
    own, elsewhere none."""
    return TOGETHER_RATES[app] if cfg == "parq" else 0


def install(ns, name):
    """Scheduler @name on @ns's eth0 behind LINK_MBIT; parq admits its
    reserved classes against that rate."""
    scenarios.clear(ns, "eth0")
    if name == "parq":
        tclib.tc(ns, "qdisc", "add", "dev", "eth0", "root", "handle", "1:",
                 "parq", "rate", f"{LINK_MBIT}mbit", "linkrate",
                 f"{LINK_MBIT}mbit")
    else:
        scenarios.ALL_SCHEDULERS[name](ns, "eth0", rate=f"{LINK_MBIT}mbit")


# The password file's comment of the users this experiment makes: a user
# of that name with another comment is not the experiment's to use.
USER_MARK = "parq exp8 (temporary)"


def _userdel(user):
    r = subprocess.run(["userdel", user], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        raise RuntimeError(f"userdel {user}: {r.stderr.strip()}")


@contextmanager
def _users():
    """The applications' users (system users without a home or a shell),
    made for the run and removed after it; one that a run killed before
    its end left (USER_MARK) is made again."""
    for user in USERS.values():
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            continue
        if entry.pw_gecos != USER_MARK:
            raise RuntimeError(f"a user {user} exists that this "
                               "experiment did not make: not using it")
        _userdel(user)
    made = []
    try:
        for user in USERS.values():
            subprocess.run(["useradd", "--system", "--no-create-home",
                            "--shell", "/usr/sbin/nologin", "--comment",
                            USER_MARK, user], check=True,
                           capture_output=True)
            made.append(user)
        yield
    finally:
        for user in made:
            _userdel(user)


def _preload():
    """LD_PRELOAD for libparq-mpi from the build tree; a build with ASan
    (the tests') needs its runtime loaded first."""
    lib = repo_path(os.environ.get("PARQ_USERSPACE_BUILD", "build/userspace"),
                    "libparq", "libparq-mpi.so.1")
    if not lib.exists():
        raise RuntimeError(f"{lib} missing: build it (make userspace, or "
                           "make tools with PARQ_USERSPACE_BUILD="
                           "build/release)")
    ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True,
                         check=True).stdout
    first = re.findall(r"=> (\S*lib(?:asan|ubsan)\.so\S*)", ldd)
    return " ".join(first + [str(lib)])


def _kill_job(ns):
    """Kill whatever still runs in the applications' cgroup (a run cut
    short), and wait until it is empty."""
    joblib.sh(ns, f"g={joblib.CG}/{JOB}; [ ! -d $g ] || {{ "
              f"echo 1 > $g/cgroup.kill; i=0; "
              f"while grep -q . $g/cgroup.procs && [ $i -lt 100 ]; do "
              f"sleep 0.1; i=$((i + 1)); done; }}", check_rc=False)


@contextmanager
def lab(p, n):
    hosts = hosts_of(n)
    with ExitStack() as stack:
        stack.enter_context(_users())
        star = stack.enter_context(Star(NAME, hosts=hosts + ["e"]))
        tmp = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="parq-exp8-"))
        # The applications' users reach parqd's sockets (0666) here.
        os.chmod(tmp, 0o711)
        members = etcd.Cluster(star, ["e"], tmp)
        members.start()
        stack.callback(members.stop)
        with open(f"{tmp}/topology.toml", "w") as f:
            f.write(parqd.star_topology(star, hosts,
                                        capacity=f"{LINK_MBIT}mbit",
                                        reservable=RESERVABLE))
        # What each user may hold in all: every flow of its job at the
        # link's rate (the links, not the allowance, are what limit it).
        allow = "".join(f'\n[[admission.allow]]\nuser = "{u}"\n'
                        f'rate = "{LINK_MBIT * n * (n - 1)}mbit"\n'
                        for u in USERS.values())
        # E is the hosts' peer in the credit protocol's configuration but
        # runs no parqd: only the admission role acts here.
        cluster = parqd.Cluster(
            star, ["e"], hosts, tmp,
            sections={h: parqd.admission_section(
                h, [members.client_url("e")], f"{tmp}/topology.toml",
                f"{tmp}/{h}-admission.sock") + allow for h in hosts})
        stack.callback(cluster.close)
        cluster.start(hosts=hosts)
        for h in hosts:
            common.wait_lease(cluster, h)
        stack.enter_context(common.parq_job(
            [star.ns[h] for h in hosts], JOB,
            before_removal=lambda: _kill_job(star.ns[hosts[0]])))
        for h in hosts:
            stack.enter_context(bench.Server(star.ns[h], star.ip(h),
                                             common.BULK_PORT))
        # Each rank's parqd socket and topology name: its host's,
        # from the hostname mpirun's remote shell gave it (the
        # namespace's name ends with the host's).  The rank gives up the
        # launcher's capability, and preloads libparq-mpi into meep
        # alone.
        rank = f"{tmp}/rank.sh"
        with open(rank, "w") as f:
            f.write('#!/bin/sh\nh=$(hostname)\nh=${h##*-}\n'
                    f'export PARQ_HOST="$h" PARQ_ADMISSION_SOCKET='
                    f'"{tmp}/$h-admission.sock"\n'
                    f'exec {shlex.join(mpi.RANK_DROP)} env '
                    'LD_PRELOAD="$PARQ_EXP8_PRELOAD" "$@"\n')
        os.chmod(rank, 0o755)
        # Each user's HOME and TMPDIR (Open MPI's session directories),
        # its own.
        homes = {}
        for app, user in USERS.items():
            homes[app] = f"{tmp}/home-{app}"
            os.mkdir(homes[app], 0o700)
            entry = pwd.getpwnam(user)
            os.chown(homes[app], entry.pw_uid, entry.pw_gid)
        env = SimpleNamespace(star=star, hosts=hosts, tmp=tmp, p=p,
                              rank=rank, homes=homes, preload=_preload(),
                              current=None)

        def clear():
            for h in hosts:
                scenarios.clear(star.ns[h], "eth0")
        stack.callback(clear)
        env.measure = lambda cfg, app, cond, rate: _measure(
            env, cfg, app, cond, rate)
        yield env


_ELAPSED = re.compile(r"Elapsed run time = ([\d.]+) s")
_ADMITTED = re.compile(r"parq: job \S+ admitted: (\d+) bit/s for each of "
                       r"(\d+) flows")
_REFUSED = re.compile(r"parq: nothing reserved: (.*)")


def _run_app(env, app, rate):
    """One run of meep as application @app's user, reserving @rate Mbit/s
    for each flow (0: none); its row."""
    hosts = [(env.star.ns[h], env.star.ip(h)) for h in env.hosts]
    # libparq-mpi says what it reserved (PARQ_MPI_VERBOSE), or that it
    # was refused; without PARQ_MPI_RATE it asks nothing and says nothing.
    penv = {"PARQ_EXP8_PRELOAD": env.preload, "PARQ_MPI_VERBOSE": "1",
            "ASAN_OPTIONS": "detect_leaks=0"}
    if rate:
        penv["PARQ_MPI_RATE"] = f"{int(rate * 1e6)}"
    t0 = time.monotonic()
    until = env.p.extra["until"]
    try:
        r = mpi.run(hosts, [env.rank, "meep", f"sx={SX}", f"until={until}",
                            str(CTL)], cgroup=JOB,
                    timeout=RUN_TIMEOUT_PER_HOST * len(hosts),
                    event_tick_us=mpi.EVENT_TICK_US, env=penv,
                    user=USERS[app], yield_cpu=True, home=env.homes[app])
    except subprocess.TimeoutExpired:
        _kill_job(hosts[0][0])
        raise
    wall = time.monotonic() - t0
    out = r.stdout + r.stderr
    m = _ELAPSED.search(out)
    if not m:
        raise RuntimeError(f"meep printed no run time: {out[-600:]}")
    row = {"app": app, "rate_mbit": rate, "run_s": float(m[1]),
           "wall_s": wall, "admitted": 0, "flows": 0, "refusal": ""}
    ok, no = _ADMITTED.search(out), _REFUSED.search(out)
    if ok:
        row.update(admitted=1, flows=int(ok[2]))
    if no:
        row["refusal"] = no[1].strip()
    # The plan's reservations fit the links: a refusal is a failed step,
    # not a point of the figure.
    if rate and not ok:
        raise RuntimeError(f"{USERS[app]}'s reservation of {rate:g} Mbit/s "
                           f"per flow: {row['refusal'] or 'no answer'}")
    return row


def _measure(env, cfg, app, cond, rate):
    if env.current != cfg:
        for h in env.hosts:
            install(env.star.ns[h], cfg)
        env.current = cfg
    bulk = []
    try:
        if cond != "alone":
            ips = [env.star.ip(h) for h in env.hosts]
            for i, h in enumerate(env.hosts):
                peer = ips[(i + 1) % len(ips)]
                bulk.append(bench.Bulk(env.star.ns[h],
                                       f"{peer}:{common.BULK_PORT}",
                                       BULK_SIZE, streams=env.p.background))
            time.sleep(env.p.settle + 1)
        if cond != "together":
            rows = [dict(_run_app(env, app, rate), scheduler=cfg,
                         condition=cond)]
        else:
            rows = _together(env, cfg)
        for b in bulk:
            b.check_running("before the application ended")
    finally:
        for b in bulk:
            b.stop()
    return rows


def _together(env, cfg):
    """A and B at once, each with its reservation under parq."""
    rows, errors = {}, {}

    def one(app):
        try:
            rows[app] = _run_app(env, app, _rate(cfg, app))
        except Exception as e:  # noqa: B902 - reported below
            errors[app] = e
    threads = [threading.Thread(target=one, args=(a,)) for a in USERS]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:
        # The step's time ran out: no run outlives it.
        _kill_job(env.star.ns[env.hosts[0]])
        for t in threads:
            t.join()
        raise
    if errors:
        raise RuntimeError("; ".join(f"{a}: {e}" for a, e in errors.items()))
    return [dict(rows[a], scheduler=cfg, condition="together")
            for a in USERS]


def add_slowdowns(rows):
    """Each row's run time over its application's alone: same part,
    scheduler (the sweep: parq's), hosts and repetition."""
    base = {(r["part"], r["scheduler"], r["hosts"], r["rep"], r["app"]):
            r["run_s"] for r in rows if r["condition"] == "alone"}
    for r in rows:
        sched = r["scheduler"] if r["part"] == "together" else "parq"
        b = base.get((r["part"], sched, r["hosts"], r["rep"], r["app"]))
        r["slowdown"] = r["run_s"] / b if b else float("nan")


def report(rows, p, out):
    add_slowdowns(rows)
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    sweep = [r for r in rows if r["part"] == "sweep"]
    together = [r for r in rows if r["part"] == "together"]
    run = common.summarize(sweep, ("hosts", "scheduler", "condition",
                                   "rate_mbit"), "run_s")
    slow = common.summarize(together, ("hosts", "scheduler", "app",
                                       "condition"), "slowdown")
    rates = list(p.extra["rates"])
    names = [f"{n} hosts" for n in p.hosts]
    reserved = {f"{n} hosts": {i: run[(n, "parq", "reserved", x)]
                               for i, x in enumerate(rates)
                               if (n, "parq", "reserved", x) in run}
                for n in p.hosts}
    cfgs = list(p.schedulers)
    bars = {f"{app} ({n} hosts)": {
        i: slow[(n, c, app, "together")] for i, c in enumerate(cfgs)
        if (n, c, app, "together") in slow}
        for n in p.hosts for app in USERS}
    common.plot(out / f"{NAME}.png", TITLE, [
        Panel("meep beside the background, under parq", "reservation per "
              "flow (Mbit/s)", "run time (s)", [f"{x:g}" for x in rates],
              reserved),
        Panel("two runs at once beside the background", "scheduler",
              "run time over alone", cfgs, bars, hline=1.0)])
    sections = []
    for n in p.hosts:
        def c(cfg, cond, x=0):
            return common.cell(run.get((n, cfg, cond, x)), 2)
        table = [["parq", "alone", "-", c("parq", "alone")],
                 ["parq", "background", "parallel class (cgroup)",
                  c("parq", "parallel")]]
        table += [["parq", "background", f"{x:g} Mbit/s per flow",
                   c("parq", "reserved", x)] for x in rates]
        table += [["pfifo", "background", "-", c("pfifo", "background")]]
        asked = [r for r in sweep if r["hosts"] == n and r["rate_mbit"]]
        flows = sorted({r["flows"] for r in asked if r["admitted"]})
        refused = sum(1 for r in asked if not r["admitted"])
        sections.append((
            f"Run time against the reservation, {n} hosts",
            f"meep's run time in s, median (min-max) over {p.reps} "
            f"repetitions; each reservation admitted as one job of "
            f"{', '.join(map(str, flows)) or 'no'} flows, {refused} "
            f"refused.\n\n" + common.md_table(
                ["scheduler", "traffic", "reservation", "run time (s)"],
                table)))
        table = [[cfg] + [common.cell(slow.get((n, cfg, app, "together")), 2)
                          for app in USERS] for cfg in cfgs]
        sections.append((
            f"Two runs at once beside the background, {n} hosts",
            "Each run's time over its time alone under the same scheduler, "
            "median (min-max); under parq A reserves "
            f"{TOGETHER_RATES['a']:g} and B {TOGETHER_RATES['b']:g} Mbit/s "
            "per flow.\n\n" + common.md_table(
                ["scheduler", "A", "B"], table)))
    top = max(p.hosts)

    def at(cond, x=0):
        return common.cell(run.get((top, "parq", cond, x)), 2)

    def together(cfg):
        return common.cell(slow.get((top, cfg, "a", "together")), 2)
    head = (f"{NAME}: meep on {top} hosts beside the background, run time "
            "(s) by per-flow reservation under parq: " +
            ", ".join(f"{x:g} Mbit/s {at('reserved', x)}" for x in rates) +
            f"; alone {at('alone')}; two runs at once, A's time over "
            "alone: " + ", ".join(f"{c} {together(c)}" for c in cfgs) + ".")
    sections.append(("Headline", head))
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
meep (Debian's meep-openmpi, unmodified) on {', '.join(names)}, one rank
per host, each host's interface behind a {LINK_MBIT} Mbit/s bottleneck,
beside background bulk streams from each host to the next.  It reserves
through the environment alone (libparq-mpi preloaded, PARQ_MPI_RATE: every
ordered pair of its hosts, admitted as one job), and its cgroup is a parq
job.  Documentation/experiments.md has the details.
""", sections)
    return [head]


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
