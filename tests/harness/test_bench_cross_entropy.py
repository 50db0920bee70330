"""`ascendc-ops bench cross-entropy`: the LM head's loss fwd + bwd, ours against HF's path and a chunked one, each in
its own process with its peak memory, run as a user runs it (a small shape here)."""

from __future__ import annotations

import re

from ascendc_ops import __main__ as cli
from ascendc_ops.harness.bench import cross_entropy_train as C

ROW = re.compile(r"^\| (ours|hf|chunked) \| ([\d.]+) \| ([\d.]+) \| (\d+|n/a) \| ([\d.]+) \| (.+) \|$", re.M)


def test_small_shape_all_providers(capsys):
    assert cli.main(["bench", "cross-entropy", "--shape", "300,32,5000", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "T 300, H 32, V 5000, float32" in out
    rows = {m[0]: m for m in ROW.findall(out)}
    assert set(rows) == set(C.PROVIDERS)
    losses = {name: float(r[4]) for name, r in rows.items()}
    assert max(losses.values()) - min(losses.values()) < 1e-4 * losses["hf"]  # the same loss to rounding
    for name in ("ours", "chunked"):
        loss_diff, dh_diff, dw_diff = (float(x) for x in rows[name][5].split(" / "))
        assert loss_diff < 1e-4 and dh_diff < 1e-5 and dw_diff < 1e-5
    # fp32 logits [300, 5000] are 5.7 MiB, HF holds them and their gradient; ours holds nothing of T x V
    assert int(rows["hf"][3]) >= 2 * 300 * 5000 * 4 / 2**20 and int(rows["ours"][3]) < int(rows["hf"][3])


def test_chunked_matches_hf():
    import torch

    h, w, t = C.inputs((70, 16, 300), torch.float64)
    a, b = (x.clone().requires_grad_() for x in (h, w))
    c, d = (x.clone().requires_grad_() for x in (h, w))
    C.chunked_loss(a, b, t).backward()
    C.hf_loss(c, d, t).backward()
    torch.testing.assert_close(a.grad, c.grad)
    torch.testing.assert_close(b.grad, d.grad)
