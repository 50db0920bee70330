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
# One msopgen project for every op (their JSON prototypes merged into one list), our op_host,
# tiling and op-package kernel sources overlaid, built into build/op_project/build_out/custom_opp_*.run.
if [ -n "${ASCEND_HOME_PATH:-}" ] && command -v msopgen >/dev/null 2>&1; then
  project=build/op_project
  rm -rf "$project" && mkdir -p build
  .venv/bin/python -c 'import json, pathlib, sys; json.dump([json.loads(p.read_text())[0] for p in sorted(pathlib.Path("op_proto").glob("*.json"))], open(sys.argv[1], "w"), indent=1)' build/op_project.json
  msopgen gen -i build/op_project.json -c ai_core-Ascend910B -lan cpp -out "$project"
  .venv/bin/python csrc/op_host/gen_op_def.py --proto-dir op_proto --out "$project/op_host"
  cp csrc/op_host/*.cpp csrc/op_host/*.h tiling/*.cpp tiling/*.h "$project/op_host/"
  mkdir -p "$project/op_kernel/kernels"
  cp csrc/kernels/op_package/*.cpp csrc/kernels/op_package/*.h "$project/op_kernel/"
  cp csrc/kernels/*.cpp csrc/kernels/*.h tiling/*_tiling_data.h tiling/cube_tiling.h tiling/kernel_dtypes.h "$project/op_kernel/kernels/"
  .venv/bin/python - "$project/CMakePresets.json" "$ASCEND_HOME_PATH" <<'PY'
import json, sys
path, cann = sys.argv[1:]
presets = json.load(open(path))
for preset in presets["configurePresets"]:
    cache = preset["cacheVariables"]
    cache["vendor_name"] = {"type": "STRING", "value": "ascendc_ops"}
    cache["ASCEND_CANN_PACKAGE_PATH"] = {"type": "PATH", "value": cann}
json.dump(presets, open(path, "w"), indent=2)
PY
  (cd "$project" && bash build.sh)
  echo "NPU op package: $(ls "$project"/build_out/custom_opp_*.run) (install: <it> --install-path=DIR)"
else
  echo "NPU op package skipped: no CANN on this machine (needs ASCEND_HOME_PATH and msopgen); CPU twin built."
fi
