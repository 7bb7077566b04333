#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The netlink fuzzer: parq-nlfuzz sends random and mutated messages at the
qdisc's options, at reserved classes and at every command of the parq
generic netlink family (wrong types, lengths, nesting, missing, repeated
and unknown attributes, cut and flipped bytes), and after each one checks
that the configuration is unchanged (refused) or validly changed
(accepted: in range, reading back what was set, reservations within the
capacity).  Then the kernel log must hold no warning.

PARQ_NLFUZZ_MESSAGES sets the count (default 100000), PARQ_NLFUZZ_SEED the
seed (default random; the run prints it, and the same seed replays it).
"""
import os
import random
import re
import sys
import time

from parqlab import ktap, lab, repo_path
from parqlab.ktap import check, check_eq, diag

BUILD = repo_path(os.environ.get("PARQ_USERSPACE_BUILD", "build/userspace"))
NLFUZZ = BUILD / "nlfuzz" / "parq-nlfuzz"
MESSAGES = int(os.environ.get("PARQ_NLFUZZ_MESSAGES", "100000"))
SEED = int(os.environ.get("PARQ_NLFUZZ_SEED", str(random.getrandbits(32))))
LINE = re.compile(r"^(qdisc|class|genl): (\d+) sent, (\d+) accepted, "
                  r"(\d+) refused, (\d+) mutated$")


def t_fuzz(env):
    check(NLFUZZ.exists(), f"{NLFUZZ} is built (make userspace)")
    t0 = time.monotonic()
    r = env.a.run([str(NLFUZZ), "--dev", env.dev, "--iterations",
                   str(MESSAGES), "--seed", str(SEED)],
                  timeout=3000 * ktap.slowdown(), check=False)
    for line in (r.stdout + r.stderr).splitlines():
        diag(line)
    check_eq(r.returncode, 0, "parq-nlfuzz's exit status")
    kinds = {}
    for line in r.stdout.splitlines():
        m = LINE.match(line)
        if m:
            kinds[m.group(1)] = [int(x) for x in m.groups()[1:]]
    check_eq(sorted(kinds), ["class", "genl", "qdisc"], "kinds of messages")
    check_eq(sum(k[0] for k in kinds.values()), MESSAGES, "messages sent")
    # Every kind met both answers, and mutations: else the checks after
    # them checked nothing.
    for name, (sent, accepted, refused, mutated) in kinds.items():
        check(accepted > 0 and refused > 0 and mutated > 0,
              f"{name}: {accepted} accepted, {refused} refused, "
              f"{mutated} mutated: each must be > 0")
    diag(f"{MESSAGES} messages, seed {SEED}, in "
         f"{time.monotonic() - t0:.0f} s")
    env.kwatch.assert_clean()


def main():
    suite = ktap.Suite("parq_nlfuzz")
    suite.case(f"{MESSAGES} random and mutated netlink messages, the "
               "configuration checked after each", t_fuzz, timeout=3000)
    return lab.run(suite, "nlf")


if __name__ == "__main__":
    sys.exit(main())
