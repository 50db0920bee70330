"""What the twin's instruction record and sanitizer cost: each op at a model shape, timed with the
sanitizer off (ASCENDC_TWIN_SANITIZE=0, what bench and plain calls run), on (=1, what the tests
and verify run), and with the JSON record export on.

    .venv/bin/python tools/sanitizer_overhead.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import torch  # noqa: E402

import ascendc_ops  # noqa: E402


def cases():
    x = torch.randn(1, 32, 512, 128)
    cos, sin = torch.randn(512, 128), torch.randn(512, 128)
    q = torch.randn(1, 32, 512, 128, dtype=torch.bfloat16)
    c4, s4 = torch.randn(1, 1, 512, 128, dtype=torch.bfloat16), torch.randn(1, 1, 512, 128, dtype=torch.bfloat16)
    h = torch.randn(1024, 2 * 11008)
    xn, g = torch.randn(1024, 4096), torch.ones(4096)
    xs, gs = torch.randn(64, 30000), torch.ones(30000)  # split-row mode
    return [
        ("rope_customer fwd", "1x32x512x128 fp32", lambda: ascendc_ops.rope_customer(x, cos, sin)),
        ("rotary_mul fwd", "1x32x512x128 bf16", lambda: ascendc_ops.rotary_mul(q, c4, s4)),
        ("swiglu fwd", "1024x22016 fp32", lambda: ascendc_ops.swiglu(h)),
        ("rms_norm fwd", "1024x4096 fp32", lambda: ascendc_ops.rms_norm(xn, g, 1e-6)),
        ("add_rms_norm fwd", "1024x4096 fp32", lambda: ascendc_ops.add_rms_norm(xn, xn, g, 1e-6)),
        ("rms_norm fwd split-row", "64x30000 fp32", lambda: ascendc_ops.rms_norm(xs, gs, 1e-6)),
    ]


def median_ms(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t) / 1e6)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.repeats} calls")
    print("| op | shape | off ms | sanitizer ms | x | record export ms | x |")
    print("|---|---|---|---|---|---|---|")
    for name, shape, fn in cases():
        os.environ["ASCENDC_TWIN_SANITIZE"] = "0"
        off = median_ms(fn, args.repeats)
        os.environ["ASCENDC_TWIN_SANITIZE"] = "1"
        on = median_ms(fn, args.repeats)
        os.environ["ASCENDC_TWIN_SANITIZE"] = "0"
        torch.ops.ascendc_ops.twin_record(True)
        rec = median_ms(lambda fn=fn: (fn(), torch.ops.ascendc_ops.twin_record_take()), args.repeats)
        torch.ops.ascendc_ops.twin_record(False)
        print(f"| {name} | {shape} | {off:.2f} | {on:.2f} | {on / off:.1f} | {rec:.2f} | {rec / off:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
