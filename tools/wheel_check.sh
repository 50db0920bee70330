#!/usr/bin/env bash
# The package as a user gets it: the wheel built the documented way (`pip wheel --no-build-isolation
# --no-deps .`, against .venv's torch) goes into a fresh venv - torch first (requirements.txt's pin: an
# unpinned torch would pull GBs of CUDA packages), then the wheel with its [hf] extra, the oldest
# transformers CI covers and pytest - and the HF patching tests run there on a copy of tests/ outside the
# checkout, so only the installed package is importable. Then transformers 4.x (LLaMA-Factory still allows
# it): every kernel must skip with the reason. requirements.txt's transformers runs in the main suite.
# Needs ./build.sh first. Usage: tools/wheel_check.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
TRANSFORMERS_OLDEST=5.8.0  # LLaMA-Factory's newest allowed (its pyproject: transformers>=4.55.0,<=5.8.0)
TRANSFORMERS_4=4.57.6      # the newest 4.x, inside LLaMA-Factory's range
work=$(mktemp -d /tmp/ascendc_wheel_check.XXXXXX)
trap 'rm -rf "$work"' EXIT
step() { echo "wheel_check: $1 ($((SECONDS - t0)) s)"; t0=$SECONDS; }
t0=$SECONDS start=$SECONDS status=0

.venv/bin/pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps . -w "$work/dist"
wheel=$(ls "$work"/dist/ascendc_ops-*.whl)
step "built $(basename "$wheel")"
"${PYTHON:-python3}" -m venv "$work/venv"
# --no-compile: byte-compiling every installed module (torch has thousands) is a cost the tests below never recoup
pip=("$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-compile)
"${pip[@]}" "$(grep -E '^torch==' requirements.txt)"
mapfile -t pytest_pins < <(grep -E '^pytest' requirements.txt)  # pytest and pytest-xdist
"${pip[@]}" "$wheel[hf]" "transformers==$TRANSFORMERS_OLDEST" "${pytest_pins[@]}"
step "fresh venv: torch, the wheel, transformers $TRANSFORMERS_OLDEST"

cp -r tests "$work/tests"
cp pyproject.toml "$work/"  # pytest's settings (markers); nothing else reads it there
cd "$work"
venv/bin/python - "$work/venv" <<'PY'
import sys, sysconfig
import ascendc_ops
site = sysconfig.get_paths()["purelib"]
assert ascendc_ops.__file__.startswith(site + "/") and site.startswith(sys.argv[1]), (ascendc_ops.__file__, site)
print("wheel_check: ascendc_ops imported from", ascendc_ops.__file__)
PY
# The harness's data files ship in the wheel: the 910B model and the cann-bench preset read them.
venv/bin/ascendc-ops estimate swiglu --shape 7,1538 --dtype float16 --json >/dev/null
venv/bin/ascendc-ops bench --preset cann-bench --cann-case swi_glu:13 --no-accuracy >/dev/null
step "installed harness: estimate and the cann-bench preset"
installed=(tests/package/test_packaging.py::test_metadata_declares_ranges_not_pins
           tests/package/test_packaging.py::test_record_is_the_torch_compiled_against
           tests/package/test_packaging.py::test_import_refuses_another_torch)
# Of the distributed tests, DDP of a patched model: the installed package in spawned workers. The others' HF side is
# the patching run here already, their torch.distributed side does not depend on transformers (the main suite runs them).
venv/bin/python -m pytest -q -n 2 -p no:cacheprovider "${installed[@]}" tests/patching tests/distributed/test_ddp.py "$@" ||
  status=1
step "patching tests on transformers $TRANSFORMERS_OLDEST, installed wheel"

"${pip[@]}" "transformers==$TRANSFORMERS_4"
venv/bin/python -m pytest -q -p no:cacheprovider tests/patching/test_patching_versions.py "$@" || status=1
step "transformers $TRANSFORMERS_4: every kernel skips with the reason"
echo "wheel_check: $((SECONDS - start)) s in all, exit $status"
exit $status
