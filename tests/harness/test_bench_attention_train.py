"""`ascendc-ops bench attention`: fused attention fwd + bwd at a training shape against HF eager and SDPA, each
provider in its own process with its peak memory, run as a user runs it (a small shape here)."""

from __future__ import annotations

import re

import pytest

from ascendc_ops import __main__ as cli
from ascendc_ops.harness.bench import attention_train as T

ROW = re.compile(r"^\| (ours|eager|sdpa) \| ([\d.]+) \| ([\d.]+) \| (\d+|n/a) \| (.+) \|$", re.M)


def test_small_shape_all_providers(capsys):
    assert cli.main(["bench", "attention", "--shape", "1,64,4,2,32", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "B 1, S 64, 4 query heads over 2 kv heads, D 32, float32" in out
    rows = {m[0]: m for m in ROW.findall(out)}
    assert set(rows) == set(T.PROVIDERS)
    for name in ("ours", "eager"):  # fp32: every provider computes the same attention to rounding
        out_diff, dq_diff = (float(x) for x in rows[name][4].split(" / "))
        assert out_diff < 1e-4 and dq_diff < 1e-4
    assert rows["sdpa"][4] == "-"
    assert all(float(r[1]) > 0 and float(r[2]) > 0 for r in rows.values())


def test_training_shape_is_the_default():
    assert T.SHAPE == (1, 4096, 32, 8, 128) and T.Options().shape == T.SHAPE and T.Options().repeats == 1


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["--shape", "1,64,6,4,32"], r"--shape needs B,S,N,NKV,D .* N a multiple of NKV"),
        (["--shape", "1,64,4,32"], r"--shape needs B,S,N,NKV,D"),
        (["--provider", "flash"], r"invalid choice: 'flash'"),
    ],
)
def test_bad_options(capsys, args, pattern):
    """A clear one-line error and exit 2, from argparse or from the suite's own check."""
    try:
        rc = cli.main(["bench", "attention", *args])
    except SystemExit as e:
        rc = e.code
    assert rc == 2 and re.search(pattern, capsys.readouterr().err)
