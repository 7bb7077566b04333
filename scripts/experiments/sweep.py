"""The plan and report of experiments 1 and 2: the parallel job's slowdown
against the local job's message size, one curve per scheduler.

In every repetition, for every configuration, the parallel job's exchanges
(one per parallel message size) run once without the local job (T1) and
once with it for each local message size; the lab's env.measure(config,
local_size) does one such step and returns a row per parallel size.
"""
import common
from common import Panel, Params, Step, kib

FIELDS = ["rep", "scheduler", "parallel_size", "local_size",
          "completion_ms", "mean_us", "p99_us", "slowdown", "grants",
          "parq_mean_us", "parq_p99_us", "timer_p99_us", "timer_p50_us",
          "parq_target_us", "parq_within", "local_alone_mbit", "local_mbit",
          "local_kept"]


def presets(smoke_schedulers):
    """The Params of experiments 1 and 2 ("smoke": @smoke_schedulers)."""
    return {
        "full": Params(),
        "quick": Params(reps=2, local_sizes=(2048, 16384)),
        # The full run's 100 messages: at 20, one smoke run (CI,
        # 2026-11-29) measured pfifo's exchange beside the local job
        # faster than alone (0.7), where four had 3.0 to 6.9: a 10 ms
        # exchange alone is at the mercy of one stall of the host.
        "smoke": Params(reps=1, schedulers=smoke_schedulers,
                        parallel_sizes=(64,), local_sizes=(16384,)),
    }


def steps(name, p, configs, est):
    """Repetitions outermost, so that a slow phase of the machine hits
    every configuration; @est(config, local_size): seconds expected."""
    out = []
    for rep in range(1, p.reps + 1):
        for cfg in configs:
            for local in (0,) + tuple(p.local_sizes):
                out.append(Step(
                    f"{name} {cfg} local={common.local_label(local)} "
                    f"rep {rep}/{p.reps}", est(cfg, local),
                    common.measuring(cfg, local),
                    {"rep": rep, "scheduler": cfg, "local_size": local}))
    return out


def stats(rows):
    """Slowdowns set on @rows; summarize()d by (scheduler, parallel size,
    local size)."""
    common.add_slowdowns(rows, ("scheduler", "parallel_size", "rep"),
                         lambda r: r["local_size"] == 0)
    return common.summarize(rows, ("scheduler", "parallel_size",
                                   "local_size"))


def report(name, title, rows, p, configs, out, intro):
    """Write @name.csv, .png and .md into @out; returns the headline (the
    smallest parallel messages against the largest local ones).  @intro
    may use {count}, {psizes}, {lsizes} and {parqd}."""
    intro = intro.format(count=p.count, parqd=common.PARQD,
                         psizes=" and ".join(map(kib, p.parallel_sizes)),
                         lsizes=", ".join(map(kib, p.local_sizes)))
    st = stats(rows)
    common.write_csv(out / f"{name}.csv", rows, FIELDS)
    sizes = list(p.local_sizes)
    panels = [Panel(f"parallel messages of {kib(ps)}",
                    "local message size", "slowdown (T/T1)",
                    [kib(s) for s in sizes],
                    common.series(st, configs, sizes,
                                  lambda c, s, ps=ps: (c, ps, s)),
                    hline=1.0, logy=True)
              for ps in p.parallel_sizes]
    kept = common.summarize(rows, ("scheduler", "parallel_size",
                                   "local_size"), "local_kept")
    panels += [Panel(f"the local job beside {kib(ps)} exchanges",
                     "local message size", "its rate during / alone",
                     [kib(s) for s in sizes],
                     common.series(kept, configs, sizes,
                                   lambda c, s, ps=ps: (c, ps, s)),
                     hline=1.0)
               for ps in p.parallel_sizes if kept]
    common.plot(out / f"{name}.png", title, panels)
    t1 = common.summarize([r for r in rows if r["local_size"] == 0],
                          ("scheduler", "parallel_size"), "completion_ms")
    sections = []
    for ps in p.parallel_sizes:
        table = [[c, common.cell(t1.get((c, ps)), 0)] +
                 [common.cell(st.get((c, ps, s))) for s in sizes]
                 for c in configs]
        sections.append((
            f"Parallel messages of {kib(ps)}",
            f"Slowdown of the {p.count}-message exchange, median over "
            f"{p.reps} repetitions (min-max); T1 is its completion time "
            f"without the local job, in ms.\n\n" +
            common.md_table(["scheduler", "T1 (ms)"] +
                            [f"local {kib(s)}" for s in sizes], table)))
    sections += sojourn_sections(rows, p, configs)
    sections += local_sections(rows, kept, p, configs)
    heads = [headline(name, st, configs, p)]
    if kept:
        heads.append(local_headline(name, kept, configs, p))
    sections.append(("Headline", "\n\n".join(heads)))
    common.write_md(out / f"{name}.md", title, intro, sections)
    return heads


def local_sections(rows, kept, p, configs):
    """The local job's cost, when the rows have it (common.LocalMeter)."""
    if not kept:
        return []
    alone = common.summarize(rows, ("scheduler", "local_size"),
                             "local_alone_mbit")
    sizes = list(p.local_sizes)
    out = [("The local job alone",
            f"The local job's rate alone (Mbit/s that the server "
            f"acknowledged over the {common.LOCAL_ALONE_S:g} s before the "
            f"parallel job ran), median over the repetitions and the "
            f"parallel sizes (min-max).\n\n" +
            common.md_table(["scheduler"] +
                            [f"local {kib(s)}" for s in sizes],
                            [[c] + [common.cell(alone.get((c, s)), 1)
                                    for s in sizes] for c in configs]))]
    for ps in p.parallel_sizes:
        table = [[c] + [common.cell(kept.get((c, ps, s))) for s in sizes]
                 for c in configs]
        out.append((
            f"The local job's cost beside {kib(ps)} exchanges",
            f"The local job's rate while the parallel job's exchange ran "
            f"over its rate alone, median over {p.reps} repetitions "
            f"(min-max): 1, the parallel job cost it nothing; 0, it "
            f"stopped it.\n\n" +
            common.md_table(["scheduler"] +
                            [f"local {kib(s)}" for s in sizes], table)))
    return out


def local_headline(name, kept, configs, p):
    return _headline(name, kept, configs, p, lambda ps, ls: (
        f"the {kib(ls)} local job's rate during the {kib(ps)} exchange "
        f"over its rate alone"))


def sojourn_sections(rows, p, configs):
    """Sections on the parallel class's time in parq (its p99 bound, tc
    -s) and on its target (common.with_timer()) when the rows have them
    (common.in_parq()), else none."""
    keys = ("scheduler", "parallel_size", "local_size")
    soj = common.summarize(rows, keys, "parq_p99_us")
    if not soj:
        return []
    tgt = common.targets(rows, keys)
    mean = common.summarize(rows, keys, "parq_mean_us")
    late = common.summarize(rows, keys, "timer_p50_us")
    cfgs = [c for c in configs if any(k[0] == c for k in soj)]
    sizes = [0] + list(p.local_sizes)
    header = ["scheduler"] + [f"local {kib(s)}" if s else "alone"
                              for s in sizes]

    def table(ps, cell):
        return common.md_table(header, [[c] + [cell((c, ps, s))
                                               for s in sizes]
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


def headline(name, st, configs, p):
    return _headline(name, st, configs, p, lambda ps, ls: (
        f"slowdown of the {kib(ps)} parallel exchange against {kib(ls)} "
        f"local messages"))


def _headline(name, stats, configs, p, what):
    """"@name: what(smallest parallel size, largest local size), median
    (min-max): " and each configuration's figure there."""
    ps, ls = min(p.parallel_sizes), max(p.local_sizes)
    figs = ", ".join(f"{c} {common.cell(stats.get((c, ps, ls)))}"
                     for c in configs)
    return f"{name}: {what(ps, ls)}, median (min-max): {figs}."
