"""setup.py: the build step pyproject.toml's setuptools backend runs: make builds the CLI and the preload library, which go into the package as gpumemtrace/_bin/, and the wheel is tagged for the glibc they need."""
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools before 70.1 has it in the wheel package
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
# the make build directory: the checkout's own by default, so a developer's build is reused
BUILD = os.environ.get("GPUMEMTRACE_BUILD", "build")
NATIVE = ("gpumemtrace", "libgpumemtrace.so")


class make_then_build_py(build_py):
    """Runs make (quietly), then puts its two products into the package."""

    def run(self):
        subprocess.check_call(["make", "-s", "lib", "cli", "BUILD=" + BUILD], cwd=ROOT)
        super().run()
        dest = os.path.join(self.build_lib, "gpumemtrace", "_bin")
        os.makedirs(dest, exist_ok=True)
        for name in NATIVE:
            out = os.path.join(dest, name)
            shutil.copy2(os.path.join(ROOT, BUILD, name), out)
            os.chmod(out, 0o755)
            # the symbols stay (the CLI's own messages, a debugger); DWARF is half the size
            if shutil.which("strip"):
                subprocess.check_call(["strip", "--strip-debug", out])


def glibc_needed():
    """The newest GLIBC_x.y symbol version the two binaries ask for: (x, y)."""
    most = (2, 17)
    for name in NATIVE:
        out = subprocess.run(["objdump", "-T", os.path.join(ROOT, BUILD, name)],
                             capture_output=True, text=True, check=True).stdout
        for m in re.finditer(r"GLIBC_(\d+)\.(\d+)", out):
            most = max(most, (int(m.group(1)), int(m.group(2))))
    return most


class manylinux_wheel(bdist_wheel):
    """Any Python 3 (the package runs no extension module of its own), this machine's
    architecture, and the glibc the binaries need: they need nothing else (make checks
    that: scripts/check-lib-deps.sh, scripts/check-cli-deps.sh)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        major, minor = glibc_needed()
        arch = os.uname().machine
        return "py3", "none", "manylinux_%d_%d_%s" % (major, minor, arch)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


# egg_info and build write below the make build directory, which must exist before either
# runs (a fresh checkout, or one whose build/ holds only make's products)
os.makedirs(os.path.join(BUILD, "python"), exist_ok=True)

setup(
    cmdclass={"build_py": make_then_build_py, "bdist_wheel": manylinux_wheel},
    distclass=BinaryDistribution,
    package_data={"gpumemtrace": ["_bin/*"]},
    options={"build": {"build_base": os.path.join(BUILD, "python")},
             "egg_info": {"egg_base": os.path.join(BUILD, "python")}},
)
