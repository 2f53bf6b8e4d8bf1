"""test_plugin.py: the pytest plugin on the simulated GPU: limits that fail a test with its peak, sites and NCCL call, the session re-executed under the library, one trace per test, bad markers."""
import glob
import json
import os
import subprocess
import sys

import gpumemtrace
from conftest import FAKES

MiB = 1 << 20


def run(gmt, *args):
    return gmt.runpytest_subprocess(*gmt.extra, *args)


def test_device_limit_fails_with_peak_and_sites(gmt):
    gmt.makepyfile(test_inner='''
        import pytest
        @pytest.mark.limit_device_memory("32 MiB")
        def test_too_big(cuda):
            a = cuda.malloc(24 << 20)
            b = cuda.malloc(40 << 20)
            cuda.free(b)
        @pytest.mark.limit_device_memory("128 MiB")
        def test_fits(cuda):
            cuda.free(cuda.malloc(64 << 20))
        @pytest.mark.limit_device_memory("32 MiB")
        def test_after_a_bigger_one(cuda):
            cuda.malloc(16 << 20)      # the peaks of the tests before are not its own
    ''')
    r = run(gmt, "--gpumemtrace", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=2, failed=1)
    out = r.stdout.str()
    # 24 + 40 MiB live at once; the 24 MiB of the test before does not count
    assert "peak device memory 64 MiB is over the limit of 32 MiB" in out
    assert "Top allocation sites" in out and "Peak device memory" in out
    # the site is the test's own line, in Python
    assert "test_too_big (test_inner.py:5)" in out
    assert "test_fits" not in out.split("short test summary")[0].split("FAILURES")[1]


def test_nccl_limit_names_the_call_in_flight(gmt):
    gmt.makepyfile(test_inner='''
        import pytest
        @pytest.mark.limit_nccl_memory("8 MiB")
        def test_all_reduce(cuda, nccl):
            buf = cuda.malloc(1 << 20)
            nccl.all_reduce(buf, 1024)
        @pytest.mark.limit_nccl_memory("64 MiB")
        @pytest.mark.limit_device_memory("1 GiB")
        def test_all_reduce_fits(cuda, nccl):
            nccl.all_reduce(cuda.malloc(1 << 20), 1024)
    ''')
    r = run(gmt, "--gpumemtrace", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1, failed=1)
    out = r.stdout.str()
    # the simulated NCCL's buffers, allocated on its proxy thread: 2 channels x (recv
    # 10 MiB + send 2 MiB) + the device comm's 6 MiB at init
    assert "peak NCCL device memory 30 MiB is over the limit of 8 MiB" in out
    peak_rows = out.split("Peak device memory")[1].split("Top allocation sites")[0]
    assert "AllReduce" in peak_rows, peak_rows


def test_without_the_library_limits_are_not_checked(gmt):
    gmt.makepyfile(test_inner='''
        import pytest, gpumemtrace
        @pytest.mark.limit_device_memory("1 MiB")
        def test_big(cuda):
            assert not gpumemtrace.traced()
            cuda.malloc(8 << 20)
    ''')
    r = run(gmt, "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1, warnings=1)
    assert "limits are not checked (run pytest --gpumemtrace)" in r.stdout.str()


def test_session_reexecuted_under_the_library(gmt):
    gmt.makepyfile(test_inner='''
        import os, gpumemtrace
        def test_traced(cuda):
            assert gpumemtrace.traced()
            assert os.environ["LD_PRELOAD"].split(":")[0] == gpumemtrace.loaded_library()
            p = cuda.malloc(3 << 20)
            assert gpumemtrace.current_bytes(0) >= 3 << 20
    ''')
    r = run(gmt, "--gpumemtrace", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    assert "gpumemtrace: warning" not in r.stderr.str(), r.stderr.str()


def test_one_trace_per_test(gmt, tmp_path):
    gmt.makepyfile(test_inner='''
        import gpumemtrace
        def test_a(cuda):
            cuda.malloc(8 << 20)
        def test_b(cuda):
            with gpumemtrace.phase("load"):
                cuda.malloc(16 << 20)
        def test_c():
            assert False, "fails in its own process"
    ''')
    d = tmp_path / "traces"
    r = run(gmt, "--gpumemtrace", "--gpumemtrace-dir", str(d), "-p", "no:cacheprovider")
    r.assert_outcomes(passed=2, failed=1)
    assert "fails in its own process" in r.stdout.str()
    peaks = {}
    for name in ("test_a", "test_b"):
        files = glob.glob(str(d / ("*test_inner.py_%s.*.gmt" % name)))
        assert len(files) == 1, sorted(os.listdir(d))
        s = json.loads(subprocess.run([gpumemtrace.cli_path(), "summary", "--json", files[0]],
                                      capture_output=True, text=True, check=True).stdout)
        t = s["traces"][0]
        peaks[name] = t["devices"][0]["peak_bytes"]
        if name == "test_b":
            assert [p["name"] for p in t["phases"]["rows"]] == ["load"]
    assert peaks == {"test_a": 8 * MiB, "test_b": 16 * MiB}


def test_bad_limit_is_a_usage_error(gmt):
    gmt.makepyfile(test_inner='''
        import pytest
        @pytest.mark.limit_device_memory("lots")
        def test_x(cuda):
            pass
    ''')
    r = run(gmt, "--gpumemtrace", "-p", "no:cacheprovider")
    assert r.ret != 0
    assert "limit_device_memory: not a size: 'lots'" in r.stdout.str() + r.stderr.str()


def test_figures_agree_with_the_trace(tmp_path):
    """The in-process figures against what `summary` reads in the same process's trace."""
    prog = tmp_path / "prog.py"
    prog.write_text('''
import ctypes, json, os, sys
import gpumemtrace as g
rt = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
rt.cudaSetDevice(0)
ps = []
for n in (5, 7, 11, 13):
    p = ctypes.c_void_p(); assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n << 20)) == 0
    ps.append(p)
rt.cudaFree(ps[1]); rt.cudaFree(ps[2])
with g.phase("tail"):
    p = ctypes.c_void_p(); rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(3 << 20))
print(json.dumps({"peak": g.peak_bytes(0), "now": g.current_bytes(0), "exact": g.exact(),
                  "devices": g.devices(), "trace": g.trace_file()}))
''')
    env = dict(os.environ, LD_PRELOAD=gpumemtrace.library_path(),
               GPUMEMTRACE_OUTPUT=str(tmp_path / "t.%p.gmt"),
               PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"),
                                                      os.path.dirname(gpumemtrace.__path__[0])) if p))
    env.pop("GPUMEMTRACE_LIB", None)
    out = subprocess.run([sys.executable, str(prog), FAKES], env=env,
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    s = json.loads(subprocess.run([gpumemtrace.cli_path(), "summary", "--json", got["trace"]],
                                  capture_output=True, text=True, check=True).stdout)
    dev = s["traces"][0]["devices"][0]
    assert got["peak"] == dev["peak_bytes"] == 36 * MiB
    assert got["now"] == dev["end_bytes"] == 21 * MiB
    assert got["exact"] and got["devices"] == [0]
    assert [p["name"] for p in s["traces"][0]["phases"]["rows"]] == ["tail"]


def test_untraced_process_reads_nothing():
    assert not gpumemtrace.traced()
    assert gpumemtrace.peak_bytes() == 0 and gpumemtrace.current_bytes(0, "nccl") == 0
    assert gpumemtrace.devices() == [] and not gpumemtrace.exact()
    gpumemtrace.reset_peak()
    with gpumemtrace.phase("nothing"):
        pass

    @gpumemtrace.phase("f")
    def f(x):
        return x + 1
    assert f(1) == 2


def test_sizes():
    from gpumemtrace.pytest_plugin import parse_size
    assert parse_size("2 GiB") == 2 << 30 and parse_size("400MiB") == 400 << 20
    assert parse_size("1.5G") == 3 << 29 and parse_size("512MB") == 512 * 10 ** 6
    assert parse_size(1024) == 1024
    for bad in ("lots", "-1 MiB", "2 GiBs", True, ""):
        try:
            parse_size(bad)
        except ValueError:
            continue
        raise AssertionError("accepted %r" % (bad,))


def test_versions_agree():
    """The package's version is the CLI's (tools/cli.h) and pyproject.toml's."""
    import re
    from conftest import ROOT
    cli = re.search(r'GMT_CLI_VERSION "([^"]+)"', open(os.path.join(ROOT, "tools", "cli.h")).read())
    proj = re.search(r'^version = "([^"]+)"', open(os.path.join(ROOT, "pyproject.toml")).read(), re.M)
    assert cli and proj and cli.group(1) == proj.group(1) == gpumemtrace.__version__
    out = subprocess.run([gpumemtrace.cli_path(), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("gpumemtrace %s " % gpumemtrace.__version__)
    # python -m gpumemtrace is the same CLI, its exit status passed through
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (os.path.dirname(gpumemtrace.__path__[0]), os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, "-m", "gpumemtrace", "--version"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == out
    r = subprocess.run([sys.executable, "-m", "gpumemtrace", "summary", "/nonexistent.gmt"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
