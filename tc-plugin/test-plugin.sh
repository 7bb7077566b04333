#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tests of the q_parq.so tc plugin with the system's tc, KTAP output.
#
#   make -C tc-plugin test      (or: bash tc-plugin/test-plugin.sh)
#
# tc runs with TC_LIB_DIR pointing here and with test-print.so preloaded,
# which keeps every qdisc/class change request away from the kernel (it is
# recorded and acknowledged instead) and answers dump requests with
# messages made up by the test.  So the tests need neither the sch_parq
# module nor privileges, and change nothing on the machine; they check:
#  - the usage text, and that it matches the man page's SYNOPSIS;
#  - that every bad input fails, naming the offending token, before
#    anything is sent;
#  - the netlink encoding of good inputs (types, lengths, NLA_F_NESTED,
#    only the given parameters);
#  - tc qdisc show / -j / -s / -s -j output of made-up dumps, and that the
#    printed parameters parse back to the same attributes.
# Attribute numbers and the xstats layout are read from linux/parq.h.
set -u

DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$DIR/.." && pwd)
HDR=$TOP/kmod/include/uapi/linux/parq.h
MAN=$TOP/Documentation/tc-parq.8
TC=${TC:-tc}
DEV=lo
SHIM=$DIR/test-print.so
export TC_LIB_DIR=$DIR

for f in q_parq.so test-print.so; do
	if [ ! -f "$DIR/$f" ]; then
		make -s -C "$DIR" "$f" >&2 || { echo "Bail out! cannot build $f"; exit 1; }
	fi
done
if ! command -v python3 >/dev/null || ! command -v "$TC" >/dev/null; then
	echo "TAP version 13"
	echo "1..0 # SKIP python3 and tc are needed"
	exit 0
fi

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CAP=$W/capture
IFINDEX=$(cat /sys/class/net/$DEV/ifindex)

# ---- netlink helper: encodes dumps, decodes captured requests ----
cat >"$W/nl.py" <<'PYEOF'
import json, re, struct, sys

HDR = sys.argv[1]
cmd = sys.argv[2]
args = sys.argv[3:]

NLA_F_NESTED = 0x8000
RTM_NEWQDISC, RTM_NEWTCLASS = 36, 40
TCA_KIND, TCA_OPTIONS, TCA_STATS2 = 1, 2, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP = 1, 3, 4

# --- what linux/parq.h defines ---
text = open(HDR).read()
text = re.sub(r'/\*.*?\*/', '', text, flags=re.S).replace('\\\n', ' ')
consts = {}
def cval(expr):
    expr = re.sub(r'(\d+)U?LL?\b', r'\1', expr)
    return eval(expr, {'PARQ_DSCP_BIT': lambda d: 1 << d}, consts)
for m in re.finditer(r'^#define\s+(\w+)\s+(.+)$', text, re.M):
    try:
        consts[m.group(1)] = cval(m.group(2))
    except Exception:
        pass
for body in re.findall(r'enum\s*\w*\s*\{(.*?)\}', text, re.S):
    for i, name in enumerate(n.strip() for n in body.split(',') if n.strip()):
        consts[name] = i
XSTATS = re.findall(r'__(u32|u64)\s+(\w+);',
                    re.search(r'struct tc_parq_xstats\s*\{(.*?)\}', text,
                              re.S).group(1))
FMT = {'THRESHOLD': 'I', 'UNIT': 'B', 'RATE': 'Q', 'OVERHEAD': 'i',
       'SPLIT_GSO': 'B', 'LIMIT': 'I', 'FLOW_LIMIT': 'I',
       'DSCP_PARALLEL': 'Q', 'DEFAULT_CLASS': 'B'}
ATTR = {n: consts['TCA_PARQ_' + n] for n in FMT}
NAME = {v: k for k, v in ATTR.items()}

def value(v):
    return consts[v] if isinstance(v, str) else v

def rta(t, payload):
    hdr = struct.pack('=HH', 4 + len(payload), t)
    return hdr + payload + b'\0' * (-len(payload) % 4)

def rtas(buf):
    out = []
    while len(buf) >= 4:
        ln, t = struct.unpack_from('=HH', buf)
        if ln < 4 or ln > len(buf):
            raise ValueError('bad rtattr length %d' % ln)
        out.append((t, buf[4:ln]))
        buf = buf[(ln + 3) & ~3:]
    if buf:
        raise ValueError('%d trailing bytes' % len(buf))
    return out

def opts_blob(opts):
    return b''.join(rta(ATTR[k], struct.pack('=' + FMT[k], value(v)))
                    for k, v in opts.items())

def mkdump(out, spec):
    blob = b''
    for m in json.loads(spec):
        body = rta(TCA_KIND, m.get('kind', 'parq').encode() + b'\0')
        if 'options' in m:
            flag = NLA_F_NESTED if m.get('nested', True) else 0
            body += rta(TCA_OPTIONS | flag, opts_blob(m['options']) +
                        b''.join(rta(t, bytes.fromhex(h))
                                 for t, h in m.get('extra', [])))
        if 'xstats' in m:
            xs = b''.join(struct.pack('=' + ('I' if t == 'u32' else 'Q'),
                                      m['xstats'].get(n, 0))
                          for t, n in XSTATS)
            ln = m.get('xstats_len', len(xs))
            xs = (xs + b'\xa5' * ln)[:ln]
            st = (rta(TCA_STATS_BASIC, struct.pack('=QI', 1000, 10)) +
                  rta(TCA_STATS_QUEUE, struct.pack('=5I', 0, 0, 0, 0, 0)) +
                  rta(TCA_STATS_APP, xs))
            body += rta(TCA_STATS2 | NLA_F_NESTED, st)
        qdisc = m.get('msg', 'qdisc') == 'qdisc'
        tcm = struct.pack('=BBHiIII', 0, 0, 0, m['ifindex'], m['handle'],
                          m['parent'], m.get('info', 1))
        payload = tcm + body
        blob += struct.pack('=IHHII', 16 + len(payload),
                            RTM_NEWQDISC if qdisc else RTM_NEWTCLASS,
                            0, 0, 0) + payload
    open(out, 'wb').write(blob)

def options(buf, strict):
    """The parq options of the first message in buf."""
    if len(buf) < 16:
        raise ValueError('nothing was sent')
    ln = struct.unpack_from('=I', buf)[0]
    if strict and ln != len(buf):
        raise ValueError('%d bytes captured, one message of %d expected'
                         % (len(buf), ln))
    attrs = rtas(buf[16 + 20:ln])
    kinds = [p for t, p in attrs if t == TCA_KIND]
    if kinds != [b'parq\0']:
        raise ValueError('TCA_KIND %r' % kinds)
    nest = [(t, p) for t, p in attrs if t & 0x7fff == TCA_OPTIONS]
    if len(nest) != 1:
        raise ValueError('%d TCA_OPTIONS' % len(nest))
    if strict and not nest[0][0] & NLA_F_NESTED:
        raise ValueError('TCA_OPTIONS without NLA_F_NESTED')
    got = {}
    for t, p in rtas(nest[0][1]):
        if t not in NAME:
            if strict:
                raise ValueError('unknown attribute %d' % t)
            continue
        n = NAME[t]
        if n in got:
            raise ValueError('%s twice' % n)
        if len(p) != struct.calcsize('=' + FMT[n]):
            raise ValueError('%s has %d bytes' % (n, len(p)))
        got[n] = struct.unpack('=' + FMT[n], p)[0]
    return got

def decode(path, strict=True):
    return options(open(path, 'rb').read(), strict)

def parse_expect(words):
    exp = {}
    for w in words.split():
        k, v = w.split('=', 1)
        exp[k] = cval(v)
    return exp

def fail(msg):
    print(msg)
    sys.exit(1)

def parq_qdisc(path):
    data = json.load(open(path))
    q = [o for o in data if o.get('kind') == 'parq']
    if len(q) != 1:
        fail('%d parq qdiscs in %s' % (len(q), data))
    return q[0]

def text_xstats(path):
    """key value pairs of the lines after the backlog line."""
    lines = open(path).read().splitlines()
    idx = [i for i, l in enumerate(lines) if l.strip().startswith('backlog')]
    if not idx:
        fail('no backlog line')
    words = ' '.join(lines[idx[0] + 1:]).split()
    if len(words) % 2:
        fail('odd number of words: %s' % words)
    d = {}
    for k, v in zip(words[::2], words[1::2]):
        if k in d:
            fail('%s twice' % k)
        d[k] = int(v)
    return d

if cmd == 'mkdump':
    mkdump(args[0], args[1])
elif cmd == 'check-enc':
    try:
        got = decode(args[0])
    except (ValueError, struct.error) as e:
        fail(str(e))
    exp = parse_expect(args[1])
    if got != exp:
        fail('got %s, expected %s' % (got, exp))
elif cmd == 'same-opts':
    # args: a dump file, a capture file
    try:
        a, b = decode(args[0], False), decode(args[1])
    except (ValueError, struct.error) as e:
        fail(str(e))
    if a != b:
        fail('%s != %s' % (a, b))
elif cmd == 'check-json-opts':
    got = parq_qdisc(args[0]).get('options')
    exp = json.loads(args[1])
    if got != exp:
        fail('options %s, expected %s' % (got, exp))
elif cmd == 'check-xstats':
    # args: text output, json output, expected {key: value}
    exp = json.loads(args[2])
    t = text_xstats(args[0])
    if t != exp:
        fail('text xstats %s, expected %s' % (t, exp))
    q = parq_qdisc(args[1])
    j = {k: q[k] for k in exp if k in q}
    if j != exp:
        fail('json xstats %s, expected %s' % (j, exp))
    known = {n for _, n in XSTATS} | {'xstats_version'}
    extra = [k for k in q if k in known and k not in exp]
    if extra:
        fail('json has unexpected %s' % extra)
else:
    fail('unknown command ' + cmd)
PYEOF
nl() { python3 "$W/nl.py" "$HDR" "$@"; }

# ---- KTAP bookkeeping (results are printed at the end, after the plan) ----
RESULTS=()
N=0
FAILED=0
pass() { N=$((N + 1)); RESULTS+=("ok $N - $1"); }
fail() {
	local desc=$1 line
	shift
	N=$((N + 1))
	FAILED=$((FAILED + 1))
	RESULTS+=("not ok $N - $desc")
	while IFS= read -r line; do
		RESULTS+=("# $line")
	done < <(printf '%s\n' "$@")
}

# run_tc ARGS...: tc with the shim; sets RC, OUT, ERR; requests go to $CAP.
run_tc() {
	: >"$CAP"
	LD_PRELOAD=$SHIM PARQ_TEST_CAPTURE=$CAP PARQ_TEST_DUMP=$W/dump \
		"$TC" "$@" >"$W/out" 2>"$W/err"
	RC=$?
	OUT=$(cat "$W/out")
	ERR=$(cat "$W/err")
}

# bad DESC EXPECTED-STDERR-SUBSTRING PARQ-ARGS...
bad() {
	local desc=$1 want=$2
	shift 2
	run_tc qdisc add dev $DEV root handle 1: parq "$@"
	if [ $RC -ne 0 ] && [[ $ERR == *"$want"* ]] && [ ! -s "$CAP" ]; then
		pass "rejects $desc"
	else
		fail "rejects $desc" "rc=$RC, stderr: $ERR" \
			"expected: $want; sent $(stat -c %s "$CAP") bytes"
	fi
}

# good DESC EXPECTED-ATTRS PARQ-ARGS...  (EXPECTED-ATTRS: NAME=VALUE ...)
good() {
	local desc=$1 want=$2 msg
	shift 2
	run_tc qdisc add dev $DEV root handle 1: parq "$@"
	if [ $RC -ne 0 ] || [ -n "$ERR" ]; then
		fail "encodes $desc" "rc=$RC, stderr: $ERR"
	elif msg=$(nl check-enc "$CAP" "$want"); then
		pass "encodes $desc"
	else
		fail "encodes $desc" "$msg"
	fi
}

# ---- usage ----
run_tc qdisc add dev $DEV root handle 1: parq help
if [ $RC -ne 0 ] && [[ $ERR == "Usage: ... parq [ threshold N | inf ]"* ]] &&
   [ -z "$OUT" ] && [ ! -s "$CAP" ]; then
	pass "help prints the usage to stderr and fails"
else
	fail "help prints the usage to stderr and fails" "rc=$RC, stdout: $OUT" "stderr: $ERR"
fi
USAGE=$ERR

if command -v groff >/dev/null; then
	warn=$(groff -man -ww -z "$MAN" 2>&1)
	if [ -z "$warn" ]; then
		pass "man page renders without warnings"
	else
		fail "man page renders without warnings" "$warn"
	fi
	# The grammar of the usage (up to the empty line) and the SYNOPSIS.
	syn=$(groff -man -Tutf8 -P-cbou "$MAN" 2>/dev/null |
		sed -n '/^SYNOPSIS/,/^[A-Z]/p' | sed '1d;$d' |
		sed 's/\xe2\x80\x90/-/g; s/\xe2\x88\x92/-/g' | tr -s ' \n' '  ')
	use=$(printf '%s\n' "$USAGE" | sed '/^$/,$d' | tr -s ' \n' '  ')
	syn=${syn#*parq }
	use=${use#*parq }
	if [ -n "$syn" ] && [ "${syn% }" = "${use% }" ]; then
		pass "usage matches the man page SYNOPSIS"
	else
		fail "usage matches the man page SYNOPSIS" "usage:    $use" "synopsis: $syn"
	fi
fi

# ---- bad inputs: each fails, names the token, sends nothing ----
bad "threshold 0" 'parq: illegal "threshold" value "0": expected 1..65535 or inf' threshold 0
bad "threshold -1" '"threshold" value "-1"' threshold -1
bad "threshold 65536" '"threshold" value "65536"' threshold 65536
bad "threshold 99999999999999999999" '"threshold" value "99999999999999999999"' threshold 99999999999999999999
bad "threshold 4x" '"threshold" value "4x"' threshold 4x
bad "threshold 0x10" '"threshold" value "0x10"' threshold 0x10
bad "threshold ''" '"threshold" value ""' threshold ""
bad "threshold INF" '"threshold" value "INF"' threshold INF
bad "unit bits" 'parq: illegal "unit" value "bits": expected bytes or packets' unit bits
bad "rate 0" 'parq: illegal "rate" value "0": rate must be positive; use "rate unlimited"' rate 0
bad "rate 0mbit" '"rate" value "0mbit": rate must be positive' rate 0mbit
bad "rate 1bit (0 bytes/s)" '"rate" value "1bit": rate must be positive' rate 1bit
bad "rate -1mbit" '"rate" value "-1mbit"' rate -1mbit
bad "rate fast" '"rate" value "fast"' rate fast
bad "rate 10furlongs" '"rate" value "10furlongs"' rate 10furlongs
bad "rate 1601gbit" '"rate" value "1601gbit": expected at most 1600gbit' rate 1601gbit
bad "rate 1e30bit" '"rate" value "1e30bit": expected at most' rate 1e30bit
bad "rate 1e400bit" '"rate" value "1e400bit"' rate 1e400bit
bad "rate inf" '"rate" value "inf"' rate inf
bad "rate nan" '"rate" value "nan"' rate nan
bad "rate 10% on lo (no link speed)" '"rate" value "10%"' rate 10%
bad "overhead -65" 'parq: illegal "overhead" value "-65": expected -64..256' overhead -65
bad "overhead 257" '"overhead" value "257"' overhead 257
bad "overhead 1.5" '"overhead" value "1.5"' overhead 1.5
bad "overhead x" '"overhead" value "x"' overhead x
bad "limit 0" 'parq: illegal "limit" value "0": expected 1..1000000' limit 0
bad "limit 1000001" '"limit" value "1000001"' limit 1000001
bad "limit -5" '"limit" value "-5"' limit -5
bad "flow-limit 0" 'parq: illegal "flow-limit" value "0"' flow-limit 0
bad "flow-limit many" '"flow-limit" value "many"' flow-limit many
bad "dscp-parallel FOO" 'unknown DSCP name "FOO"' dscp-parallel CS5,FOO
bad "dscp-parallel 64" 'DSCP out of range "64"' dscp-parallel 64
bad "dscp-parallel AF44" 'unknown DSCP name "AF44"' dscp-parallel AF44
bad "dscp-parallel -1" '"-1"' dscp-parallel -1
bad "dscp-parallel CS5,,EF" '"dscp-parallel" value "CS5,,EF"' dscp-parallel CS5,,EF
bad "dscp-parallel CS5," '"dscp-parallel" value "CS5,"' dscp-parallel CS5,
bad "dscp-parallel ''" '"dscp-parallel" value ""' dscp-parallel ""
bad "dscp-parallel none,CS5" 'unknown DSCP name "none"' dscp-parallel none,CS5
bad "default both" 'parq: illegal "default" value "both": expected parallel or local' default both
bad "unknown keyword" 'parq: unknown parameter "bogus"' threshold 4 bogus
bad "unknown keyword, with usage" 'Usage: ... parq' bogus
bad "abbreviated keyword" 'parq: unknown parameter "thresh"' thresh 4
bad "missing value" 'parq: missing value after "threshold"' limit 5 threshold
bad "duplicate threshold" 'parq: duplicate or conflicting parameter "threshold"' threshold 4 threshold 5
bad "split-gso with no-split-gso" 'conflicting parameter "no-split-gso"' split-gso no-split-gso

run_tc class add dev $DEV parent 1: classid 1:3 parq
if [ $RC -ne 0 ] && [ ! -s "$CAP" ] &&
   [[ $ERR == *"parq: classes are fixed (1:1 parallel, 1:2 local); they cannot be added or changed"* ]]; then
	pass "rejects tc class add"
else
	fail "rejects tc class add" "rc=$RC, stderr: $ERR"
fi

# ---- good inputs: exact netlink encoding ----
good "no parameters as an empty nest" ""
good "the defaults spelled out" \
	"THRESHOLD=4 UNIT=PARQ_UNIT_BYTES RATE=12500000 OVERHEAD=0 SPLIT_GSO=PARQ_SPLIT_GSO_ON LIMIT=10000 FLOW_LIMIT=1000 DSCP_PARALLEL=PARQ_DSCP_DEFAULT DEFAULT_CLASS=PARQ_CLASS_LOCAL" \
	threshold 4 unit bytes rate 100mbit overhead 0 split-gso limit 10000 \
	flow-limit 1000 dscp-parallel CS5,EF,CS6,CS7 default local
good "the other values" \
	"THRESHOLD=PARQ_THRESHOLD_INF UNIT=PARQ_UNIT_PACKETS RATE=PARQ_RATE_UNLIMITED OVERHEAD=-64 SPLIT_GSO=PARQ_SPLIT_GSO_OFF LIMIT=1000000 FLOW_LIMIT=1 DSCP_PARALLEL=0 DEFAULT_CLASS=PARQ_CLASS_PARALLEL" \
	default parallel dscp-parallel none flow-limit 1 limit 1000000 \
	no-split-gso overhead -64 rate unlimited unit packets threshold inf
good "threshold 1" "THRESHOLD=1" threshold 1
good "threshold 65535" "THRESHOLD=65535" threshold 65535
good "overhead 256" "OVERHEAD=256" overhead 256
good "rate 8bit (1 byte/s)" "RATE=1" rate 8bit
good "rate 1600gbit (the maximum)" "RATE=PARQ_RATE_MAX" rate 1600gbit
good "rate 10Gbit" "RATE=1250000000" rate 10Gbit
good "rate 1.5MBps" "RATE=1500000" rate 1.5MBps
good "dscp names, any case, and numbers" \
	"DSCP_PARALLEL=PARQ_DSCP_BIT(0)|PARQ_DSCP_BIT(1)|PARQ_DSCP_BIT(3)|PARQ_DSCP_BIT(10)|PARQ_DSCP_BIT(34)|PARQ_DSCP_BIT(44)|PARQ_DSCP_BIT(46)|PARQ_DSCP_BIT(63)" \
	dscp-parallel cs0,le,3,Af11,af41,VA,ef,63
good "all the DSCP names" \
	"DSCP_PARALLEL=$(echo 0 1 8 10 12 14 16 18 20 22 24 26 28 30 32 34 36 38 40 44 46 48 56 | sed 's/\([0-9]*\)/PARQ_DSCP_BIT(\1)/g; s/ /|/g')" \
	dscp-parallel CS0,CS1,CS2,CS3,CS4,CS5,CS6,CS7,AF11,AF12,AF13,AF21,AF22,AF23,AF31,AF32,AF33,AF41,AF42,AF43,EF,VA,LE
run_tc qdisc change dev $DEV root parq threshold 8
if [ $RC -eq 0 ] && msg=$(nl check-enc "$CAP" "THRESHOLD=8"); then
	pass "change sends only the given parameter"
else
	fail "change sends only the given parameter" "rc=$RC, stderr: $ERR" "${msg:-}"
fi

# ---- printing: tc qdisc show of made-up dumps ----
# show DESC SPEC-JSON EXPECTED-TEXT EXPECTED-JSON-OPTIONS
show() {
	local desc=$1 spec=$2 text=$3 jopts=$4 line msg opts
	nl mkdump "$W/dump" "$spec"
	run_tc qdisc show dev $DEV
	line=$(printf '%s\n' "$OUT" | head -n 1)
	if [ $RC -eq 0 ] && [ -z "$ERR" ] && [ "${line% }" = "$text" ]; then
		pass "prints $desc"
	else
		fail "prints $desc" "rc=$RC, stderr: $ERR" "got:      $line" "expected: $text"
	fi

	run_tc -j qdisc show dev $DEV
	if [ $RC -eq 0 ] && [ -z "$ERR" ] &&
	   msg=$(nl check-json-opts "$W/out" "$jopts"); then
		pass "prints $desc in JSON"
	else
		fail "prints $desc in JSON" "rc=$RC, stderr: $ERR" "${msg:-}" "$OUT"
	fi

	# What was printed is a valid command line for the same attributes.
	opts=${line#*refcnt 2 }
	read -r -a words <<<"$opts"
	run_tc qdisc replace dev $DEV root handle 1: parq "${words[@]}"
	cp "$CAP" "$W/reparsed"
	nl mkdump "$W/dump" "$spec"
	if [ $RC -eq 0 ] && msg=$(nl same-opts "$W/dump" "$W/reparsed"); then
		pass "prints $desc as a command line that parses back"
	else
		fail "prints $desc as a command line that parses back" "rc=$RC, stderr: $ERR" "${msg:-}"
	fi
}

Q="\"ifindex\": $IFINDEX, \"handle\": 65536, \"parent\": 4294967295, \"info\": 2"
show "the default parameters" \
	"[{$Q, \"options\": {\"THRESHOLD\": 4, \"UNIT\": \"PARQ_UNIT_BYTES\", \"RATE\": 12500000, \"OVERHEAD\": 0, \"SPLIT_GSO\": \"PARQ_SPLIT_GSO_ON\", \"LIMIT\": 10000, \"FLOW_LIMIT\": 1000, \"DSCP_PARALLEL\": \"PARQ_DSCP_DEFAULT\", \"DEFAULT_CLASS\": \"PARQ_CLASS_LOCAL\"}, \"extra\": [[1, \"\"]]}]" \
	"qdisc parq 1: root refcnt 2 threshold 4 unit bytes rate 100Mbit overhead 0 split-gso limit 10000 flow-limit 1000 dscp-parallel CS5,EF,CS6,CS7 default local" \
	'{"threshold": 4, "unit": "bytes", "rate": 12500000, "overhead": 0, "split_gso": true, "limit": 10000, "flow_limit": 1000, "dscp_parallel": ["CS5", "EF", "CS6", "CS7"], "default": "local"}'
show "the sentinels and the other values" \
	"[{$Q, \"options\": {\"THRESHOLD\": \"PARQ_THRESHOLD_INF\", \"UNIT\": \"PARQ_UNIT_PACKETS\", \"RATE\": \"PARQ_RATE_UNLIMITED\", \"OVERHEAD\": -4, \"SPLIT_GSO\": \"PARQ_SPLIT_GSO_OFF\", \"LIMIT\": 1, \"FLOW_LIMIT\": 1000000, \"DSCP_PARALLEL\": 9223372036854775819, \"DEFAULT_CLASS\": \"PARQ_CLASS_PARALLEL\"}}]" \
	"qdisc parq 1: root refcnt 2 threshold inf unit packets rate unlimited overhead -4 no-split-gso limit 1 flow-limit 1000000 dscp-parallel CS0,LE,3,63 default parallel" \
	'{"threshold": "inf", "unit": "packets", "rate": "unlimited", "overhead": -4, "split_gso": false, "limit": 1, "flow_limit": 1000000, "dscp_parallel": ["CS0", "LE", 3, 63], "default": "parallel"}'
show "an empty DSCP set, a rate, unknown attributes, no NLA_F_NESTED" \
	"[{$Q, \"options\": {\"RATE\": 1234000, \"DSCP_PARALLEL\": 0}, \"extra\": [[99, \"01020304\"]], \"nested\": false}]" \
	"qdisc parq 1: root refcnt 2 rate 9872Kbit dscp-parallel none" \
	'{"rate": 1234000, "dscp_parallel": []}'

# ---- printing: statistics ----
# stats DESC XSTATS-LEN EXPECTED-KEYS-JSON
stats() {
	local desc=$1 len=$2 exp=$3 msg
	nl mkdump "$W/dump" "[{$Q, \"options\": {\"THRESHOLD\": 4}, \"xstats\": $XS, \"xstats_len\": $len}]"
	run_tc -s qdisc show dev $DEV
	cp "$W/out" "$W/text"
	local rc1=$RC err1=$ERR
	run_tc -s -j qdisc show dev $DEV
	if [ $rc1 -eq 0 ] && [ -z "$err1" ] && [ $RC -eq 0 ] && [ -z "$ERR" ] &&
	   msg=$(nl check-xstats "$W/text" "$W/out" "$exp"); then
		pass "prints $desc"
	else
		fail "prints $desc" "rc=$rc1/$RC, stderr: $err1 $ERR" "${msg:-}" "$(cat "$W/text")"
	fi
}
XS='{"version": 1, "flows_active": 2, "threshold_turns": 10, "parallel_only": 5, "local_only": 3, "throttled": 7, "wakeups": 6, "gso_segments": 44, "unknown_class": 1, "drop_local_full": 11, "drop_local_evicted": 12, "drop_parallel_full": 13, "drop_flow_limit": 14, "drop_gso_failed": 15, "drop_filter": 18446744073709551615}'
ALL='{"xstats_version": 1, "flows_active": 2, "threshold_turns": 10, "parallel_only": 5, "local_only": 3, "throttled": 7, "wakeups": 6, "gso_segments": 44, "unknown_class": 1, "drop_local_full": 11, "drop_local_evicted": 12, "drop_parallel_full": 13, "drop_flow_limit": 14, "drop_gso_failed": 15, "drop_filter": 18446744073709551615}'
SIZE=$(python3 -c 'import re,sys; t=open(sys.argv[1]).read(); b=re.search(r"struct tc_parq_xstats\s*\{(.*?)\}",t,re.S).group(1); print(sum(4 if x=="u32" else 8 for x in re.findall(r"__(u32|u64)\s+\w+;",b)))' "$HDR")
stats "every xstats field, text and JSON keys equal" "$SIZE" "$ALL"
stats "xstats from a newer module (longer)" "$((SIZE + 24))" "$ALL"
stats "xstats from an older module (shorter)" 24 \
	'{"xstats_version": 1, "flows_active": 2, "threshold_turns": 10, "parallel_only": 5}'
stats "xstats cut inside a field" 20 \
	'{"xstats_version": 1, "flows_active": 2, "threshold_turns": 10}'
stats "xstats of 2 bytes" 2 '{}'

# ---- printing: classes ----
nl mkdump "$W/dump" "[{\"msg\": \"class\", \"ifindex\": $IFINDEX, \"handle\": 65537, \"parent\": 4294967295, \"info\": 0, \"options\": {}}, {\"msg\": \"class\", \"ifindex\": $IFINDEX, \"handle\": 65538, \"parent\": 4294967295, \"info\": 0, \"options\": {}}]"
run_tc class show dev $DEV
if [ $RC -eq 0 ] && [ -z "$ERR" ] &&
   [ "$(printf '%s\n' "$OUT" | sed 's/ *$//')" = "$(printf 'class parq 1:1 root\nclass parq 1:2 root')" ]; then
	pass "prints the classes"
else
	fail "prints the classes" "rc=$RC, stderr: $ERR" "$OUT"
fi

echo "TAP version 13"
echo "1..$N"
printf '%s\n' "${RESULTS[@]}"
[ $FAILED -eq 0 ]
