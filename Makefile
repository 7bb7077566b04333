# SPDX-License-Identifier: GPL-2.0
#
# parq: traffic control for shared clusters.
#
#   make            build the module, the tc plugin and user space
#   make demo       install what is missing, build, run the sender-side demo
#                   and a short version of experiments 1 and 2 (plots)
#   make experiments  install, build, run every experiment into RESULTS
#                   (default build/experiments): CSV, PNG, Markdown
#   make check      install what is missing, build, run every test
#   make quick      the developers' tier: fast unit, plugin and functional
#                   tests on a built tree (Documentation/development.md)
#   make fuzz       fuzz parqd's message parser for FUZZ_TIME seconds (clang)
#   make format     apply userspace/.clang-format (make format-check and make
#                   tidy, the .clang-tidy checks, are in make check)
#   make bench      the kernel benchmarks: reserved-flow dequeue cost,
#                   per-packet cost against the kernel's qdiscs (pktgen),
#                   the receive monitor under a spoofed-source flood, the
#                   local class's cost against its destinations, and
#                   parq_mpi's NetPIPE times with Open MPI's defaults
#   make bench-core the core's per-packet cost: ns (Google Benchmark) and
#                   instructions (callgrind), Documentation/benchmarks.md
#   make bench-admission  admissions per second of the cluster admission
#                   on etcd (one member and three, disjoint and shared paths)
#   make bench-parqd  what parqd costs a host: CPU per epoch (1 to 1 024
#                   peers) and per datagram, its epochs under a flood
#   make install    install the module (DKMS), tc plugin, parqd, parqctl,
#                   their systemd units, example configuration and man pages
#   make deb        the Debian packages parq and parq-dkms, in build/deb
#                   (Documentation/install.md); make deb-test installs them
#                   (in the VM), tests what they installed, removes them
#
# The module is built for `scripts/kver` (the running kernel when its headers
# are installed, else the newest installed Debian kernel: the one the VM
# boots).  Set KVER= or KDIR= to choose another.
#
# KERNEL=SERIES (e.g. `make kmod-lint selftest KERNEL=6.12`) builds and tests
# against the newest Debian kernel of that series instead, which
# scripts/kernel-fetch downloads once into /var/cache/parq/kernels (not
# installed: the tests boot it in the VM).  The module is then built in
# build/kmod/RELEASE, from a copy of kmod/'s sources, so that builds for
# different kernels never mix, and the tests load it from there (PARQ_KO).
# Documentation/kernels.md lists the kernels parq is tested on.

VERSION     := $(shell cat VERSION)
BUILD       := build
KERNEL      ?=
ifneq ($(KERNEL),)
ifeq ($(KERNEL),debug)
# Built by the kernel-debug target (the first time: about 30 minutes).
KVER        := $(shell scripts/kernel-debug --release)
# KASAN's shadow (an eighth of memory), its quarantine and kmemleak's
# records: a 4G guest leaves the tests about the room 2G leaves them on a
# stock kernel.
export VM_MEM ?= 4G
KDIR        ?= $(or $(PARQ_KERNEL_CACHE),/var/cache/parq/kernels)/$(KVER)/lib/modules/$(KVER)/build
else
KVER        := $(shell scripts/kernel-fetch $(KERNEL) | tail -n 1)
KDIR        ?= $(shell KVER=$(KVER) scripts/kver --kdir 2>/dev/null)
endif
ifeq ($(KVER),)
$(error no release for KERNEL=$(KERNEL))
endif
KMOD        := $(BUILD)/kmod/$(KVER)
export PARQ_KO := $(CURDIR)/$(KMOD)/sch_parq.ko
KMOD_ARGS   := KVER=$(KVER) KDIR=$(KDIR) PARQ_VERSION=$(VERSION)
# 5.10 and 7.2 build in a chroot with their own compiler (scripts/kbuild-run).
KBUILD_RUN  := scripts/kbuild-run $(KVER) --
# The debug kernel's module has the fault injection points the stress tests
# use (kmod/Kbuild); no other build has them.
ifeq ($(KERNEL),debug)
KMOD_ARGS   += PARQ_FAULT_INJECT=y
endif
else
KVER        ?= $(shell scripts/kver 2>/dev/null)
KMOD        := kmod
KMOD_ARGS   := KVER=$(KVER) PARQ_VERSION=$(VERSION)
endif
KMOD_LINT_LOG := $(BUILD)/kmod-lint$(if $(KERNEL),-$(KVER)).log
USERSPACE   := $(BUILD)/userspace
FUZZ        := $(BUILD)/fuzz
# The build tree without tests and sanitizers, for what measures time:
# the tools of the demo and the experiments, and bench-core's programs.
RELEASE     := $(BUILD)/release
# With Debian's hardening flags (dpkg-buildflags, hardening=+all), as
# the packages are built from this tree (make deb).
BUILDFLAG = $(shell DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get $(1) 2>/dev/null)
RELEASE_CMAKE := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARQ_BUILD_TESTS=OFF \
		 -DPARQ_SANITIZE=OFF -DPARQ_WERROR=ON \
		 -DCMAKE_C_FLAGS="$(call BUILDFLAG,CPPFLAGS) $(call BUILDFLAG,CFLAGS)" \
		 -DCMAKE_CXX_FLAGS="$(call BUILDFLAG,CPPFLAGS) $(call BUILDFLAG,CXXFLAGS)" \
		 -DCMAKE_EXE_LINKER_FLAGS="$(call BUILDFLAG,LDFLAGS)" \
		 -DCMAKE_SHARED_LINKER_FLAGS="$(call BUILDFLAG,LDFLAGS)"
# What a build can reuse from an earlier one, in any clone: ccache's objects
# (when ccache is installed; every CMake tree, the packages' too) and the
# stamps of the files clang-tidy passed (scripts/tidy-cached says what a
# stamp's hash covers).  PARQ_CACHE= turns both off.
PARQ_CACHE  ?= $(if $(filter 0,$(shell id -u)),/var/cache/parq,$(HOME)/.cache/parq)
ifneq ($(PARQ_CACHE),)
ifneq ($(shell command -v ccache 2>/dev/null),)
export CMAKE_C_COMPILER_LAUNCHER := ccache
export CMAKE_CXX_COMPILER_LAUNCHER := ccache
export CCACHE_DIR := $(PARQ_CACHE)/ccache
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
export CCACHE_MAXSIZE := 4G
endif
endif
BENCH_MIN_TIME ?= 0.2
FUZZ_TIME   ?= 60
DESTDIR     ?=
PREFIX      ?= /usr
# Where make install-lib puts libparq (GNUInstallDirs: the multiarch
# directory under /usr on Debian), written into its pkg-config file.
RELEASE_CMAKE += -DCMAKE_INSTALL_PREFIX=$(PREFIX)
VM_TIMEOUT  ?= 3000
SELFTEST_ARGS ?=
RESULTS     ?= $(BUILD)/experiments
# make experiments: which of them (exp1 ... exp8); empty, all.
EXPERIMENTS ?=

# Tests and the demo run on the host when it can load modules (and runs the
# KERNEL= kernel, if one is named), else in QEMU.
ON_KERNEL := $(shell scripts/host-can-load-modules && echo host || echo vm)
ifneq ($(KERNEL),)
ifneq ($(KVER),$(shell uname -r))
ON_KERNEL := vm
endif
endif
ifeq ($(ON_KERNEL),host)
IN_KERNEL :=
else
# Recursive, so that a target can set its own VM_TIMEOUT.
IN_KERNEL = scripts/vm-run --timeout $(VM_TIMEOUT) --kver $(KVER) --
endif

all: kmod plugin userspace

kmod: $(if $(KERNEL),kmod-tree)
	$(KBUILD_RUN) $(MAKE) -C $(KMOD) $(KMOD_ARGS)

# KERNEL=: the sources to build in $(KMOD), copied when newer.
kmod-tree: $(if $(filter debug,$(KERNEL)),kernel-debug)
	@mkdir -p $(KMOD)
	cd kmod && cp -pu --parents Makefile Kbuild \
		$$(find . -name '*.[ch]' ! -name '*.mod.c') $(CURDIR)/$(KMOD)/

# W=1 and sparse, with any warning failing the build.
kmod-lint: $(if $(KERNEL),kmod-tree)
	$(KBUILD_RUN) $(MAKE) -C $(KMOD) $(KMOD_ARGS) clean >/dev/null
	@mkdir -p $(BUILD)
	$(KBUILD_RUN) $(MAKE) -C $(KMOD) $(KMOD_ARGS) W=1 C=1 KCFLAGS=-Werror \
		>$(KMOD_LINT_LOG) 2>&1 || { cat $(KMOD_LINT_LOG); exit 1; }
	@cat $(KMOD_LINT_LOG)
	@! grep -E 'warning:|error:' $(KMOD_LINT_LOG)
	@! grep 'is not available or not up to date' $(KMOD_LINT_LOG) || \
		{ echo "kmod-lint: the kernel's make ran without sparse" >&2; exit 1; }

plugin:
	$(MAKE) -C tc-plugin

# The debug kernel (KASAN, lockdep, DEBUG_LIST, DEBUG_OBJECTS, kmemleak),
# built once from Debian's linux-source-6.1 into the kernel cache.
kernel-debug:
	scripts/install-deps debug
	scripts/kernel-debug

# checkpatch.pl --strict, from the kernel tree kernel-debug unpacks, on
# every file of the module (scripts/checkpatch-kmod says what it leaves
# out, and why).
kmod-checkpatch: kernel-debug
	scripts/checkpatch-kmod

# The developer build: unit tests, ASan and UBSan, -Werror.
userspace:
	cmake -S userspace -B $(USERSPACE) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DPARQ_DEVELOPER=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
	cmake --build $(USERSPACE) -j2

# parqd, parqctl, parq-bench, libparq and libparq-mpi (parq-libs: with
# their examples) as an operator would build them: the demo and the
# experiments time them (the default tree's are built with ASan and UBSan
# for the tests, which slows them, and under QEMU/TCG much more).
TOOLS_TARGETS ?= parqd parqctl parq-bench parq-libs
tools:
	cmake -S userspace -B $(RELEASE) $(RELEASE_CMAKE) >/dev/null
	cmake --build $(RELEASE) -j2 --target $(TOOLS_TARGETS)

# Two tests at a time, as the builds use two jobs: a test writes its files
# in a directory of its own, and a test that starts a server (etcd, a
# parqd) asks the kernel for a free port, which another test could take
# before the server binds it: unlikely, and a failure, never a false pass.
unit: userspace kmod-unit
	$(call CTEST,$(USERSPACE))

# ctest on the tree $(1), then the cases that skipped (GTEST_SKIP: not
# root, no IPv6, no python3), named: ctest counts an executable, whose
# cases it does not see.
CTEST = ctest --test-dir $(1) --output-on-failure -j2 && \
	{ grep -h '^\[  SKIPPED \] [A-Za-z]' \
	$(1)/Testing/Temporary/LastTest.log | sed 's/ (.*//' | sort -u | \
	sed 's/^\[  SKIPPED \]/ctest: skipped:/' || true; }

# The kernel glue's unit tests (kmod/tests): sch_parq's files compiled in
# user space against 6.1's headers, whose API the mock of the kernel
# models (KVER's when it is a 6.1, else fetched once by scripts/kernel-fetch),
# under ASan and UBSan; milliseconds.  T=name runs those whose name
# contains it.
kmod-unit:
	@k=$(KVER); case $$k in *-parq-debug) k= ;; 6.1.*) ;; *) k= ;; esac; \
	if [ -z "$$k" ]; then \
		k=$$(scripts/kernel-fetch 6.1) && k=$$(echo "$$k" | tail -n 1) && [ -n "$$k" ] || \
		{ echo "kmod-unit: no 6.1 headers: scripts/kernel-fetch 6.1 failed" >&2; exit 1; }; \
	fi; \
	$(MAKE) -C kmod/tests KVER=$$k OUT=$(CURDIR)/$(BUILD)/kmod-unit/$$k run

# The developers' tier, for the minutes between commits (within 10 minutes
# on a built tree): the fresh-machine test, the unit tests built without
# sanitizers (their own tree), the plugin's tests, and the functional
# selftests on the default kernel without the cases that judge timing
# (PARQ_QUICK=1, scripts/parqlab/ktap.py).  make check runs all of it and
# more; Documentation/development.md has the tiers.
QUICK := $(BUILD)/quick
# Only quick's own recipe sets it: one left in a shell must not take the
# timing cases out of make check.
unexport PARQ_QUICK
QUICK_SELFTESTS := parq_config parq_counters parq_credit parq_monitor \
		   parq_safety parq_unload parq_jobs parq_nft
quick: first-run-test unit-quick plugin-test py-lint py-unit layer-lint kmod ynl
	PARQ_QUICK=1 PARQ_USERSPACE_BUILD=$(QUICK) $(IN_KERNEL) \
		selftests/run --kmsg-check $(QUICK_SELFTESTS)

# make quick's functional selftests alone, without their timing cases, on
# the KERNEL= kernel (check-kernels) or the default one.
selftest-quick: kmod plugin ynl
	PARQ_QUICK=1 $(IN_KERNEL) selftests/run --kmsg-check $(QUICK_SELFTESTS)

unit-quick: kmod-unit
	cmake -S userspace -B $(QUICK) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DPARQ_BUILD_TESTS=ON -DPARQ_SANITIZE=OFF -DPARQ_WERROR=ON >/dev/null
	cmake --build $(QUICK) -j2
	$(call CTEST,$(QUICK))

# One C++ style for userspace/: its .clang-format (layout) and .clang-tidy
# (bugs, needless copies, Google's naming), both in make check.  make format
# applies the layout.
USERSPACE_SOURCES = $(shell git ls-files 'userspace/*.cc' 'userspace/*.h' 2>/dev/null)
format:
	clang-format -i $(USERSPACE_SOURCES)
format-check:
	clang-format --dry-run -Werror $(USERSPACE_SOURCES)
tidy: userspace
	scripts/tidy-cached -p $(USERSPACE) -j2 --log $(BUILD)/tidy.log \
		$(if $(PARQ_CACHE),--cache $(PARQ_CACHE)/tidy) '$(CURDIR)/userspace/'

# libFuzzer on parqd's credit message decoder and receive path, built with
# clang (ASan+UBSan) in its own build tree, for FUZZ_TIME seconds from the
# generated seeds; the corpus grows in $(FUZZ)/corpus across runs.  Exits
# non-zero on a crash, leak or broken invariant (reproducer: $(FUZZ)/crash-*).
fuzz:
	scripts/install-deps fuzz
	cmake -S userspace -B $(FUZZ) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
		-DPARQ_FUZZ=ON -DPARQ_BUILD_TESTS=OFF -DPARQ_SANITIZE=ON \
		-DPARQ_WERROR=ON >/dev/null
	cmake --build $(FUZZ) -j2 --target fuzz_wire fuzz_wire_seeds
	rm -rf $(FUZZ)/seeds && mkdir -p $(FUZZ)/seeds $(FUZZ)/corpus
	$(FUZZ)/parqd/fuzz/fuzz_wire_seeds $(FUZZ)/seeds
	$(FUZZ)/parqd/fuzz/fuzz_wire -max_total_time=$(FUZZ_TIME) -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(FUZZ)/ \
		$(FUZZ)/corpus $(FUZZ)/seeds

# Admissions per second against etcd started by the script (one member,
# then three, on 127.0.0.1), built without sanitizers.
bench-admission:
	scripts/install-deps bench
	cmake -S userspace -B $(RELEASE) $(RELEASE_CMAKE) >/dev/null
	cmake --build $(RELEASE) -j2 --target parq-admission-bench
	scripts/bench/admission

bench-parqd:
	scripts/install-deps bench
	cmake -S userspace -B $(RELEASE) $(RELEASE_CMAKE) >/dev/null
	cmake --build $(RELEASE) -j2 --target parq-parqd-bench
	$(RELEASE)/parqd/parq-parqd-bench

plugin-test: plugin
	$(MAKE) -C tc-plugin test

MAN_PAGES := Documentation/tc-parq.8 Documentation/parqd.8 \
	     Documentation/parqctl.8 Documentation/parqd.toml.5 \
	     Documentation/parq_mpi.3 Documentation/libparq.3
man-lint:
	for m in $(MAN_PAGES); do groff -man -ww -z $$m || exit 1; done

# The systemd units as make install-user installs them (staged): anything
# systemd-analyze verify says of them (an unknown key is only a warning
# there, an error here), their commands pointed at the staged binaries;
# and parqd.service's exposure (systemd-analyze security), at most 2.5.
UNIT_STAGE := $(BUILD)/unit-stage
UNITS := parqd.service parq-jobs-sweep.service parq-jobs-sweep.timer \
	parq-nft.service
unit-lint: tools
	rm -rf $(UNIT_STAGE)
	$(MAKE) --no-print-directory install-user \
		DESTDIR=$(CURDIR)/$(UNIT_STAGE) >/dev/null
	mkdir -p $(UNIT_STAGE)/verify
	for u in $(UNITS); do \
		sed 's|/usr/sbin/|$(CURDIR)/$(UNIT_STAGE)/usr/sbin/|g' \
		$(UNIT_STAGE)$(UNITDIR)/$$u >$(UNIT_STAGE)/verify/$$u || exit 1; \
	done
	cd $(UNIT_STAGE)/verify && out=$$(systemd-analyze verify --man=no \
		$(UNITS) 2>&1) && [ -z "$$out" ] || { echo "$$out"; exit 1; }
	out=$$(systemd-analyze security --offline=true --threshold=25 \
		$(UNIT_STAGE)$(UNITDIR)/parqd.service 2>&1); rc=$$?; \
		echo "$$out" | tail -n 1; exit $$rc

# README's make demo and make experiments on a machine with nothing
# installed yet (stubs in a scratch tree: no package is installed).
first-run-test:
	scripts/test-first-run

# flake8 (pyflakes and pycodestyle, Debian's defaults) on every Python
# file of the harness, the experiments and the scripts (by extension, or by
# a python3 shebang; the parqlab links are the package itself).
py-lint:
	flake8 $$(git ls-files scripts selftests tc-plugin | while read -r f; do \
		[ -L "$$f" ] && continue; \
		case $$f in *.py) echo "$$f" ;; *.*) ;; \
		*) head -n 1 "$$f" | grep -q python && echo "$$f" ;; esac; \
	done)

# parqlab's unit tests (ktap's clean-ups, the parameter table as tc prints
# it): no kernel, milliseconds.
py-unit: plugin ynl
	cd scripts && /usr/bin/python3 -m pytest -q -p no:cacheprovider \
		test_parqlab.py

# parqd's libraries include only what they link (development.md, "parqd's
# libraries"), and link no cycle.
layer-lint:
	scripts/check-parqd-layers

# The kernel's YNL tools (linux-source-6.12's tools/net/ynl), fetched once:
# ynl-gen for scripts/ynl-regen, the YNL library for the selftests.
ynl:
	scripts/kernel-fetch ynl >/dev/null

# The parq family's UAPI header and kernel policies are what the kernel's
# ynl-gen makes of its spec (scripts/ynl-regen writes them).
spec-lint: ynl
	scripts/ynl-regen --check

# SELFTEST_QUICK=1: without the cases that judge timing (PARQ_QUICK=1).
# Only a command line sets it, as PARQ_QUICK above.
unexport SELFTEST_QUICK
selftest: kmod plugin ynl
	$(if $(filter 1,$(SELFTEST_QUICK)),PARQ_QUICK=1) $(IN_KERNEL) \
		selftests/run --kmsg-check $(SELFTEST_ARGS)

# Benchmarks print figures and assert nothing; the last is the selftests'
# figure (PARQ_FIGURES, scripts/parqlab/ktap.py) that make check leaves out,
# after the case that checks the MPI job is classified and times it idle.
bench: kmod plugin userspace ynl
	$(IN_KERNEL) scripts/bench/resv-dequeue
	$(IN_KERNEL) scripts/bench/pktgen-qdisc
	$(IN_KERNEL) scripts/bench/monitor-flood
	$(IN_KERNEL) scripts/bench/local-dest
	PARQ_FIGURES=1 PARQ_CASES="parallel at A|Open MPI's defaults" \
		$(IN_KERNEL) selftests/run parq_mpi

# The scheduling core's per-packet operations, in a build tree of their own
# without sanitizers: Google Benchmark (ns/packet, depends on the machine),
# then callgrind (instructions/packet, the same on every run).
bench-core:
	scripts/install-deps bench
	cmake -S userspace -B $(RELEASE) $(RELEASE_CMAKE) >/dev/null
	cmake --build $(RELEASE) -j2 --target parq-corebench parq-core-percall
	@mkdir -p $(BUILD)/bench
	$(RELEASE)/corebench/parq-corebench --benchmark_min_time=$(BENCH_MIN_TIME) \
		--benchmark_out=$(BUILD)/bench/corebench.json --benchmark_out_format=json
	scripts/bench/core-instructions --percall $(RELEASE)/corebench/parq-core-percall \
		--json $(BUILD)/bench/core-instructions.json
	@echo "bench-core: ns/packet in $(BUILD)/bench/corebench.json," \
		"instructions/packet in $(BUILD)/bench/core-instructions.json"

# The demo ends with scripts/experiments/run --quick exp1 exp2 (into
# build/demo/experiments).  It builds what it runs and nothing else: the
# module, the plugin and the release tools (no unit tests, no sanitizers).
#
# demo and experiments install their packages first, then run the rest in
# a new make: KVER, KDIR, ON_KERNEL and the build flags are expanded when a
# make starts, and on a fresh machine the kernel, its headers and
# dpkg-buildflags exist only once install-deps has run.
# (scripts/test-first-run checks this in make check.)
demo:
	scripts/install-deps demo
	$(MAKE) demo-run

demo-run: kmod plugin tools
	PARQ_USERSPACE_BUILD=$(RELEASE) $(IN_KERNEL) scripts/demo

# Every experiment, full size (Documentation/experiments.md): 20 minutes
# under QEMU/TCG on a quiet 2-core host.
experiments:
	scripts/install-deps experiments
	$(MAKE) experiments-run

experiments-run: VM_TIMEOUT = 7200
experiments-run: kmod plugin tools
	PARQ_USERSPACE_BUILD=$(RELEASE) $(IN_KERNEL) scripts/experiments/run \
		--out $(RESULTS) $(EXPERIMENTS)

# The simulation at cluster scale (Documentation/simulation.md): on the
# host, no VM; SIM_ARGS=--quick for 64 and 128 hosts only.
sim:
	scripts/install-deps experiments
	cmake -S userspace -B $(RELEASE) $(RELEASE_CMAKE) >/dev/null
	cmake --build $(RELEASE) -j2 --target parq-sim
	scripts/experiments/sim_scale.py --sim $(RELEASE)/sim/parq-sim \
		--out $(BUILD)/sim $(SIM_ARGS)

deps:
	scripts/install-deps check

# The Debian packages, installed in the VM on 6.1: DEB_TESTS run there
# against what they installed (make deb-test), not again from the tree.
# The whole suite on 6.1 but those, the stress tests and the netlink
# fuzzer, which run on 6.1 under the debug kernel instead (at a 32nd and 4 000
# messages: KASAN, lockdep and kmemleak judge each step there, where each
# step is several times slower), the 100 000-class scale test at a quarter
# (25 000 classes within 30 s; make selftest runs it whole); on 6.12 every
# test of the module's interfaces (the fuzzer at 2x10^4, the stress tests
# at an eighth) without their timing cases, the scale test's bound among
# them (SELFTEST_QUICK: 6.1 judges those, of the same kmod/core), and not
# the nine that time user space and the scheduling policy (CHECK_612_EXCEPT:
# parqd's protocol over netlink calls that parq_credit and parq_monitor
# test there, parqd's admission over etcd, which installs its classes with
# tc as parq_resv does there, and latency and rate shares decided by
# kmod/core, the same code on both kernels, the demo's first table and the
# shaper against htb among them; parq_mpi's job marking is parq_jobs' on
# 6.12).
# The user space under test on 6.1: parqd's credit roles against the
# kernel's monitor and credits (CHECK_61_ASAN) from the ASan and UBSan
# tree, the rest from the release tree, as operators build it (make
# tools): under QEMU/TCG a sanitized binary takes about 0.5 s longer to
# start, 40 % of the time of a test that runs parqctl often.  parqd's
# admission role runs sanitized in ctest, against a real etcd and a model
# of the qdisc; against sch_parq (parq_cluster) only in a plain make
# selftest.  parq_parqd runs against the packages' build (DEB_TESTS).
# On 6.12 and under the debug kernel, the sanitized tree.
# make check-debug runs it all under the debug kernel in full.  libFuzzer
# gets 30 s.  All this within a budget of 60 minutes on a 2-core host
# (56 min here: Documentation/development.md has each phase's time
# and where it goes); each phase prints its time ("check: ... s").
CHECK_61_EXCEPT := parq_stress parq_nlfuzz
CHECK_61_ASAN := parq_receiver
CHECK_612_EXCEPT := parq_receiver parq_parqd parq_experiments parq_demo \
		    parq_isolation parq_share parq_mpi parq_cluster parq_shaper
PHASE = t0=$$(date +%s); trap 'echo "check: $(1): $$(( $$(date +%s) - t0 )) s"' EXIT;
check:
	@$(call PHASE,packages) scripts/install-deps check
	@mkdir -p $(BUILD)
	@$(call PHASE,W=1 and sparse on 6.1 and 6.12) \
		$(MAKE) kmod-lint && \
		$(MAKE) kmod-lint KERNEL=6.12 PARQ_FAULT_INJECT=y
	@$(call PHASE,build unit tests lint tidy fuzz) \
		$(MAKE) all unit plugin-test man-lint unit-lint spec-lint layer-lint \
		py-lint py-unit \
		first-run-test format-check tidy fuzz FUZZ_TIME=30
	@$(call PHASE,the packages on 6.1) $(MAKE) deb-test
	@$(call PHASE,selftests on 6.1) \
		export PARQ_FIGURES=0 PARQ_STRESS_SCALE=0.25; rc=0; \
		$(if $(CHECK_61_ASAN),PARQ_USERSPACE_BUILD=$(USERSPACE) \
		$(MAKE) selftest SELFTEST_QUICK= \
		SELFTEST_ARGS="$(CHECK_61_ASAN)" || rc=1;) \
		$(MAKE) tools && \
		PARQ_USERSPACE_BUILD=$(RELEASE) $(MAKE) selftest SELFTEST_QUICK= \
		SELFTEST_ARGS="$(addprefix --except ,$(CHECK_61_EXCEPT) $(DEB_TESTS) $(CHECK_61_ASAN))" || \
		rc=1; exit $$rc
	@$(call PHASE,selftests on 6.12) \
		PARQ_STRESS_SCALE=0.125 PARQ_NLFUZZ_MESSAGES=20000 \
		$(MAKE) selftest KERNEL=6.12 SELFTEST_QUICK=1 \
		SELFTEST_ARGS="$(addprefix --except ,$(CHECK_612_EXCEPT))"
	@$(call PHASE,checkpatch; stress and fuzzer under the debug kernel) \
		$(MAKE) kmod-checkpatch && \
		PARQ_STRESS_SCALE=0.03125 PARQ_NLFUZZ_MESSAGES=4000 \
		$(MAKE) selftest-stress KERNEL=debug

# The kernels users run besides 6.1 and 6.12 (Documentation/kernels.md):
# for each series in KERNELS, scripts/kernel-fetch (once: the image, the
# headers and a chroot of the suite with the compiler the kernel was built
# with), W=1 and sparse against its headers, then make quick's functional
# selftests (PARQ_QUICK=1) in the VM booting it, with the user space of
# build/userspace.  Each kernel prints its time ("check: ... s").
KERNELS ?= 5.10 7.2
check-kernels:
	scripts/install-deps kernels
	$(MAKE) userspace plugin
	@for k in $(KERNELS); do \
		( $(call PHASE,W=1 sparse and functional selftests on $$k) \
		  $(MAKE) kmod-lint KERNEL=$$k && \
		  $(MAKE) selftest-quick KERNEL=$$k ) || exit 1; \
	done

# The stress tests and the netlink fuzzer alone, then a kmemleak scan: what
# make check runs under the debug kernel (KERNEL=debug).
selftest-stress: kmod plugin userspace ynl
	$(IN_KERNEL) selftests/run --kmsg-check --kmemleak --timeout 1800 \
		parq_stress parq_nlfuzz

# Every selftest under the debug kernel, then a kmemleak scan: the stress
# loops in full, the netlink fuzzer at 2x10^4 messages (10^5 take half an
# hour there: make fuzz-debug).  About 3.5 hours on this 2-core host:
# DEBUG_TESTS="parq_x parq_y" runs those files only.  The
# time limit goes to the sub-make on its command line: a target-specific
# value would not reach it.
DEBUG_TESTS ?=
check-debug:
	scripts/install-deps check
	$(MAKE) all
	PARQ_NLFUZZ_MESSAGES=20000 $(MAKE) selftest KERNEL=debug \
		VM_TIMEOUT=14400 SELFTEST_ARGS="--kmemleak $(DEBUG_TESTS)"

# The netlink fuzzer alone under the debug kernel at its full 10^5
# messages, then a kmemleak scan.  The sub-make builds the module and the
# plugin for the debug kernel.
fuzz-debug: userspace
	$(MAKE) selftest KERNEL=debug VM_TIMEOUT=3600 \
		SELFTEST_ARGS="--kmemleak --timeout 1200 parq_nlfuzz"

# make install: the module through DKMS (built now for KVER, and by DKMS
# for every kernel installed later), the tc plugin and tc-parq(8),
# install-user's part and install-lib's.  DESTDIR= stages it all (the
# module's source in /usr/src, as parq-dkms installs it).  make install-module: the module
# built here into KVER's updates/, for a host without DKMS.
install: install-preflight plugin install-user install-lib install-dkms
	$(MAKE) -C tc-plugin DESTDIR=$(DESTDIR) install

# Before anything is installed: what would stop it halfway.
install-preflight:
	@[ -z "$(KERNEL)" ] || { echo "make install: not with KERNEL= (that kernel is not installed)" >&2; exit 1; }
	@[ -n "$(DESTDIR)" ] || command -v dkms >/dev/null || { echo "make install: dkms is missing (apt-get install dkms), or make install-module" >&2; exit 1; }

DKMS_SRC = $(abspath $(DESTDIR)/usr/src/parq-$(VERSION))
install-dkms-source:
	rm -rf $(DKMS_SRC)
	install -d $(DKMS_SRC)/kmod
	cd kmod && cp --parents Makefile Kbuild \
		$$(find . -path ./tests -prune -o -name '*.[ch]' ! -name '*.mod.c' -print) \
		$(DKMS_SRC)/kmod/
	sed 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' dkms.conf \
		>$(DKMS_SRC)/dkms.conf

install-dkms: install-preflight
	if [ -z "$(DESTDIR)" ] && [ -n "$$(dkms status -m parq -v $(VERSION))" ]; then \
		dkms remove -m parq -v $(VERSION) --all; \
	fi
	$(MAKE) install-dkms-source
	[ -n "$(DESTDIR)" ] || dkms install -m parq -v $(VERSION) -k $(KVER)

install-module: kmod
	@[ -z "$(KERNEL)" ] || { echo "make install-module: not with KERNEL= (that kernel is not installed)" >&2; exit 1; }
	$(MAKE) -C kmod KVER=$(KVER) INSTALL_MOD_PATH=$(DESTDIR) modules_install
	[ -n "$(DESTDIR)" ] || depmod -a $(KVER)

# What runs in user space, from the release build (make tools): parqd and
# parqctl, their systemd units and user, the example configuration, the
# man pages and the operator's documentation.  Without DESTDIR it also
# creates the parqd user and reloads systemd.
UNITDIR     ?= /lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
DOCDIR      ?= $(PREFIX)/share/doc/parq
MANDIR      ?= $(PREFIX)/share/man
install-user: tools
	install -D -m 755 $(RELEASE)/parqd/parqd $(DESTDIR)$(PREFIX)/sbin/parqd
	install -D -m 755 $(RELEASE)/parqd/parqctl $(DESTDIR)$(PREFIX)/sbin/parqctl
	install -D -m 644 -t $(DESTDIR)$(UNITDIR) userspace/parqd/parqd.service \
		userspace/parqd/parq-jobs-sweep.service \
		userspace/parqd/parq-jobs-sweep.timer userspace/parqd/parq-nft.service
	install -D -m 644 userspace/parqd/parqd.sysusers \
		$(DESTDIR)$(SYSUSERSDIR)/parqd.conf
	install -D -m 644 userspace/parqd/parqd.toml.example \
		$(DESTDIR)$(DOCDIR)/examples/parqd.toml
	install -D -m 644 -t $(DESTDIR)$(DOCDIR) Documentation/parqd.md \
		Documentation/parqd-protocol.md Documentation/admission.md \
		Documentation/topology.example.toml
	install -D -m 644 -t $(DESTDIR)$(MANDIR)/man8 Documentation/parqd.8 \
		Documentation/parqctl.8
	install -D -m 644 -t $(DESTDIR)$(MANDIR)/man5 Documentation/parqd.toml.5
	install -d -m 755 $(DESTDIR)/etc/parq
	if [ -z "$(DESTDIR)" ]; then \
		systemd-sysusers $(SYSUSERSDIR)/parqd.conf && \
		{ [ ! -d /run/systemd/system ] || systemctl daemon-reload; }; \
	fi

# libparq (its shared library, header, pkg-config file, example and
# libparq(3)) and, when MPI's C library was found, libparq-mpi
# (parq_mpi(3)), from the release build, under PREFIX: the components
# the packages of the same names hold (userspace/libparq/CMakeLists.txt).
# LIB_DESTDIR stages each component apart, % standing for its name
# (debian/rules: debian/%).
LIB_COMPONENTS := libparq1 libparq-dev libparq-mpi1 libparq-mpi-dev
LIB_DESTDIR ?= $(DESTDIR)
install-lib: tools
	for c in $(LIB_COMPONENTS); do \
		DESTDIR=$(subst %,$$c,$(LIB_DESTDIR)) \
			cmake --install $(RELEASE) --component $$c || exit 1; \
	done
	[ -n "$(LIB_DESTDIR)" ] || ldconfig

# Debian packages, parq (tools), parq-dkms (the module's source) and the
# libraries' four (install-lib's components), built with debhelper (debian/) from this tree: the release build (make
# tools) is theirs, and the packages, .buildinfo and .changes go to
# build/deb.  Any error or warning of lintian's fails the build.  make
# check installs them in the VM, runs selftests against what they
# installed and removes them (make deb-test).
DEB := $(abspath $(BUILD)/deb)
DEB_ARCH = $(shell dpkg-architecture -qDEB_HOST_ARCH)
deb:
	scripts/install-deps deb
	rm -rf $(DEB) && mkdir -p $(DEB)
	PARQ_DEB_DIR=$(DEB) dpkg-buildpackage -b -us -uc --no-pre-clean \
		--buildinfo-option=-u$(DEB) --changes-option=-u$(DEB) \
		--buildinfo-file=$(DEB)/parq_$(VERSION)_$(DEB_ARCH).buildinfo \
		--changes-file=$(DEB)/parq_$(VERSION)_$(DEB_ARCH).changes \
		>$(DEB)/build.log 2>&1 || { tail -n 40 $(DEB)/build.log; exit 1; }
	lintian --allow-root --fail-on error,warning \
		$(DEB)/parq_$(VERSION)_$(DEB_ARCH).changes
	@ls $(DEB)/*.deb

# Install the packages, run DEB_TESTS against what they installed, remove
# them (scripts/deb-test): in the VM, whose root is a throw-away overlay.
DEB_TESTS ?= parq_config parq_parqd
deb-test: deb ynl
	$(IN_KERNEL) scripts/deb-test $(DEB) $(DEB_TESTS)

clean:
	$(MAKE) -C kmod KVER=$(KVER) clean
	$(MAKE) -C tc-plugin clean
	rm -rf $(BUILD)

.PHONY: all install-lib ynl kmod kmod-tree kmod-lint kmod-unit check-kernels selftest-quick kmod-checkpatch plugin userspace unit format format-check tidy plugin-test man-lint spec-lint layer-lint py-lint py-unit \
	selftest bench bench-core bench-admission bench-parqd tools demo demo-run experiments experiments-run \
	first-run-test quick unit-quick deps check install \
	install-user unit-lint install-preflight install-dkms install-dkms-source install-module deb deb-test \
	clean fuzz kernel-debug selftest-stress check-debug fuzz-debug sim
