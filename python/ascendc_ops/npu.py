"""torch_npu's names and signatures on our kernels, so code written for torch_npu runs unchanged:

    import ascendc_ops.npu as torch_npu                  # or, before the caller imports it:
    sys.modules["torch_npu"] = ascendc_ops.npu

Signatures follow Ascend/op-plugin's op_plugin_functions.yaml (torchgen names the ``self`` argument
``input`` in Python, as torch_npu does). Every function runs our ``torch.ops.custom`` kernels and is
differentiable through their autograd (torch_npu's ``npu_add_rms_norm`` and ``npu_grouped_matmul`` are not).
Provided: ``PROVIDED`` (``npu_fusion_attention`` and ``npu_fusion_attention_grad``: npu_attention.py). Any other
``torch_npu`` attribute (``npu_format_cast``,
the ``torch_npu.npu`` device module, quantized variants, ...) raises AttributeError naming what exists,
so ``hasattr(torch_npu, name)`` probes answer honestly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .npu_attention import (  # re-exported: torch_npu's names
    npu_fusion_attention as npu_fusion_attention,
    npu_fusion_attention_grad as npu_fusion_attention_grad,
)
from .ops.rms_norm import (
    EPSILON as _EPSILON,
    add_rms_norm as _add_rms_norm,
    gemma_rms_norm as _gemma_rms_norm,
    rms_norm as _rms_norm,
)
from .ops.rope import apply_rotary_pos_emb_ as _apply_rotary_pos_emb_, rotary_mul as _rotary_mul
from .ops.swiglu import swiglu as _swiglu

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


# torch_npu's argument checks raise RuntimeError (TORCH_CHECK); ours are that and the kind that names the fault
_ERRORS = {kind: type(kind.__name__, (RuntimeError, kind), {}) for kind in (ValueError, TypeError)}


def _fail(kind, op: str, msg: str):
    raise _ERRORS.get(kind, kind)(f"{op}: {msg}")


# ---- RoPE, RMSNorm, SwiGLU ----
def npu_rotary_mul(input, r1, r2, rotary_mode="half", rotate=None):
    """``input * r1 + rotate(input) * r2``; r1/r2 of another dtype are cast to input's dtype as torch_npu does."""
    if rotate is not None:
        _fail(NotImplementedError, "npu_rotary_mul", "the explicit rotate matrix is not supported; pass rotate=None")
    if rotary_mode not in ("half", "interleave"):  # torch_npu's message, which its callers match
        _fail(
            ValueError,
            "npu_rotary_mul",
            f"The rotary_mode of npu_rotary_mul should be half or interleave, but got {rotary_mode!r}",
        )
    if torch.is_tensor(input) and torch.is_tensor(r1) and r1.dtype != input.dtype and r1.dtype.is_floating_point:
        r1, r2 = r1.to(input.dtype), r2.to(input.dtype)
    return _rotary_mul(input, r1, r2, rotary_mode)


def npu_rotary_mul_backward(grad, input, r1, r2, rotary_mode="half"):
    """-> (dx, dr1, dr2): the backward kernels of rotary_mul, through its autograd."""
    with torch.enable_grad():
        x, c, s = (t.detach().requires_grad_() for t in (input, r1, r2))
        y = npu_rotary_mul(x, c, s, rotary_mode)
        return torch.autograd.grad(y, (x, c, s), grad)


def npu_apply_rotary_pos_emb(query, key, cos, sin, layout="BSND", rotary_mode="half"):
    """-> (query, key), both rotated in place by one launch (torch_npu's inference op). Not differentiable
    in place: training code takes ``ascendc_ops.apply_rotary_pos_emb``, the functional form."""
    return _apply_rotary_pos_emb_(query, key, cos, sin, layout, rotary_mode)


def npu_rms_norm(input, gamma, epsilon=_EPSILON):
    """-> (y, rstd): rstd fp32 with the normalized dims kept as 1."""
    return _rms_norm(input, gamma, epsilon)


def npu_rms_norm_backward(dy, input, gamma, rstd):
    """-> (dx, dgamma). Note torch_npu's argument order (gamma before rstd)."""
    return tuple(torch.ops.custom.rms_norm_grad(dy.contiguous(), input, rstd, gamma))


def npu_add_rms_norm(x1, x2, gamma, epsilon=_EPSILON):
    """-> (y, rstd, x) with x = x1 + x2."""
    return _add_rms_norm(x1, x2, gamma, epsilon)


def npu_gemma_rms_norm(input, gamma, epsilon=_EPSILON):
    """-> (y, rstd) with the weight 1 + gamma (op-plugin's op_plugin_functions.yaml since Ascend/op-plugin#2208:
    ``npu_gemma_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)``)."""
    return _gemma_rms_norm(input, gamma, epsilon)


def npu_swiglu(input, dim=-1):
    """``silu(A) * B`` for A the first and B the second half of ``dim``."""
    return _swiglu(input, dim)


def npu_swiglu_backward(grad_output, input, dim=-1):
    return torch.ops.custom.swiglu_grad(grad_output.contiguous(), input, dim)


# ---- MoE token routing ----
def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    """-> (permuted_tokens, sorted_indices int32): tokens sorted (stably) by expert id."""
    from .ops.moe_routing import moe_token_permute

    return moe_token_permute(tokens, indices, num_out_tokens, padded_mode)


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    """``out[t] = sum_k probs[t, k] * permuted_tokens[sorted_indices[t*K + k]]``."""
    from .ops.moe_routing import moe_token_unpermute

    return moe_token_unpermute(permuted_tokens, sorted_indices, probs, padded_mode, restore_shape)


def npu_moe_token_unpermute_grad(
    permuted_tokens, grad_unpermuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None
):
    """-> (grad_permuted_tokens, grad_probs)."""
    return tuple(
        torch.ops.custom.moe_token_unpermute_grad(
            permuted_tokens, grad_unpermuted_tokens.contiguous(), sorted_indices, probs, padded_mode, restore_shape
        )
    )


# ---- grouped matmul ----
def _tensors(name: str, value) -> list:
    if torch.is_tensor(value) or not isinstance(value, Sequence) or not value:
        _fail(
            TypeError,
            GMM,
            f"{name} must be a non-empty list of tensors (torch_npu's Tensor[]), got {type(value).__name__}",
        )
    for i, t in enumerate(value):
        if not torch.is_tensor(t):
            _fail(TypeError, GMM, f"{name}[{i}] must be a tensor, got {type(t).__name__}")
    return list(value)


def _group_list(group_list) -> torch.Tensor:
    """A Tensor group_list as int64; torch_npu wants int64 (int32 is widened, anything else refused)."""
    if group_list.dtype == torch.int32:
        return group_list.long()
    if group_list.dtype != torch.int64:
        _fail(
            TypeError,
            GMM,
            f"group_list must be an int64 tensor (or a list of ints), got {group_list.dtype}; "
            "e.g. torch.histc(...) returns floats: call .long() on it",
        )
    if group_list.dim() != 1:
        _fail(ValueError, GMM, f"group_list must be 1-D [E], got shape {list(group_list.shape)}")
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
            _fail(
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
    from .ops.grouped_matmul import grouped_matmul

    if not w.is_contiguous() and w.transpose(1, 2).is_contiguous():
        return grouped_matmul(x.contiguous(), w.transpose(1, 2), gl, group_list_type, True, bias)
    return grouped_matmul(x.contiguous(), w.contiguous(), gl, group_list_type, False, bias)


def _bias_table(bias, dtype, experts, n):
    """One [E, N] bias in the dtype the kernel takes with x's: x's for float16/float32, float32 for bfloat16
    (A2's Matmul has no bfloat16 bias; torch_npu also asks float32 there, and bfloat16 -> float32 is exact)."""
    bias = _tensors("bias", bias)
    if len(bias) == 1 and tuple(bias[0].shape) == (experts, n):  # one [E, N] tensor, as torch_npu also takes
        table = bias[0]
    elif len(bias) == experts and all(b.shape == (n,) for b in bias):
        table = torch.stack(bias)
    else:
        _fail(
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
        _fail(ValueError, GMM, "group_type=0 (split M) needs group_list unless x and weight are lists of equal length")
    w = ws[0] if len(ws) == 1 and ws[0].dim() == 3 else _stack(ws)
    if w.dim() != 3:
        _fail(ValueError, GMM, f"weight must be one [E, K, N] tensor or E tensors [K, N], got {list(w.shape)}")
    if gl.shape[0] != w.shape[0]:
        _fail(ValueError, GMM, f"group_list has {gl.shape[0]} groups but weight has {w.shape[0]} experts")
    x = xs[0] if len(xs) == 1 else torch.cat(xs)
    if len(xs) > 1 and _counts(gl, group_list_type) != [t.shape[0] for t in xs]:
        _fail(
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
        _fail(
            ValueError,
            GMM,
            "group_type=2 (split K) takes x=[x.T] ([K, M]), weight=[dy] ([M, N]) and a "
            f"group_list; got {len(xs)} x, {len(ws)} weight tensors, group_list {'missing' if gl is None else 'set'}",
        )
    if split_item not in (2, 3):
        _fail(
            ValueError, GMM, f"group_type=2 returns one [E, K, N] tensor: split_item must be 2 or 3, got {split_item}"
        )
    if bias is not None:
        _fail(ValueError, GMM, "group_type=2 takes no bias")
    xt, dy = xs[0], ws[0]
    if xt.shape[1] != dy.shape[0]:
        _fail(ValueError, GMM, f"x[0] is [K, M] = {list(xt.shape)} but weight[0] (dy) has {dy.shape[0]} rows, not M")
    return [torch.ops.custom.grouped_matmul_weight_grad(xt.T.contiguous(), dy.contiguous(), gl, group_list_type)]


def _independent(xs, ws, gl_list, split_item, bias):
    """group_type -1: y_i = x_i @ w_i; x_i [..., K_i] (2-6 dims), w_i [K_i, N_i]. One kernel call when shapes agree."""
    if len(xs) != len(ws):
        _fail(ValueError, GMM, f"group_type=-1 pairs x and weight one to one: got {len(xs)} x and {len(ws)} weight")
    if gl_list is not None and gl_list != [t.shape[0] for t in xs]:
        _fail(
            ValueError, GMM, f"group_list (as counts {gl_list}) must match the x row counts {[t.shape[0] for t in xs]}"
        )
    for i, (x, w) in enumerate(zip(xs, ws, strict=True)):
        if w.dim() != 2 or not 2 <= x.dim() <= 6 or x.shape[-1] != w.shape[0]:
            _fail(
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
            _fail(ValueError, GMM, f"bias has {len(bias)} tensors for {len(xs)} x/weight pairs")
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
    x,
    weight,
    *,
    bias=None,
    scale=None,
    offset=None,
    antiquant_scale=None,
    antiquant_offset=None,
    per_token_scale=None,
    group_list=None,
    activation_input=None,
    activation_quant_scale=None,
    activation_quant_offset=None,
    split_item=0,
    group_type=None,
    group_list_type=0,
    act_type=0,
    tuning_config=None,
    output_dtype=None,
    x_dtype=None,
    weight_dtype=None,
    scale_dtype=None,
    per_token_scale_dtype=None,
):
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
            _fail(
                NotImplementedError,
                GMM,
                f"{name} (quantized / tuned grouped matmul) is not supported by "
                "ascendc_ops; only float16/bfloat16/float32 inputs with bias=None or a float bias",
            )
    if act_type not in (0, None):
        _fail(NotImplementedError, GMM, f"act_type={act_type}: the fused activation is not supported; pass 0")
    split_item = 0 if split_item is None else split_item
    if split_item not in (0, 1, 2, 3):
        _fail(ValueError, GMM, f"split_item must be 0, 1, 2 or 3, got {split_item}")
    xs, ws = _tensors("x", x), _tensors("weight", weight)
    dtype = xs[0].dtype
    if dtype not in (torch.float16, torch.bfloat16, torch.float32):
        _fail(TypeError, GMM, f"x must be float16, bfloat16 or float32, got {dtype}")
    for name, ts in (("x", xs), ("weight", ws)):
        for i, t in enumerate(ts):
            if t.dtype != dtype:
                _fail(TypeError, GMM, f"{name}[{i}] is {t.dtype} but x[0] is {dtype}; all must share one dtype")
    if output_dtype not in (None, dtype):
        _fail(TypeError, GMM, f"output_dtype must be None or x's dtype {dtype} (non-quantized), got {output_dtype}")
    group_list_type = 0 if group_list_type is None else group_list_type

    if isinstance(group_list, (list, tuple)):  # the .List overload: cumulative ends, group_type must be None
        if group_type is not None:
            _fail(ValueError, GMM, f"with a list group_list torch_npu takes group_type=None, got {group_type}")
        ends = [int(v) for v in group_list]
        if any(b < a for a, b in zip([0] + ends, ends, strict=False)):
            _fail(ValueError, GMM, f"a list group_list holds non-decreasing cumulative ends, got {ends}")
        if len(xs) > 1:
            return _independent(xs, ws, [b - a for a, b in zip([0] + ends, ends, strict=False)], split_item, bias)
        gl = torch.tensor(ends, dtype=torch.int64, device=xs[0].device)
        return _split_m(xs, ws, gl, 0, split_item, bias)

    if group_type is None:
        _fail(
            ValueError,
            GMM,
            "group_type must be passed (-1, 0 or 2) when group_list is a tensor or None, "
            "as torch_npu requires ('Requires manual passing group_type')",
        )
    if group_type not in (-1, 0, 2):
        _fail(ValueError, GMM, f"The group type must be -1 (none), 0 (split M) or 2 (split K), got {group_type}")
    if group_list_type not in (0, 1):
        _fail(
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
        _fail(ValueError, GMM, "group_type=-1 (independent matmuls) takes group_list=None")
    return _independent(xs, ws, None, split_item, bias)


PROVIDED = (
    "npu_rotary_mul",
    "npu_rotary_mul_backward",
    "npu_apply_rotary_pos_emb",
    "npu_rms_norm",
    "npu_rms_norm_backward",
    "npu_add_rms_norm",
    "npu_swiglu",
    "npu_swiglu_backward",
    "npu_grouped_matmul",
    "npu_moe_token_permute",
    "npu_moe_token_unpermute",
    "npu_moe_token_unpermute_grad",
    "npu_gemma_rms_norm",
    "npu_fusion_attention",
    "npu_fusion_attention_grad",
)
__all__ = list(PROVIDED)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"ascendc_ops.npu (standing in for torch_npu) has no {name!r}; it provides {', '.join(PROVIDED)}"
    )
