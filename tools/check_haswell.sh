#!/usr/bin/env bash
# The portable build on an AVX2-only CPU: runs the package under qemu-user emulating a Haswell
# (x86-64-v3, no AVX-512), where it must pick the avx2 path, run an op, and refuse a forced
# AVX-512 path with a clear error. Opt-in (emulation takes minutes); needs `apt-get install
# qemu-user` and ./build.sh first. Usage: tools/check_haswell.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v qemu-x86_64 >/dev/null || { echo "needs qemu-x86_64 (apt-get install -y qemu-user)"; exit 2; }
# the guest's CPUID is Haswell's; QEMU passes /proc/cpuinfo through from the host, so the loader
# must (and does) take the CPU's features from CPUID (torch.cpu.get_capabilities), not that file
run() { ASCENDC_TWIN_SANITIZE=0 qemu-x86_64 -cpu Haswell .venv/bin/python -c "$1"; }

run '
import torch, ascendc_ops
assert ascendc_ops.isa() == "avx2", ascendc_ops.isa()
x = torch.randn(3, 2 * 67)
y = ascendc_ops.swiglu(x)
a, b = x.chunk(2, -1)
torch.testing.assert_close(y, torch.nn.functional.silu(a) * b)
print("ok   Haswell: isa", ascendc_ops.isa(), "library", ascendc_ops.library_path.name, "swiglu runs")
'
if out=$(ASCENDC_OPS_ISA=avx512 run 'import ascendc_ops' 2>&1); then
  echo "FAIL Haswell: ASCENDC_OPS_ISA=avx512 was accepted"; exit 1
fi
grep -q "ASCENDC_OPS_ISA=avx512: this CPU lacks avx512_f" <<<"$out" || { echo "FAIL: $out"; exit 1; }
echo "ok   Haswell: ASCENDC_OPS_ISA=avx512 refused: $(grep -o 'ASCENDC_OPS_ISA=avx512: .*' <<<"$out")"
