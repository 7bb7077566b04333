"""ftrace's files, for the benchmarks that time kernel functions with its
function_graph tracer.  A change of the tracer, of its filters or of its
threshold rewrites kernel code: make it while no traffic runs through the
traced functions (Documentation/development.md)."""
import os

TRACING = "/sys/kernel/tracing"


def path(name):
    return os.path.join(TRACING, name)


def write(name, value):
    with open(path(name), "w") as f:
        f.write(str(value))


def read(name):
    with open(path(name)) as f:
        return f.read()


def require(who):
    """Exit, naming @who, when tracefs is not mounted."""
    if not os.path.exists(path("current_tracer")):
        raise SystemExit(f"{who}: no tracefs at {TRACING}")


def reset():
    """Tracing off and every setting the benchmarks change back to the
    kernel's default; a setting this kernel lacks is skipped."""
    for name, value in (("tracing_on", 0), ("current_tracer", "nop"),
                        ("tracing_thresh", 0),
                        ("set_ftrace_filter", ""),
                        ("set_graph_function", ""), ("max_graph_depth", 0),
                        ("options/funcgraph-abstime", 0),
                        ("options/overwrite", 1), ("trace", ""),
                        ("buffer_size_kb", 1408)):
        try:
            write(name, value)
        except OSError:
            pass
