#!/bin/sh
# pytest-plugin.sh: the Python package's own tests (tests/plugin, driven by pytest): the pytest plugin, the query API and phases, on the simulated CUDA/NCCL of this build.
# Usage: pytest-plugin.sh BUILD_DIR (run from the repository root). Skipped (exit 77) without pytest.
set -u
b=$(cd "$1" && pwd)
py=${PYTHON:-python3}
if ! "$py" -c 'import pytest' 2>/dev/null; then
  echo "pytest is not installed for $py (python3 -m pip install pytest)"
  exit 77
fi
# the package from this checkout, the library and the simulated CUDA/NCCL of this build
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" GMT_LIB="$b/libgpumemtrace.so" GMT_FAKES="$b/fakes" \
  "$py" -m pytest -q -p no:cacheprovider tests/plugin
