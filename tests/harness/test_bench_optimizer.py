"""`ascendc-ops bench optimizer`: an AdamW step and clip_grad_norm_ over an LLM-shaped model's parameters, ours
against torch's foreach and fused AdamW, run as a user runs it (a small model here)."""

from __future__ import annotations

import re

from ascendc_ops import __main__ as cli
from ascendc_ops.harness.bench import optimizer_step as B

ROW = re.compile(
    r"^\| (ours|torch-foreach|torch-fused) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| (\S+) \|$", re.M
)


def test_small_model_all_providers(capsys):
    assert cli.main(["bench", "optimizer", "--shape", "64,2", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    shapes = B.parameter_shapes(64, 2)
    assert len(shapes) == 9 * 2 + 2 and f"{len(shapes)} tensors" in out
    assert "bytes an element must move: step 28 (one pass), clipping 12" in out
    rows = {m[0]: m for m in ROW.findall(out)}
    assert set(rows) == set(B.PROVIDERS)
    for name, r in rows.items():  # the same steps from the same start: the same parameters to fp32 rounding
        assert float(r[5]) < 1e-6, (name, r)
    # ours' clipping launch by launch: the norms read the gradient once, the scaling reads and writes it
    launches = dict(
        re.findall(r"^\| (foreach_norm|foreach_clip_by_total_norm) \| [\d.]+ \| (\d+) \| [\d.]+ \|$", out, re.M)
    )
    assert launches == {"foreach_norm": "4", "foreach_clip_by_total_norm": "8"}, out


def test_a_bad_shape_is_refused(capsys):
    assert cli.main(["bench", "optimizer", "--shape", "64,2,3"]) != 0


def test_foreach_norm_bench_row_runs(capsys):
    """`bench ops`' foreach_norm row through the roofline and the host profile (its bytes split into read and
    written, as the model's least-work floor takes them: a plain count broke the default `bench` at its last row)."""
    assert cli.main(["bench", "ops", "--op", "foreach_norm", "--shape", "4,4096"]) == 0
    assert "foreach_norm" in capsys.readouterr().out


def test_estimate_of_the_8b_step(capsys, monkeypatch):
    """`bench optimizer --estimate`: ours (two sizes recorded on the twin, here small ones) against torch_npu's nine
    passes; 28 bytes an element for ours either way, 88 for the passes, which the model puts slower."""
    from ascendc_ops.harness.bench import optimizer_model as M

    assert M._numel(M.llama3_8b_shapes()) == 8_030_261_248  # Meta-Llama-3-8B's parameter count
    monkeypatch.setattr(M, "SAMPLES", (((512, 512),), ((512, 512), (512, 512))))
    assert cli.main(["bench", "optimizer", "--estimate"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\| (ours[^|]*|torch_npu[^|]*) \| (\d+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|", out, re.M)
    assert [(r[1], r[2]) for r in rows] == [("1", "28"), ("1", "28"), ("9", "88")], out
    ours, npu = float(rows[0][3]), float(rows[2][3])
    assert 0 < ours < npu and float(rows[2][4]) <= npu
