"""torch_npu's npu_grouped_matmul (float16 / bfloat16 / float32, non-quantized) on our grouped_matmul family:
its group types (split M, split K, independent pairs), list and tensor group_lists, biases."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..ops.grouped_matmul import grouped_matmul as _grouped_matmul
from .errors import fail

GMM = "npu_grouped_matmul"
# npu_grouped_matmul arguments that only the quantized / fused-activation kernels use
_QUANT_ARGS = (
    "scale",
    "offset",
    "antiquant_scale",
    "antiquant_offset",
    "per_token_scale",
    "activation_input",
    "activation_quant_scale",
    "activation_quant_offset",
    "tuning_config",
    "x_dtype",
    "weight_dtype",
    "scale_dtype",
    "per_token_scale_dtype",
)


def _tensors(name: str, value) -> list:
    if torch.is_tensor(value) or not isinstance(value, Sequence) or not value:
        fail(
            TypeError,
            GMM,
            f"{name} must be a non-empty list of tensors (torch_npu's Tensor[]), got {type(value).__name__}",
        )
    for i, t in enumerate(value):
        if not torch.is_tensor(t):
            fail(TypeError, GMM, f"{name}[{i}] must be a tensor, got {type(t).__name__}")
    return list(value)


def _group_list(group_list) -> torch.Tensor:
    """A Tensor group_list as int64; torch_npu wants int64 (int32 is widened, anything else refused)."""
    if group_list.dtype == torch.int32:
        return group_list.long()
    if group_list.dtype != torch.int64:
        fail(
            TypeError,
            GMM,
            f"group_list must be an int64 tensor (or a list of ints), got {group_list.dtype}; "
            "e.g. torch.histc(...) returns floats: call .long() on it",
        )
    if group_list.dim() != 1:
        fail(ValueError, GMM, f"group_list must be 1-D [E], got shape {list(group_list.shape)}")
    return group_list


def _counts(gl: torch.Tensor, group_list_type: int) -> list:
    """Per-group row counts as Python ints (one host sync; only for list outputs)."""
    c = gl if group_list_type == 1 else torch.diff(gl, prepend=gl.new_zeros(1))
    return c.tolist()


def _stack(ws: list) -> torch.Tensor:
    """E 2-D weights [K, N] -> one [E, K, N] (possibly a transposed view, which the kernel reads as such).

    Views of one [E, ...] tensor at a uniform stride (``w.chunk(E)``/``unbind`` then ``.T``) are re-viewed
    without a copy when no gradient is recorded (the callers' autograd.Function.forward); otherwise stacked.
    """
    k, n = ws[0].shape
    for i, w in enumerate(ws):
        if w.dim() != 2 or tuple(w.shape) != (k, n) or w.dtype != ws[0].dtype:
            fail(
                ValueError,
                GMM,
                f"weight[{i}] must be 2-D {[k, n]} {ws[0].dtype} like weight[0], got {list(w.shape)} {w.dtype}",
            )
    base = ws[0]
    if len(ws) > 1 and not (torch.is_grad_enabled() and any(w.requires_grad for w in ws)):
        step = ws[1].storage_offset() - base.storage_offset()
        if step > 0 and all(
            w.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
            and w.stride() == base.stride()
            and w.storage_offset() == base.storage_offset() + i * step
            for i, w in enumerate(ws)
        ):
            return base.as_strided((len(ws), k, n), (step,) + tuple(base.stride()), base.storage_offset())
    if all(w.stride() == (1, k) for w in ws):  # all transposed: stack the [N, K] originals, keep the transpose
        return torch.stack([w.T for w in ws]).transpose(1, 2)
    return torch.stack(ws)


def _gmm(x: torch.Tensor, w: torch.Tensor, gl: torch.Tensor, group_list_type: int, bias=None) -> torch.Tensor:
    """x [M, K] @ w [E, K, N] (+ bias [E, N]) by groups of rows; a transposed w (an [E, N, K] tensor's view) is
    read in place."""
    if not w.is_contiguous() and w.transpose(1, 2).is_contiguous():
        return _grouped_matmul(x.contiguous(), w.transpose(1, 2), gl, group_list_type, True, bias)
    return _grouped_matmul(x.contiguous(), w.contiguous(), gl, group_list_type, False, bias)


def _bias_table(bias, dtype, experts, n):
    """One [E, N] bias in the dtype the kernel takes with x's: x's for float16/float32, float32 for bfloat16
    (A2's Matmul has no bfloat16 bias; torch_npu also asks float32 there, and bfloat16 -> float32 is exact)."""
    bias = _tensors("bias", bias)
    if len(bias) == 1 and tuple(bias[0].shape) == (experts, n):  # one [E, N] tensor, as torch_npu also takes
        table = bias[0]
    elif len(bias) == experts and all(b.shape == (n,) for b in bias):
        table = torch.stack(bias)
    else:
        fail(
            ValueError,
            GMM,
            f"bias must be one [{experts}, {n}] tensor or {experts} tensors of shape [{n}], "
            f"got {[list(b.shape) for b in bias]}",
        )
    return table.to(torch.float32 if dtype == torch.bfloat16 else dtype)


def _split_m(xs, ws, gl, group_list_type, split_item, bias):
    """group_type 0: rows of x grouped by group_list, weight [E, K, N] (one 3-D or E 2-D tensors).
    Without group_list, E x tensors pair with E 2-D weights as in group_type -1 (torch_npu's 'multi x' form)."""
    if gl is None:
        if len(xs) == len(ws) and all(w.dim() == 2 for w in ws):
            return _independent(xs, ws, None, split_item, bias)
        fail(ValueError, GMM, "group_type=0 (split M) needs group_list unless x and weight are lists of equal length")
    w = ws[0] if len(ws) == 1 and ws[0].dim() == 3 else _stack(ws)
    if w.dim() != 3:
        fail(ValueError, GMM, f"weight must be one [E, K, N] tensor or E tensors [K, N], got {list(w.shape)}")
    if gl.shape[0] != w.shape[0]:
        fail(ValueError, GMM, f"group_list has {gl.shape[0]} groups but weight has {w.shape[0]} experts")
    x = xs[0] if len(xs) == 1 else torch.cat(xs)
    if len(xs) > 1 and _counts(gl, group_list_type) != [t.shape[0] for t in xs]:
        fail(
            ValueError,
            GMM,
            f"with {len(xs)} x tensors, group_list must give their row counts "
            f"{[t.shape[0] for t in xs]}, got {gl.tolist()} (group_list_type={group_list_type})",
        )
    # the bias goes into the kernel, which adds it in its fp32 accumulation as torch_npu's GroupedMatmul does
    table = None if bias is None else _bias_table(bias, x.dtype, w.shape[0], w.shape[2])
    y = _gmm(x, w, gl, group_list_type, table)
    counts = _counts(gl, group_list_type) if split_item in (0, 1) else None
    return [y] if split_item in (2, 3) else list(y[: sum(counts)].split(counts))


def _split_k(xs, ws, gl, group_list_type, split_item, bias):
    """group_type 2 (the weight gradient): [x^T] [K, M] and [dy] [M, N], M grouped -> [E, K, N]."""
    if gl is None or len(xs) != 1 or len(ws) != 1 or xs[0].dim() != 2 or ws[0].dim() != 2:
        fail(
            ValueError,
            GMM,
            "group_type=2 (split K) takes x=[x.T] ([K, M]), weight=[dy] ([M, N]) and a "
            f"group_list; got {len(xs)} x, {len(ws)} weight tensors, group_list {'missing' if gl is None else 'set'}",
        )
    if split_item not in (2, 3):
        fail(ValueError, GMM, f"group_type=2 returns one [E, K, N] tensor: split_item must be 2 or 3, got {split_item}")
    if bias is not None:
        fail(ValueError, GMM, "group_type=2 takes no bias")
    xt, dy = xs[0], ws[0]
    if xt.shape[1] != dy.shape[0]:
        fail(ValueError, GMM, f"x[0] is [K, M] = {list(xt.shape)} but weight[0] (dy) has {dy.shape[0]} rows, not M")
    return [torch.ops.custom.grouped_matmul_weight_grad(xt.T.contiguous(), dy.contiguous(), gl, group_list_type)]


def _independent(xs, ws, gl_list, split_item, bias):
    """group_type -1: y_i = x_i @ w_i; x_i [..., K_i] (2-6 dims), w_i [K_i, N_i]. One kernel call when shapes agree."""
    if len(xs) != len(ws):
        fail(ValueError, GMM, f"group_type=-1 pairs x and weight one to one: got {len(xs)} x and {len(ws)} weight")
    if gl_list is not None and gl_list != [t.shape[0] for t in xs]:
        fail(
            ValueError, GMM, f"group_list (as counts {gl_list}) must match the x row counts {[t.shape[0] for t in xs]}"
        )
    for i, (x, w) in enumerate(zip(xs, ws, strict=True)):
        if w.dim() != 2 or not 2 <= x.dim() <= 6 or x.shape[-1] != w.shape[0]:
            fail(
                ValueError,
                GMM,
                f"pair {i}: x {list(x.shape)} (2-6 dims) @ weight {list(w.shape)} (2-D [K, N]) "
                "needs x's last dim == weight's first",
            )
    x2 = [x.reshape(-1, x.shape[-1]) for x in xs]
    rows = [x.shape[0] for x in x2]
    if bias is not None:  # one [N_i] bias per pair, added in the kernel
        bias = _tensors("bias", bias)
        if len(bias) != len(xs):
            fail(ValueError, GMM, f"bias has {len(bias)} tensors for {len(xs)} x/weight pairs")
    dtype = xs[0].dtype
    if all(tuple(w.shape) == tuple(ws[0].shape) for w in ws):
        counts = torch.tensor(rows, dtype=torch.int64, device=xs[0].device)
        table = None if bias is None else _bias_table(bias, dtype, len(ws), ws[0].shape[1])
        y = _gmm(torch.cat(x2), _stack(ws), counts, 1, table)
        ys = list(y.split(rows))
    else:
        ys = [
            _gmm(
                x,
                w.unsqueeze(0),
                torch.tensor([x.shape[0]], device=x.device),
                1,
                None if bias is None else _bias_table([bias[i]], dtype, 1, w.shape[1]),
            )
            for i, (x, w) in enumerate(zip(x2, ws, strict=True))
        ]
    ys = [y.reshape(*x.shape[:-1], y.shape[-1]) for x, y in zip(xs, ys, strict=True)]
    return [torch.cat(ys)] if split_item in (2, 3) else ys


def npu_grouped_matmul(
    x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
    per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
    activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0, tuning_config=None,
    output_dtype=None, x_dtype=None, weight_dtype=None, scale_dtype=None, per_token_scale_dtype=None,
):  # fmt: skip
    """torch_npu's grouped matmul (float16 / bfloat16 / float32, non-quantized) -> list of tensors.

    group_type 0 (split M, MoE forward and dx): x=[x [M, K]], weight=[w [E, K, N]] or E tensors [K, N],
    group_list over M; group_type 2 (split K, the weight gradient): x=[x.T], weight=[dy] -> [[E, K, N]];
    group_type -1: independent x_i @ w_i. group_list: an int64 tensor (group_list_type 0 = cumulative ends,
    1 = counts; group_type is then required, as in torch_npu) or a list of ints (cumulative; group_type None).
    split_item 2/3: one output tensor, 0/1: one per group. Transposed weight views are read without a copy.
    """
    args = locals()
    for name in _QUANT_ARGS:
        if args[name] is not None:
            fail(
                NotImplementedError,
                GMM,
                f"{name} (quantized / tuned grouped matmul) is not supported by "
                "ascendc_ops; only float16/bfloat16/float32 inputs with bias=None or a float bias",
            )
    if act_type not in (0, None):
        fail(NotImplementedError, GMM, f"act_type={act_type}: the fused activation is not supported; pass 0")
    split_item = 0 if split_item is None else split_item
    if split_item not in (0, 1, 2, 3):
        fail(ValueError, GMM, f"split_item must be 0, 1, 2 or 3, got {split_item}")
    xs, ws = _tensors("x", x), _tensors("weight", weight)
    dtype = xs[0].dtype
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        fail(TypeError, GMM, f"x must be float16, bfloat16 or float32, got {dtype}")
    for name, ts in (("x", xs), ("weight", ws)):
        for i, t in enumerate(ts):
            if t.dtype != dtype:
                fail(TypeError, GMM, f"{name}[{i}] is {t.dtype} but x[0] is {dtype}; all must share one dtype")
    if output_dtype not in (None, dtype):
        fail(TypeError, GMM, f"output_dtype must be None or x's dtype {dtype} (non-quantized), got {output_dtype}")
    group_list_type = 0 if group_list_type is None else group_list_type

    if isinstance(group_list, (list, tuple)):  # the .List overload: cumulative ends, group_type must be None
        if group_type is not None:
            fail(ValueError, GMM, f"with a list group_list torch_npu takes group_type=None, got {group_type}")
        ends = [int(v) for v in group_list]
        if any(b < a for a, b in zip([0] + ends, ends, strict=False)):
            fail(ValueError, GMM, f"a list group_list holds non-decreasing cumulative ends, got {ends}")
        if len(xs) > 1:
            return _independent(xs, ws, [b - a for a, b in zip([0] + ends, ends, strict=False)], split_item, bias)
        gl = torch.tensor(ends, dtype=torch.int64, device=xs[0].device)
        return _split_m(xs, ws, gl, 0, split_item, bias)

    if group_type is None:
        fail(
            ValueError,
            GMM,
            "group_type must be passed (-1, 0 or 2) when group_list is a tensor or None, "
            "as torch_npu requires ('Requires manual passing group_type')",
        )
    if group_type not in (-1, 0, 2):
        fail(ValueError, GMM, f"The group type must be -1 (none), 0 (split M) or 2 (split K), got {group_type}")
    if group_list_type not in (0, 1):
        fail(
            NotImplementedError,
            GMM,
            f"group_list_type must be 0 (cumulative) or 1 (counts); {group_list_type} is the int8 [E, 2] form",
        )
    gl = None if group_list is None else _group_list(group_list)
    if group_type == 0:
        return _split_m(xs, ws, gl, group_list_type, split_item, bias)
    if group_type == 2:
        return _split_k(xs, ws, gl, group_list_type, split_item, bias)
    if gl is not None:  # group_type -1
        fail(ValueError, GMM, "group_type=-1 (independent matmuls) takes group_list=None")
    return _independent(xs, ws, None, split_item, bias)
