"""The experiments' driver, behind scripts/experiments/run and each
expN_*.py run on its own:

    run [--quick | --smoke] [--hosts N,...] [--reps N] [--out DIR] [EXP...]

EXP: exp1 ... exp8 (or exp1_sender, ...); default all.  --quick is the
short version `make demo` runs, --smoke the smallest (the selftest's).
--hosts and --reps replace the preset's numbers of hosts (experiments 3
and 8: those with MAX_HOSTS, within it) and of repetitions.
Every step prints a progress line with an estimate of the time left; each
experiment writes EXP.csv, EXP.png and EXP.md into DIR (default
build/experiments), and summary.md lists the headline figures.  Runs as
root on the machine under test (in the VM: scripts/vm-run).  Exit status
1 when a step failed twice (it is listed in summary.md), else 0.
"""
import argparse
import dataclasses
import importlib
import importlib.util
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import common
from parqlab import REPO, bench, module, parqd

EXPERIMENTS = ("exp1_sender", "exp2_receiver", "exp3_collective",
               "exp4_reservation", "exp5_mpi", "exp6_enforcement",
               "exp7_heavy", "exp8_application")


def load(names):
    """The experiment modules named (exp1 or exp1_sender), in order."""
    out = []
    for name in names or [e.split("_")[0] for e in EXPERIMENTS]:
        full = [e for e in EXPERIMENTS if name in (e, e.split("_")[0])]
        if not full:
            raise SystemExit(f"run: no experiment {name!r} (exp1 ... exp8)")
        out.append(importlib.import_module(full[0]))
    return out


def positive(text):
    """An argument that must be a positive integer."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return n


def host_counts(text):
    """--hosts: numbers of hosts, at least 2 each, comma-separated; in
    increasing order, each once."""
    out = tuple(sorted({positive(t) for t in text.split(",")}))
    if min(out) < 2:
        raise argparse.ArgumentTypeError("an experiment needs 2 hosts or "
                                         "more")
    return out


def plan_params(mod, preset, hosts=None, reps=None):
    """@mod's parameters: @preset's, with @hosts (--hosts) and @reps
    (--reps) in place of its numbers when given."""
    p = mod.PARAMS[preset]
    if hosts and not hasattr(mod, "MAX_HOSTS"):
        print(f"run: {mod.NAME} has no number of hosts: --hosts does not "
              "apply to it", file=sys.stderr)
    elif hosts:
        if mod.MAX_HOSTS and max(hosts) > mod.MAX_HOSTS:
            raise SystemExit(f"run: {mod.NAME} runs on {mod.MAX_HOSTS} "
                             "hosts at most")
        p = dataclasses.replace(p, hosts=hosts)
    if reps:
        p = dataclasses.replace(p, reps=reps)
    return p


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="scripts/experiments/run",
        description="Run the parq experiments (Documentation/experiments.md)"
        " and write CSV, PNG and Markdown per experiment.")
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", dest="preset",
                      const="quick", help="the short version (make demo)")
    size.add_argument("--smoke", action="store_const", dest="preset",
                      const="smoke", help="the smallest (the selftest's)")
    ap.add_argument("--hosts", type=host_counts, metavar="N,...",
                    help="numbers of hosts, in place of the preset's "
                    "(exp3, exp8)")
    ap.add_argument("--reps", type=positive, metavar="N",
                    help="repetitions, in place of the preset's")
    ap.add_argument("--out", default=str(REPO / "build" / "experiments"),
                    help="output directory (default build/experiments)")
    ap.add_argument("experiments", nargs="*", metavar="EXP",
                    help="exp1 ... exp8 (default all)")
    args = ap.parse_args(argv)
    args.preset = args.preset or "full"
    return args


def preflight(modules=()):
    """Why the experiments (@modules: those that say what else they need,
    with unavailable()) cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, tc)"
    if not bench.available():
        return f"{bench.PARQ_BENCH} missing: run make userspace"
    if not parqd.available():
        return f"{parqd.PARQD} missing: run make userspace"
    if importlib.util.find_spec("matplotlib") is None:
        return "matplotlib missing: scripts/install-deps experiments"
    for m in modules:
        why = getattr(m, "unavailable", lambda: None)()
        if why:
            return f"{m.NAME}: {why}"
    return None


def _git(*args):
    r = subprocess.run(["git", "-c", f"safe.directory={REPO}", "-C",
                        str(REPO), *args], capture_output=True, text=True,
                       check=False)
    return r.stdout.strip() if r.returncode == 0 else None


def commit(out=None):
    """The source's commit, with -dirty if a tracked file differs from it
    (outside @out: a run over committed results rewrites them), or
    "unknown"."""
    name = _git("describe", "--always", "--abbrev=12")
    if not name:
        return "unknown"
    spec = ["--", "."]
    if out is not None:
        try:
            spec.append(":(exclude)" + str(Path(out).resolve()
                                           .relative_to(Path(REPO).resolve())))
        except ValueError:  # @out is outside the repository
            pass
    changed = _git("status", "--porcelain", "--untracked-files=no", *spec)
    return name + ("-dirty" if changed else "")


class Session:
    """The experiments of one run: their plans, one progress line for all
    of them, the failed steps."""

    def __init__(self, modules, preset, out, hosts=None, reps=None):
        self.preset, self.out = preset, out
        self.plans = [(m, plan_params(m, preset, hosts, reps))
                      for m in modules]
        self.steps = {m.NAME: m.steps(p) for m, p in self.plans}
        self.progress = common.Progress(
            [s for steps in self.steps.values() for s in steps])
        self.failures = {}
        self.headlines = {}

    def run(self, mod, p):
        """Run one experiment and write its files; returns its rows."""
        rows = common.run_steps(self.steps[mod.NAME],
                                lambda group: mod.lab(p, group),
                                self.progress, self.failures)
        self.headlines[mod.NAME] = mod.report(rows, p, self.out)
        print(f"{mod.NAME}: {len(rows)} measurements; wrote "
              f"{self.out / (mod.NAME + '.csv')}, .png, .md", flush=True)
        return rows

    def summary(self, command):
        lines = [
            "# parq experiments: summary", "",
            f"Produced by `{command}` ({self.preset} preset) at commit "
            f"{commit(self.out)} on "
            f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, kernel "
            f"{os.uname().release}, in "
            f"{common.duration(self.progress.elapsed())}.  "
            "Documentation/experiments.md says what each experiment does.",
            ""]
        for mod, _ in self.plans:
            lines.append(f"## {mod.TITLE}")
            lines.append("")
            lines += [f"- {h}" for h in self.headlines.get(mod.NAME, [])]
            lines.append(f"- Files: [{mod.NAME}.md]({mod.NAME}.md), "
                         f"[{mod.NAME}.csv]({mod.NAME}.csv), "
                         f"[{mod.NAME}.png]({mod.NAME}.png)")
            lines.append("")
        if self.failures:
            lines += ["## Failed steps (left out)", ""]
            lines += [f"- {k}: {v}" for k, v in self.failures.items()]
            lines.append("")
        path = self.out / "summary.md"
        path.write_text("\n".join(lines))
        return path


def standalone(mod, path):
    """main() for an experiment script run on its own (@path: its
    file)."""
    return main(sys.argv[1:], [mod],
                prog="scripts/experiments/" + os.path.basename(path))


def main(argv, modules=None, prog="scripts/experiments/run"):
    """Run @argv's experiments (or @modules); @prog is how summary.md
    names the command."""
    args = parse(argv)
    modules = modules or load(args.experiments)
    why = preflight(modules)
    if why:
        print(f"experiments: {why}", file=sys.stderr)
        return 4
    module.ensure_loaded()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sess = Session(modules, args.preset, out, args.hosts, args.reps)
    print(f"experiments: {' '.join(m.NAME for m, _ in sess.plans)} "
          f"({args.preset}): {sess.progress.total} steps, about "
          f"{common.duration(sess.progress.eta())} (QEMU/TCG estimate)",
          flush=True)
    t0 = time.monotonic()
    for mod, p in sess.plans:
        sess.run(mod, p)
    command = shlex.join([prog] + list(argv))
    path = sess.summary(command)
    print(f"experiments: done in {common.duration(time.monotonic() - t0)}"
          f"; summary in {path}", flush=True)
    for mod, _ in sess.plans:
        print(f"  plot: {out / (mod.NAME + '.png')}")
    if sess.failures:
        print(f"experiments: {len(sess.failures)} steps failed (see "
              f"{path})", file=sys.stderr)
        return 1
    return 0
