"""sch_parq's qdisc parameters, from their one table (kmod/include/parq/
params.h) as tc-plugin/parq-params prints it, and what tc -j shows of them.

    from parqlab import params
    params.TABLE["threshold"].default        # 4
    params.json_defaults()["dscp_parallel"]  # ["CS5", "EF"]
"""
import json
import subprocess
from dataclasses import dataclass

from . import repo_path

TOOL = repo_path("tc-plugin", "parq-params")


@dataclass(frozen=True)
class Param:
    attr: int
    keyword: str
    type: str
    syntax: str
    meta: str
    min: int
    max: int
    default: int
    word: str
    word_value: int
    accept_min: int  # what the module accepts: min..max and the word's
    accept_max: int
    names: tuple
    message: str

    @property
    def key(self):
        """Its key in tc -j's options."""
        return self.keyword.replace("-", "_")


def _load():
    if not TOOL.exists():
        raise RuntimeError(f"{TOOL} is missing: build it with make plugin")
    out = subprocess.run([str(TOOL)], check=True, capture_output=True,
                         text=True, timeout=30).stdout
    doc = json.loads(out)
    rows = [Param(**dict(r, names=tuple(r["names"]))) for r in doc["params"]]
    return {r.keyword: r for r in rows}, doc["dscp_names"]


TABLE, DSCP_NAMES = _load()
_DSCP_BY_VALUE = {v: k for k, v in DSCP_NAMES.items()}


def json_value(p, v):
    """@v of @p as tc -j prints it (a set of DSCPs as a list, empty for
    its word "none")."""
    if p.syntax == "dscp-set":
        return [_DSCP_BY_VALUE.get(d, d) for d in range(64) if v >> d & 1]
    if p.word is not None and v == p.word_value:
        return p.word
    if p.syntax in ("names", "flag") and 0 <= v - p.min < len(p.names):
        return p.names[v - p.min]
    if p.syntax == "dscp":
        return _DSCP_BY_VALUE.get(v, v)
    return v


def json_defaults():
    """Every parameter's default, under its key, as tc -j prints it."""
    return {p.key: json_value(p, p.default) for p in TABLE.values()}
