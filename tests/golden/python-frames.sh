#!/bin/sh
# python-frames.sh: Python frames in traced stacks, under every CPython 3.9-3.13 found (tests/python/check_frames.py).
# Usage: python-frames.sh BUILD_DIR
build="${1:?usage: python-frames.sh BUILD_DIR}"
py=$(command -v python3) || { echo "no python3 on PATH: CPython is needed for this check"; exit 1; }
exec "$py" tests/python/check_frames.py "$build"
