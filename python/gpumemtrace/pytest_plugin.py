"""pytest plugin: device-memory limits per test, and the test session under gpumemtrace.

    @pytest.mark.limit_device_memory("2 GiB")    # peak tracked device memory, largest device
    @pytest.mark.limit_nccl_memory("400 MiB")    # of it, what NCCL took
    def test_step(): ...

    pytest --gpumemtrace                          # the session under the library
    pytest --gpumemtrace --gpumemtrace-dir DIR    # each test in a traced process of its own

A test over its limit fails with its peak, the top allocation sites and the NCCL call in
flight at the peak (read from the process's own trace by `gpumemtrace summary`). The
figures come from the library loaded in the process (gpumemtrace.peak_bytes): without
it the limits are not checked, and the session says so once.
"""
import os
import re
import subprocess
import sys
import time

import pytest

import gpumemtrace

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20,
          "mb": 1000 ** 2, "mib": 1 << 20, "g": 1 << 30, "gb": 1000 ** 3, "gib": 1 << 30,
          "t": 1 << 40, "tb": 1000 ** 4, "tib": 1 << 40}
# not GPUMEMTRACE_*: the library warns about names of that prefix it does not know
_REEXEC = "PYTEST_GPUMEMTRACE_REEXEC"
_CHILD = "PYTEST_GPUMEMTRACE_CHILD"


def parse_size(text):
    """'2 GiB', '400MiB', '1.5G', 1024 -> bytes (KiB, MiB ... binary; KB, MB ... decimal)."""
    if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("not a size: %r (say '2 GiB', '400 MiB', '512MB' or bytes)" % (text,))
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def human(n):
    """Bytes as the CLI prints them (gmt_fmt_bytes): three significant digits, halves
    rounded away from zero, trailing zeros dropped: 1744830464 -> '1.63 GiB'."""
    m = abs(n)
    if m < 1024:
        return "%d B" % n
    units, i, v = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), 0, m / 1024
    while v >= 1023.5 and i < len(units) - 1:
        v /= 1024
        i += 1
    scale = 1 if v >= 100 else 10 if v >= 10 else 100
    whole, part = divmod(int(v * scale + 0.5), scale)
    if scale == 100 and part % 10 == 0:
        part, scale = part // 10, 10
    text = "%d.%0*d" % (whole, 2 if scale == 100 else 1, part) if part else "%d" % whole
    return ("-" if n < 0 else "") + text + " " + units[i]


def pytest_addoption(parser):
    g = parser.getgroup("gpumemtrace", "GPU memory (gpumemtrace)")
    g.addoption("--gpumemtrace", action="store_true", default=False,
                help="run the session under libgpumemtrace.so (re-executed with it preloaded "
                     "when it is not), so that limit_device_memory and limit_nccl_memory are checked")
    g.addoption("--gpumemtrace-dir", metavar="DIR", default=None,
                help="with --gpumemtrace: run each test in a traced process of its own, its "
                     "trace in DIR/<test>.<pid>.gmt")


def pytest_configure(config):
    config.addinivalue_line("markers", "limit_device_memory(size): fail the test when its peak "
                            "tracked device memory (the largest device's) goes over size")
    config.addinivalue_line("markers", "limit_nccl_memory(size): fail the test when the peak of "
                            "device memory NCCL took during it goes over size")
    if config.getoption("gpumemtrace") and not gpumemtrace.traced() and not os.environ.get(_CHILD):
        _reexec(config)
    if config.getoption("gpumemtrace_dir") and not config.getoption("gpumemtrace"):
        raise pytest.UsageError("--gpumemtrace-dir goes with --gpumemtrace")
    config._gpumemtrace_warned = False


def _reexec(config):
    """This very command again, with the library preloaded (once: a second time it is
    refused, rather than looping)."""
    lib = gpumemtrace.library_path()
    if not lib or not os.path.isfile(lib):
        raise pytest.UsageError("--gpumemtrace: libgpumemtrace.so not found (set GPUMEMTRACE_LIB)")
    if os.environ.get(_REEXEC):
        raise pytest.UsageError("--gpumemtrace: re-executed with LD_PRELOAD=%s, but the library "
                                "is not loaded (a setuid python, or a launcher that drops "
                                "LD_PRELOAD?)" % lib)
    env = dict(os.environ)
    env[_REEXEC] = "1"
    env.pop("GPUMEMTRACE_LIB", None)  # a setting of this side, not of the library's
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env.setdefault("NVTX_INJECTION64_PATH", lib)  # torch's NVTX ranges become phases too
    d = config.getoption("gpumemtrace_dir")
    if d:
        os.makedirs(d, exist_ok=True)
        env.setdefault("GPUMEMTRACE_OUTPUT", os.path.join(os.path.abspath(d), "session.%p.gmt"))
    argv = [sys.executable] + list(getattr(sys, "orig_argv", [sys.executable] + sys.argv)[1:])
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:  # the captured descriptors must not be what the new process gets
        capman.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(str(config.invocation_params.dir))
    os.execve(sys.executable, argv, env)


def _limits(item):
    out = {}
    for name in ("limit_device_memory", "limit_nccl_memory"):
        m = item.get_closest_marker(name)
        if m is None:
            continue
        if len(m.args) != 1 or m.kwargs:
            raise pytest.UsageError("%s: one size, as in @pytest.mark.%s('2 GiB')" % (name, name))
        try:
            out[name] = parse_size(m.args[0])
        except ValueError as e:
            raise pytest.UsageError("%s: %s" % (name, e)) from None
    return out


def _trace_detail(t0, t1):
    """The summary's peak table and top sites for the window [t0, t1] (CLOCK_MONOTONIC
    seconds) of this process's trace, or '' when it cannot be read."""
    trace, cli = gpumemtrace.trace_file(), gpumemtrace.cli_path()
    if not trace or not cli:
        return ""
    # what the library holds back reaches the file within GPUMEMTRACE_FLUSH_MS
    try:
        flush_ms = int(os.environ.get("GPUMEMTRACE_FLUSH_MS", "100"))
    except ValueError:
        flush_ms = 100
    time.sleep(min(max(flush_ms, 1), 2000) * 2.5 / 1000)
    # the CLI is not a program to trace (and a sanitized build refuses a preload)
    env = dict(os.environ)
    lib = gpumemtrace.loaded_library()
    others = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":")
              if p and p != lib and os.path.basename(p) != "libgpumemtrace.so"]
    env["LD_PRELOAD"] = ":".join(others)
    if not others:
        del env["LD_PRELOAD"]
    env.pop("NVTX_INJECTION64_PATH", None)
    try:
        dump = subprocess.Popen([cli, "dump", trace], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env)
        anchor = None
        for _, line in zip(range(8), dump.stdout):
            m = re.search(r"\bPROCESS\b.*\bmonotonic_ns=(\d+)", line)
            if m:
                anchor = int(m.group(1)) / 1e9
                break
        dump.kill()
        dump.wait()
        if anchor is None:
            return ""
        frm, to = max(t0 - anchor, 0.0), max(t1 - anchor, 0.0)
        out = subprocess.run([cli, "summary", "--top", "3", "--width", "100", "--from", "%.6f" % frm,
                              "--to", "%.6f" % to, trace], capture_output=True, text=True,
                             timeout=120, env=env).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    keep, on = [], False
    for line in out.splitlines():
        if line.startswith(("Peak device memory", "Top allocation sites")):
            on = True
        elif line and not line.startswith(" "):
            on = False
        if on:
            keep.append(line)
    return "\n".join(keep)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    limits = _limits(item)
    if not limits:
        return (yield)
    if not gpumemtrace.traced():
        cfg = item.config
        if not cfg._gpumemtrace_warned:
            cfg._gpumemtrace_warned = True
            cfg.issue_config_time_warning(pytest.PytestWarning(
                "gpumemtrace: this process is not traced: device-memory limits are not "
                "checked (run pytest --gpumemtrace)"), stacklevel=2)
        return (yield)
    gpumemtrace.reset_peak()
    t0 = time.monotonic()
    result = yield
    t1 = time.monotonic()
    over = []
    peak = gpumemtrace.peak_bytes(gpumemtrace.ALL_DEVICES, gpumemtrace.ALL)
    nccl = gpumemtrace.peak_bytes(gpumemtrace.ALL_DEVICES, gpumemtrace.NCCL)
    if "limit_device_memory" in limits and peak > limits["limit_device_memory"]:
        over.append("peak device memory %s is over the limit of %s" %
                    (human(peak), human(limits["limit_device_memory"])))
    if "limit_nccl_memory" in limits and nccl > limits["limit_nccl_memory"]:
        over.append("peak NCCL device memory %s is over the limit of %s" %
                    (human(nccl), human(limits["limit_nccl_memory"])))
    if over:
        per_device = ", ".join("device %s %s" % (d if d >= 0 else "?",
                                                 human(gpumemtrace.peak_bytes(d)))
                               for d in gpumemtrace.devices())
        msg = "\n".join(over) + "\n  peaks during the test: %s (NCCL %s)" % (per_device or "none",
                                                                          human(nccl))
        if not gpumemtrace.exact():
            msg += "\n  (the library did not count every allocation: the peaks may be low)"
        detail = _trace_detail(t0, t1)
        if detail:
            msg += "\n\n" + detail
        pytest.fail(msg, pytrace=False)
    return result


# ---- --gpumemtrace-dir: each test in a traced process of its own ----

def _safe(nodeid):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150] or "test"


def _node_arg(item):
    """The test as a command-line argument that holds from any directory."""
    parts = item.nodeid.split("::", 1)
    return str(item.path) + ("::" + parts[1] if len(parts) > 1 else "")


_OUTCOME = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    d = item.config.getoption("gpumemtrace_dir")
    if not d or os.environ.get(_CHILD) or not gpumemtrace.traced():
        return None
    from _pytest.reports import TestReport
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    d = os.path.abspath(d)
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ)
    env[_CHILD] = "1"
    env["GPUMEMTRACE_OUTPUT"] = os.path.join(d, _safe(item.nodeid) + ".%p.gmt")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--gpumemtrace",
           "--rootdir", str(item.config.rootpath), _node_arg(item)]
    if item.config.inipath:
        cmd[4:4] = ["-c", str(item.config.inipath)]
    if not item.config.pluginmanager.has_plugin("gpumemtrace"):  # loaded by -p, not installed
        cmd[4:4] = ["-p", __name__]
    t0 = time.time()
    p = subprocess.run(cmd, cwd=str(item.config.invocation_params.dir), env=env,
                       capture_output=True, text=True)
    dur = time.time() - t0
    out = p.stdout + p.stderr
    counts = {k.rstrip("s"): int(n) for n, k in _OUTCOME.findall(out.splitlines()[-1] if out else "")}
    if p.returncode == 0 and counts.get("skipped"):
        outcome, longrepr = "skipped", (str(item.path), item.location[1] or 0,
                                        "skipped in its own process")
    elif p.returncode == 0:
        outcome, longrepr = "passed", None
    else:
        outcome = "failed"
        longrepr = "in its own traced process (%s), exit %d:\n%s" % (
            env["GPUMEMTRACE_OUTPUT"].replace("%p", "*"), p.returncode, out[-6000:])
    rep = TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, outcome,
                     longrepr, "call", duration=dur)
    ihook.pytest_runtest_logreport(report=rep)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
