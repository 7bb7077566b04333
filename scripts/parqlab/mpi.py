"""Open MPI from Debian, unmodified, across the namespaces of one machine.

One rank per namespace: mpirun runs in the first host's namespace and
starts the others through scripts/mpi-netns-rsh, each namespace with a
hostname of its own (Open MPI tells nodes apart by hostname) and with
--bind-to none (bound, both ranks of a two-core machine would share one
core and every message would wait a time slice).  Nothing else is set for
MPI: no port range, no DSCP.  What makes a job's traffic parallel is its
cgroup (parqctl job add): mpirun is started in @cgroup, and every rank,
local or started through the agent, inherits it.

The benchmark is NetPIPE for Open MPI (Debian's netpipe-openmpi,
NPopenmpi): ping-pong of one message size, whose reported time is half the
round trip, averaged over its repetitions (the best of its trials).

Open MPI's TCP transport reads its sockets from its event library, which
opal_progress() polls on every call only while some component asks it to;
otherwise once every 10 ms (the MCA parameter mpi_event_tick_rate, default
-1: 10 000 us).  Under a bulk job on the emulated machine a rank sometimes
falls into that rate: its answers leave on a 10.0 ms clock (tcpdump at
the answering rank's interface: every reply 10 ms after the one before,
the ping in between), and NetPIPE prints 5.0 ms one way whatever the
queue in front of it.  @event_tick_us sets that parameter, so that a
measurement can show the queue rather than Open MPI's poll
(EVENT_TICK_US: 100 us).
"""
import os
import re
import shlex
import shutil
import time

from . import jobs, repo_path
from . import tc as tclib
from .jobs import CG as CGROUP2
from .jobs import MOUNT
from .traffic import Iperf3Client, Iperf3Server

NETPIPE = "NPopenmpi"
RSH = repo_path("scripts", "mpi-netns-rsh")
EVENT_TICK_US = 100


def have_mpi():
    """None if Open MPI and NetPIPE are installed, else what is missing."""
    for tool in ("mpirun", NETPIPE, "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (openmpi-bin, netpipe-openmpi)"
    return None


_LINE = re.compile(r"^\s*\d+:\s+(\d+) bytes\s+(\d+) times -->\s+"
                   r"([\d.]+) Mbps in\s+([\d.]+) usec", re.M)


def parse_netpipe(text):
    """[(bytes, repetitions, Mbit/s, one-way usec)] of NetPIPE's output."""
    return [(int(m[1]), int(m[2]), float(m[3]), float(m[4]))
            for m in _LINE.finditer(text)]


def mpirun_argv(hosts, program, event_tick_us=None, env=None, yield_cpu=False):
    """mpirun with one rank on each of @hosts ((Netns, address) pairs);
    Open MPI's event library polled every @event_tick_us microseconds at
    least, if given (else Open MPI's default, see the module doc); @env
    ({name: value}) in every rank's environment (mpirun -x); with
    @yield_cpu, a rank that waits yields its CPU (mpi_yield_when_idle: more
    ranks than CPUs, where a rank spinning in a wait would hold the CPU
    that the rank it waits for needs)."""
    tick = [] if event_tick_us is None else \
        ["--mca", "mpi_event_tick_rate", str(int(event_tick_us))]
    if yield_cpu:
        tick += ["--mca", "mpi_yield_when_idle", "1"]
    exports = [a for k, v in (env or {}).items() for a in ("-x", f"{k}={v}")]
    return ["mpirun", "--allow-run-as-root", "--bind-to", "none",
            "--mca", "plm_rsh_agent", str(RSH)] + tick + exports + [
            "--host", ",".join(addr for _, addr in hosts),
            "-np", str(len(hosts))] + list(program)


# What the launcher of a job run as another user (mpirun, its remote shell,
# Open MPI's daemons) keeps of root's powers: entering the namespaces (ip
# netns exec: setns() there takes both) and naming its host there.  The
# program it runs must drop them (RANK_DROP).  The job's sockets are the
# user's: what parqd's admission knows it by (SO_PEERCRED) and nftables
# matches (meta skuid).
USER_CAPS = "+sys_admin,+net_admin"
# The argv prefix that leaves a rank no capability, nor a way to gain one.
RANK_DROP = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all",
             "--no-new-privs"]


def as_user(user):
    """The argv prefix that runs a command as @user (a name in the
    password file) with USER_CAPS, kept across exec (ambient)."""
    return ["setpriv", f"--reuid={user}", f"--regid={user}",
            "--init-groups", f"--inh-caps={USER_CAPS}",
            f"--ambient-caps={USER_CAPS}"]


def run(hosts, program, cgroup=None, timeout=120, event_tick_us=None,
        env=None, user=None, yield_cpu=False, home=None):
    """Run @program as an MPI job over @hosts; mpirun in the first host's
    namespace, in cgroup @cgroup (a path below /sys/fs/cgroup) if given,
    with @event_tick_us, @env and @yield_cpu as mpirun_argv() takes them,
    as @user if
    given (as_user(): mpirun and every rank; @program must begin with
    RANK_DROP), with @home (a directory of @user's) as its HOME and
    TMPDIR, where Open MPI makes its session directories.
    Returns the CompletedProcess; raises if mpirun failed."""
    ns = hosts[0][0]
    netns = " ".join(f"{addr}={h.name}" for h, addr in hosts)
    join = ""
    if cgroup is not None:
        # ip netns exec mounted a /sys without the cgroup2 tree.
        join = f"{MOUNT}\necho $$ > {CGROUP2}/{cgroup}/cgroup.procs\n"
    # Root joins the cgroup (mount(8) is root's alone) and names the host,
    # then becomes @user.
    drop = shlex.join(as_user(user)) + " " if user else ""
    if home:
        join += f"export HOME={shlex.quote(home)} TMPDIR={shlex.quote(home)}\n"
    script = (f"{join}hostname {ns.name}\n"
              f"PARQ_MPI_NETNS='{netns}' exec {drop}\"$@\"")
    r = ns.run(["unshare", "-u", "sh", "-ec", script, "sh"]
               + mpirun_argv(hosts, program, event_tick_us, env, yield_cpu),
               timeout=timeout, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"mpirun {' '.join(program)}: exit "
                           f"{r.returncode}: {(r.stderr or r.stdout)[-600:]}")
    return r


def netpipe_latency(hosts, size=64, reps=200, cgroup=None, timeout=120,
                    event_tick_us=None):
    """NetPIPE's one-way time in microseconds for @size-byte messages
    between the first two @hosts, @reps round trips per trial, Open MPI's
    event poll as run() takes it.  (Its results file, np.out in the
    working directory by default, is not written.)"""
    r = run(hosts[:2], [NETPIPE, "-l", str(size), "-u", str(size),
                        "-n", str(reps), "-p", "0", "-o", "/dev/null"],
            cgroup=cgroup, timeout=timeout, event_tick_us=event_tick_us)
    # NetPIPE prints its results on stderr.
    rows = [row for row in parse_netpipe(r.stdout + r.stderr)
            if row[0] == size]
    if not rows:
        raise RuntimeError(f"NetPIPE printed no {size}-byte result: "
                           f"{(r.stdout + r.stderr)[-400:]}")
    return rows[0][3]


class SendSide:
    """An MPI job against a bulk copy on the sending side (parq_mpi, the
    demo): one rank in each of @topo's namespaces A and B, in cgroup @job
    (a path below /sys/fs/cgroup) that `parqctl job add` made a job in
    both, and a bulk copy from outside the job, iperf3 (one TCP stream of
    16 KiB writes) from A to B, through one scheduler of KINDS at A's
    root behind @rate.  start() sets up the job and the iperf3 server,
    stop() undoes it; both raise RuntimeError saying what failed."""

    KINDS = ("parq", "fq_codel", "pfifo")
    PORT = 5201
    WARMUP_S = 2
    BULK_S = 60		# the bulk copy's length: NetPIPE ends well within

    def __init__(self, topo, job, rate="100mbit", size=64, reps=100):
        self.topo, self.job, self.rate = topo, job, rate
        self.size, self.reps = size, reps
        self.hosts = [(topo.a, topo.ip_a()), (topo.b, topo.ip_b())]
        self.server = None

    def start(self):
        t = self.topo
        jobs.sh(t.a, f"mkdir -p {CGROUP2}/{self.job}")
        for ns in (t.a, t.b):
            r = jobs.parqctl(ns, "job", "add", f"{CGROUP2}/{self.job}")
            if r.returncode != 0:
                raise RuntimeError(f"parqctl job add in {ns.name}: "
                                   f"{r.stderr.strip()}")
        self.server = Iperf3Server(t.b, t.ip_b(), self.PORT)
        return self

    def stop(self):
        t = self.topo
        if self.server is not None:
            self.server.stop()
        for ns in (t.a, t.b):
            ns.run(["nft", "delete", "table", "inet", "parq"], check=False)
        jobs.sh(t.a, f"rmdir {CGROUP2}/{self.job} "
                f"{CGROUP2}/{os.path.dirname(self.job)}", check_rc=False)

    def scheduler(self, kind):
        """@kind at A's root: parq with its shaper at the rate, or htb at
        the rate with a @kind leaf (pfifo: what one gets today; fq_codel:
        the best one gets without parq)."""
        ns, dev, rate = self.topo.a, self.topo.dev_a(), self.rate
        tclib.tc(ns, "qdisc", "del", "dev", dev, "root", check=False)
        if kind == "parq":
            tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:",
                     "parq", "rate", rate)
            return
        tclib.tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:",
                 "htb", "default", "1")
        tclib.tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid",
                 "1:1", "htb", "rate", rate)
        tclib.tc(ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle",
                 "10:", kind)

    def netpipe(self, tick=None):
        """NetPIPE's one-way time (us), Open MPI's event poll @tick."""
        return netpipe_latency(self.hosts, size=self.size, reps=self.reps,
                               cgroup=self.job, event_tick_us=tick)

    def under_bulk(self, kind, tick=None):
        """(NetPIPE's one-way time in us under the bulk copy through
        @kind, the job's sojourn in A's parq as tc.with_sojourn() gives
        it, None but under parq)."""
        t = self.topo
        self.scheduler(kind)
        bulk = None
        try:
            bulk = Iperf3Client(t.a, t.ip_b(), self.PORT,
                                self.WARMUP_S + self.BULK_S, length="16K")
            time.sleep(self.WARMUP_S)
            bulk.check_running("early (bulk)")
            us, soj = tclib.with_sojourn(t.a, t.dev_a(),
                                         lambda: self.netpipe(tick))
            bulk.check_running("early (bulk)")
            return us, soj
        finally:
            if bulk is not None:
                bulk.stop()
