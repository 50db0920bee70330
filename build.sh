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

# --- NPU op package (msopgen project from op_proto/), only where CANN is installed -------------
# One msopgen project for every op, our op_host, tiling and op-package kernel sources overlaid and
# checked against what msopgen generated (tools/op_project.py, also run by tests/npu/test_msopgen.py),
# built into build/op_project/build_out/custom_opp_*.run.
if [ -n "${ASCEND_HOME_PATH:-}" ] && command -v msopgen >/dev/null 2>&1; then
  project=build/op_project
  .venv/bin/python tools/op_project.py --out "$project" --msopgen msopgen --cann "$ASCEND_HOME_PATH"
  (cd "$project" && bash build.sh)
  echo "NPU op package: $(ls "$project"/build_out/custom_opp_*.run) (install: <it> --install-path=DIR)"
else
  echo "NPU op package skipped: no CANN on this machine (needs ASCEND_HOME_PATH and msopgen); CPU twin built."
fi
