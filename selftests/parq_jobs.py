#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""parqctl job: a job's cgroup makes its traffic parallel at both ends, and
nobody else's.

Namespace A sends to namespace B through parq (A's root qdisc); B runs the
receive monitor.  parqctl job (nftables table inet parq in A) marks the
packets of the job cgroups' sockets EF on A's egress, before the qdisc, and
re-marks CS0 what other sockets mark CS5 or EF.  Each case sends K UDP
datagrams from a process placed in a cgroup (a child of the cgroup2 root,
mounted again inside `ip netns exec`, which hides the VM's) and reads
which class of A's parq counted them and how B's monitor counted A:
  - a job's datagrams, sent with no DSCP, are parallel at A and at B, and so
    are those of a process in a child of the job's cgroup;
  - EF set by a process outside every job is re-marked: local at A and B;
    with `job policy --anti-spoof off` the same datagrams are parallel;
  - after `job del` the cgroup's datagrams are local again;
  - a job whose cgroup was removed shows in `job list` as gone until
    `job sweep`; removing a job twice is harmless;
  - scripts/slurm's prolog and epilog, run as slurmd runs them against a
    cgroup tree laid out like Slurm's, add and remove the job;
  - bad paths are refused with a message, and the ruleset is unchanged.

parqctl comes from $PARQ_USERSPACE_BUILD (default build/userspace).
"""
import json
import os
import sys

from parqlab import jobs as joblib
from parqlab import ktap, lab
from parqlab import tc as tclib
from parqlab.genl import ParqGenl
from parqlab.ktap import check, check_eq, diag
from parqlab.tc import tc

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.join(HERE, "..")

PARQCTL = joblib.PARQCTL
K = 50
PORT = 9
TOS_EF = 46 << 2
CG = joblib.CG
TOP = "parqjobs"		# below CG: the test's cgroups
PAR, LOC = "1:1", "1:2"


def sh(env, script, check_rc=True):
    """@script in A, with the cgroup2 root mounted at CG."""
    return joblib.sh(env.a, script, check_rc)


def parqctl(env, *args):
    return joblib.parqctl(env.a, *args)


def send_from(env, cgroup, tos=None):
    """K datagrams to B from a process in @cgroup (below CG)."""
    opt = "" if tos is None else \
        f"s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, {tos})\n"
    prog = ("import socket\n"
            "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"{opt}"
            f"for _ in range({K}):\n"
            f"    s.sendto(b'x' * 100, ('{env.topo.ip_b()}', {PORT}))\n")
    sh(env, f"echo $$ > {CG}/{cgroup}/cgroup.procs\n"
            f"exec python3 -c \"{prog}\"")


def counts(env):
    """(A's parallel packets, A's local packets, B's parallel packets from
    A, B's local packets from A)."""
    topo = env.topo
    st = tclib.class_stats(topo.a, topo.dev_a())
    with ParqGenl(topo.b) as g:
        peer = g.peers().get(topo.ip_a(), {})
    return (st.get(PAR, {}).get("packets", 0),
            st.get(LOC, {}).get("packets", 0),
            peer.get("par_packets", 0), peer.get("loc_packets", 0))


def expect(env, what, cgroup, tos, parallel):
    before = counts(env)
    send_from(env, cgroup, tos)
    # The last datagrams may still be on their way to B's monitor.
    d = ktap.poll(lambda: [a - b for a, b in zip(counts(env), before)],
                  lambda d: d[0] + d[1] >= K and d[2] + d[3] >= K, 5)
    diag(f"{what}: A parallel {d[0]}, local {d[1]}; B counted A's "
         f"parallel {d[2]}, local {d[3]}")
    want = (K, 0, K, 0) if parallel else (0, K, 0, K)
    check_eq(tuple(d), want, f"{what}: (A par, A loc, B par, B loc)")


def add(env, path):
    r = parqctl(env, "job", "add", path)
    check(r.returncode == 0, f"job add {path}: {r.stderr.strip()}")


# A job's nftables rule matches its sockets' cgroup (socket cgroupv2).
NEEDS_SOCKET_CGROUPV2 = ktap.needs_kernel(
    5, 13, "nftables' socket cgroupv2 match, which a job's rule uses")


@NEEDS_SOCKET_CGROUPV2
def t_job_parallel(env):
    add(env, f"{CG}/{TOP}/job_1")
    expect(env, "job_1, no DSCP", f"{TOP}/job_1", None, True)
    expect(env, "job_1/step_0 (a child), no DSCP", f"{TOP}/job_1/step_0",
           None, True)
    expect(env, "outside, no DSCP", f"{TOP}/other", None, False)


@NEEDS_SOCKET_CGROUPV2
def t_anti_spoof(env):
    expect(env, "outside, EF", f"{TOP}/other", TOS_EF, False)
    r = parqctl(env, "job", "policy", "--anti-spoof", "off")
    check(r.returncode == 0, f"job policy: {r.stderr.strip()}")
    try:
        expect(env, "outside, EF, anti-spoofing off", f"{TOP}/other",
               TOS_EF, True)
    finally:
        r = parqctl(env, "job", "policy")
        check(r.returncode == 0, f"job policy: {r.stderr.strip()}")
    expect(env, "outside, EF, anti-spoofing on again", f"{TOP}/other",
           TOS_EF, False)


def jobs(env):
    r = parqctl(env, "job", "list", "--json")
    check(r.returncode == 0, f"job list: {r.stderr.strip()}")
    return json.loads(r.stdout)


@NEEDS_SOCKET_CGROUPV2
def t_del(env):
    r = parqctl(env, "job", "del", f"{CG}/{TOP}/job_1", "--json")
    check(r.returncode == 0, f"job del: {r.stderr.strip()}")
    check_eq(json.loads(r.stdout).get("removed"), True, "removed")
    expect(env, "job_1 after job del", f"{TOP}/job_1", None, False)
    r = parqctl(env, "job", "del", f"{CG}/{TOP}/job_1", "--json")
    check(r.returncode == 0, f"job del twice: {r.stderr.strip()}")
    check_eq(json.loads(r.stdout).get("removed"), False, "removed twice")


@NEEDS_SOCKET_CGROUPV2
def t_gone(env):
    sh(env, f"mkdir -p {CG}/{TOP}/job_2")
    add(env, f"{CG}/{TOP}/job_2")
    check_eq([j["path"] for j in jobs(env)["jobs"]], [f"{CG}/{TOP}/job_2"],
             "jobs")
    sh(env, f"rmdir {CG}/{TOP}/job_2")
    listed = jobs(env)
    diag(f"after rmdir: {listed}")
    check_eq((listed["jobs"], len(listed["gone"])), ([], 1), "jobs, gone")
    r = parqctl(env, "job", "sweep", "--json")
    check(r.returncode == 0, f"job sweep: {r.stderr.strip()}")
    check_eq(json.loads(r.stdout).get("removed"), 1, "swept")
    check_eq(jobs(env), {"jobs": [], "gone": []}, "jobs after the sweep")


SLURM = f"{TOP}/system.slice/slurmstepd.scope"  # below CG, as Slurm's


def slurm(a, script, job):
    """scripts/slurm/@script run as slurmd runs it in namespace @a, for job
    @job."""
    env = {"SLURM_JOB_ID": str(job), "SLURM_JOB_USER": "nobody",
           "SLURM_JOB_UID": "65534", "SLURM_CLUSTER_NAME": "parq",
           "SLURM_SCRIPT_CONTEXT": f"{script.split('-')[1]}_slurmd",
           "PARQ_SLURM_CGROUP": f"{CG}/{SLURM}", "PARQCTL": PARQCTL,
           "PARQ_SLURM_STRICT": "1"}
    exe = os.path.join(REPO, "scripts", "slurm", script)
    r = joblib.run_mounted(a, ["env"] + [f"{k}={v}" for k, v in
                                         env.items()] + [exe])
    check(r.returncode == 0, f"{script} for job {job}: exit {r.returncode}: "
          f"{r.stderr.strip()}")


@NEEDS_SOCKET_CGROUPV2
def t_slurm(env):
    # Slurm's cgroup/v2 layout: job_N/step_M/user/task_K below the scope.
    task = f"{SLURM}/job_42/step_0/user/task_0"
    sh(env, f"mkdir -p {CG}/{task}")
    slurm(env.a, "parq-prolog", 42)
    check_eq([j["path"] for j in jobs(env)["jobs"]],
             [f"{CG}/{SLURM}/job_42"], "jobs after the prolog")
    expect(env, "Slurm job 42's task", task, None, True)
    slurm(env.a, "parq-epilog", 42)
    check_eq(jobs(env)["jobs"], [], "jobs after the epilog")
    expect(env, "Slurm job 42's task after the epilog", task, None, False)


def ruleset(env):
    return env.a.run(["nft", "list", "ruleset"]).stdout


def t_bad_input(env):
    before = ruleset(env)
    for path, want in ((f"{CG}/{TOP}/nope", "no such cgroup"),
                       (CG, "the root cgroup"),
                       ("/tmp", f"not below {CG}"),
                       (f"{CG}/{TOP}/job_1/cgroup.procs",
                        "is not a directory")):
        r = parqctl(env, "job", "add", path)
        diag(f"job add {path}: exit {r.returncode}: {r.stderr.strip()}")
        check_eq(r.returncode, 1, f"job add {path}: exit status")
        check(want in r.stderr, f"job add {path}: message {r.stderr!r}")
    check_eq(ruleset(env), before, "the ruleset after refused commands")


def setup(env):
    t, dev = env.topo, env.dev
    tc(t.a, "qdisc", "add", "dev", dev, "root", "handle", "1:", "parq")
    with ParqGenl(t.b) as g:
        r = g.mon_set(mon_enabled=1, mon_size=16)
        check(not r.error, f"monitor: {r.msg}")
    t.b.run(["ip", "neigh", "replace", t.ip_a(), "lladdr", t.mac_a(),
             "dev", t.dev_b(), "nud", "permanent"])
    t.a.run(["ip", "neigh", "replace", t.ip_b(), "lladdr", t.mac_b(),
             "dev", dev, "nud", "permanent"])
    sh(env, f"mkdir -p {CG}/{TOP}/job_1/step_0 {CG}/{TOP}/other")
    return [Cleanup(env)]


class Cleanup:
    def __init__(self, env):
        self.env = env

    def stop(self):
        self.env.a.run(["nft", "delete", "table", "inet", "parq"],
                       check=False)
        sh(self.env,
           f"for d in $(find {CG}/{TOP} -depth -type d); do rmdir $d; done",
           check_rc=False)


def main():
    suite = ktap.Suite("parq_jobs")
    if not os.path.exists(PARQCTL):
        return suite.skip_all(f"{PARQCTL} not built (make userspace)")
    with open("/proc/filesystems") as f:
        if "cgroup2" not in f.read():
            return suite.skip_all("this kernel has no cgroup v2")
    suite.case("a job's traffic is parallel at both ends", t_job_parallel)
    suite.case("EF from outside a job is re-marked (anti-spoofing)",
               t_anti_spoof)
    suite.case("job del: the cgroup's traffic is local again", t_del)
    suite.case("a removed cgroup is gone until job sweep", t_gone)
    suite.case("Slurm's prolog and epilog add and remove the job", t_slurm)
    suite.case("bad paths refused, ruleset unchanged", t_bad_input)
    return lab.run(suite, "jobs", tools=("nft",), setup=setup)


if __name__ == "__main__":
    sys.exit(main())
