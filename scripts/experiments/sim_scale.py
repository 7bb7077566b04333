#!/usr/bin/python3
"""The simulation at cluster scale: parq-sim (Documentation/simulation.md)
for 64 to 1 024 hosts, and the 4-host case of experiment 3 beside the VM's.

For each cluster size: racks of RACK hosts under one spine, 10 Gbit/s
links; a parallel job on a quarter of the hosts (ROUNDS rounds of an
all-to-all then an incast of MESSAGE bytes per pair); LOCAL_IN bulk flows
into each job host from hosts outside the job and LOCAL_OUT out of it.
Each scheduler (fifo, parq, parqd, and parqd with its control messages
served first: parqd+cs6) runs the two together; the job alone
and the local flows alone (for as long as the job took under the
scheduler) give the baselines.  Reported: the job's slowdown per phase
kind, the local flows' throughput against theirs alone, the GRANT and
RELEASE messages per host and second, and the times to throttle (a
receiver's first parallel packet to the arrival of the last of the GRANTs
its start report sent) and to release (its last parallel packet to the
arrival of the last RELEASE, the hold included).

Experiment 3's 4-host case runs twice over: as the network alone (no CPU
model, the committed comparison), and with parq-sim's CPU model
calibrated from the committed exp3.csv's measurements that are not the
slowdowns it predicts (cpu_calibration): the VM's 2 vCPUs, the round
alone (T1) for the per-message cost, the local job's rate alone for the
per-packet cost.

    scripts/experiments/sim_scale.py [--quick] [--out DIR] [--sim PATH]

--quick: 64 and 128 hosts only.  The binary: --sim, else
$PARQ_USERSPACE_BUILD/sim/parq-sim (default build/release).  It runs on
the host, not in the VM: nothing here needs a kernel.
"""
import argparse
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
# At scale, parq-sim's options per row: the three schedulers, and parqd
# with its GRANTs and RELEASEs in a network-control class that hosts and
# switch ports serve first (CS6; the model's, not yet the module's).
CONTROL_FIRST = "parqd+cs6"
SCALE = {**{s: ["--scheduler", s] for s in SCHEDULERS},
         CONTROL_FIRST: ["--scheduler", "parqd", "--control-first"]}
RACK = 32
ROUNDS = 2
MESSAGE = 16384
LOCAL_IN, LOCAL_OUT = 2, 1
FIELDS = ["hosts", "job_hosts", "scheduler", "alltoall_slowdown",
          "incast_slowdown", "job_us", "job_alone_us", "local_gbps",
          "local_alone_gbps", "local_ratio", "control_per_host_s",
          "throttle_p50_us", "throttle_max_us", "release_p50_us",
          "max_switch_queue", "events"]
# The 4-host case of experiment 3: 100 rounds of a 64-byte one-to-all then
# all-to-one (parq-bench's barrier) across 4 hosts of one switch at
# 100 Mbit/s, one local bulk flow each way between the root and host 1.
EXP3 = ["--hosts", "4", "--rack", "4", "--job-hosts", "4", "--link-bps",
        "100000000", "--phases", "broadcast,incast", "--message", "64",
        "--rounds", "100", "--gap-ns", "0", "--local-flow", "0:1",
        "--local-flow", "1:0"]
# The VM's CPUs: every host of experiment 3 is a namespace of one VM with
# 2 vCPUs (scripts/vm-run).
VM_CPUS = 2
# The switch port toward the root in the VM: a 100 Mbit/s FIFO of 300 kB
# (exp3_collective.py).  The model's buffers are unlimited; the local
# flows' window is their standing queue, so one run gives them a window of
# that size.
VM_FIFO_BYTES = 300000
MTU = 1500


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


def measure(sim, hosts):
    """The rows of one cluster size."""
    base = ["--hosts", hosts, "--rack", min(RACK, hosts), "--job-hosts",
            hosts // 4, "--rounds", ROUNDS, "--message", MESSAGE,
            "--local-in", LOCAL_IN, "--local-out", LOCAL_OUT]
    alone = run(sim, base + ["--no-local"])
    a2a_alone, inc_alone = phase_sums(alone)
    rows = []
    for s, opts in SCALE.items():
        j = run(sim, base + opts)
        local = run(sim, base + opts + ["--no-parallel", "--local-only-ns",
                                        j["parallel_ns"]])
        a2a, inc = phase_sums(j)
        thr = [x / 1e3 for x in j["throttle_ns"]]
        rel = [x / 1e3 for x in j["release_ns"]]
        rows.append({
            "hosts": hosts, "job_hosts": hosts // 4, "scheduler": s,
            "alltoall_slowdown": a2a / a2a_alone,
            "incast_slowdown": inc / inc_alone,
            "job_us": j["parallel_ns"] / 1e3,
            "job_alone_us": alone["parallel_ns"] / 1e3,
            "local_gbps": j["local_gbps"],
            "local_alone_gbps": local["local_gbps"],
            "local_ratio": j["local_gbps"] / local["local_gbps"],
            "control_per_host_s": j["control_per_host_s"],
            "throttle_p50_us": statistics.median(thr) if thr else None,
            "throttle_max_us": max(thr) if thr else None,
            "release_p50_us": statistics.median(rel) if rel else None,
            "max_switch_queue": j["max_switch_queue"],
            "events": j["events"], "seconds": j["seconds"]})
        print(f"{NAME}: {hosts} hosts, {s}: all-to-all x"
              f"{rows[-1]['alltoall_slowdown']:.2f}, incast x"
              f"{rows[-1]['incast_slowdown']:.2f}, local "
              f"{rows[-1]['local_ratio']:.2f} of alone, "
              f"{j['control_per_host_s']:.0f} control msgs/host/s "
              f"({j['seconds']:.1f} s)", flush=True)
    return rows


def exp3_case(sim, extra=()):
    """{scheduler: slowdown} of the 4-host barrier case with parq-sim's
    options @extra; "alone_us": a round alone (us), "local_mbit": each
    local flow's rate alone (Mbit/s), "added_ms": {scheduler: the time
    the local flows added to a round (ms)}."""
    out = {"added_ms": {}}
    args = EXP3 + list(extra)
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


def round_alone_ns(sim, message_cpu_ns):
    """The model's 4-host round alone (ns) on the VM's CPUs."""
    j = run(sim, EXP3 + ["--no-local", "--cpus", VM_CPUS,
                         "--message-cpu-ns", message_cpu_ns])
    return j["parallel_ns"] / 100


def cpu_calibration(sim, cal):
    """parq-sim's CPU options for experiment 3's case, from @cal
    (vm_calibration): the per-message cost that makes the model's round
    alone the VM's T1 (a round alone is linear in it once it exceeds the
    network's time: two runs give the line), and the per-packet cost that
    makes a local flow's rate alone the VM's, if that is below the link
    (else 0).  Returns ({option: value}, check): check is the model's
    round alone with them (us)."""
    lo, hi = 1_000_000, 2_000_000
    r_lo, r_hi = round_alone_ns(sim, lo), round_alone_ns(sim, hi)
    slope = (r_hi - r_lo) / (hi - lo)
    message = round(lo + (cal["t1_round_ms"] * 1e6 - r_lo) / slope)
    rate = cal["local_alone_mbit"]
    local = round(MTU * 8 * 1e3 / rate) if rate < 100 else 0
    opts = {"cpus": VM_CPUS, "message-cpu-ns": message,
            "local-cpu-ns": local}
    return opts, round_alone_ns(sim, message) / 1e3


def cpu_args(opts, window=None):
    out = [x for k, v in opts.items() for x in (f"--{k}", v)]
    return out + (["--window", window] if window else [])


# Experiment 3's committed run, the VM's side of the 4-host comparison.
EXP3_CSV = HERE.parent.parent / "Documentation" / "results" / "exp3.csv"


def exp3_rows(path=EXP3_CSV):
    """The committed run's 4-host rows, or [] when the file is missing."""
    try:
        with open(path) as f:
            return [r for r in csv.DictReader(f) if r["hosts"] == "4"]
    except FileNotFoundError:
        return []


def vm_exp3(path=EXP3_CSV):
    """{exp3 scheduler: (median, min, max, n) slowdown at 4 hosts with the
    local job} of the committed run, and the median time of a round alone
    there (ms, over every scheduler; its runs have 100 rounds); ({}, None)
    when the file is missing."""
    rows = exp3_rows(path)
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
    added to a round in @rows (exp3_rows()): per repetition, the mean
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


def vm_calibration(path=EXP3_CSV):
    """The VM's measurements that calibrate the CPU model, none of them a
    slowdown: "t1_round_ms", the median round alone (T1 / 100, over every
    scheduler's rows without the local job); "local_alone_mbit", the
    median of the local job's two streams' rates alone (the 0.3 s before
    the barrier) in pfifo's rows, the baseline qdisc, where no scheduler
    of the comparison shapes them.  None when the file is missing."""
    rows = exp3_rows(path)
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


def added_section(runs, names):
    """The 4-host comparison in the time the local job adds to a round,
    which does not divide by the VM's round alone."""
    rows = exp3_rows()
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
            ["scheduler", "VM (exp3.csv)"] + [r for r, _ in runs], table) +
        ("" if held is None or common.PARQD not in added else
         f"\n\nIn the VM, parq+parqd held the local job to "
         f"{common.cell(held, 1)} Mbit/s (the median of its two streams) and "
         f"a round took {common.cell(added[common.PARQD])} ms longer (the "
         "model's parqd, with the same credits: the figures of its row).  "
         "exp3.md, \"The CPUs and the packets\", has the VM's CPUs "
         "idle and the size of its packets in the same runs."))


def exp3_section(e3, cpu, vm, vm_round_ms):
    """The 4-host comparison's text, and its headline (or None)."""
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
            "across 4 hosts at 100 Mbit/s, one local bulk flow each way "
            "between the root and host 1.  Slowdown of the 100 rounds.  The "
            "VM's figures are the medians (min-max over its repetitions) "
            "of the committed exp3.csv; there a round took "
            f"{fmt(vm_round_ms, 1)} ms alone, the CPU's time under "
            f"QEMU/TCG.  Without a CPU model a round takes "
            f"{e3['alone_us']:.0f} us here, the network's time alone.\n\n")
    if cpu is None:
        return text + common.md_table(
            ["scheduler", "VM (exp3.csv)"] + [r for r, _ in runs],
            table) + added_section(runs, names), None
    o = cpu["opts"]
    text += (
        f"The CPU model (Documentation/simulation.md): {o['cpus']} CPUs "
        "shared by the 4 hosts, as the VM's 2 vCPUs are shared by its "
        "namespaces, calibrated from exp3.csv's measurements that are not "
        "slowdowns:\n\n"
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
            ["scheduler", "VM (exp3.csv)"] + [r for r, _ in runs], table))
    inside = []
    for label, k, s in names:
        v = vm.get(k)
        for run_label, r in runs[1:3]:
            if v and v[1] <= r[s] <= v[2]:
                inside.append(f"{s} ({run_label[13:]})")
    text += ("\n\nWithin the VM's min-max: " +
             (", ".join(inside) if inside else "none of the calibrated "
              "model's figures") + ".")
    text += added_section(runs, names)
    w = cpu["w300"]
    head = ("sim: experiment 3's 4 hosts with the calibrated CPU model "
            f"({o['cpus']} CPUs, {o['message-cpu-ns'] / 1e3:.0f} us per "
            f"message, {o['local-cpu-ns'] / 1e3:.0f} us per local packet, "
            f"{VM_FIFO_BYTES // 1000} kB window): slowdown fifo "
            f"{fmt(w['fifo'])}, parq {fmt(w['parq'])}, parqd "
            f"{fmt(w['parqd'])}; the VM's pfifo {vm_cell('pfifo')}, parq "
            f"{vm_cell('parq')}, parq+parqd {vm_cell(common.PARQD)}.")
    return text, head


def report(rows, e3, cpu, sizes, out):
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    vm, vm_round_ms = vm_exp3()
    e3_text, e3_head = exp3_section(e3, cpu, vm, vm_round_ms)
    by = {(r["scheduler"], r["hosts"]): r for r in rows}

    def series(key):
        return {s: {i: stat(by[(s, n)][key]) for i, n in enumerate(sizes)
                    if (s, n) in by and by[(s, n)][key] is not None}
                for s in SCALE}
    common.plot(out / f"{NAME}.png", TITLE, [
        Panel("the job's all-to-all", "hosts", "slowdown", list(sizes),
              series("alltoall_slowdown"), hline=1.0),
        Panel("the job's incast", "hosts", "slowdown", list(sizes),
              series("incast_slowdown"), hline=1.0),
        Panel("the local flows", "hosts", "throughput / alone",
              list(sizes), series("local_ratio"), hline=1.0),
        Panel("parqd's control messages", "hosts", "per host and second",
              list(sizes), {s: series("control_per_host_s")[s]
                            for s in ("parqd", CONTROL_FIRST)}),
        Panel("parqd's time to throttle (median)", "hosts", "us",
              list(sizes), {s: series("throttle_p50_us")[s]
                            for s in ("parqd", CONTROL_FIRST)},
              logy=True)])
    table = [[r["hosts"], r["scheduler"], fmt(r["alltoall_slowdown"]),
              fmt(r["incast_slowdown"]), fmt(r["job_alone_us"], 0),
              fmt(r["local_ratio"]), fmt(r["control_per_host_s"], 0),
              fmt(r["throttle_p50_us"], 0), fmt(r["throttle_max_us"], 0),
              fmt(r["release_p50_us"], 0)] for r in rows]
    top = max(sizes)
    big = {s: by.get((s, top)) for s in SCALE}
    head = (f"{NAME}: at {top} hosts (a job on {top // 4}), the job's "
            f"incast slowdown " + ", ".join(
                f"{s} {fmt(big[s]['incast_slowdown'])}" for s in SCALE
                if big[s]) + "; all-to-all " + ", ".join(
                f"{s} {fmt(big[s]['alltoall_slowdown'])}" for s in SCALE
                if big[s]) + (f"; parqd sent "
                              f"{fmt(big['parqd']['control_per_host_s'], 0)}"
                              f" control messages per host and second, "
                              f"throttled in a median "
                              f"{fmt(big['parqd']['throttle_p50_us'], 0)} us"
                              if big["parqd"] else "")
            + (f" ({CONTROL_FIRST}: "
               f"{fmt(big[CONTROL_FIRST]['throttle_p50_us'], 0)} us)"
               if big[CONTROL_FIRST] else "") + ".")
    sections = [
        ("Results", "One run per size and scheduler (the model is "
         "deterministic; the local flows' hosts come from seed 1).  "
         "Slowdown: the phase kind's time summed over the rounds, with the "
         "local flows over without them.  Local: the local flows' "
         "throughput with the job over theirs alone for as long.  "
         "Throttle and release in us (release includes parqd's 10 ms "
         "hold).\n\n" + common.md_table(
             ["hosts", "scheduler", "all-to-all", "incast",
              "job alone (us)", "local / alone", "control msgs/host/s",
              "throttle p50", "throttle max", "release p50"], table)),
        ("Experiment 3's case: 4 hosts, the VM against the model",
         e3_text),
        ("Headline", head + ("\n\n" + e3_head if e3_head else ""))]
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
parq-sim runs sch_parq's own scheduling core (kmod/core) at every host's
egress and parqd's own grant logic (userspace/parqd, Granter) at every
receiver, on racks of {RACK} hosts under one spine with 10 Gbit/s links
and FIFO switch ports (parqd+cs6: parqd with its GRANTs and RELEASEs
served first by hosts and switch ports, the model's `--control-first`).
A parallel job on a quarter of the hosts runs
{ROUNDS} rounds of an all-to-all then an incast of {MESSAGE // 1024} KiB
per pair; {LOCAL_IN} local bulk flows (64 KiB windows) go into each of
its hosts from outside the job and {LOCAL_OUT} out of it.
Documentation/simulation.md states the model and its assumptions.
""", sections)
    return [head] + ([e3_head] if e3_head else [])


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
    rows = []
    for n in sizes:
        rows += measure(sim, n)
    e3 = exp3_case(sim)
    cpu = None
    cal = vm_calibration()
    if cal:
        opts, check = cpu_calibration(sim, cal)
        print(f"{NAME}: CPU model from exp3.csv: T1 {cal['t1_round_ms']:.3f} "
              f"ms a round, local alone {cal['local_alone_mbit']:.2f} "
              f"Mbit/s: " + " ".join(f"--{k} {v}" for k, v in opts.items())
              + f" (a round alone {check:.0f} us)", flush=True)
        cpu = {"opts": opts, "cal": cal, "check_us": check,
               "w64": exp3_case(sim, cpu_args(opts)),
               "w300": exp3_case(sim, cpu_args(opts, VM_FIFO_BYTES)),
               "msg": exp3_case(sim, cpu_args({**opts, "local-cpu-ns": 0},
                                              VM_FIFO_BYTES))}
    for line in report(rows, e3, cpu, sizes, out):
        print(line)
    print(f"{NAME}: {time.monotonic() - t0:.0f} s; {out}/{NAME}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
