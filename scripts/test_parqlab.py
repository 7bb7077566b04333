"""Unit tests of parqlab that need no kernel: make py-unit (pytest)."""
import struct
import subprocess

import pytest

from parqlab import kernel_ynl, ktap, params, parqd, scenarios


def run_suite(cases, capsys):
    suite = ktap.Suite("unit")
    for name, fn in cases:
        suite.case(name, fn, timeout=10)
    status = suite.run()
    return status, capsys.readouterr().out.splitlines()


def test_deferred_clean_ups_run_last_first_however_a_case_ends(capsys):
    ran = []

    def passes(env):
        ktap.defer(ran.append, "made first")
        ktap.defer(ran.append, "made second")

    def fails(env):
        ktap.defer(ran.append, "before the failure")
        raise AssertionError("boom")

    def skips(env):
        ktap.defer(ran.append, "before the skip")
        raise ktap.Skip("no such facility")

    status, out = run_suite([("passes", passes), ("fails", fails),
                             ("skips", skips)], capsys)
    assert ran == ["made second", "made first", "before the failure",
                   "before the skip"]
    assert "ok 1 passes" in out
    assert "not ok 2 fails" in out
    assert "ok 3 skips # SKIP no such facility" in out
    assert status == ktap.KSFT_FAIL


def test_a_failing_clean_up_fails_the_case_and_the_rest_still_run(capsys):
    ran = []

    def broken():
        raise OSError("device busy")

    def case(env):
        ktap.defer(ran.append, "undone")
        ktap.defer(broken)

    status, out = run_suite([("case", case), ("next", lambda env: None)],
                            capsys)
    assert ran == ["undone"]
    assert "not ok 1 case" in out
    assert "ok 2 next" in out
    assert any("device busy" in line for line in out)
    assert status == ktap.KSFT_FAIL


def test_clean_ups_belong_to_their_case(capsys):
    ran = []

    def first(env):
        ktap.defer(ran.append, "first's")

    def second(env):
        assert ran == ["first's"]

    status, _ = run_suite([("first", first), ("second", second)], capsys)
    assert status == ktap.KSFT_PASS


@pytest.mark.parametrize("figures, planned",
                         [(None, 2), ("1", 2), ("0", 1)])
def test_figures_are_left_out_only_when_asked(figures, planned, monkeypatch,
                                              capsys):
    for name in ("PARQ_FIGURES", "PARQ_CASES", "PARQ_QUICK"):
        monkeypatch.delenv(name, raising=False)
    if figures is not None:
        monkeypatch.setenv("PARQ_FIGURES", figures)
    suite = ktap.Suite("unit")
    suite.case("judged", lambda env: None, timeout=10)
    suite.case("printed", lambda env: None, timeout=10, figure=True)
    assert suite.run() == ktap.KSFT_PASS
    out = capsys.readouterr().out.splitlines()
    assert f"1..{planned}" in out
    named = [line for line in out if line.startswith("# PARQ_FIGURES=0")]
    assert len(named) == (planned == 1)
    assert ("ok 2 printed" in out) == (planned == 2)


def test_every_parameter_has_a_default_as_tc_prints_it():
    d = params.json_defaults()
    assert set(d) == {p.keyword.replace("-", "_")
                      for p in params.TABLE.values()}
    assert d["threshold"] == 4
    assert d["rate"] == "unlimited"
    assert d["split_gso"] == "auto"
    assert d["dscp_parallel"] == ["CS5", "EF"]
    assert d["default"] == "local"
    assert d["dscp_mark"] == "off"
    assert d["burst"] == 65536


@pytest.mark.parametrize("keyword,value,shown", [
    ("threshold", 65536, "inf"), ("threshold", 7, 7),
    ("unit", 1, "packets"), ("unit", 9, 9),
    ("dscp-mark", 34, "AF41"), ("dscp-mark", 7, 7),
    ("dscp-parallel", 0, []), ("dscp-parallel", 1 << 7 | 1 << 46, [7, "EF"]),
    ("overhead", -64, -64), ("linkrate", 125000000, 125000000),
    ("burst", 0, 0),
])
def test_values_as_tc_prints_them(keyword, value, shown):
    assert params.json_value(params.TABLE[keyword], value) == shown


def test_the_newest_complete_ynl_tools_are_found(tmp_path, monkeypatch):
    for name, complete in (("ynl-6.12.9-1", True), ("ynl-6.12.10-1", True),
                           ("ynl-6.12.11-1", False)):
        (tmp_path / name).mkdir()
        if complete:
            (tmp_path / name / ".complete").write_text("6.12\n")
    monkeypatch.setenv("PARQ_KERNEL_CACHE", str(tmp_path))
    assert kernel_ynl.tools_dir() == tmp_path / "ynl-6.12.10-1"


def test_missing_ynl_tools_say_how_to_fetch_them(tmp_path, monkeypatch):
    (tmp_path / "ynl-6.12.9-1").mkdir()		# unpacked, not complete
    monkeypatch.setenv("PARQ_KERNEL_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError, match="run scripts/kernel-fetch ynl"):
        kernel_ynl.tools_dir()


def test_a_client_uses_the_ids_it_resolved_and_never_dumps(monkeypatch):
    """The kernel library would dump every family once per process and
    keep the ids it found; a client gives it the ids its own lookup found
    (sch_parq's may change when it is loaded again)."""
    from parqlab import genl

    def no_dump():
        raise AssertionError("the library dumped the families")

    monkeypatch.setattr(genl.lib.ynl, "_genl_load_families", no_dump)
    for fid, events in ((31, 7), (40, 9)):
        family = genl._ynl_family(fid, {"events": events})
        try:
            assert family.nlproto.family_id == fid
            assert family.nlproto.get_mcast_id("events", None) == events
        finally:
            family.sock.close()


def test_metrics_read_counts_as_ints_and_shares_as_floats(tmp_path):
    m = tmp_path / "metrics.prom"
    m.write_text("# HELP parqd_x A count.\n# TYPE parqd_x counter\n"
                 "parqd_x 42\n"
                 'parqd_admission_reservation_unused_ratio{id="a-1"} 0.75\n'
                 'parqd_r{id="a-1"} 1e-06\n')
    got = parqd.read_metrics(m)
    assert got == {"parqd_x": 42,
                   'parqd_admission_reservation_unused_ratio{id="a-1"}': 0.75,
                   'parqd_r{id="a-1"}': 1e-06}
    assert isinstance(got["parqd_x"], int)
    assert parqd.read_metrics(tmp_path / "none") == {}


def test_mpirun_gives_every_rank_the_environment_and_can_yield():
    from parqlab import mpi

    class Ns:
        name = "parq-x-1-h0"
    argv = mpi.mpirun_argv([(Ns(), "10.90.0.1"), (Ns(), "10.90.0.2")],
                           ["app", "arg"], event_tick_us=100,
                           env={"PARQ_MPI_RATE": "500000", "A": "b c"},
                           yield_cpu=True)
    # One app context: the exports come before it and hold for every rank.
    assert argv[-2:] == ["app", "arg"]
    host = argv.index("--host")
    exports = [argv[i + 1] for i, a in enumerate(argv[:host]) if a == "-x"]
    assert exports == ["PARQ_MPI_RATE=500000", "A=b c"]
    assert ["--mca", "mpi_yield_when_idle", "1"] == \
        argv[argv.index("mpi_yield_when_idle") - 1:][:3]
    assert "mpi_yield_when_idle" not in mpi.mpirun_argv(
        [(Ns(), "10.90.0.1")], ["app"])


def test_a_job_run_as_a_user_joins_its_cgroup_as_root_first(monkeypatch):
    from parqlab import mpi
    seen = []

    class Ns:
        name = "parq-x-1-h0"

        def run(self, argv, **kw):
            seen.append(argv)
            return subprocess.CompletedProcess(argv, 0, "", "")
    mpi.run([(Ns(), "10.90.0.1")], ["app"], cgroup="g/meep", user="alice")
    argv = seen[0]
    # Nothing before the shell drops root: mount(8) and the cgroup's
    # cgroup.procs are root's.
    assert argv[:3] == ["unshare", "-u", "sh"]
    script = argv[argv.index("-ec") + 1]
    join = script.index("/sys/fs/cgroup/g/meep/cgroup.procs")
    drop = script.index("setpriv --reuid=alice --regid=alice")
    assert script.index("mount -t cgroup2") < join < drop
    assert "--ambient-caps=" + mpi.USER_CAPS in script
    assert argv[argv.index("-ec") + 3] == "mpirun"


def test_the_driver_replaces_a_presets_hosts_and_repetitions(monkeypatch):
    monkeypatch.syspath_prepend("experiments")
    import driver
    from common import Params

    class Mod:
        NAME = "expX"
        MAX_HOSTS = 8
        PARAMS = {"quick": Params(reps=1, hosts=(4,), count=7)}

        def steps(p):
            return []

    class NoHosts:
        NAME = "expY"
        PARAMS = Mod.PARAMS
    args = driver.parse(["--quick", "--hosts", "8,4,8", "--reps", "2", "x"])
    assert (args.preset, args.hosts, args.reps) == ("quick", (4, 8), 2)
    p = driver.plan_params(Mod, "quick", args.hosts, args.reps)
    assert (p.hosts, p.reps, p.count) == ((4, 8), 2, 7)
    assert Mod.PARAMS["quick"].hosts == (4,)
    assert driver.plan_params(NoHosts, "quick", (4, 8)).hosts == (4,)
    p = driver.plan_params(Mod, "quick")
    assert (p.hosts, p.reps) == ((4,), 1)
    with pytest.raises(SystemExit, match="8 hosts at most"):
        driver.plan_params(Mod, "quick", (4, 12))
    for bad in (["--hosts", "1"], ["--hosts", "4,"], ["--reps", "0"],
                ["--reps", "two"]):
        with pytest.raises(SystemExit):
            driver.parse(bad)
    # As selftests/parq_experiments.py makes one: a preset alone.
    sess = driver.Session([Mod], "quick", None)
    assert sess.plans[0][1] is Mod.PARAMS["quick"]


@pytest.mark.parametrize("release,bands", [
    ("6.1.0-56-amd64", False), ("6.6.30", False), ("6.7.0", True),
    ("6.12.48+deb12-amd64", True), ("7.2.0-1-amd64", True),
    ("5.10.0-35-amd64", False), ("10.0", True), ("garbage", False)])
def test_fq_has_bands_from_linux_6_7(release, bands):
    assert scenarios.fq_has_bands(release) is bands


def test_fq_is_refused_on_a_kernel_without_bands_and_nothing_runs(
        monkeypatch):
    ran = []
    monkeypatch.setattr(scenarios.tclib, "tc",
                        lambda *a, **k: ran.append(a))
    monkeypatch.setattr(scenarios, "fq_has_bands", lambda: False)
    with pytest.raises(RuntimeError, match="no priority bands"):
        scenarios.install_fq(None, "eth0")
    assert ran == []


def test_fq_puts_the_parallel_stream_in_its_high_band_and_clear_undoes_it(
        monkeypatch):
    ran = []
    monkeypatch.setattr(scenarios.tclib, "tc",
                        lambda ns, *a, **k: ran.append(a))
    monkeypatch.setattr(scenarios, "fq_has_bands", lambda: True)
    scenarios.install_fq("ns", "eth0", rate=None)
    assert ran[0] == ("qdisc", "add", "dev", "eth0", "root", "handle", "10:",
                      "fq")
    assert ran[1] == ("qdisc", "add", "dev", "eth0", "clsact")
    marks = [a for a in ran if a[:1] == ("filter",)]
    assert len(marks) == 2
    for a in marks:
        assert "egress" in a
        assert a[-3:] == ("skbedit", "priority", scenarios.FQ_HIGH_PRIORITY)
    assert any("tos" in a and hex(scenarios.traffic.TOS_EF) in a
               for a in marks)
    ran.clear()
    scenarios.clear("ns", "eth0")
    assert ("qdisc", "del", "dev", "eth0", "clsact") in ran
    ran.clear()
    scenarios.clear("ns", "eth0")
    assert ("qdisc", "del", "dev", "eth0", "clsact") not in ran


def test_fq_weights_option_is_three_s32_in_tca_options():
    opt = scenarios.fq_weights_option((49152, 16384, 16384))
    # TCA_OPTIONS, nested: one attribute of 4 + 12 bytes.
    length, atype = struct.unpack_from("=HH", opt)
    assert (length, atype) == (4 + 16, scenarios.rtnl.TCA_OPTIONS |
                               (1 << 15))
    inner_len, inner_type = struct.unpack_from("=HH", opt, 4)
    assert (inner_len, inner_type) == (16, scenarios.TCA_FQ_WEIGHTS)
    assert struct.unpack_from("=3i", opt, 8) == (49152, 16384, 16384)


def test_fq_small_weights_at_fqs_least_band_0_first(monkeypatch):
    w = scenarios.FQ_SMALL_WEIGHTS
    assert min(w) == scenarios.FQ_MIN_WEIGHT == 16384
    assert w[0] > w[1] == w[2]
    sent = []

    class Sock:
        def __init__(self, ns):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def ifindex(self, dev):
            return 7

        def qdisc(self, ifindex, options, **kw):
            sent.append((ifindex, options, kw))
            return scenarios.rtnl.Result(0, None, None)
    monkeypatch.setattr(scenarios.tclib, "tc", lambda *a, **k: None)
    monkeypatch.setattr(scenarios, "fq_has_bands", lambda: True)
    monkeypatch.setattr(scenarios, "_FQ_CLSACT", set())
    monkeypatch.setattr(scenarios.rtnl, "Rtnl", Sock)
    scenarios.install_fq_small_weights("ns", "eth0")
    assert sent == [(7, scenarios.fq_weights_option(w),
                     {"kind": "fq", "handle": 0x100000,
                      "parent": 0x10001})]
    sent.clear()
    scenarios.install_fq_small_weights("ns", "eth0", rate=None)
    assert sent[0][2]["parent"] == scenarios.rtnl.TC_H_ROOT


def test_fq_small_weights_refused_on_a_kernel_without_bands(monkeypatch):
    monkeypatch.setattr(scenarios.tclib, "tc", lambda *a, **k: None)
    monkeypatch.setattr(scenarios, "fq_has_bands", lambda: False)
    with pytest.raises(RuntimeError, match="no priority bands"):
        scenarios.install_fq_small_weights(None, "eth0")
