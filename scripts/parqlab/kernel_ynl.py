"""The Linux kernel's YNL library (tools/net/ynl/lib of linux-source-6.12:
YnlFamily, NlError, SpecFamily) and the netlink specs' JSON schemas
(Documentation/netlink/PROTOCOL.yaml), where `scripts/kernel-fetch ynl`
unpacks them: the newest ynl-* directory with a .complete file under
$PARQ_KERNEL_CACHE (default /var/cache/parq/kernels).  The VM sees the
host's directory.  Nothing of the kernel's code is in this repository.

    lib = kernel_ynl.load()        # the package: lib.YnlFamily, lib.NlError
    kernel_ynl.schema(spec_path)   # the schema of the spec's protocol
"""
import os
import re
import sys
from pathlib import Path

import yaml


def cache_dir():
    return Path(os.environ.get("PARQ_KERNEL_CACHE",
                               "/var/cache/parq/kernels"))


def _version(path):
    """A sort key that orders ynl-6.12.9 before ynl-6.12.10 (sort -V)."""
    return [int(p) if p.isdigit() else p
            for p in re.split(r"(\d+)", path.name)]


def tools_dir():
    """The newest complete ynl-* directory of the kernel cache."""
    cache = cache_dir()
    found = [d for d in cache.glob("ynl-*") if (d / ".complete").exists()]
    if not found:
        raise RuntimeError(f"no kernel YNL tools in {cache} (a ynl-* "
                           "directory with a .complete file): run "
                           "scripts/kernel-fetch ynl")
    return max(found, key=_version)


def load():
    """The kernel's YNL library, imported as the package "lib" from
    tools/net/ynl of tools_dir()."""
    where = tools_dir() / "tools" / "net" / "ynl"
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))
    import lib
    if Path(lib.__file__).resolve().parent != (where / "lib").resolve():
        raise RuntimeError(f"the package 'lib' was imported from "
                           f"{lib.__file__}, not from {where}/lib")
    return lib


def schema(spec_path):
    """The kernel's JSON schema of the protocol @spec_path declares
    (genetlink, genetlink-c, ...), for YnlFamily's validation: its default,
    the spec's directory/../PROTOCOL.yaml, is not there for a spec kept
    outside the kernel's tree."""
    with open(spec_path) as f:
        proto = yaml.safe_load(f).get("protocol", "genetlink")
    path = tools_dir() / "Documentation" / "netlink" / f"{proto}.yaml"
    if not path.exists():
        raise RuntimeError(f"{spec_path}: the kernel's YNL tools have no "
                           f"schema for protocol {proto!r} ({path})")
    return str(path)
