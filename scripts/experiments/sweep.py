"""The plan and report of experiments 1 and 2: the parallel job's slowdown
against the local job's message size, one curve per scheduler.

In every repetition, for every configuration, the parallel job's exchanges
(one per parallel message size) run once without the local job (T1) and
once with it for each of its columns (columns(): its kind, bulk stream or
messages, and its message size); the lab's env.measure(config, local_size,
local_kind) does one such step and returns a row per parallel size.
"""
import common
from common import Panel, Params, Step, kib

FIELDS = ["rep", "scheduler", "parallel_size", "local_kind", "local_size",
          "completion_ms", "mean_us", "p99_us", "slowdown", "grants",
          "parq_mean_us", "parq_p99_us", "timer_p99_us", "timer_p50_us",
          "parq_target_us", "parq_within", "local_alone_mbit", "local_mbit",
          "local_alone_us", "local_us", "local_kept"]
KEYS = ("scheduler", "parallel_size", "local_kind", "local_size")
NONE = ("", 0)				# the column without the local job


def presets(smoke_schedulers, **local):
    """The Params of experiments 1 and 2 ("smoke": @smoke_schedulers);
    @local: their local job's Params fields (local_kind, local_bulk)."""
    return {
        "full": Params(**local),
        "quick": Params(reps=2, local_sizes=(2048, 16384), **local),
        # The full run's 100 messages: an exchange of 20 takes about 10 ms
        # alone, at the mercy of one stall of the host, which can make it
        # look faster beside the local job than alone.
        "smoke": Params(reps=1, schedulers=smoke_schedulers,
                        parallel_sizes=(64,), local_sizes=(16384,),
                        **local),
    }


def columns(p):
    """The local job's columns, (kind, message size) each: local_sizes of
    p.local_kind, then the bulk stream of p.local_bulk if any."""
    cols = [(p.local_kind, s) for s in p.local_sizes]
    if p.local_bulk:
        cols.append((common.BULK, p.local_bulk))
    return cols


def label(p, col):
    """"16KiB"; "bulk 16KiB" for a bulk column beside columns of messages;
    "none" without the local job."""
    kind, size = col
    if not size:
        return "none"
    return kib(size) if kind == p.local_kind else f"{kind} {kib(size)}"


def steps(name, p, configs, est):
    """Repetitions outermost, so that a slow phase of the machine hits
    every configuration; @est(config, local_size, local_kind): seconds
    expected."""
    out = []
    for rep in range(1, p.reps + 1):
        for cfg in configs:
            for kind, size in [NONE] + columns(p):
                out.append(Step(
                    f"{name} {cfg} local={label(p, (kind, size))} "
                    f"rep {rep}/{p.reps}", est(cfg, size, kind),
                    common.measuring(cfg, size, kind),
                    {"rep": rep, "scheduler": cfg, "local_kind": kind,
                     "local_size": size}))
    return out


def stats(rows):
    """Slowdowns set on @rows; summarize()d by KEYS."""
    common.add_slowdowns(rows, ("scheduler", "parallel_size", "rep"),
                         lambda r: r["local_size"] == 0)
    return common.summarize(rows, KEYS)


def report(name, title, rows, p, configs, out, intro):
    """Write @name.csv, .png and .md into @out; returns the headline (the
    smallest parallel messages against the largest local ones, and against
    the bulk column if any).  @intro may use {count}, {psizes}, {lsizes},
    {rate} (the local messages a second), {bulk} and {parqd}."""
    intro = intro.format(count=p.count, parqd=common.PARQD,
                         psizes=" and ".join(map(kib, p.parallel_sizes)),
                         lsizes=", ".join(map(kib, p.local_sizes)),
                         rate=round(1e6 / common.LOCAL_MSG_INTERVAL_US),
                         bulk=kib(p.local_bulk) if p.local_bulk else "")
    st = stats(rows)
    common.write_csv(out / f"{name}.csv", rows, FIELDS)
    cols = columns(p)
    ticks = [label(p, col) for col in cols]
    panels = [Panel(f"parallel messages of {kib(ps)}",
                    "local message size", "slowdown (T/T1)", ticks,
                    common.series(st, configs, cols,
                                  lambda c, col, ps=ps: (c, ps) + col),
                    hline=1.0, logy=True)
              for ps in p.parallel_sizes]
    kept = common.summarize(rows, KEYS, "local_kept")
    panels += [Panel(f"the local job beside {kib(ps)} exchanges",
                     "local message size", _KEPT_AXIS[_kinds(p)], ticks,
                     common.series(kept, configs, cols,
                                   lambda c, col, ps=ps: (c, ps) + col),
                     hline=1.0)
               for ps in p.parallel_sizes if kept]
    common.plot(out / f"{name}.png", title, panels)
    t1 = common.summarize([r for r in rows if r["local_size"] == 0],
                          ("scheduler", "parallel_size"), "completion_ms")
    sections = []
    for ps in p.parallel_sizes:
        table = [[c, common.cell(t1.get((c, ps)), 0)] +
                 [common.cell(st.get((c, ps) + col)) for col in cols]
                 for c in configs]
        sections.append((
            f"Parallel messages of {kib(ps)}",
            f"Slowdown of the {p.count}-message exchange, median over "
            f"{p.reps} repetitions (min-max); T1 is its completion time "
            f"without the local job, in ms.\n\n" +
            common.md_table(["scheduler", "T1 (ms)"] +
                            [f"local {t}" for t in ticks], table)))
    sections += sojourn_sections(rows, p, configs)
    sections += local_sections(rows, kept, p, configs)
    heads = [headline(name, st, configs, p)]
    if p.local_bulk:
        heads.append(headline(name, st, configs, p, common.BULK))
    if kept:
        heads.append(local_headline(name, kept, configs, p))
    sections.append(("Headline", "\n\n".join(heads)))
    common.write_md(out / f"{name}.md", title, intro, sections)
    return heads


def _kinds(p):
    """The kinds of p's local columns: "bulk", "messages" or "both"."""
    kinds = {k for k, _ in columns(p)}
    return kinds.pop() if len(kinds) == 1 else "both"


_KEPT_AXIS = {common.BULK: "its rate during / alone",
              common.MESSAGES: "its round trip alone / during",
              "both": "kept: rate, or round trip alone / during"}
_KEPT_TEXT = {
    common.BULK: "The local job's rate while the parallel job's exchange "
    "ran over its rate alone",
    common.MESSAGES: "The local job's mean round trip alone over its mean "
    "round trip beside the parallel job",
    "both": "The local job's mean round trip alone over its mean round "
    "trip beside the parallel job (its messages), or its rate while the "
    "parallel job's exchange ran over its rate alone (the bulk stream)"}
_ALONE_TEXT = {
    common.BULK: f"The local job's rate alone (Mbit/s that the server "
    f"acknowledged over the {common.LOCAL_ALONE_S:g} s before the parallel "
    f"job ran), median over the repetitions and the parallel sizes "
    f"(min-max).",
    common.MESSAGES: f"The mean round trip of the local job's messages "
    f"alone, in us ({common.LOCAL_MSG_COUNT} messages, one every "
    f"{common.LOCAL_MSG_INTERVAL_US} us, each answered by 32 bytes), "
    f"median over the repetitions and the parallel sizes (min-max)."}
_NAMES = {common.BULK: "bulk stream", common.MESSAGES: "messages"}
_ALONE_VALUE = {common.BULK: ("local_alone_mbit", 1),
                common.MESSAGES: ("local_alone_us", 0)}


def local_sections(rows, kept, p, configs):
    """The local job's cost, when the rows have it (common.LocalMeter,
    common.MessageMeter)."""
    if not kept:
        return []
    cols = columns(p)
    out = []
    for kind in dict.fromkeys(k for k, _ in cols):
        value, digits = _ALONE_VALUE[kind]
        alone = common.summarize(rows, KEYS[2:] + ("scheduler",), value)
        mine = [col for col in cols if col[0] == kind]
        out.append((
            "The local job alone" +
            (f": its {_NAMES[kind]}" if _kinds(p) == "both" else ""),
            _ALONE_TEXT[kind] + "\n\n" +
            common.md_table(["scheduler"] +
                            [f"local {label(p, col)}" for col in mine],
                            [[c] + [common.cell(alone.get(col + (c,)),
                                                digits)
                                    for col in mine] for c in configs])))
    for ps in p.parallel_sizes:
        table = [[c] + [common.cell(kept.get((c, ps) + col)) for col in cols]
                 for c in configs]
        out.append((
            f"The local job's cost beside {kib(ps)} exchanges",
            f"{_KEPT_TEXT[_kinds(p)]}, median over {p.reps} repetitions "
            f"(min-max): 1, the parallel job cost it nothing; 0, it "
            f"stopped it.\n\n" +
            common.md_table(["scheduler"] +
                            [f"local {label(p, col)}" for col in cols],
                            table)))
    return out


def local_headline(name, kept, configs, p):
    what = {common.BULK: "rate during the {ps} exchange over its rate "
            "alone",
            common.MESSAGES: "mean round trip alone over beside the {ps} "
            "exchange"}[p.local_kind]
    return _headline(name, kept, configs, p, p.local_kind, lambda ps, ls: (
        f"the {kib(ls)} local job's " + what.format(ps=kib(ps))))


def sojourn_sections(rows, p, configs):
    """Sections on the parallel class's time in parq (its p99 bound, tc
    -s) and on its target (common.with_timer()) when the rows have them
    (common.in_parq()), else none."""
    keys = KEYS
    soj = common.summarize(rows, keys, "parq_p99_us")
    if not soj:
        return []
    tgt = common.targets(rows, keys)
    mean = common.summarize(rows, keys, "parq_mean_us")
    late = common.summarize(rows, keys, "timer_p50_us")
    cfgs = [c for c in configs if any(k[0] == c for k in soj)]
    cols = [NONE] + columns(p)
    header = ["scheduler"] + [f"local {label(p, col)}" if col[1] else
                              "alone" for col in cols]

    def table(ps, cell):
        return common.md_table(header, [[c] + [cell((c, ps) + col)
                                               for col in cols]
                                        for c in cfgs])
    out = []
    for ps in p.parallel_sizes:
        out.append((
            f"Parallel messages of {kib(ps)}: their time in parq",
            f"The 99th percentile of the time the parallel job's packets "
            f"spent in parq during the exchange, in us: the upper bound of "
            f"the power-of-two bucket of parq's sojourn histogram (tc -s) "
            f"that holds it, median over {p.reps} repetitions (min-max).  "
            f"Target: one local frame's serialization at the shaper's "
            f"rate, {common.SOJOURN_TARGET_US:.0f} us, plus the timer's "
            f"slack.\n\n" +
            table(ps, lambda k: common.cell(soj.get(k), 0))))
        out.append((
            f"Parallel messages of {kib(ps)}: their mean time in parq",
            f"The mean time the parallel job's packets spent in parq "
            f"during the exchange (tc -s), in us, median over {p.reps} "
            f"repetitions (min-max); after the semicolon, the median of "
            f"the timer's median lateness in the same steps (parq-bench "
            f"timer, as below).  A packet that waits for the shaper waits "
            f"for its watchdog, which comes that late, unless the qdisc "
            f"is backlogged and behind its schedule (Documentation/"
            f"parq.md, the shaper).\n\n" +
            table(ps, lambda k: "-" if k not in mean else
                  f"{common.cell(mean[k], 0)}; " +
                  (f"{late[k][0]:.0f}" if k in late else "-"))))
        out.append((
            f"Parallel messages of {kib(ps)}: the target of their time "
            f"in parq",
            f"The target in us, {common.SOJOURN_TARGET_US:.0f} us plus the "
            f"timer's slack measured in the same step (the 99th "
            f"percentile of how late {common.TIMER_WAKEUPS} timer wake-ups "
            f"{common.TIMER_INTERVAL_US} us apart came, parq-bench timer "
            f"under the parallel job's CPU and priority, right after the "
            f"exchange, beside the local job): median over {p.reps} "
            f"repetitions (min-max), and in how many the time in parq's "
            f"p99 bound was within it.\n\n" +
            table(ps, lambda k: tgt.get(k, "-"))))
    return out


def headline(name, st, configs, p, kind=None):
    """The slowdown of the smallest parallel messages against the largest
    local ones of @kind (p.local_kind)."""
    kind = kind or p.local_kind
    what = {common.BULK: "a bulk stream of {ls} messages",
            common.MESSAGES: "{ls} local messages at {rate} a second"}
    if kind == p.local_kind == common.BULK:
        what[kind] = "{ls} local messages"
    rate = round(1e6 / common.LOCAL_MSG_INTERVAL_US)
    return _headline(name, st, configs, p, kind, lambda ps, ls: (
        f"slowdown of the {kib(ps)} parallel exchange against " +
        what[kind].format(ls=kib(ls), rate=rate)))


def _headline(name, stats, configs, p, kind, what):
    """"@name: what(smallest parallel size, largest local size of @kind),
    median (min-max): " and each configuration's figure there."""
    ps = min(p.parallel_sizes)
    ls = max(s for k, s in columns(p) if k == kind)
    figs = ", ".join(f"{c} {common.cell(stats.get((c, ps, kind, ls)))}"
                     for c in configs)
    return f"{name}: {what(ps, ls)}, median (min-max): {figs}."
