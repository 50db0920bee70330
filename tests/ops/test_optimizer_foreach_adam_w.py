"""foreach_adam_w (torch.ops.custom.foreach_adam_w): one launch over lists of tensors of mixed sizes, each tensor
against apply_adam_w's float64 golden (tests/ops/test_optimizer_apply_adam_w.py's judgement), the tiling's runs of
elements crossing tensor boundaries, its readable errors and opcheck."""

from __future__ import annotations

import pytest
import torch

import ascendc_ops  # noqa: F401  (loads the library)
from accuracy import assert_accurate, np64
from ascendc_ops.ops import optimizer as O, optimizer_reference as R
from test_optimizer_apply_adam_w import HYPER, bounds, dname, make, torch_adamw

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
SIZES = (1, 7, 0, 83, 769, 5125, 2)  # an empty tensor among them


def tensors(dtype, amsgrad=False, sizes=SIZES):
    return [make(n, dtype, amsgrad=amsgrad, seed=10 + k) for k, n in enumerate(sizes)]


@pytest.mark.parametrize("amsgrad,maximize", [(False, False), (True, True)])
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_mixed_sizes_in_one_launch(dtype, amsgrad, maximize):
    cases = tensors(dtype, amsgrad)
    outs = [[t.clone() for t in c[:3]] + [c[4].clone() if amsgrad else None] for c in cases]
    O.foreach_adam_w_(
        [o[0] for o in outs], [o[1] for o in outs], [o[2] for o in outs], [c[3] for c in cases],
        [o[3] for o in outs] if amsgrad else [], step=4.0, amsgrad=amsgrad, maximize=maximize, **HYPER,
    )  # fmt: skip
    for k, ((var, m, v, grad, vmax), out) in enumerate(zip(cases, outs, strict=True)):
        if var.numel() == 0:
            continue
        golden = R.adam_w(np64(var), np64(m), np64(v), np64(grad), None if not amsgrad else np64(vmax), step=4,
                          amsgrad=amsgrad, maximize=maximize, **HYPER)  # fmt: skip
        second = torch_adamw(var, m, v, grad, vmax, 4, amsgrad, maximize, **HYPER)
        bound_p, bound_m, bound_v = bounds(var, m, v, -grad if maximize else grad, 4, **HYPER)
        label = f"foreach_adam_w {dname(dtype)} tensor {k} (n={var.numel()})"
        assert_accurate(out[0], golden[0], second[0], dtype, label + " var", bound_p)
        assert_accurate(out[1], golden[1], second[1], torch.float32, label + " m", bound_m)
        assert_accurate(out[2], golden[2], second[2], torch.float32, label + " v", bound_v)
        if amsgrad:
            assert_accurate(out[3], golden[3], second[3], torch.float32, label + " max", bound_v)


def test_equals_apply_adam_w_per_tensor():
    """The same arithmetic as the one-tensor op, bit for bit, wherever the block runs split the tensors: many
    tensors over several blocks (blocks of at least 1024 elements)."""
    cases = tensors(torch.float32, sizes=(3000, 1, 1500, 4097, 64, 5))
    lists = [[c[j].clone() for c in cases] for j in range(3)]
    O.foreach_adam_w_(*lists, [c[3] for c in cases], step=2.0, **HYPER)
    for k, (var, m, v, grad, _) in enumerate(cases):
        one = [var.clone(), m.clone(), v.clone()]
        O.apply_adam_w_(*one, grad, step=2.0, **HYPER)
        for j in range(3):
            assert torch.equal(lists[j][k], one[j]), (k, j)


def test_empty_lists():
    O.foreach_adam_w_([], [], [], [], **HYPER)


def test_non_contiguous_entries_are_written_back():
    var, m, v, grad, _ = make(2 * 83, torch.float32)
    cols = [t.view(83, 2)[:, 0] for t in (var, m, v, grad)]
    want = [t.clone() for t in cols[:3]]
    O.apply_adam_w_(*want, cols[3].clone(), step=2.0, **HYPER)
    O.foreach_adam_w_([cols[0]], [cols[1]], [cols[2]], [cols[3]], step=2.0, **HYPER)
    for got, ref in zip(cols[:3], want, strict=True):
        assert torch.equal(got, ref)


def test_opcheck():
    cases = tensors(torch.bfloat16, amsgrad=True, sizes=(5, 0, 70))
    args = tuple([c[j] for c in cases] for j in (0, 1, 2, 3, 4))
    torch.library.opcheck(torch.ops.custom.foreach_adam_w.default, args, dict(step=2.0, amsgrad=True))


def _bad(kind):
    a, b = make(7, torch.float32), make(5, torch.float32)
    lists = [[a[j], b[j]] for j in range(4)]
    cases = {
        "length": ((lists[0], lists[1][:1], lists[2], lists[3], []), {}, ValueError,
                   r"foreach_adam_w: m must hold as many tensors as var \(2\), got 1"),
        "amsgrad length": ((*lists, [a[1].clone()]), {"amsgrad": True}, ValueError,
                           r"foreach_adam_w: max_grad_norm must hold as many tensors as var \(2\) when amsgrad=True, "
                           r"got 1"),
        "shape": ((lists[0], [a[1], b[1][:4]], lists[2], lists[3], []), {}, ValueError,
                  r"foreach_adam_w: m\[1\] must have var\[1\]'s shape \[5\], got \[4\]"),
        "mixed dtypes": (([a[0], b[0].half()], lists[1], lists[2], [a[3], b[3].half()], []), {}, TypeError,
                         r"foreach_adam_w: var\[1\] must have var\[0\]'s dtype float32, got float16"),
        "sparse grad": ((lists[0], lists[1], lists[2], [a[3], b[3].to_sparse()], []), {}, ValueError,
                        r"foreach_adam_w: grad must be a dense \(strided\) tensor"),
        "negative lr": ((*lists, []), {"lr": -1.0}, ValueError, r"foreach_adam_w: lr must be a finite number >= 0"),
    }  # fmt: skip
    return cases[kind]


@pytest.mark.parametrize("kind", ["length", "amsgrad length", "shape", "mixed dtypes", "sparse grad", "negative lr"])
def test_bad_inputs_raise_clear_errors(kind):
    args, kwargs, exc, pattern = _bad(kind)
    with pytest.raises(exc, match=pattern):
        torch.ops.custom.foreach_adam_w(*args, **kwargs)
