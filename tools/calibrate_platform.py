#!/usr/bin/env python3
"""Fit the 910B model's vector and cube start and its HBM rate to the measured cann-bench times of built-in
kernels at their floor (harness/pipeline/calibration.py: the rules, the split, the fit) and write the
calibration file (python/ascendc_ops/harness/platforms/calibration/ascend910b.json), or check
that it is up to date.

    tools/calibrate_platform.py           # write it from our snapshot (harness/data/cann_bench_910b2.json)
    tools/calibrate_platform.py --check   # exit 1 when the file differs from a fresh fit
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from ascendc_ops.harness.cann_bench import data as D  # noqa: E402
from ascendc_ops.harness.pipeline import calibration as M, load_platform  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="910B")
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = ap.parse_args(argv)
    facts, prior = D.load(), load_platform(args.platform)
    doc = M.calibration_doc(facts, prior)
    path = M.calibration_path(args.platform)
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if args.check:
        same = path.exists() and M.same_calibration(json.loads(path.read_text()), json.loads(text))
        print(f"{path}: {'up to date' if same else 'differs from a fresh fit (run tools/calibrate_platform.py)'}")
        return 0 if same else 1
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")
    for k, v in doc["values"].items():
        print(f"  {k}: {v['value']:.6g} (prior {v['prior']:.6g})")
    for k, v in doc["held_out_error"].items():
        print(f"  {k}: n {v['n']}, |error| median {100 * v['calibrated_abs_err_median']:.0f}%, "
              f"largest {100 * v['calibrated_abs_err_max']:.0f}%")  # fmt: skip
    print(f"  below the floor: {doc['below_floor'] or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
