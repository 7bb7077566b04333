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
#    only the given parameters), for the qdisc and for reserved classes
#    (tc class add/change/replace/delete, and the classid tc sends);
#  - tc qdisc show / -j / -s / -s -j and tc class show / -s output of
#    made-up dumps (both kinds of xstats, full, longer and cut short), and
#    that the printed parameters parse back to the same attributes.
# Attribute numbers, constants and the xstats layouts are read from
# linux/parq.h.
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
import contextlib, io, json, os, re, struct, sys

HDR = sys.argv[1]

NLA_F_NESTED = 0x8000
RTM_NEWQDISC, RTM_NEWTCLASS = 36, 40
TCA_KIND, TCA_OPTIONS, TCA_STATS2 = 1, 2, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP = 1, 3, 4
TCA_STATS_RATE_EST64 = 5

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
def struct_fields(name):
    """(type, name, count): count is None for a scalar."""
    body = re.search(r'struct ' + name + r'\s*\{(.*?)\}', text, re.S).group(1)
    return [(t, n, consts[c] if c else None) for t, n, c in
            re.findall(r'__(u32|u64)\s+(\w+)(?:\[(\w+)\])?;', body)]
XSTATS = struct_fields('tc_parq_xstats')
CXSTATS = struct_fields('tc_parq_class_xstats')
# qdisc options, then class options (TCA_PARQ_CLASS_*)
FMT = {'THRESHOLD': 'I', 'UNIT': 'B', 'RATE': 'Q', 'OVERHEAD': 'i',
       'SPLIT_GSO': 'B', 'LIMIT': 'I', 'FLOW_LIMIT': 'I',
       'DSCP_PARALLEL': 'Q', 'DEFAULT_CLASS': 'B', 'LINKRATE': 'Q',
       'RESERVABLE': 'B', 'DSCP_MARK': 'B', 'BURST': 'I'}
ATTR = {n: consts['TCA_PARQ_' + n] for n in FMT}
NAME = {v: k for k, v in ATTR.items()}
CFMT = {'RATE': 'Q', 'IDT': 'Q'}
CATTR = {n: consts['TCA_PARQ_CLASS_' + n] for n in CFMT}
CNAME = {v: k for k, v in CATTR.items()}
if set(ATTR.values()) != set(range(consts['TCA_PARQ_THRESHOLD'],
                                   consts['__TCA_PARQ_MAX'])):
    raise SystemExit('nl.py: qdisc attributes out of date')
if set(CATTR.values()) != set(range(consts['TCA_PARQ_CLASS_RATE'],
                                    consts['__TCA_PARQ_CLASS_MAX'])):
    raise SystemExit('nl.py: class attributes out of date')

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

def opts_blob(opts, cls=False):
    attr, fmt = (CATTR, CFMT) if cls else (ATTR, FMT)
    return b''.join(rta(attr[k], struct.pack('=' + fmt[k], value(v)))
                    for k, v in opts.items())

def pack_struct(fields, vals):
    out = b''
    for t, n, count in fields:
        f = '=' + ('I' if t == 'u32' else 'Q')
        if count is None:
            out += struct.pack(f, value(vals.get(n, 0)))
        else:
            v = list(vals.get(n, []))
            out += b''.join(struct.pack(f, value(x))
                            for x in (v + [0] * count)[:count])
    return out

def mkdump(out, spec):
    blob = b''
    for m in json.loads(spec):
        qdisc = m.get('msg', 'qdisc') == 'qdisc'
        body = rta(TCA_KIND, m.get('kind', 'parq').encode() + b'\0')
        if 'options' in m:
            flag = NLA_F_NESTED if m.get('nested', True) else 0
            body += rta(TCA_OPTIONS | flag,
                        opts_blob(m['options'], not qdisc) +
                        b''.join(rta(t, bytes.fromhex(h))
                                 for t, h in m.get('extra', [])))
        if 'xstats' in m or 'cxstats' in m:
            if 'xstats' in m:
                xs = pack_struct(XSTATS, m['xstats'])
            else:
                xs = pack_struct(CXSTATS, m['cxstats'])
            ln = m.get('xstats_len', len(xs))
            xs = (xs + b'\xa5' * ln)[:ln]
            st = (rta(TCA_STATS_BASIC, struct.pack('=QI', 1000, 10)) +
                  rta(TCA_STATS_QUEUE, struct.pack('=5I', 0, 0, 0, 0, 0)))
            if 'rate_est' in m:
                st += rta(TCA_STATS_RATE_EST64,
                          struct.pack('=QQ', *m['rate_est']))
            st += rta(TCA_STATS_APP, xs)
            body += rta(TCA_STATS2 | NLA_F_NESTED, st)
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
    ln, typ = struct.unpack_from('=IH', buf)
    name, fmt = (NAME, FMT) if typ == RTM_NEWQDISC else (CNAME, CFMT)
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
        if t not in name:
            if strict:
                raise ValueError('unknown attribute %d' % t)
            continue
        n = name[t]
        if n in got:
            raise ValueError('%s twice' % n)
        if len(p) != struct.calcsize('=' + fmt[n]):
            raise ValueError('%s has %d bytes' % (n, len(p)))
        got[n] = struct.unpack('=' + fmt[n], p)[0]
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
    """key value pairs (strings) of the lines after the backlog line."""
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
        d[k] = v
    return d

def run(cmd, args):
    if cmd == 'mkdump':
        # A dump that fails leaves none behind for the next check to read.
        if os.path.exists(args[0]):
            os.unlink(args[0])
        mkdump(args[0], args[1])
    elif cmd == 'const':
        print(consts[args[0]])
    elif cmd == 'xsize':
        # args: struct, field: its offset ('' for the struct's size)
        n = 0
        for t, f, count in struct_fields(args[0]):
            if f == args[1]:
                break
            n += (4 if t == 'u32' else 8) * (count or 1)
        print(n)
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
        # args: text output, json output, expected {key: value} in JSON,
        # [{key: text} where the text output differs from str(value)]
        exp = json.loads(args[2])
        texp = {k: str(v) for k, v in exp.items()}
        texp.update(json.loads(args[3]) if len(args) > 3 else {})
        texp = {k: v for k, v in texp.items() if v is not None}  # JSON only
        t = text_xstats(args[0])
        if t != texp:
            fail('text xstats %s, expected %s' % (t, texp))
        q = parq_qdisc(args[1])
        j = {k: q[k] for k in exp if k in q}
        if j != exp:
            fail('json xstats %s, expected %s' % (j, exp))
        known = ({n for _, n, _ in XSTATS + CXSTATS} |
                 {'xstats_version', 'lateness_mean', 'throttled'} |
                 {c + '_sojourn_' + k for c in ('parallel', 'local')
                  for k in ('pkts', 'mean', 'hist')})
        extra = [k for k in q if k in known and k not in exp]
        if extra:
            fail('json has unexpected %s' % extra)
    else:
        fail('unknown command ' + cmd)

# One process answers every request (a Python start costs a third of a
# second on some hosts, and the tests make hundreds): a request is a line,
# its words separated by US (0x1f); the answer is what the command
# printed, then RS (0x1e) and its exit status on a line of their own.
for line in sys.stdin:
    words = line.rstrip('\n').split('\x1f')
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run(words[0], words[1:])
        rc = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            rc = e.code or 0
        else:
            out.write('%s\n' % e.code)
            rc = 1
    except Exception as e:  # a broken helper fails the test that asked
        out.write('nl.py: %s: %r\n' % (words[0], e))
        rc = 2
    # The answer ends on a line of its own, and no line of it can pass
    # for that end.
    answer = out.getvalue().replace('\x1e', '\\x1e')
    if answer and not answer.endswith('\n'):
        answer += '\n'
    sys.stdout.write(answer + '\x1e%d\n' % rc)
    sys.stdout.flush()
PYEOF
# nl CMD ARGS...: one request to the helper (started once, below); prints
# its output, returns its status.  The answer is read on fixed
# descriptors: a command substitution's subshell inherits those, where a
# coprocess's own are closed in it.
coproc NLPY { python3 "$W/nl.py" "$HDR"; }
exec 7>&"${NLPY[1]}" 8<&"${NLPY[0]}"
# A helper that died fails the request that finds it so; when the script
# ends, the helper's input closes and it ends too.
nl() {
	local IFS=$'\x1f' line out= rc=
	case "$*" in *$'\n'*) echo "nl: a newline in a request" >&2; return 2 ;; esac
	# In a subshell: a write to a helper that died kills that, not us.
	( printf '%s\n' "$*" >&7 ) 2>/dev/null ||
		{ echo "nl: the helper is gone" >&2; return 2; }
	while IFS= read -r line <&8; do
		if [[ $line == $'\x1e'* ]]; then
			rc=${line#$'\x1e'}
			break
		fi
		out+=$line$'\n'
	done
	printf '%s' "$out"
	[ -n "$rc" ] || { echo "nl: no answer from the helper" >&2; return 2; }
	return "$rc"
}
if ! nl const __TCA_PARQ_MAX >/dev/null; then
	echo "TAP version 13"
	echo "Bail out! the netlink helper does not answer (nl.py: see above)"
	exit 1
fi

# ---- KTAP bookkeeping (results are printed at the end, after the plan) ----
RESULTS=()
N=0
FAILED=0
pass() { N=$((N + 1)); RESULTS+=("ok $N - $1"); }
skip() { N=$((N + 1)); RESULTS+=("ok $N - $1 # SKIP $2"); }
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
	# Each parameter's paragraph gives the default the plugin's help
	# gives (both from the parameter table: this checks the page).
	man=$(groff -man -Tutf8 -rHY=0 -rLL=300n -P-cbou "$MAN" 2>/dev/null |
		sed 's/\xe2\x80\x90/-/g; s/\xe2\x88\x92/-/g')
	if msg=$(MAN_TEXT=$man USAGE_TEXT=$USAGE python3 - <<'PY'
import os
import re
import sys

man = os.environ["MAN_TEXT"].splitlines()
bad = []
rows = re.findall(r"^  (\S.*?)  +(?:\S+ \S+, )?default (\S+)$",
                  os.environ["USAGE_TEXT"], flags=re.M)
for syntax, default in rows:
    at = [i for i, line in enumerate(man) if line.strip() == syntax]
    if not at:
        bad.append(f"no paragraph for {syntax!r}")
        continue
    text = []
    for line in man[at[0] + 1:]:
        if line.strip() and not line.startswith(" " * 10):
            break
        text.append(line.strip())
    text = " ".join(" ".join(text).split())
    if not re.search(r"Default: " + re.escape(default) + r"[.,:]", text):
        bad.append(f"{syntax!r}: the page's default is not {default}")
if not rows:
    bad.append("the help lists no defaults")
print("; ".join(bad))
sys.exit(1 if bad else 0)
PY
	); then
		pass "each parameter's default in the man page is the plugin's"
	else
		fail "each parameter's default in the man page is the plugin's" "$msg"
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
bad "split-gso auto twice" 'conflicting parameter "split-gso"' split-gso auto split-gso
bad "no-split-gso auto" 'unknown parameter "auto"' no-split-gso auto
bad "linkrate 0" 'parq: illegal "linkrate" value "0": rate must be positive; use "linkrate auto"' linkrate 0
bad "linkrate 1bit (0 bytes/s)" '"linkrate" value "1bit": rate must be positive' linkrate 1bit
bad "linkrate -1mbit" '"linkrate" value "-1mbit": expected a rate such as 100mbit or 10gbit, or auto' linkrate -1mbit
bad "linkrate 1601gbit" '"linkrate" value "1601gbit": expected at most 1600gbit (200000000000 bytes/s), or auto' linkrate 1601gbit
bad "linkrate unlimited" '"linkrate" value "unlimited"' linkrate unlimited
bad "linkrate AUTO" '"linkrate" value "AUTO"' linkrate AUTO
bad "linkrate 10% on lo (no link speed)" '"linkrate" value "10%"' linkrate 10%
bad "duplicate linkrate" 'duplicate or conflicting parameter "linkrate"' linkrate auto linkrate 1gbit
bad "reservable 0" 'parq: illegal "reservable" value "0": expected a percentage, 1..100' reservable 0
bad "reservable 101" '"reservable" value "101"' reservable 101
bad "reservable 101%" '"reservable" value "101%"' reservable 101%
bad "reservable 50.5" '"reservable" value "50.5"' reservable 50.5
bad "reservable -5" '"reservable" value "-5"' reservable -5
bad "reservable 90%%" '"reservable" value "90%%"' reservable 90%%
bad "reservable %" '"reservable" value "%"' reservable %
bad "reservable ''" '"reservable" value ""' reservable ""
bad "reservable 99999999999999999999999999999999999%" '"reservable" value "99999999999999999999999999999999999%"' reservable 99999999999999999999999999999999999%
bad "reservable half" '"reservable" value "half"' reservable half
bad "missing reservable value" 'parq: missing value after "reservable"' reservable
bad "dscp-mark 64" 'parq: illegal "dscp-mark" value "64": expected one DSCP (CS0..CS7, AF11..AF43, EF, VA, LE or 0..63) or off' dscp-mark 64
bad "dscp-mark a list" '"dscp-mark" value "CS5,EF"' dscp-mark CS5,EF
bad "dscp-mark none" '"dscp-mark" value "none"' dscp-mark none
bad "dscp-mark -1" '"dscp-mark" value "-1"' dscp-mark -1
bad "missing dscp-mark value" 'parq: missing value after "dscp-mark"' dscp-mark
bad "dscp-mark twice" 'parq: duplicate or conflicting parameter "dscp-mark"' dscp-mark EF dscp-mark CS5

# cbad DESC EXPECTED-STDERR-SUBSTRING TC-CLASS-ARGS...  (before "parq" too)
cbad() {
	local desc=$1 want=$2
	shift 2
	run_tc class "$@"
	if [ $RC -ne 0 ] && [[ $ERR == *"$want"* ]] && [ ! -s "$CAP" ]; then
		pass "rejects class $desc"
	else
		fail "rejects class $desc" "rc=$RC, stderr: $ERR" \
			"expected: $want; sent $(stat -c %s "$CAP") bytes"
	fi
}
# Reserved minors, in tc's hexadecimal: R0 the first, R1.. the next ones.
RMIN=$(nl const PARQ_RESV_MINOR_MIN)
hexminor() { printf '%x' $((RMIN + $1)); }
R0=$(hexminor 0) R1=$(hexminor 1) R2=$(hexminor 2) R3=$(hexminor 3)
R4=$(hexminor 4) R5=$(hexminor 5) RB=$(hexminor -1)
FIXED="parq: classes 1:1 and 1:2 are fixed; reserved classes are 1:$R0 and up"
CA="add dev $DEV parent 1: classid"
cbad "add 1:1" "$FIXED" $CA 1:1 parq rate 10mbit
cbad "add 1:2" "$FIXED" $CA 1:2 parq idt 100us
cbad "add 1:$RB (just below the first reserved minor)" "$FIXED" $CA 1:$RB parq rate 10mbit
cbad "add 1:3 without parameters" "$FIXED" $CA 1:3 parq
cbad "add 2:1 (names major 2)" "parq: classes 2:1 and 2:2 are fixed; reserved classes are 2:$R0 and up" \
	add dev $DEV parent 2: classid 2:1 parq rate 10mbit
cbad "change 1:1" "$FIXED" change dev $DEV classid 1:1 parq rate 10mbit
cbad "delete 1:2" "$FIXED" delete dev $DEV classid 1:2 parq
cbad "add without classid" 'parq: a reserved class needs "classid MAJOR:MINOR" before "parq"' \
	add dev $DEV parent 1: parq rate 10mbit
cbad "add without rate or idt" 'parq: a reserved class needs "rate RATE" or "idt TIME"' $CA 1:$R0 parq
cbad "rate and idt" 'parq: duplicate or conflicting class parameter "idt"' $CA 1:$R0 parq rate 10mbit idt 1ms
cbad "rate twice" 'parq: duplicate or conflicting class parameter "rate"' $CA 1:$R0 parq rate 10mbit rate 20mbit
cbad "unknown parameter" 'parq: unknown class parameter "burst"; expected rate RATE or idt TIME' \
	$CA 1:$R0 parq rate 10mbit burst 10k
cbad "qdisc parameter" 'parq: unknown class parameter "threshold"' $CA 1:$R0 parq threshold 4
cbad "missing value" 'parq: missing value after "idt"' $CA 1:$R0 parq idt
cbad "rate 0" 'parq: illegal "rate" value "0": rate must be positive' $CA 1:$R0 parq rate 0
cbad "rate 1bit (0 bytes/s)" '"rate" value "1bit": rate must be positive' $CA 1:$R0 parq rate 1bit
cbad "rate unlimited" 'parq: illegal "rate" value "unlimited": expected a rate such as 100mbit or 10gbit' \
	$CA 1:$R0 parq rate unlimited
cbad "rate 1601gbit" '"rate" value "1601gbit": expected at most 1600gbit (200000000000 bytes/s)' \
	$CA 1:$R0 parq rate 1601gbit
cbad "rate fast" '"rate" value "fast"' $CA 1:$R0 parq rate fast
cbad "rate 10% on lo (no link speed)" '"rate" value "10%"' $CA 1:$R0 parq rate 10%
cbad "idt 0us" 'parq: illegal "idt" value "0us": time must be positive' $CA 1:$R0 parq idt 0us
cbad "idt 100 (no unit)" 'parq: illegal "idt" value "100": expected a time such as 100us, 1.5ms or 250ns' \
	$CA 1:$R0 parq idt 100
cbad "idt 10.000000001s" 'parq: illegal "idt" value "10.000000001s": expected at most 10s' \
	$CA 1:$R0 parq idt 10.000000001s
cbad "idt 10001ms" '"idt" value "10001ms": expected at most 10s' $CA 1:$R0 parq idt 10001ms
cbad "idt 99999999999999999999999s" '"idt" value "99999999999999999999999s": expected at most 10s' \
	$CA 1:$R0 parq idt 99999999999999999999999s
cbad "idt 1.5ns" 'parq: illegal "idt" value "1.5ns": not a whole number of nanoseconds' \
	$CA 1:$R0 parq idt 1.5ns
cbad "idt 0.0000000001s" '"idt" value "0.0000000001s": not a whole number' $CA 1:$R0 parq idt 0.0000000001s
cbad "idt -1us" '"idt" value "-1us": expected a time' $CA 1:$R0 parq idt -1us
cbad "idt 1e3us" '"idt" value "1e3us": expected a time' $CA 1:$R0 parq idt 1e3us
cbad "idt 1.us" '"idt" value "1.us": expected a time' $CA 1:$R0 parq idt 1.us
cbad "idt us" '"idt" value "us": expected a time' $CA 1:$R0 parq idt us
cbad "idt 100 us (unit apart)" '"idt" value "100": expected a time' $CA 1:$R0 parq idt 100 us
cbad "idt 100usx" '"idt" value "100usx": expected a time' $CA 1:$R0 parq idt 100usx
cbad "delete with parameters" 'parq: "tc class delete" takes no parameters, not "rate"' \
	delete dev $DEV classid 1:$R0 parq rate 10mbit
run_tc class add dev $DEV parent 1: classid 1:$R0 parq help
if [ $RC -ne 0 ] && [ "$ERR" = "$USAGE" ] && [ ! -s "$CAP" ]; then
	pass "class help prints the usage and fails"
else
	fail "class help prints the usage and fails" "rc=$RC, stderr: $ERR"
fi

# ---- good inputs: exact netlink encoding ----
good "no parameters as an empty nest" ""
good "the defaults spelled out" \
	"THRESHOLD=4 UNIT=PARQ_UNIT_BYTES RATE=12500000 OVERHEAD=0 SPLIT_GSO=PARQ_SPLIT_GSO_ON LIMIT=10000 FLOW_LIMIT=1000 DSCP_PARALLEL=PARQ_DSCP_DEFAULT DEFAULT_CLASS=PARQ_CLASS_LOCAL LINKRATE=PARQ_LINKRATE_AUTO RESERVABLE=PARQ_RESERVABLE_DEFAULT DSCP_MARK=PARQ_DSCP_MARK_OFF" \
	threshold 4 unit bytes rate 100mbit overhead 0 split-gso limit 10000 \
	flow-limit 1000 dscp-parallel CS5,EF default local \
	linkrate auto reservable 90 dscp-mark off
good "split-gso auto" "SPLIT_GSO=PARQ_SPLIT_GSO_AUTO" split-gso auto
good "split-gso auto between others" "LIMIT=5 SPLIT_GSO=PARQ_SPLIT_GSO_AUTO RATE=1" \
	limit 5 split-gso auto rate 8bit
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
good "linkrate 8bit (1 byte/s)" "LINKRATE=1" linkrate 8bit
good "linkrate 1600gbit (the maximum)" "LINKRATE=PARQ_RATE_MAX" linkrate 1600gbit
good "linkrate 25gbit with rate 10gbit" "RATE=1250000000 LINKRATE=3125000000" rate 10gbit linkrate 25gbit
good "reservable 1" "RESERVABLE=1" reservable 1
good "reservable 100%" "RESERVABLE=100" reservable 100%
good "reservable 75 and linkrate auto" "LINKRATE=PARQ_LINKRATE_AUTO RESERVABLE=75" reservable 75 linkrate auto
good "dscp names, any case, and numbers" \
	"DSCP_PARALLEL=PARQ_DSCP_BIT(0)|PARQ_DSCP_BIT(1)|PARQ_DSCP_BIT(3)|PARQ_DSCP_BIT(10)|PARQ_DSCP_BIT(34)|PARQ_DSCP_BIT(44)|PARQ_DSCP_BIT(46)|PARQ_DSCP_BIT(63)" \
	dscp-parallel cs0,le,3,Af11,af41,VA,ef,63
good "dscp-mark EF" "DSCP_MARK=46" dscp-mark EF
good "dscp-mark cs5 (any case)" "DSCP_MARK=40" dscp-mark cs5
good "dscp-mark 0" "DSCP_MARK=0" dscp-mark 0
good "dscp-mark 63" "DSCP_MARK=PARQ_DSCP_MAX" dscp-mark 63
good "all the DSCP names" \
	"DSCP_PARALLEL=$(echo 0 1 8 10 12 14 16 18 20 22 24 26 28 30 32 34 36 38 40 44 46 48 56 | sed 's/\([0-9]*\)/PARQ_DSCP_BIT(\1)/g; s/ /|/g')" \
	dscp-parallel CS0,CS1,CS2,CS3,CS4,CS5,CS6,CS7,AF11,AF12,AF13,AF21,AF22,AF23,AF31,AF32,AF33,AF41,AF42,AF43,EF,VA,LE
run_tc qdisc change dev $DEV root parq threshold 8
if [ $RC -eq 0 ] && msg=$(nl check-enc "$CAP" "THRESHOLD=8"); then
	pass "change sends only the given parameter"
else
	fail "change sends only the given parameter" "rc=$RC, stderr: $ERR" "${msg:-}"
fi

# cgood DESC EXPECTED-ATTRS EXPECTED-CLASSID TC-CLASS-ARGS...
cgood() {
	local desc=$1 want=$2 cid=$3 msg
	shift 3
	run_tc class "$@"
	if [ $RC -ne 0 ] || [ -n "$ERR" ]; then
		fail "encodes class $desc" "rc=$RC, stderr: $ERR"
	elif ! msg=$(nl check-enc "$CAP" "$want"); then
		fail "encodes class $desc" "$msg"
	elif [ "$(od -An -tu4 -j 24 -N 4 "$CAP" | tr -d ' ')" != "$cid" ]; then
		fail "encodes class $desc" "tcm_handle $(od -An -tu4 -j 24 -N 4 "$CAP"), expected $cid"
	else
		pass "encodes class $desc"
	fi
}
cgood "rate 20mbit" "RATE=2500000" $((0x10000 + 0x$R0)) $CA 1:$R0 parq rate 20mbit
cgood "rate 8bit (1 byte/s)" "RATE=1" $((0x10000 + 0x$R0)) $CA 1:$R0 parq rate 8bit
cgood "rate 1600gbit (the maximum) in 1:ffff" "RATE=PARQ_RATE_MAX" $((0x1ffff)) $CA 1:ffff parq rate 1600gbit
cgood "idt 100us in 1:$R1" "IDT=100000" $((0x10000 + 0x$R1)) $CA 1:$R1 parq idt 100us
cgood "idt 1ns (the minimum)" "IDT=1" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt 1ns
cgood "idt 10s (the maximum)" "IDT=PARQ_IDT_MAX" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt 10s
cgood "idt 1.5ms" "IDT=1500000" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt 1.5ms
cgood "idt 2.000000001sec" "IDT=2000000001" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt 2.000000001sec
cgood "idt .5USEC" "IDT=500" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt .5USEC
cgood "idt 0250nsecs" "IDT=250" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt 0250nsecs
cgood "idt 1.500000000s" "IDT=1500000000" $((0x10000 + 0x$R0)) $CA 1:$R0 parq idt 1.500000000s
cgood "change: idt 1ms" "IDT=1000000" $((0x10020)) change dev $DEV classid 1:20 parq idt 1ms
cgood "replace: rate 1gbit" "RATE=125000000" $((0x10020)) replace dev $DEV parent 1: classid 1:20 parq rate 1gbit
run_tc class delete dev $DEV classid 1:$R0 parq
if [ $RC -eq 0 ] && [ -z "$ERR" ] && [ -s "$CAP" ] &&
   [ "$(od -An -tu2 -j 4 -N 2 "$CAP" | tr -d ' ')" = 41 ]; then
	pass "class delete with the kind sends RTM_DELTCLASS"
else
	fail "class delete with the kind sends RTM_DELTCLASS" "rc=$RC, stderr: $ERR"
fi

# ---- printing: tc qdisc show of made-up dumps ----
# show DESC SPEC-JSON EXPECTED-TEXT EXPECTED-JSON-OPTIONS [noreparse]
show() {
	local desc=$1 spec=$2 text=$3 jopts=$4 reparse=${5:-yes} line msg opts
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
	[ "$reparse" = noreparse ] && return
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
	"[{$Q, \"options\": {\"THRESHOLD\": 4, \"UNIT\": \"PARQ_UNIT_BYTES\", \"RATE\": 12500000, \"OVERHEAD\": 0, \"SPLIT_GSO\": \"PARQ_SPLIT_GSO_ON\", \"LIMIT\": 10000, \"FLOW_LIMIT\": 1000, \"DSCP_PARALLEL\": \"PARQ_DSCP_DEFAULT\", \"DEFAULT_CLASS\": \"PARQ_CLASS_LOCAL\", \"LINKRATE\": 12500000, \"RESERVABLE\": 90, \"DSCP_MARK\": \"PARQ_DSCP_MARK_OFF\"}, \"extra\": [[1, \"\"]]}]" \
	"qdisc parq 1: root refcnt 2 threshold 4 unit bytes rate 100Mbit overhead 0 split-gso limit 10000 flow-limit 1000 dscp-parallel CS5,EF default local linkrate 100Mbit reservable 90 dscp-mark off" \
	'{"threshold": 4, "unit": "bytes", "rate": 12500000, "overhead": 0, "split_gso": "on", "limit": 10000, "flow_limit": 1000, "dscp_parallel": ["CS5", "EF"], "default": "local", "linkrate": 12500000, "reservable": 90, "dscp_mark": "off"}'
show "dscp-mark by name" \
	"[{$Q, \"options\": {\"DSCP_MARK\": 46}}]" \
	"qdisc parq 1: root refcnt 2 dscp-mark EF" '{"dscp_mark": "EF"}'
show "dscp-mark by number" \
	"[{$Q, \"options\": {\"DSCP_MARK\": 5}}]" \
	"qdisc parq 1: root refcnt 2 dscp-mark 5" '{"dscp_mark": 5}'
show "the sentinels and the other values" \
	"[{$Q, \"options\": {\"THRESHOLD\": \"PARQ_THRESHOLD_INF\", \"UNIT\": \"PARQ_UNIT_PACKETS\", \"RATE\": \"PARQ_RATE_UNLIMITED\", \"OVERHEAD\": -4, \"SPLIT_GSO\": \"PARQ_SPLIT_GSO_OFF\", \"LIMIT\": 1, \"FLOW_LIMIT\": 1000000, \"DSCP_PARALLEL\": 9223372036854775819, \"DEFAULT_CLASS\": \"PARQ_CLASS_PARALLEL\"}}]" \
	"qdisc parq 1: root refcnt 2 threshold inf unit packets rate unlimited overhead -4 no-split-gso limit 1 flow-limit 1000000 dscp-parallel CS0,LE,3,63 default parallel" \
	'{"threshold": "inf", "unit": "packets", "rate": "unlimited", "overhead": -4, "split_gso": "off", "limit": 1, "flow_limit": 1000000, "dscp_parallel": ["CS0", "LE", 3, 63], "default": "parallel"}'
show "split-gso auto and linkrate auto, as the kernel dumps them unset" \
	"[{$Q, \"options\": {\"SPLIT_GSO\": \"PARQ_SPLIT_GSO_AUTO\", \"LINKRATE\": \"PARQ_LINKRATE_AUTO\"}}]" \
	"qdisc parq 1: root refcnt 2 split-gso auto linkrate auto" \
	'{"split_gso": "auto", "linkrate": "auto"}'
show "linkrate 10Gbit without a shaper, reservable 100" \
	"[{$Q, \"options\": {\"RATE\": \"PARQ_RATE_UNLIMITED\", \"LINKRATE\": 1250000000, \"RESERVABLE\": 100}}]" \
	"qdisc parq 1: root refcnt 2 rate unlimited linkrate 10Gbit reservable 100" \
	'{"rate": "unlimited", "linkrate": 1250000000, "reservable": 100}'
show "linkrate auto (the sentinel, should the kernel send it)" \
	"[{$Q, \"options\": {\"LINKRATE\": \"PARQ_LINKRATE_AUTO\", \"RESERVABLE\": 1}}]" \
	"qdisc parq 1: root refcnt 2 linkrate auto reservable 1" \
	'{"linkrate": "auto", "reservable": 1}'
show "an empty DSCP set, a rate, unknown attributes, no NLA_F_NESTED" \
	"[{$Q, \"options\": {\"RATE\": 1234000, \"DSCP_PARALLEL\": 0}, \"extra\": [[99, \"01020304\"]], \"nested\": false}]" \
	"qdisc parq 1: root refcnt 2 rate 9872Kbit dscp-parallel none" \
	'{"rate": 1234000, "dscp_parallel": []}'
show "values past a word's sentinel and a split-gso mode this plugin lacks (a newer module)" \
	"[{$Q, \"options\": {\"THRESHOLD\": 70000, \"RATE\": 200000000005, \"SPLIT_GSO\": 3, \"LINKRATE\": 200000000009}}]" \
	"qdisc parq 1: root refcnt 2 threshold inf rate unlimited linkrate auto" \
	'{"threshold": "inf", "rate": "unlimited", "linkrate": "auto"}' noreparse

# ---- printing: statistics ----
# xsize STRUCT [FIELD]: the size of a struct of linux/parq.h, or the offset
# of FIELD in it.
xsize() {
	nl xsize "$1" "${2:-}"
}

# stats DESC XSTATS-LEN EXPECTED-KEYS-JSON [EXPECTED-TEXT-JSON]
# The qdisc's xstats $XS, cut or padded to XSTATS-LEN bytes.
stats() {
	local desc=$1 len=$2 exp=$3 texp=${4:-'{}'} msg
	nl mkdump "$W/dump" "[{$Q, \"options\": {\"THRESHOLD\": 4}, \"xstats\": $XS, \"xstats_len\": $len}]"
	run_tc -s qdisc show dev $DEV
	cp "$W/out" "$W/text"
	local rc1=$RC err1=$ERR
	run_tc -s -j qdisc show dev $DEV
	if [ $rc1 -eq 0 ] && [ -z "$err1" ] && [ $RC -eq 0 ] && [ -z "$ERR" ] &&
	   msg=$(nl check-xstats "$W/text" "$W/out" "$exp" "$texp"); then
		pass "prints $desc"
	else
		fail "prints $desc" "rc=$rc1/$RC, stderr: $err1 $ERR" "${msg:-}" "$(cat "$W/text")"
	fi
}
XS='{"version": 6, "flows_active": 2, "threshold_turns": 10, "parallel_only": 5, "local_only": 3, "throttled": 7, "wakeups": 6, "gso_segments": 44, "unknown_class": 1, "drop_local_full": 11, "drop_local_evicted": 12, "drop_parallel_full": 13, "drop_flow_limit": 14, "drop_gso_failed": 15, "drop_filter": 18446744073709551615, "resv_dispatches": 1000, "resv_rejects": 2, "resv_sum_rate": 2500000, "resv_capacity": 11250000, "resv_classes": 3, "resv_backlogged": 2, "resv_throttled": 1, "pad": 4294967295, "local_flows": 5, "local_waiting": 4, "credit_waits": 77, "drop_local_nomem": 3, "parallel_sojourn_sum": 600000, "local_sojourn_sum": 0, "parallel_sojourn": [3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], "effective_linkrate": 12500000, "effective_split_gso": 1, "pad2": 4294967295, "control_sent": 9, "drop_control": 2}'
V1='"xstats_version": 6, "flows_active": 2, "threshold_turns": 10, "parallel_only": 5, "local_only": 3, "throttled": 7, "wakeups": 6, "gso_segments": 44, "unknown_class": 1, "drop_local_full": 11, "drop_local_evicted": 12, "drop_parallel_full": 13, "drop_flow_limit": 14, "drop_gso_failed": 15, "drop_filter": 18446744073709551615'
V2="$V1, \"resv_dispatches\": 1000, \"resv_rejects\": 2, \"resv_sum_rate\": 2500000, \"resv_capacity\": 11250000, \"resv_classes\": 3, \"resv_backlogged\": 2, \"resv_throttled\": 1"
V3="$V2, \"local_flows\": 5, \"local_waiting\": 4, \"credit_waits\": 77, \"drop_local_nomem\": 3"
ALL5="$V3, \"parallel_sojourn_pkts\": 6, \"parallel_sojourn_sum\": 600000, \"parallel_sojourn_mean\": 100000, \"parallel_sojourn_hist\": [3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], \"local_sojourn_pkts\": 0, \"local_sojourn_sum\": 0, \"local_sojourn_mean\": 0, \"local_sojourn_hist\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], \"effective_linkrate\": 12500000, \"effective_split_gso\": 1"
ALL="{$ALL5, \"control_sent\": 9, \"drop_control\": 2}"
ALL4="{$V3, \"parallel_sojourn_pkts\": 6, \"parallel_sojourn_sum\": 600000, \"parallel_sojourn_mean\": 100000, \"parallel_sojourn_hist\": [3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], \"local_sojourn_pkts\": 0, \"local_sojourn_sum\": 0, \"local_sojourn_mean\": 0, \"local_sojourn_hist\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}"
RATES='{"resv_sum_rate": "20Mbit", "resv_capacity": "90Mbit"}'
# The text of version 4's fields, where it differs from the JSON.
SOJ='"parallel_sojourn_sum": null, "parallel_sojourn_mean": "100us", "parallel_sojourn_hist": "2.048us:3,8.192us:2,33.554432ms+:1", "local_sojourn_sum": null, "local_sojourn_mean": "0ns", "local_sojourn_hist": "-"'
RATES4="{\"resv_sum_rate\": \"20Mbit\", \"resv_capacity\": \"90Mbit\", $SOJ}"
RATES5="{\"resv_sum_rate\": \"20Mbit\", \"resv_capacity\": \"90Mbit\", $SOJ, \"effective_linkrate\": \"100Mbit\"}"
SIZE=$(xsize tc_parq_xstats)
SIZE1=$(xsize tc_parq_xstats resv_dispatches)
stats "every xstats field, text and JSON keys equal" "$SIZE" "$ALL" "$RATES5"
stats "xstats from a newer module (longer)" "$((SIZE + 24))" "$ALL" "$RATES5"
stats "xstats of version 5 (no control queue)" \
	"$(xsize tc_parq_xstats control_sent)" "{$ALL5}" "$RATES5"
stats "xstats of version 4 (no effective values)" \
	"$(xsize tc_parq_xstats effective_linkrate)" "$ALL4" "$RATES4"
stats "xstats of version 3 (no sojourn times)" \
	"$(xsize tc_parq_xstats parallel_sojourn_sum)" "{$V3}" "$RATES"
stats "xstats cut inside the local sojourn buckets" \
	"$(( $(xsize tc_parq_xstats local_sojourn) + 8 ))" "{$V3}" "$RATES"
stats "xstats of version 1 (no reserved flows)" "$SIZE1" "{$V1}"
stats "xstats of version 2 (no local destinations)" \
	"$(xsize tc_parq_xstats local_flows)" "{$V2}" "$RATES"
stats "xstats cut after resv_capacity" "$(xsize tc_parq_xstats resv_classes)" \
	"{$V1, \"resv_dispatches\": 1000, \"resv_rejects\": 2, \"resv_sum_rate\": 2500000, \"resv_capacity\": 11250000}" "$RATES"
stats "xstats from an older module (shorter)" 24 \
	'{"xstats_version": 6, "flows_active": 2, "threshold_turns": 10, "parallel_only": 5}'
stats "xstats cut inside a field" 20 \
	'{"xstats_version": 6, "flows_active": 2, "threshold_turns": 10}'
stats "xstats of 2 bytes" 2 '{}'

# cstats DESC CLASS-XSTATS-JSON XSTATS-LEN EXPECTED-KEYS-JSON [EXPECTED-TEXT-JSON]
# A reserved class's xstats: the text of tc -s class show; the JSON through
# tc -s -j qdisc show (tc 6.1 prints no JSON for classes, and print_xstats
# tells the two kinds apart by the payload alone).
CLS="\"msg\": \"class\", \"ifindex\": $IFINDEX, \"handle\": $((0x10000 + 0x$R0)), \"parent\": 65536, \"info\": 0"
cstats() {
	local desc=$1 cx=$2 len=$3 exp=$4 texp=${5:-'{}'} msg
	nl mkdump "$W/dump" "[{$CLS, \"options\": {\"RATE\": 2500000}, \"cxstats\": $cx, \"xstats_len\": $len}]"
	run_tc -s class show dev $DEV
	cp "$W/out" "$W/text"
	local rc1=$RC err1=$ERR
	nl mkdump "$W/dump" "[{$Q, \"cxstats\": $cx, \"xstats_len\": $len}]"
	run_tc -s -j qdisc show dev $DEV
	if [ $rc1 -eq 0 ] && [ -z "$err1" ] && [ $RC -eq 0 ] && [ -z "$ERR" ] &&
	   msg=$(nl check-xstats "$W/text" "$W/out" "$exp" "$texp"); then
		pass "prints class $desc"
	else
		fail "prints class $desc" "rc=$rc1/$RC, stderr: $err1 $ERR" "${msg:-}" "$(cat "$W/text")"
	fi
}
CV=$(( $(sed -n 's/^#define PARQ_XSTATS_CLASS\s\+\(0x[0-9a-fA-F]*\).*/\1/p' "$HDR") | 1 ))
CSIZE=$(xsize tc_parq_class_xstats)
CSIZE1=$(xsize tc_parq_class_xstats throttled_ns)	# version 1
CX="{\"version\": $CV, \"pad\": 7, \"rate\": 2500000, \"idt\": 0, \"dispatches\": 1000, \"lateness_max\": 1500, \"lateness_sum\": 1234567, \"throttled_ns\": 2500000000, \"use_windows\": 7, \"choked_ppm\": 123456, \"unused_ppm\": 750000}"
# Version 2's use of the rate: shares as percentages in the text.
USE='"use_windows": 7, "choked_ppm": 123456, "unused_ppm": 750000, "throttled": 2500000000'
USET='"choked_ppm": null, "choked": "12.3%", "unused_ppm": null, "unused": "75.0%", "throttled": "2.5s"'
cstats "xstats of a rate class" "$CX" "$CSIZE" \
	"{\"resv_rate\": 2500000, \"dispatches\": 1000, \"lateness_max\": 1500, \"lateness_mean\": 1234, $USE}" \
	"{\"resv_rate\": \"20Mbit\", \"lateness_max\": \"1.5us\", \"lateness_mean\": \"1.234us\", $USET}"
cstats "xstats from a newer module (longer)" "$CX" "$((CSIZE + 16))" \
	"{\"resv_rate\": 2500000, \"dispatches\": 1000, \"lateness_max\": 1500, \"lateness_mean\": 1234, $USE}" \
	"{\"resv_rate\": \"20Mbit\", \"lateness_max\": \"1.5us\", \"lateness_mean\": \"1.234us\", $USET}"
cstats "xstats of version 1 (no use of the rate)" "$CX" "$CSIZE1" \
	'{"resv_rate": 2500000, "dispatches": 1000, "lateness_max": 1500, "lateness_mean": 1234}' \
	'{"resv_rate": "20Mbit", "lateness_max": "1.5us", "lateness_mean": "1.234us"}'
cstats "xstats before a full window (no shares)" \
	"{\"version\": $CV, \"rate\": 2500000, \"throttled_ns\": 1000, \"choked_ppm\": 5, \"unused_ppm\": 1000000}" "$CSIZE" \
	'{"resv_rate": 2500000, "dispatches": 0, "lateness_max": 0, "lateness_mean": 0, "use_windows": 0, "throttled": 1000}' \
	'{"resv_rate": "20Mbit", "lateness_max": "0ns", "lateness_mean": "0ns", "throttled": "1us"}'
cstats "xstats of a choked class (100%, 0%)" \
	"{\"version\": $CV, \"rate\": 2500000, \"use_windows\": 1, \"choked_ppm\": 1000000, \"unused_ppm\": 0}" "$CSIZE" \
	'{"resv_rate": 2500000, "dispatches": 0, "lateness_max": 0, "lateness_mean": 0, "use_windows": 1, "choked_ppm": 1000000, "unused_ppm": 0, "throttled": 0}' \
	'{"resv_rate": "20Mbit", "lateness_max": "0ns", "lateness_mean": "0ns", "choked_ppm": null, "choked": "100.0%", "unused_ppm": null, "unused": "0.0%", "throttled": "0ns"}'
cstats "xstats of an idt class" \
	"{\"version\": $CV, \"rate\": 15000000, \"idt\": 100000, \"dispatches\": 3, \"lateness_max\": 2000000000, \"lateness_sum\": 3000000001}" "$CSIZE1" \
	'{"resv_rate": 15000000, "idt": 100000, "dispatches": 3, "lateness_max": 2000000000, "lateness_mean": 1000000000}' \
	'{"resv_rate": "120Mbit", "idt": "100us", "lateness_max": "2s", "lateness_mean": "1s"}'
cstats "xstats with no dispatches (lateness_mean 0)" \
	"{\"version\": $CV, \"rate\": 1, \"idt\": 1, \"lateness_sum\": 99}" "$CSIZE1" \
	'{"resv_rate": 1, "idt": 1, "dispatches": 0, "lateness_max": 0, "lateness_mean": 0}' \
	'{"resv_rate": "8bit", "idt": "1ns", "lateness_max": "0ns", "lateness_mean": "0ns"}'
cstats "xstats cut before lateness_sum (no mean)" "$CX" "$(xsize tc_parq_class_xstats lateness_sum)" \
	'{"resv_rate": 2500000, "dispatches": 1000, "lateness_max": 1500}' \
	'{"resv_rate": "20Mbit", "lateness_max": "1.5us"}'
cstats "xstats cut inside rate" "$CX" 12 '{}'
cstats "xstats of the version word only" "$CX" 4 '{}'

# ---- printing: classes ----
nl mkdump "$W/dump" "[{\"msg\": \"class\", \"ifindex\": $IFINDEX, \"handle\": 65537, \"parent\": 4294967295, \"info\": 0, \"options\": {}}, {\"msg\": \"class\", \"ifindex\": $IFINDEX, \"handle\": 65538, \"parent\": 4294967295, \"info\": 0, \"options\": {}}]"
run_tc class show dev $DEV
if [ $RC -eq 0 ] && [ -z "$ERR" ] &&
   [ "$(printf '%s\n' "$OUT" | sed 's/ *$//')" = "$(printf 'class parq 1:1 root\nclass parq 1:2 root')" ]; then
	pass "prints the classes"
else
	fail "prints the classes" "rc=$RC, stderr: $ERR" "$OUT"
fi

# Reserved classes: each printed line, after "parent 1: ", is a command line
# for the same options.
# cshow CLASSID-MINOR-HEX OPTIONS-JSON EXPECTED-TEXT
cshow() {
	local minor=$1 opts=$2 text=$3 line msg
	local spec="[{\"msg\": \"class\", \"ifindex\": $IFINDEX, \"handle\": $((0x10000 + 0x$minor)), \"parent\": 65536, \"info\": 0, \"options\": $opts}]"
	nl mkdump "$W/dump" "$spec"
	run_tc class show dev $DEV
	line=$(printf '%s\n' "$OUT" | head -n 1)
	line=${line% }
	if [ $RC -eq 0 ] && [ -z "$ERR" ] && [ "$line" = "class parq 1:$minor parent 1: $text" ]; then
		pass "prints class options $text"
	else
		fail "prints class options $text" "rc=$RC, stderr: $ERR" "got:      $line" \
			"expected: class parq 1:$minor parent 1: $text"
		return
	fi
	read -r -a words <<<"${line#*parent 1: }"
	run_tc class change dev $DEV classid 1:$minor parq "${words[@]}"
	cp "$CAP" "$W/reparsed"
	nl mkdump "$W/dump" "$spec"
	if [ $RC -eq 0 ] && msg=$(nl same-opts "$W/dump" "$W/reparsed"); then
		pass "prints class options $text as a command line that parses back"
	else
		fail "prints class options $text as a command line that parses back" \
			"rc=$RC, stderr: $ERR" "${msg:-}"
	fi
}
cshow $R0 '{"RATE": 2500000}' "rate 20Mbit"
cshow ffff '{"RATE": 1}' "rate 8bit"
cshow $R1 '{"IDT": 100000}' "idt 100us"
cshow $R2 '{"IDT": 1234567}' "idt 1.234567ms"
cshow $R3 '{"IDT": "PARQ_IDT_MAX"}' "idt 10s"
cshow $R4 '{"IDT": 999}' "idt 999ns"
cshow $R5 '{"IDT": 1000000001}' "idt 1.000000001s"

# tc 6.1 prints no JSON for classes; a newer tc does.
nl mkdump "$W/dump" "[{$CLS, \"options\": {\"IDT\": 100000}}]"
run_tc -j class show dev $DEV
if ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$W/out" 2>/dev/null; then
	skip "prints class options in JSON" "this tc prints no JSON for classes"
elif python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))[0]; o = c.get("options", c); sys.exit(not (o.get("idt") == 100000 and "rate" not in o))' "$W/out"; then
	pass "prints class options in JSON"
else
	fail "prints class options in JSON" "$OUT"
fi

echo "TAP version 13"
echo "1..$N"
printf '%s\n' "${RESULTS[@]}"
[ $FAILED -eq 0 ]
