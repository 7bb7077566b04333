"""Constants of kmod/include/uapi/linux/parq.h and of the header it
includes, linux/parq_genl.h (the netlink family's, made from its spec by
scripts/ynl-regen), read from the headers themselves so that the tests
follow the one source of truth.

    from parqlab import uapi
    uapi.TCA_PARQ_THRESHOLD, uapi.PARQ_THRESHOLD_INF, uapi.XSTATS_FIELDS
"""
import os
import re

from . import repo_path

HEADER = repo_path("kmod", "include", "uapi", "linux", "parq.h")


def _strip_comments(src):
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def _c_expr(expr, names):
    expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr.strip())
    return eval(expr, {"__builtins__": {}}, names)  # noqa: S307 - our header


def _source(path):
    """@path's text, with the headers of its own folder it includes."""
    src = open(path).read()
    folder = os.path.dirname(path)
    for name in re.findall(r'^#include\s+<linux/(\w+\.h)>', src, flags=re.M):
        if os.path.exists(os.path.join(folder, name)):
            src += "\n" + _source(os.path.join(folder, name))
    return src


def parse(path=HEADER):
    src = _strip_comments(_source(path)).replace("\\\n", " ")
    names = {"PARQ_DSCP_BIT": lambda d: 1 << d}
    # Enums first (defines refer to their last members).
    for body in re.findall(r"enum\s*\w*\s*\{(.*?)\}", src, flags=re.S):
        value = -1
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" in item:
                name, expr = item.split("=", 1)
                value = _c_expr(expr, names)
                name = name.strip()
            else:
                name = item
                value += 1
            names[name] = value
    for name, expr in re.findall(r"^#define\s+(\w+)[ \t]+(.+)$", src,
                                 flags=re.M):
        if name.startswith("_") or "(" in name:
            continue
        try:
            names[name] = _c_expr(expr, names)
        except Exception:  # noqa: BLE001 - not a numeric macro
            pass
    m = re.search(r"struct\s+tc_parq_xstats\s*\{(.*?)\}", src, flags=re.S)
    fields = re.findall(r"__(u32|u64)\s+(\w+)\s*;", m.group(1)) if m else []
    names["XSTATS_FIELDS"] = [(n, t) for t, n in fields]
    return names


globals().update(parse())
