#!/usr/bin/python3
"""Experiment 6, reservations across a shared switch port (the seed's
Fig. 13): two applications on hosts A1 and A2 with reservations toward
one receiver R, best-effort bulk toward R from hosts B1 and B2, and the
switch port in front of R shared by all of it.

Hosts joined through a switch namespace (netns.Star).  The port toward R
is what the network must provide for a reservation to hold across a
shared port (Documentation/admission.md, "What the network must
provide"): a port of LINK_MBIT (tbf) whose queue serves the reserved
traffic's DSCP first (prio: AF41 in band 1, everything else in band 2,
300 kB each).  A1 and A2 run parq (linkrate LINK_MBIT, dscp-mark af41: a
reserved class's packets leave marked); B1 and B2 run pfifo and send
best effort, two parq-bench bulk streams each, started first.  Each
application is one parq-bench bulk stream to its own port on R.

The reservations are a pair of rates (R1, R2, in % of LINK_MBIT), asked
in turn by A1 and A2, admitted in one of two ways:
  - cluster: parqd's admission role on A1 and A2 (an etcd member on host
    E, a topology of the six hosts with NICs and ports of LINK_MBIT,
    reservable 80%), as `parqctl reserve --to r --rate R --match
    proto=tcp,dport=PORT`; a refused request leaves that application best
    effort, and its row says so;
  - host-local: each host's own qdisc admits its class against its own
    link (`tc class add ... parq rate R` and a flower filter), which is
    all a host can see.
Every application's rate is measured at R (its bytes at R's ingress, with
the Ethernet header, over MEASURE seconds after a settling time), and
compared with its reservation.  A pair that fits the port is admitted
either way and holds; a pair that does not (60 + 60 % of the port) is
over-admitted host-locally, and neither application gets its rate, while
the cluster refuses the second and the first gets its own.

    scripts/experiments/exp6_enforcement.py [--quick] [--out DIR]
"""
import json
import math
import sys
import tempfile
import time
from contextlib import contextmanager
from types import SimpleNamespace

import common
from common import Params, Step
from parqlab import bench, etcd, ktap, parqd, resv, uapi
from parqlab import tc as tclib
from parqlab.netns import Star

NAME = "exp6"
TITLE = "Experiment 6: reservations across a shared switch port"
HOSTS = ("a1", "a2", "b1", "b2", "r", "e")
APPS = ("a1", "a2")
BULK = ("b1", "b2")
PORTS = {"a1": 7101, "a2": 7102}
BULK_SIZE = 16384
ETH = 14			# Ethernet header: counted by the qdisc's rate
MBIT = 1_000_000
RESERVABLE = 80			# percent
TOLERANCE = 0.02		# the design's bound on each application's rate
SETTLE = 2.0
MEASURE = 8.0
# The admission role's etcd lease: parqd demotes its reservations when it
# has not renewed it for 3/4 of this.  Under the debug kernel an ASan
# parqd on a starved CPU can go that long without a renewal, and a
# demoted A1 would let the cluster admit A2 beside it: hence the scale.
LEASE_S = 10 * ktap.slowdown()
SAMPLE_S = 0.2			# the reserved classes' queues, sampled
ADMISSIONS = ("cluster", "host-local")
# The port's rate, and every NIC's.  At 100 Mbit/s, under QEMU/TCG, the
# emulated CPUs are the limit, not the reservation: the applications leave
# their reserved classes empty in up to half of the samples, and those
# classes send less than their rates.  At 20 Mbit/s the applications keep
# their classes backlogged.
LINK_MBIT = 20
PAIRS = ((50, 20), (30, 40), (60, 60))  # % of LINK_MBIT, A1's and A2's
PARAMS = {
    "full": Params(reps=3, extra={"pairs": PAIRS}),
    "quick": Params(reps=1, extra={"pairs": PAIRS}),
    "smoke": Params(reps=1, extra={"pairs": ((50, 20), (60, 60))}),
}
# What parq_experiments checks of each row (finite and positive), the rows
# of one step (one per application), and the smoke run's time limit.
VALUES = ("got_mbit", "reserved_mbit")
ROWS_PER_STEP = len(APPS)
SMOKE_TIMEOUT = 300
FIELDS = ["rep", "admission", "pair", "app", "reserved_mbit", "admitted",
          "got_mbit", "ratio", "bulk_mbit", "refusal", "sent_mbit",
          "empty_pct", "class_drops", "late_mean_us", "late_max_us",
          "port_drops_resv", "port_drops_be"]


def unavailable():
    if not etcd.available():
        return "etcd-server and etcd-client are not installed"
    return None


def pair_label(pair):
    return f"{pair[0]}+{pair[1]}"


def steps(p):
    out = []
    for rep in range(1, p.reps + 1):
        for pair in p.extra["pairs"]:
            for adm in ADMISSIONS:
                out.append(Step(
                    f"{NAME} {adm} {pair_label(pair)} % rep "
                    f"{rep}/{p.reps}", SETTLE + MEASURE + 6,
                    common.measuring(adm, pair),
                    {"rep": rep, "admission": adm,
                     "pair": pair_label(pair)}))
    return out


def priority_port(star):
    """The port toward R: LINK_MBIT, AF41 (the reserved classes' mark)
    before everything else."""
    s, dev = star.s, star.port("r")
    tclib.tc(s, "qdisc", "replace", "dev", dev, "root", "handle", "1:",
             "tbf", "rate", f"{LINK_MBIT}mbit", "burst", "32k", "limit",
             "600kb")
    tclib.tc(s, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
             "prio", "bands", "2", "priomap", *["1"] * 16)
    for band in ("1", "2"):
        tclib.tc(s, "qdisc", "add", "dev", dev, "parent", f"10:{band}",
                 "bfifo", "limit", "300kb")
    # DSCP AF41 (34): TOS 0x88 under the mask 0xfc.
    tclib.tc(s, "filter", "add", "dev", dev, "parent", "10:", "protocol",
             "ip", "prio", "1", "u32", "match", "ip", "tos", "0x88", "0xfc",
             "flowid", "10:1")


def counters(star):
    """R's ingress counters: one flower filter per sending host."""
    r = star.ns["r"]
    tclib.tc(r, "qdisc", "add", "dev", "eth0", "clsact")
    for i, h in enumerate(APPS + BULK, 1):
        tclib.tc(r, "filter", "add", "dev", "eth0", "ingress", "protocol",
                 "ip", "pref", str(i), "flower", "src_ip", star.ip(h),
                 "action", "pass")


def timed_counters(star):
    """(read_counters(), the time they were read): the middle of the
    read, which takes a good part of a second under QEMU/TCG."""
    before = time.monotonic()
    c = read_counters(star)
    return c, (before + time.monotonic()) / 2


def _wait_flowing(star, hosts, jobs, timeout=30):
    """Wait until R has received from each of @hosts (their @jobs'
    connections are made and carry data)."""
    start = read_counters(star)
    deadline = time.monotonic() + timeout
    while True:
        now = read_counters(star)
        if all(now[h] > start[h] for h in hosts):
            return
        for j in jobs:
            j.check_running("before it carried data")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no data from {', '.join(hosts)} at R "
                               f"after {timeout} s")
        time.sleep(0.2)


def read_counters(star):
    """{host: bytes with Ethernet headers} at R's ingress."""
    out = tclib.tc(star.ns["r"], "-s", "-j", "filter", "show", "dev", "eth0",
                   "ingress").stdout
    by_pref = {}
    for f in json.loads(out):
        opts = f.get("options", {})
        for a in opts.get("actions", []):
            st = a.get("stats", {})
            by_pref[f["pref"]] = st.get("bytes", 0) + \
                ETH * st.get("packets", 0)
    return {h: by_pref.get(i, 0) for i, h in enumerate(APPS + BULK, 1)}


class Reservations:
    """The applications' reservations for one measurement, made one way
    or the other, removed by close()."""

    def __init__(self, env, adm, pair):
        self.env, self.adm = env, adm
        self.ids, self.rows = {}, {}
        for h, pct in zip(APPS, pair):
            mbit = LINK_MBIT * pct / 100
            self.rows[h] = {"reserved_mbit": mbit, "admitted": 0,
                            "refusal": ""}
            if adm == "cluster":
                self._cluster(h, mbit)
            else:
                self._local(h, mbit)

    def _cluster(self, h, mbit):
        r = self.env.star.ns[h].run(
            [str(parqd.PARQCTL), "reserve", "--to", "r", "--rate",
             f"{mbit:g}mbit", "--match", f"proto=tcp,dport={PORTS[h]}",
             "--socket", f"{self.env.tmp}/{h}-admission.sock", "--json"],
            check=False, timeout=60)
        out = json.loads(r.stdout or "{}")
        if r.returncode == 0:
            self.ids[h] = out["reservation"]["id"]
            self.rows[h]["admitted"] = 1
        else:
            self.rows[h]["refusal"] = out.get("error", r.stderr.strip())

    def _local(self, h, mbit):
        ns = self.env.star.ns[h]
        tclib.tc(ns, "class", "add", "dev", "eth0", "parent", "1:",
                 "classid", "1:16", "parq", "rate", f"{mbit:g}mbit")
        tclib.tc(ns, "filter", "add", "dev", "eth0", "parent", "1:",
                 "protocol", "ip", "prio", "1", "flower", "dst_ip",
                 self.env.star.ip("r"), "ip_proto", "tcp", "dst_port",
                 str(PORTS[h]), "classid", "1:16")
        self.rows[h]["admitted"] = 1

    def close(self):
        for h, rid in self.ids.items():
            self.env.star.ns[h].run(
                [str(parqd.PARQCTL), "release", rid, "--socket",
                 f"{self.env.tmp}/{h}-admission.sock"], check=False,
                timeout=60)
        if self.adm == "host-local":
            for h in APPS:
                ns = self.env.star.ns[h]
                tclib.tc(ns, "filter", "del", "dev", "eth0", "parent", "1:",
                         check=False)
                tclib.tc(ns, "class", "del", "dev", "eth0", "classid",
                         "1:16", check=False)


@contextmanager
def lab(p, group=None):
    with Star(NAME, hosts=HOSTS) as star, \
            tempfile.TemporaryDirectory(prefix="parq-exp6-") as tmp:
        members = etcd.Cluster(star, ["e"], tmp)
        members.start()
        cluster = None
        try:
            with open(f"{tmp}/topology.toml", "w") as f:
                f.write(parqd.star_topology(
                    star, HOSTS, capacity=f"{LINK_MBIT}mbit",
                    reservable=RESERVABLE))
            priority_port(star)
            counters(star)
            for h in APPS:
                tclib.tc(star.ns[h], "qdisc", "replace", "dev", "eth0",
                         "root", "handle", "1:", "parq", "linkrate",
                         f"{LINK_MBIT}mbit", "dscp-mark", "af41")
            # parqd's admission role on the applications' hosts; R is
            # their peer in the configuration but runs no parqd, so that
            # nothing but the switch's priority and the admission acts.
            cluster = parqd.Cluster(
                star, ["r"], list(APPS), tmp,
                sections={h: parqd.admission_section(
                    h, [members.client_url("e")], f"{tmp}/topology.toml",
                    f"{tmp}/{h}-admission.sock", lease=LEASE_S)
                    for h in APPS})
            cluster.start(hosts=APPS)
            for h in APPS:
                common.wait_lease(cluster, h)
            ip = star.ip("r")
            servers = [bench.Server(star.ns["r"], ip, port)
                       for port in list(PORTS.values()) +
                       [common.BULK_PORT]]
            env = SimpleNamespace(star=star, tmp=tmp, p=p, cluster=cluster)
            env.measure = lambda adm, pair: _measure(env, adm, pair)
            try:
                yield env
            finally:
                for s in servers:
                    s.stop()
        finally:
            if cluster:
                cluster.close()
            members.stop()


def _demotions(env):
    """{app: parqd_admission_demotions_total}: how often its parqd gave its
    reservations up for an etcd lease it could not renew in time."""
    return {h: env.cluster.metrics(h).get("parqd_admission_demotions_total",
                                          0) for h in APPS}


def reserved_classes(star):
    """{app: {bytes, qlen, drops, dispatches, lateness_sum, lateness_max}}
    summed (the maximum for lateness_max) over the reserved classes of the
    app's parq (minor PARQ_RESV_MINOR_MIN and up); None for an app that
    has none (refused)."""
    out = {}
    for h in APPS:
        cls = [c for cid, c in resv.classes(star.ns[h], "eth0").items()
               if int(cid.split(":")[1], 16) >= uapi.PARQ_RESV_MINOR_MIN]
        if not cls:
            out[h] = None
            continue
        out[h] = {k: sum(c.get(k, 0) for c in cls)
                  for k in ("bytes", "qlen", "drops")}
        for k in ("dispatches", "lateness_sum"):
            out[h][k] = sum(c.get("xs", {}).get(k, 0) for c in cls)
        out[h]["lateness_max"] = max(c.get("xs", {}).get("lateness_max", 0)
                                     for c in cls)
    return out


def port_drops(star):
    """Drops of the port toward R: (the reserved band's, best effort's)."""
    by_parent = {q.get("parent"): q.get("drops", 0)
                 for q in tclib.qdiscs(star.s, star.port("r"))}
    return by_parent.get("10:1", 0), by_parent.get("10:2", 0)


def _measure(env, adm, pair):
    """One measurement: each application's rate at R, and where a
    shortfall is: the rate its reserved class sent at (qdisc bytes, with
    Ethernet headers, as R counts them), how often that class was found
    empty (sampled every SAMPLE_S: an empty class is one the application
    does not keep backlogged), its drops and lateness (the class's
    xstats), and the drops of the switch port's two bands."""
    star, ip = env.star, env.star.ip("r")
    # Best effort first, flowing before any reservation: where the
    # reservations over-fill the port's priority band (host-local, 60+60),
    # best effort gets nothing, and a connection not yet made would not be
    # made at all.
    jobs = [bench.Bulk(star.ns[h], f"{ip}:{common.BULK_PORT}", BULK_SIZE,
                       streams=2) for h in BULK]
    res = None
    empty = {h: 0 for h in APPS}
    samples = 0
    demoted = _demotions(env)
    try:
        _wait_flowing(star, BULK, jobs)
        res = Reservations(env, adm, pair)
        for h in APPS:
            jobs.append(bench.Bulk(star.ns[h], f"{ip}:{PORTS[h]}",
                                   BULK_SIZE))
        time.sleep(SETTLE)
        c0, t0 = timed_counters(star)
        s0, d0 = reserved_classes(star), port_drops(star)
        # At least one sample: under a debug kernel the reads above can
        # outlast the window, and a step with no sample would divide by 0.
        while True:
            time.sleep(SAMPLE_S)
            samples += 1
            for h, v in reserved_classes(star).items():
                empty[h] += v is not None and v["qlen"] == 0
            if time.monotonic() >= t0 + MEASURE:
                break
        c1, t1 = timed_counters(star)
        s1, d1 = reserved_classes(star), port_drops(star)
        for j in jobs:
            j.check_running("during the measurement")
        for h, n in _demotions(env).items():
            if n != demoted[h]:
                raise AssertionError(
                    f"parqd on {h} gave its reservations up during the "
                    f"step (its etcd lease not renewed within 3/4 of "
                    f"{LEASE_S} s): the step measured no admission")
    finally:
        for j in jobs:
            j.stop()
        if res:
            res.close()

    def mbit(h):
        return (c1[h] - c0[h]) * 8 / (t1 - t0) / MBIT

    def grew(h, k):
        if s0[h] is None or s1[h] is None:
            return math.nan
        return s1[h][k] - s0[h][k]

    def sent(h):
        return grew(h, "bytes") * 8 / (t1 - t0) / MBIT

    def late_mean_us(h):
        n = grew(h, "dispatches")
        return grew(h, "lateness_sum") / n / 1000 if n else math.nan
    bulk = sum(mbit(h) for h in BULK)
    rows = []
    for h in APPS:
        row = dict(res.rows[h], app=h, got_mbit=mbit(h), bulk_mbit=bulk,
                   sent_mbit=sent(h), class_drops=grew(h, "drops"),
                   late_mean_us=late_mean_us(h),
                   late_max_us=(s1[h]["lateness_max"] / 1000
                                if s1[h] is not None else math.nan),
                   empty_pct=(100 * empty[h] / samples
                              if s0[h] is not None else math.nan),
                   port_drops_resv=d1[0] - d0[0],
                   port_drops_be=d1[1] - d0[1])
        row["ratio"] = row["got_mbit"] / row["reserved_mbit"]
        rows.append(row)
    return rows


def _stat(rows, admitted_only=False, **match):
    vals = [r["ratio"] for r in rows
            if all(r[k] == v for k, v in match.items())
            and not math.isnan(r["ratio"])
            and (r["admitted"] or not admitted_only)]
    if not vals:
        return None
    vals.sort()
    return (vals[len(vals) // 2], vals[0], vals[-1], len(vals))


def held(stat):
    """An admitted reservation holds: its median rate within TOLERANCE."""
    return stat is not None and stat[0] >= 1 - TOLERANCE


def report(rows, p, out):
    common.write_csv(out / f"{NAME}.csv", rows, FIELDS)
    pairs = [pair_label(x) for x in p.extra["pairs"]]
    series = {}
    for adm in ADMISSIONS:
        for h in APPS:
            pts = {}
            for i, pl in enumerate(pairs):
                # A refused application has no rate to hold: not plotted.
                s = _stat(rows, True, admission=adm, app=h, pair=pl)
                if s:
                    pts[i] = s
            series[f"{h}, {adm}"] = pts
    common.plot(out / f"{NAME}.png", TITLE, [
        common.Panel("admitted applications",
                     "reservations A1+A2 (% of the port)",
                     "rate at R / reserved rate",
                     pairs, series, hline=1 - TOLERANCE)])
    table = []
    for pl in pairs:
        for adm in ADMISSIONS:
            cells = [pl, adm]
            for h in APPS:
                rs = [r for r in rows if r["pair"] == pl and
                      r["admission"] == adm and r["app"] == h]
                adm_n = sum(r["admitted"] for r in rs)
                s = _stat(rows, admission=adm, app=h, pair=pl)
                if not rs:
                    cells.append("-")
                    continue
                text = (f"{_median_text(rs, 'got_mbit', '.1f')}: "
                        f"{common.cell(s, 3)}")
                if adm_n < len(rs):
                    text += f", refused {len(rs) - adm_n}/{len(rs)}"
                cells.append(text)
            cells.append(_median_text(
                [r for r in rows if r["pair"] == pl and
                 r["admission"] == adm], "bulk_mbit", ".1f"))
            table.append(cells)
    where = []
    for pl in pairs:
        for adm in ADMISSIONS:
            for h in APPS:
                rs = [r for r in rows if r["pair"] == pl and
                      r["admission"] == adm and r["app"] == h and
                      r["admitted"]]
                if not rs:
                    continue
                where.append([pl, adm, h.upper()] + [
                    _median_text(rs, k, fmt) for k, fmt in (
                        ("reserved_mbit", ".0f"), ("sent_mbit", ".1f"),
                        ("got_mbit", ".1f"), ("empty_pct", ".0f"),
                        ("class_drops", ".0f"), ("late_mean_us", ".0f"),
                        ("late_max_us", ".0f"),
                        ("port_drops_resv", ".0f"),
                        ("port_drops_be", ".0f"))])
    refusals = sorted({r["refusal"] for r in rows if r["refusal"]})
    worst = pairs[-1]
    head = []
    for adm in ADMISSIONS:
        a1 = _stat(rows, admission=adm, app="a1", pair=worst)
        a2 = _stat(rows, admission=adm, app="a2", pair=worst)
        head.append(f"{adm}: A1 {common.cell(a1, 3)}, A2 "
                    f"{common.cell(a2, 3)}")
    admitted_held = all(
        held(_stat(rows, admission=adm, app=h, pair=pl))
        for pl in pairs for adm in ADMISSIONS for h in APPS
        if any(r["admitted"] for r in rows if r["pair"] == pl and
               r["admission"] == adm and r["app"] == h) and
        not (adm == "host-local" and _over(pl)))
    headline = (f"{NAME}: rate at R over the reservation for {worst} % "
                f"of a {LINK_MBIT} Mbit/s port, median (min-max): "
                + "; ".join(head) +
                f"; every reservation the cluster admitted held within "
                f"{TOLERANCE:.0%}: {'yes' if admitted_held else 'no'}.")
    common.write_md(out / f"{NAME}.md", TITLE, f"""\
Applications on A1 and A2 (one parq-bench bulk stream each, {common.kib(
BULK_SIZE)} messages) send to R with reservations of R1 and R2 percent
of the switch port toward R, while B1 and B2 send best-effort bulk to R
(two streams each, started first), all through that port: {LINK_MBIT}
Mbit/s, AF41 first (prio).  Every NIC has {LINK_MBIT} Mbit/s too (under
QEMU/TCG, at 100 Mbit/s the emulated CPUs, not the reservations, were
the limit).  A1 and A2 run
parq with dscp-mark af41.  "cluster": parqd's admission role (etcd, the
six hosts' topology, reservable {RESERVABLE}%) admits each request;
"host-local": each host's qdisc admits its own class.  Rates are measured
at R's ingress, Ethernet headers included, over {MEASURE:.0f} s;
{p.reps} repetitions.  Documentation/experiments.md has the details.
""", [
        ("Rates", "A1's and A2's rate at R in Mbit/s (median), then over "
         "their reservations, median (min-max); the best-effort hosts' "
         "sum in Mbit/s.  A refused application sent best effort.\n\n" +
         common.md_table(
             ["R1+R2", "admission", "A1", "A2", "best effort"], table)),
        ("Where a shortfall is", "For each admitted application, "
         "medians: its reservation, the rate its reserved classes sent at "
         "on its own host (the qdisc's bytes, Ethernet headers included), "
         "its rate at R, how often its reserved classes were empty (of "
         f"samples every {SAMPLE_S} s: the application did not keep them "
         "backlogged), their drops (queue full), how late their packets "
         "left after their departure times (mean over the measurement; "
         "the maximum since the class was made), and the drops of the "
         "switch port's reserved band and best-effort band during the "
         "measurement.\n\n" +
         common.md_table(
             ["R1+R2", "admission", "app", "reserved", "sent at A",
              "at R", "empty %", "class drops", "lateness mean us",
              "lateness max us", "port drops AF41", "port drops BE"],
             where)),
        ("Refusals", "\n".join(f"- {x}" for x in refusals) or "none"),
        ("Headline", headline)])
    return [headline]


def _median_text(rows, key, fmt):
    """The median of @rows' @key (NaN left out) in format @fmt, or "-"."""
    vals = sorted(r[key] for r in rows if not math.isnan(r[key]))
    return format(vals[len(vals) // 2], fmt) if vals else "-"


def _over(pair_lbl):
    a, b = (int(x) for x in pair_lbl.split("+"))
    return a + b > RESERVABLE


if __name__ == "__main__":
    import driver
    sys.exit(driver.standalone(sys.modules[__name__], __file__))
