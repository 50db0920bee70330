"""`ascendc-ops bench attention`: fused attention fwd + bwd at a training shape against HF eager and SDPA, each
provider in its own process with its peak memory, run as a user runs it (a small shape here)."""

from __future__ import annotations

import re

import pytest

from ascendc_ops import __main__ as cli
from ascendc_ops.harness.bench import attention_train as T

ROW = re.compile(r"^\| (ours|eager|sdpa|gemms) \| ([\d.]+) \| ([\d.]+) \| (\d+|n/a) \| (.+) \|$", re.M)
RATIO = re.compile(r"^\| ours / (sdpa|gemms) \| ([\d.]+)x \| ([\d.]+)x \|", re.M)


def half_ulp(printed: str) -> float:
    """Half the last printed digit of a time: the rounding it carries."""
    return 0.5 * 10.0 ** -len(printed.partition(".")[2])


def test_small_shape_all_providers(capsys):
    assert cli.main(["bench", "attention", "--shape", "1,64,4,2,32", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "B 1, S 64, 4 query heads over 2 kv heads, D 32, float32" in out
    rows = {m[0]: m for m in ROW.findall(out)}
    assert set(rows) == set(T.PROVIDERS)
    for name in ("ours", "eager"):  # fp32: every provider computes the same attention to rounding
        out_diff, dq_diff = (float(x) for x in rows[name][4].split(" / "))
        assert out_diff < 1e-4 and dq_diff < 1e-4
    assert rows["sdpa"][4] == "-" and rows["gemms"][4] == "-" and rows["gemms"][3] == "n/a"
    assert all(float(r[1]) > 0 and float(r[2]) > 0 for r in rows.values())
    ratios = {m[0]: m for m in RATIO.findall(out)}  # ours over each reference, within the printed times' rounding
    for ref in ("sdpa", "gemms"):
        for col in (1, 2):
            ours, theirs, shown = float(rows["ours"][col]), float(rows[ref][col]), float(ratios[ref][col])
            eo, et = half_ulp(rows["ours"][col]), half_ulp(rows[ref][col])
            lo = (ours - eo) / (theirs + et)
            hi = (ours + eo) / (theirs - et) if theirs > et else float("inf")
            assert lo - 0.05 <= shown <= hi + 0.05, (ref, col, ours, theirs, shown)


def test_gemm_blocks_do_the_kernels_flops(monkeypatch):
    """The gemms row multiplies exactly the causal blocks: 2 (fwd) and 5 (bwd) products of rows x keys x D per
    block of GEMM_ROWS query rows, keys up to the block's end."""
    import torch

    flops = []
    real = torch.Tensor.__matmul__

    def counting(a, b):
        flops.append(a.shape[-2] * a.shape[-1] * b.shape[-1] * a.shape[0] * a.shape[1])
        return real(a, b)

    monkeypatch.setattr(torch.Tensor, "__matmul__", counting)
    q = torch.randn(1, 300, 4, 16)
    k = torch.randn(1, 300, 2, 16)
    for backward, products in ((False, 2), (True, 5)):
        flops.clear()
        T.gemm_blocks(q, k, k, backward)
        keys = sum(min(i + T.GEMM_ROWS, 300) * (min(i + T.GEMM_ROWS, 300) - i) for i in range(0, 300, T.GEMM_ROWS))
        assert sum(flops) == products * 4 * 16 * keys


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
