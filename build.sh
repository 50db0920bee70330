#!/usr/bin/env bash
# Everything a fresh machine needs: a virtualenv with the pinned torch and the test tools, then
# the C++ build (CPU twin + kernels + bindings, and the NPU backend where CANN exists) installed
# in editable mode. Safe to re-run; rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
# No build isolation: the build must see the torch installed above, not download another.
.venv/bin/pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e .
.venv/bin/python -c "import ascendc_ops; print('ascendc_ops built; backends:', ascendc_ops.backends())"
