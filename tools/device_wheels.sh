#!/usr/bin/env bash
# Fill .whl/ (git-ignored) with the pure-Python wheels that a GPU machine without network
# lacks: xDSL (the version pyproject.toml pins) and its dependencies, filecheck and lit.
# numpy, ml_dtypes, cuda-bindings, pytest (with pytest-xdist) and torch are expected there.
# Run it from the repository root on a machine that reaches PyPI, then take .whl/ along to
# the GPU machine with the working tree; tools/device_check.sh installs what it finds there.
#   bash tools/device_wheels.sh                  # for the GPU machine's Python 3.12
#   PYTHON_VERSION=3.11 bash tools/device_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
pins=$(python3 - <<'PY'
import re
import tomllib

with open("pyproject.toml", "rb") as file:
    project = tomllib.load(file)["project"]
specs = project["dependencies"] + project["optional-dependencies"]["dev"]
for spec in specs:
    if re.split(r"[<>=!~ \[;]", spec, maxsplit=1)[0].lower() in {"xdsl", "filecheck", "lit"}:
        print(spec)
PY
)
extra=${DEVICE_WHEELS:-"immutabledict ordered-set typing-extensions"}
mkdir -p .whl
# shellcheck disable=SC2086  # the pins and options are word lists
python3 -m pip download -q --no-deps --only-binary=:all: \
  --python-version "${PYTHON_VERSION:-3.12}" --implementation cp \
  --platform manylinux_2_17_x86_64 --platform any ${PIP_DOWNLOAD_OPTIONS:-} \
  -d .whl $pins $extra
ls -1 .whl
