#!/usr/bin/python3
"""The simulation at cluster scale: parq-sim (Documentation/simulation.md)
for 64 to 1 024 hosts, and experiment 3's 4- and 8-host cases beside the
VM's.

For each cluster size: racks of RACK hosts under one spine, 10 Gbit/s
links; a parallel job on a quarter of the hosts (ROUNDS rounds of an
all-to-all then an incast of MESSAGE bytes per pair); local bulk flows
into each job host from hosts outside the job and out of it, at two loads
(WORKLOADS: base and heavy).  Each scheduler (fifo, parq, parqd, parqd
with its control messages served first: parqd+cs6, and that with smaller
shares for the local jobs) runs the two together; the job alone and the
local flows alone (for as long as the job took under the scheduler) give
the baselines.  Reported: the job's slowdown per phase kind, the local
flows' throughput against theirs alone, the GRANT and RELEASE messages
per host and second and their share of the busiest link, the times to
throttle (a receiver's first parallel packet to the arrival of the last
of the GRANTs its start report sent) and to release (its last parallel
packet to the arrival of the last RELEASE, the hold included), the
targets (TARGET_RATIO, THROTTLE_GROWTH, CONTROL_PCT) and the model's cost.

Each case of experiment 3 (EXP3_CASES) runs twice over: as the network
alone (no CPU model), and with parq-sim's CPU model calibrated from the
committed CSV's measurements that are not the slowdowns it predicts
(cpu_calibration): the VM's 2 vCPUs, the round alone (T1) for the
per-message cost, the local job's rate alone for the per-packet cost.

    scripts/experiments/sim_scale.py [--quick] [--out DIR] [--sim PATH]

--quick: 64 and 128 hosts only.  The binary: --sim, else
$PARQ_USERSPACE_BUILD/sim/parq-sim (default build/release).  It runs on
the host, not in the VM: nothing here needs a kernel.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import common
from common import Panel

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
NAME = "sim"
TITLE = "Simulation: parq on 64 to 1 024 hosts"
SIZES = (64, 128, 256, 512, 1024)
QUICK_SIZES = (64, 128)
SCHEDULERS = ("fifo", "parq", "parqd")
# At scale, parq-sim's options per row: the three schedulers; parqd with
# its GRANTs and RELEASEs in a network-control class that hosts and switch
# ports serve first (CS6: sch_parq's control queue, and a switch's strict
# priority queue for CS6); and that with a smaller share for the local
# jobs (parqd's --local-floor 5 and sch_parq's threshold 20 instead of 20 %
# and 4), which shows what the local jobs' shares cost the parallel job.
CONTROL_FIRST = "parqd+cs6"
SMALL_SHARE = "parqd+cs6, local 5%"
SCALE = {**{s: ["--scheduler", s] for s in SCHEDULERS},
         CONTROL_FIRST: ["--scheduler", "parqd", "--control-first"],
         SMALL_SHARE: ["--scheduler", "parqd", "--control-first",
                       "--local-floor", 5, "--threshold", 20]}
RACK = 32
ROUNDS = 2
MESSAGE = 16384
# The local jobs.  base: LOCAL_IN flows into each job host from hosts
# outside the job and LOCAL_OUT out of it, 64 KiB windows, no core
# bottleneck.  heavy: four times the flows into each job host and twice
# those out, windows of 256 KiB (a TCP flow's on a fast LAN), and racks
# whose uplinks carry half their hosts' links (2:1 oversubscription), so
# that the local load grows with the job and meets it in the core too.
LOCAL_IN, LOCAL_OUT = 2, 1
WORKLOADS = {
    "base": ["--local-in", LOCAL_IN, "--local-out", LOCAL_OUT],
    "heavy": ["--local-in", 4 * LOCAL_IN, "--local-out", 2 * LOCAL_OUT,
              "--window", 262144, "--oversubscription", 2],
}
# The targets: parqd+cs6's slowdown at most TARGET_RATIO of FIFO's and of
# parq's alone; its time to throttle at the largest size within
# THROTTLE_GROWTH times its value at the smallest; control traffic below
# CONTROL_PCT of any link.
TARGET_RATIO = 0.8
THROTTLE_GROWTH = 2
CONTROL_PCT = 1.0
CONTROL_BYTES = 128
LINK_BPS = 10e9
JOBS = 2  # parq-sim runs at once: the development host's two cores
FIELDS = ["workload", "hosts", "job_hosts", "scheduler", "lease",
          "alltoall_slowdown", "incast_slowdown", "job_us", "job_alone_us",
          "local_gbps", "local_alone_gbps", "local_ratio",
          "control_per_host_s", "control_link_mean_pct",
          "control_link_peak_pct", "throttle_p50_us", "throttle_max_us",
          "release_p50_us", "max_switch_queue", "events", "seconds"]
# The VM's CPUs: every host of experiment 3 is a namespace of one VM with
# 2 vCPUs (scripts/vm-run).
VM_CPUS = 2
# The switch port toward the root in the VM: a 100 Mbit/s FIFO of 300 kB
# (exp3_collective.py).  The model's buffers are unlimited; the local
# flows' window is their standing queue, so one run gives them a window of
# that size.
VM_FIFO_BYTES = 300000
MTU = 1500


def exp3_args(hosts):
    """Experiment 3's case: 100 rounds of a 64-byte one-to-all then
    all-to-one (parq-bench's barrier) across @hosts hosts of one switch at
    100 Mbit/s, one local bulk flow each way between the root and host
    1."""
    return ["--hosts", hosts, "--rack", hosts, "--job-hosts", hosts,
            "--link-bps", "100000000", "--phases", "broadcast,incast",
            "--message", "64", "--rounds", "100", "--gap-ns", "0",
            "--local-flow", "0:1", "--local-flow", "1:0"]


def sim_path(arg):
    if arg:
        return Path(arg)
    build = os.environ.get("PARQ_USERSPACE_BUILD", str(REPO / "build" /
                                                       "release"))
    return Path(build) / "sim" / "parq-sim"


def run(sim, args):
    """parq-sim's JSON for @args, with "seconds" it took."""
    t0 = time.monotonic()
    r = subprocess.run([str(sim), *map(str, args)], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"parq-sim {' '.join(map(str, args))}: exit "
                           f"{r.returncode}: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    out["seconds"] = time.monotonic() - t0
    return out


def phase_sums(j, phases=2):
    """The job's time per phase kind (all-to-all, incast), summed over
    its rounds."""
    ns = j["phase_ns"]
    return [sum(ns[k::phases]) for k in range(phases)]


def measure(sim, workload, hosts, pool):
    """The rows of one workload at one cluster size; the runs go JOBS at a
    time through @pool."""
    base = ["--hosts", hosts, "--rack", min(RACK, hosts), "--job-hosts",
            hosts // 4, "--rounds", ROUNDS, "--message", MESSAGE,
            *WORKLOADS[workload]]
    alone = pool.submit(run, sim, base + ["--no-local"])
    # Every job run is submitted before the local runs that wait for its
    # duration: the pool starts tasks in order, so a local run waits only
    # for a job run already started.
    jobs = {s: pool.submit(run, sim, base + opts)
            for s, opts in SCALE.items()}
    locals_ = {s: pool.submit(lambda o, f: run(sim, base + o + [
        "--no-parallel", "--local-only-ns", f.result()["parallel_ns"]]),
        opts, jobs[s]) for s, opts in SCALE.items()}
    a2a_alone, inc_alone = phase_sums(alone.result())
    rows = []
    for s in SCALE:
        j, local = jobs[s].result(), locals_[s].result()
        a2a, inc = phase_sums(j)
        thr = [x / 1e3 for x in j["throttle_ns"]]
        rel = [x / 1e3 for x in j["release_ns"]]
        rows.append({
            "workload": workload, "hosts": hosts, "job_hosts": hosts // 4,
            "scheduler": s, "lease": j["lease"],
            "alltoall_slowdown": a2a / a2a_alone,
            "incast_slowdown": inc / inc_alone,
            "job_us": j["parallel_ns"] / 1e3,
            "job_alone_us": alone.result()["parallel_ns"] / 1e3,
            "local_gbps": j["local_gbps"],
            "local_alone_gbps": local["local_gbps"],
            "local_ratio": j["local_gbps"] / local["local_gbps"],
            "control_per_host_s": j["control_per_host_s"],
            "control_link_mean_pct": j["control_link_mean_pct"],
            "control_link_peak_pct": j["control_link_peak_pct"],
            "throttle_p50_us": statistics.median(thr) if thr else None,
            "throttle_max_us": max(thr) if thr else None,
            "release_p50_us": statistics.median(rel) if rel else None,
            "max_switch_queue": j["max_switch_queue"],
            "events": j["events"], "seconds": j["seconds"]})
        print(f"{NAME}: {workload}, {hosts} hosts, {s}: all-to-all x"
              f"{rows[-1]['alltoall_slowdown']:.2f}, incast x"
              f"{rows[-1]['incast_slowdown']:.2f}, local "
              f"{rows[-1]['local_ratio']:.2f} of alone, "
              f"{j['control_per_host_s']:.0f} control msgs/host/s "
              f"({j['seconds']:.1f} s)", flush=True)
    return rows


def exp3_case(sim, hosts, extra=()):
    """{scheduler: slowdown} of the @hosts-host barrier case with parq-sim's
    options @extra; "alone_us": a round alone (us), "local_mbit": each
    local flow's rate alone (Mbit/s), "added_ms": {scheduler: the time
    the local flows added to a round (ms)}."""
    out = {"added_ms": {}}
    args = exp3_args(hosts) + list(extra)
    for s in SCHEDULERS:
        alone = run(sim, args + ["--scheduler", s, "--no-local"])
        j = run(sim, args + ["--scheduler", s])
        out[s] = j["parallel_ns"] / alone["parallel_ns"]
        out["added_ms"][s] = (j["parallel_ns"] - alone["parallel_ns"]) / \
            1e6 / 100
    out["alone_us"] = alone["parallel_ns"] / 1e3 / 100
    local = run(sim, args + ["--scheduler", "fifo", "--no-parallel",
                             "--local-only-ns", 300_000_000])
    out["local_mbit"] = local["local_gbps"] * 1e3 / 2
    return out


def round_alone_ns(sim, hosts, message_cpu_ns):
    """The model's @hosts-host round alone (ns) on the VM's CPUs."""
    j = run(sim, exp3_args(hosts) + ["--no-local", "--cpus", VM_CPUS,
                                     "--message-cpu-ns", message_cpu_ns])
    return j["parallel_ns"] / 100


def cpu_calibration(sim, hosts, cal):
    """parq-sim's CPU options for experiment 3's case, from @cal
    (vm_calibration): the per-message cost that makes the model's round
    alone the VM's T1 (a round alone is linear in it once it exceeds the
    network's time: two runs give the line), and the per-packet cost that
    makes a local flow's rate alone the VM's, if that is below the link
    (else 0).  Returns ({option: value}, check): check is the model's
    round alone with them (us)."""
    lo, hi = 1_000_000, 2_000_000
    r_lo = round_alone_ns(sim, hosts, lo)
    r_hi = round_alone_ns(sim, hosts, hi)
    slope = (r_hi - r_lo) / (hi - lo)
    message = round(lo + (cal["t1_round_ms"] * 1e6 - r_lo) / slope)
    rate = cal["local_alone_mbit"]
    local = round(MTU * 8 * 1e3 / rate) if rate < 100 else 0
    opts = {"cpus": VM_CPUS, "message-cpu-ns": message,
            "local-cpu-ns": local}
    return opts, round_alone_ns(sim, hosts, message) / 1e3


def cpu_args(opts, window=None):
    out = [x for k, v in opts.items() for x in (f"--{k}", v)]
    return out + (["--window", window] if window else [])


# Experiment 3's committed runs, the VM's side of the comparison: (the
# kernel, its CSV, the number of hosts) for each case.
RESULTS = HERE.parent.parent / "Documentation" / "results"
EXP3_CASES = (("6.1", RESULTS / "exp3.csv", 4),
              ("6.12", RESULTS / "6.12" / "exp3.csv", 4),
              ("6.12", RESULTS / "6.12" / "exp3.csv", 8))


def exp3_rows(path, hosts):
    """The committed run's @hosts-host rows, or [] when the file is
    missing."""
    try:
        with open(path) as f:
            return [r for r in csv.DictReader(f)
                    if r["hosts"] == str(hosts)]
    except FileNotFoundError:
        return []


def vm_exp3(path, hosts):
    """{exp3 scheduler: (median, min, max, n) slowdown at @hosts with the
    local job} of the committed run, and the median time of a round alone
    there (ms, over every scheduler; its runs have 100 rounds); ({}, None)
    when the file is missing."""
    rows = exp3_rows(path, hosts)
    out = {}
    for r in rows:
        if r["local_size"] != "0":
            out.setdefault(r["scheduler"], []).append(float(r["slowdown"]))
    alone = [float(r["completion_ms"]) / 100 for r in rows
             if r["local_size"] == "0"]
    return ({k: (statistics.median(v), min(v), max(v), len(v))
             for k, v in out.items()},
            statistics.median(alone) if alone else None)


def vm_added(rows):
    """{exp3 scheduler: (median, min, max, n)} of the time the local job
    added to a round in @rows (exp3_rows): per repetition, the mean
    round with it less the mean round without it (ms); and {scheduler:
    (median, min, max, n)} of the local job's rate meanwhile (Mbit/s,
    both streams' median per repetition)."""
    by = {}
    for r in rows:
        by.setdefault((r["scheduler"], r["rep"]), {})[r["local_size"]] = r
    added, rate = {}, {}
    for (s, _), d in by.items():
        if "0" not in d or len(d) != 2:
            continue
        loaded = next(v for k, v in d.items() if k != "0")
        added.setdefault(s, []).append(
            (float(loaded["mean_us"]) - float(d["0"]["mean_us"])) / 1e3)
        rate.setdefault(s, []).append(statistics.median(
            float(loaded[k]) for k in ("local_send_mbit",
                                       "local_recv_mbit")))

    def stats(v):
        return {k: (statistics.median(x), min(x), max(x), len(x))
                for k, x in v.items()}
    return stats(added), stats(rate)


def vm_calibration(path, hosts):
    """The VM's measurements that calibrate the CPU model, none of them a
    slowdown: "t1_round_ms", the median round alone (T1 / 100, over every
    scheduler's rows without the local job); "local_alone_mbit", the
    median of the local job's two streams' rates alone (the 0.3 s before
    the barrier) in pfifo's rows, the baseline qdisc, where no scheduler
    of the comparison shapes them.  None when the file is missing."""
    rows = exp3_rows(path, hosts)
    alone = [float(r["completion_ms"]) / 100 for r in rows
             if r["local_size"] == "0"]
    rates = [float(r[k]) for r in rows
             if r["scheduler"] == "pfifo" and r["local_size"] != "0"
             for k in ("local_send_alone_mbit", "local_recv_alone_mbit")]
    if not alone or not rates:
        return None
    return {"t1_round_ms": statistics.median(alone),
            "local_alone_mbit": statistics.median(rates)}


def stat(v):
    return None if v is None else (v, v, v, 1)


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def added_section(runs, names, rows, src):
    """The comparison in the time the local job adds to a round, which
    does not divide by the VM's round alone; @rows: the VM's (exp3_rows)
    from @src, the CSV's path under results/."""
    added, rate = vm_added(rows)
    if not added:
        return ""
    alone = [float(r["mean_us"]) / 1e3 for r in rows
             if r["local_size"] == "0"]
    table = [[label, common.cell(added.get(k))] +
             [fmt(r["added_ms"][s]) for _, r in runs]
             for label, k, s in names]
    held = rate.get(common.PARQD)
    return (
        "\n\nThe same runs in the time the local job added to a round "
        "(ms): in the VM, per repetition, the mean round with it less the "
        "mean round without it, median (min-max).  This does not divide "
        "by the VM's round alone, which varied from "
        f"{min(alone):.2f} to {max(alone):.2f} ms across its schedulers and "
        "repetitions with nothing else running.\n\n" + common.md_table(
            ["scheduler", f"VM ({src})"] + [r for r, _ in runs], table) +
        ("" if held is None or common.PARQD not in added else
         f"\n\nIn the VM, parq+parqd held the local job to "
         f"{common.cell(held, 1)} Mbit/s (the median of its two streams) and "
         f"a round took {common.cell(added[common.PARQD])} ms longer (the "
         "model's parqd, with the same credits: the figures of its row).  "
         f"{src.with_suffix('.md')}, \"The CPUs and the packets\", has the "
         "VM's CPUs "
         "idle and the size of its packets in the same runs."))


def exp3_section(case, e3, cpu):
    """The comparison's text for @case (one of EXP3_CASES), and its
    headline (or None)."""
    kernel, path, hosts = case
    vm, vm_round_ms = vm_exp3(path, hosts)
    rows = exp3_rows(path, hosts)
    src = path.relative_to(RESULTS)
    names = (("pfifo / fifo", "pfifo", "fifo"), ("parq", "parq", "parq"),
             ("parq+parqd / parqd", common.PARQD, "parqd"))

    def vm_cell(k):
        return common.cell(vm.get(k))
    runs = [("model, no CPU", e3)] + ([] if cpu is None else [
        ("model, CPUs, 64 KiB window", cpu["w64"]),
        ("model, CPUs, 300 kB window", cpu["w300"]),
        ("ablation: only the messages cost CPU, 300 kB", cpu["msg"])])
    table = [[label, vm_cell(k)] + [fmt(r[s]) for _, r in runs]
             for label, k, s in names]
    text = ("100 rounds of a 64-byte barrier (one-to-all, then all-to-one) "
            f"across {hosts} hosts at 100 Mbit/s, one local bulk flow each "
            "way between the root and host 1.  Slowdown of the 100 rounds.  "
            "The VM's figures are the medians (min-max over its "
            f"repetitions) of the committed {src}, on {kernel}; there a "
            "round took "
            f"{fmt(vm_round_ms, 1)} ms alone, the CPU's time under "
            f"QEMU/TCG.  Without a CPU model a round takes "
            f"{e3['alone_us']:.0f} us here, the network's time alone.\n\n")
    if cpu is None:
        return text + common.md_table(
            ["scheduler", f"VM ({src})"] + [r for r, _ in runs],
            table) + added_section(runs, names, rows, src), None
    o = cpu["opts"]
    text += (
        f"The CPU model (Documentation/simulation.md): {o['cpus']} CPUs "
        f"shared by the {hosts} hosts, as the VM's 2 vCPUs are shared by "
        f"its namespaces, calibrated from {src}'s measurements that are "
        "not slowdowns:\n\n"
        f"- {o['message-cpu-ns'] / 1e3:.0f} us per parallel message "
        "received, so that a round alone takes the VM's median T1 / 100, "
        f"{cpu['cal']['t1_round_ms'] * 1e3:.0f} us (the model's round "
        f"alone with it: {cpu['check_us']:.0f} us);\n"
        f"- {o['local-cpu-ns'] / 1e3:.0f} us per local packet of {MTU} "
        "bytes delivered, so that a local flow alone runs at the VM's "
        "median rate alone in pfifo's rows, "
        f"{cpu['cal']['local_alone_mbit']:.1f} Mbit/s, below the link's 100 "
        f"(the model's: {cpu['w64']['local_mbit']:.1f} Mbit/s per flow, "
        "both running).\n\n"
        "The window: the model's buffers are unlimited, and a flow's window "
        "is its standing queue.  The VM's one known buffer is the switch "
        f"port toward the root, a FIFO of {VM_FIFO_BYTES // 1000} kB: one "
        "run gives the local flows a window of that size, one the default "
        "64 KiB.  The ablation takes the local packets' CPU cost away (the "
        "flows then run at the link's rate); it is not a calibrated "
        "prediction.\n\n" + common.md_table(
            ["scheduler", f"VM ({src})"] + [r for r, _ in runs], table))
    inside = []
    for label, k, s in names:
        v = vm.get(k)
        for run_label, r in runs[1:3]:
            if v and v[1] <= r[s] <= v[2]:
                inside.append(f"{s} ({run_label[13:]})")
    text += ("\n\nWithin the VM's min-max: " +
             (", ".join(inside) if inside else "none of the calibrated "
              "model's figures") + ".")
    text += added_section(runs, names, rows, src)
    w = cpu["w300"]
    head = (f"sim: experiment 3's {hosts} hosts on {kernel} with the "
            "calibrated CPU model "
            f"({o['cpus']} CPUs, {o['message-cpu-ns'] / 1e3:.0f} us per "
            f"message, {o['local-cpu-ns'] / 1e3:.0f} us per local packet, "
            f"{VM_FIFO_BYTES // 1000} kB window): slowdown fifo "
            f"{fmt(w['fifo'])}, parq {fmt(w['parq'])}, parqd "
            f"{fmt(w['parqd'])}; the VM's pfifo {vm_cell('pfifo')}, parq "
            f"{vm_cell('parq')}, parq+parqd {vm_cell(common.PARQD)}.")
    return text, head


def plot(rows, sizes, workload, path):
    by = {(r["scheduler"], r["hosts"]): r for r in rows
          if r["workload"] == workload}

    def series(key, names=tuple(SCALE)):
        return {s: {i: stat(by[(s, n)][key]) for i, n in enumerate(sizes)
                    if (s, n) in by and by[(s, n)][key] is not None}
                for s in names}
    parqds = tuple(s for s in SCALE if s.startswith("parqd"))
    common.plot(path, f"{TITLE}, {workload} local load", [
        Panel("the job's all-to-all", "hosts", "slowdown", list(sizes),
              series("alltoall_slowdown"), hline=1.0),
        Panel("the job's incast", "hosts", "slowdown", list(sizes),
              series("incast_slowdown"), hline=1.0),
        Panel("the local flows", "hosts", "throughput / alone",
              list(sizes), series("local_ratio"), hline=1.0),
        Panel("control, busiest link's busiest epoch", "hosts",
              "% of the link", list(sizes),
              series("control_link_peak_pct", parqds)),
        Panel("parqd's time to throttle (median)", "hosts", "us",
              list(sizes), series("throttle_p50_us", parqds), logy=True)])


def targets(rows, sizes):
    """The targets' table, one row per workload and size, and a line per
    target that says where it is met."""
    by = {(r["workload"], r["scheduler"], r["hosts"]): r for r in rows}
    table, misses = [], []
    for w in WORKLOADS:
        for n in sizes:
            cs6 = by.get((w, CONTROL_FIRST, n))
            fifo, parq = by.get((w, "fifo", n)), by.get((w, "parq", n))
            if not (cs6 and fifo and parq):
                continue
            cells = [w, n]
            ok = True
            for k in ("alltoall_slowdown", "incast_slowdown"):
                worst = max(cs6[k] / fifo[k], cs6[k] / parq[k])
                ok &= worst <= TARGET_RATIO
                cells += [fmt(cs6[k] / fifo[k]), fmt(cs6[k] / parq[k]),
                          fmt(1 / min(fifo[k], parq[k]))]
            cells.append("yes" if ok else "**no**")
            if not ok:
                misses.append(f"{w} {n}")
            table.append(cells)
    lines = [common.md_table(
        ["workload", "hosts", "all-to-all / FIFO's", "/ parq's",
         "at best", "incast / FIFO's", "/ parq's", "at best",
         f"both <= {TARGET_RATIO}"],
        table)]
    lo, hi = min(sizes), max(sizes)
    for w in WORKLOADS:
        a, b = by.get((w, CONTROL_FIRST, lo)), by.get((w, CONTROL_FIRST, hi))
        if not (a and b and a["throttle_p50_us"] and b["throttle_p50_us"]):
            continue
        p50 = b["throttle_p50_us"] / a["throttle_p50_us"]
        mx = b["throttle_max_us"] / a["throttle_max_us"]
        lines.append(
            f"- Time to throttle, {w}: median {fmt(a['throttle_p50_us'], 0)}"
            f" us at {lo} hosts, {fmt(b['throttle_p50_us'], 0)} at {hi} "
            f"({fmt(p50)} times); at most {fmt(a['throttle_max_us'], 0)} "
            f"and {fmt(b['throttle_max_us'], 0)} ({fmt(mx)} times): "
            + ("within" if max(p50, mx) <= THROTTLE_GROWTH else
               "**not within**") + f" {THROTTLE_GROWTH} times.")
    ctl = [r for r in rows if r["scheduler"].startswith("parqd")]
    if ctl:
        peak = max(ctl, key=lambda r: r["control_link_peak_pct"])
        mean = max(ctl, key=lambda r: r["control_link_mean_pct"])
        host = max(ctl, key=lambda r: r["control_per_host_s"])
        bps = host["control_per_host_s"] * CONTROL_BYTES * 8
        lines.append(
            f"- Control traffic: at most {fmt(host['control_per_host_s'], 0)}"
            f" GRANTs and RELEASEs per host and second ({host['workload']}, "
            f"{host['hosts']} hosts, {host['scheduler']}), "
            f"{fmt(bps / 1e6)} Mbit/s, {fmt(bps / LINK_BPS * 100, 4)} "
            f"% of a host's link; on the busiest link "
            f"{fmt(mean['control_link_mean_pct'], 4)} % over a whole run "
            f"and {fmt(peak['control_link_peak_pct'], 4)} % in its busiest "
            f"epoch ({peak['workload']}, {peak['hosts']} hosts, "
            f"{peak['scheduler']}): "
            + ("below" if peak["control_link_peak_pct"] < CONTROL_PCT else
               "**not below**") + f" {fmt(CONTROL_PCT, 0)} %.")
    return lines[0] + "\n\n" + "\n".join(lines[1:]), misses


def cost(rows, sizes, wall):
    """The model's cost per size: events and seconds of one run."""
    table = []
    for w in WORKLOADS:
        for n in sizes:
            rs = [r for r in rows if r["workload"] == w and r["hosts"] == n]
            if rs:
                table.append([w, n, fmt(max(r["events"] for r in rs) / 1e6, 1),
                              fmt(max(r["seconds"] for r in rs), 1),
                              fmt(wall.get((w, n)), 0)])
    return common.md_table(
        ["workload", "hosts", "events, largest run (millions)",
         "s, slowest run", f"s, the size's {2 * len(SCALE) + 1} runs"],
        table)


def exp3_cpu(sim, case):
    """The calibrated CPU model's runs of @case, or None without the
    VM's CSV."""
    kernel, path, hosts = case
    cal = vm_calibration(path, hosts)
    if not cal:
        return None
    opts, check = cpu_calibration(sim, hosts, cal)
    print(f"{NAME}: CPU model from {path.relative_to(RESULTS)}, {hosts} "
          f"hosts: T1 {cal['t1_round_ms']:.3f} ms a round, local alone "
          f"{cal['local_alone_mbit']:.2f} Mbit/s: "
          + " ".join(f"--{k} {v}" for k, v in opts.items())
          + f" (a round alone {check:.0f} us)", flush=True)
    return {"opts": opts, "cal": cal, "check_us": check,
            "w64": exp3_case(sim, hosts, cpu_args(opts)),
            "w300": exp3_case(sim, hosts, cpu_args(opts, VM_FIFO_BYTES)),
            "msg": exp3_case(sim, hosts, cpu_args(
                {**opts, "local-cpu-ns": 0}, VM_FIFO_BYTES))}


def report(rows, e3s, sizes, wall, out):
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    e3_parts = [(case, *exp3_section(case, e3, cpu))
                for case, e3, cpu in e3s]
    plot(rows, sizes, "base", out / f"{NAME}.png")
    plot(rows, sizes, "heavy", out / f"{NAME}-heavy.png")
    by = {(r["workload"], r["scheduler"], r["hosts"]): r for r in rows}

    def table(w):
        return common.md_table(
            ["hosts", "scheduler", "all-to-all", "incast", "job alone (us)",
             "local / alone", "control msgs/host/s", "control % of busiest "
             "link, peak epoch", "throttle p50", "throttle max",
             "release p50"],
            [[r["hosts"], r["scheduler"], fmt(r["alltoall_slowdown"]),
              fmt(r["incast_slowdown"]), fmt(r["job_alone_us"], 0),
              fmt(r["local_ratio"]), fmt(r["control_per_host_s"], 0),
              fmt(r["control_link_peak_pct"], 3),
              fmt(r["throttle_p50_us"], 0), fmt(r["throttle_max_us"], 0),
              fmt(r["release_p50_us"], 0)]
             for r in rows if r["workload"] == w])
    target_text, misses = targets(rows, sizes)
    e3_heads = [h for _, _, h in e3_parts if h]
    top = max(sizes)
    heads = []
    for w in WORKLOADS:
        big = {s: by.get((w, s, top)) for s in SCALE}
        heads.append(
            f"{NAME}: {w} local load, at {top} hosts (a job on {top // 4}): "
            "all-to-all " + ", ".join(
                f"{s} {fmt(big[s]['alltoall_slowdown'])}" for s in SCALE
                if big[s]) + "; incast " + ", ".join(
                f"{s} {fmt(big[s]['incast_slowdown'])}" for s in SCALE
                if big[s]) + (
                f"; {CONTROL_FIRST} throttled in a median "
                f"{fmt(big[CONTROL_FIRST]['throttle_p50_us'], 0)} us"
                if big[CONTROL_FIRST] else "") + ".")
    heads.append(f"{NAME}: the targets (parqd+cs6 at most {TARGET_RATIO} of "
                 "FIFO's and parq's slowdowns) missed at: "
                 + (", ".join(misses) if misses else "none") + ".")
    w_base, w_heavy = (" ".join(map(str, WORKLOADS[k]))
                       for k in ("base", "heavy"))
    sections = [
        ("Results, base local load", "One run per size and scheduler (the "
         "model is deterministic; the local flows' hosts come from seed "
         "1).  Slowdown: the phase kind's time summed over the rounds, "
         "with the local flows over without them.  Local: the local "
         "flows' throughput with the job over theirs alone for as long.  "
         "Control: GRANTs and RELEASEs per host and simulated second, and "
         "their bytes on the busiest link in its busiest epoch (1 ms).  "
         "Throttle and release in us (release includes parqd's 10 ms "
         f"hold).  `{w_base}`.\n\n" + table("base")),
        ("Results, heavy local load",
         f"The same with `{w_heavy}`.\n\n" + table("heavy")),
        ("The targets", "parqd+cs6 (parqd, its control messages served "
         "first) against FIFO and parq alone, the ratio of slowdowns.  "
         "At best: the lowest ratio any scheduler could reach, a slowdown "
         "of 1 against the lower of FIFO's and parq's.\n\n"
         + target_text),
        ("The model's cost", f"{JOBS} runs at once on the 2-core "
         "development host; a run is single-threaded.\n\n"
         + cost(rows, sizes, wall)),
        *((f"Experiment 3's case: {case[2]} hosts on {case[0]}, the VM "
           "against the model", text) for case, text, _ in e3_parts),
        ("Headline", "\n\n".join(heads + e3_heads))]
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
parq-sim runs sch_parq's own scheduling core (kmod/core) at every host's
egress and parqd's own grant logic (userspace/parqd, Granter) at every
receiver, with parqd's defaults (a lease of {rows[0]['lease']} epochs),
on racks of {RACK} hosts under one spine with 10 Gbit/s links and FIFO
switch ports.
parqd+cs6: parqd with its GRANTs and RELEASEs served first by hosts and
switch ports (the model's `--control-first`); "local 5%": that with
parqd's `--local-floor 5` and sch_parq's `threshold 20`.
A parallel job on a quarter of the hosts runs
{ROUNDS} rounds of an all-to-all then an incast of {MESSAGE // 1024} KiB
per pair.  Local bulk flows go into each of its hosts from outside the
job and out of it: the base load, {LOCAL_IN} in and {LOCAL_OUT} out with
64 KiB windows, and a heavy one (below).
Documentation/simulation.md states the model and its assumptions.
""", sections)
    return heads + e3_heads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(REPO / "build" / "sim"))
    ap.add_argument("--sim", default=None)
    a = ap.parse_args()
    sim = sim_path(a.sim)
    if not os.access(sim, os.X_OK):
        sys.exit(f"{NAME}: no parq-sim at {sim} (make tools)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = QUICK_SIZES if a.quick else SIZES
    t0 = time.monotonic()
    rows, wall = [], {}
    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        for w in WORKLOADS:
            for n in sizes:
                t1 = time.monotonic()
                rows += measure(sim, w, n, pool)
                wall[(w, n)] = time.monotonic() - t1
    net = {}  # the network alone depends on the hosts only
    for _, _, hosts in EXP3_CASES:
        if hosts not in net:
            net[hosts] = exp3_case(sim, hosts)
    e3s = [(case, net[case[2]], exp3_cpu(sim, case)) for case in EXP3_CASES]
    for line in report(rows, e3s, sizes, wall, out):
        print(line)
    print(f"{NAME}: {time.monotonic() - t0:.0f} s; {out}/{NAME}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
