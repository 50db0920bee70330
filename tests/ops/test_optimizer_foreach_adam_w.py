"""foreach_adam_w (torch.ops.custom.foreach_adam_w): one launch over lists of tensors of mixed sizes, each tensor
against apply_adam_w's float64 golden (tests/ops/test_optimizer_apply_adam_w.py's judgement), the tiling's runs of
elements crossing tensor boundaries, the fp32 master copies of 16-bit parameters (against the float64 golden of the
master under the fp32 standard; var its rounding), its readable errors and opcheck."""

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


def masters(cases, seed=7):
    """fp32 masters a little off each 16-bit var (bits the var cannot hold), as after some steps."""
    gen = torch.Generator().manual_seed(seed)
    return [c[0].float() + 1e-3 * torch.randn(c[0].shape, generator=gen) for c in cases]


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("dtype", DTYPES[1:], ids=dname)
def test_master_copy_against_golden(dtype, amsgrad):
    """The master updated as an fp32 parameter (fp32 standard vs the float64 golden, torch's fp32 AdamW as the
    second); var written as the master rounded to nearest even and never read (it holds NaN going in)."""
    cases = tensors(dtype, amsgrad, sizes=SIZES + (70001,))
    master = masters(cases)
    outs = [[torch.full_like(c[0], float("nan")), c[1].clone(), c[2].clone()] for c in cases]
    vmax = [c[4].clone() for c in cases] if amsgrad else []
    got = [t.clone() for t in master]
    O.foreach_adam_w_([o[0] for o in outs], [o[1] for o in outs], [o[2] for o in outs], [c[3] for c in cases], vmax,
                      got, step=4.0, amsgrad=amsgrad, **HYPER)  # fmt: skip
    for k, ((var, m, v, grad, vm), out, mst) in enumerate(zip(cases, outs, master, strict=True)):
        if var.numel() == 0:
            continue
        g32 = grad.float()
        golden = R.adam_w(np64(mst), np64(m), np64(v), np64(g32), None if not amsgrad else np64(vm), step=4,
                          amsgrad=amsgrad, **HYPER)  # fmt: skip
        second = torch_adamw(mst, m, v, g32, vm, 4, amsgrad, False, **HYPER)
        bound_p, bound_m, bound_v = bounds(mst, m, v, g32, 4, **HYPER)
        label = f"foreach_adam_w master of {dname(dtype)} tensor {k} (n={var.numel()})"
        assert_accurate(got[k], golden[0], second[0], torch.float32, label + " master", bound_p)
        assert_accurate(out[1], golden[1], second[1], torch.float32, label + " m", bound_m)
        assert_accurate(out[2], golden[2], second[2], torch.float32, label + " v", bound_v)
        assert torch.equal(out[0], got[k].to(dtype)), label + ": var is not the master's rounding"


def test_master_copy_equals_an_fp32_parameter():
    """With a master the update is the fp32 one, bit for bit: a bf16 var's master and an fp32 var step alike."""
    cases = tensors(torch.bfloat16, sizes=(3000, 5, 4097))
    master = masters(cases)
    lists = [[c[j].clone() for c in cases] for j in range(3)]
    O.foreach_adam_w_(*lists, [c[3] for c in cases], [], master, step=3.0, **HYPER)
    fp32 = [[m.clone() for m in masters(cases)]] + [[c[j].clone() for c in cases] for j in (1, 2)]
    O.foreach_adam_w_(*fp32, [c[3].float() for c in cases], step=3.0, **HYPER)
    for k in range(len(cases)):
        assert torch.equal(master[k], fp32[0][k]) and torch.equal(lists[1][k], fp32[1][k]), k


def test_opcheck():
    cases = tensors(torch.bfloat16, amsgrad=True, sizes=(5, 0, 70))
    args = tuple([c[j] for c in cases] for j in (0, 1, 2, 3, 4)) + ([],)
    torch.library.opcheck(torch.ops.custom.foreach_adam_w.default, args, dict(step=2.0, amsgrad=True))
    torch.library.opcheck(torch.ops.custom.foreach_adam_w.default, args[:5] + (masters(cases),), dict(step=2.0))


def _bad(kind):
    a, b = make(7, torch.float32), make(5, torch.float32)
    lists = [[a[j], b[j]] for j in range(4)]
    half = [[a[j].half(), b[j].half()] if j in (0, 3) else lists[j] for j in range(4)]
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
        "fp32 master": ((*lists, [], [a[0].clone(), b[0].clone()]), {}, ValueError,
                        r"foreach_adam_w: master must be empty when var is float32 \(a master copy stands for"),
        "master length": ((*half, [], [a[0].float()]), {}, ValueError,
                          r"foreach_adam_w: master must be empty or hold as many tensors as var \(2\), got 1"),
        "master shape": ((*half, [], [a[0].float(), b[0][:4].float()]), {}, ValueError,
                         r"foreach_adam_w: master\[1\] must have var\[1\]'s shape \[5\], got \[4\]"),
        "master dtype": ((*half, [], [a[0].half(), b[0].half()]), {}, TypeError,
                         r"foreach_adam_w: master must be one of float32, got float16"),
    }  # fmt: skip
    return cases[kind]


KINDS = ["length", "amsgrad length", "shape", "mixed dtypes", "sparse grad", "negative lr", "fp32 master",
         "master length", "master shape", "master dtype"]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_bad_inputs_raise_clear_errors(kind):
    args, kwargs, exc, pattern = _bad(kind)
    args = args if len(args) == 6 else (*args, [])  # no master
    with pytest.raises(exc, match=pattern):
        torch.ops.custom.foreach_adam_w(*args, **kwargs)
