"""fused_rope: HF ``apply_rotary_pos_emb`` on ``torch.ops.custom.apply_rotary_pos_emb`` (npu_apply_rotary_pos_emb:
q and k in one launch; 'half' or 'interleave' mode, whichever the probe shows the model's function computes).

HF transformers 5 attention modules call the module global ``apply_rotary_pos_emb(q, k, cos, sin)`` of
their ``modeling_<model>.py``. Rebinding that global would patch every model of that type in the process,
so instead each attention module of the patched model gets its own ``forward``: the class's forward
function re-created over a copy of the module's globals in which ``apply_rotary_pos_emb`` is ours. The
class, the module global and every other model stay untouched; revert deletes the instance attribute.
(The globals copy is taken at apply time: a later rebinding of another global in that modeling module
is not seen by the patched model until it is reverted and patched again.)

q, k are ``(B, N, S, D)`` views, cos/sin ``(B, S, R)`` (B = 1 or the batch: per-sequence position ids);
``unsqueeze_dim=1`` gives the B1SD / 11SD broadcast layouts the op takes, ``unsqueeze_dim=2`` BS1D / 1S1D.
Partial rotary (R < D): the first R dims are rotated, the rest pass through unchanged.

Found by structure: any attention module whose class forward calls a rotary global of its modeling module
(``VARIANTS``' keys: ``apply_rotary_pos_emb``, DeepSeek-V3's ``apply_rotary_pos_emb_interleave``, DeepSeek-V2's
and Llama 4's complex ``apply_rotary_emb``), whatever the model type. A function is patched with the first
variant taking its parameters whose probe agrees (``probe.disagreement``; BNSD and BSND, full and, where the
function accepts it, partial rotary; and the result dtype for bf16 q with fp32 tables, which tells a function
casting back to q's dtype, as Ernie 4.5's, Cohere's and OLMo 2's do, from eager promotion); otherwise it is left
with the reason. Table re-layouts (GLM's pair tables, GPT-OSS's half-width ones, freqs_cis' parts) are copies of
the small (B, S, R) tables, as the model's own function makes them; DeepSeek-V3's de-interleave gathers q and k.
Functions rotating ONE tensor under the same global name (Gemma 4's ``(x, cos, sin, unsqueeze_dim)``, DeepSeek-V4's
trailing-dims form of that signature, GPT-J's and CodeGen's ``(tensor, sin, cos)``) are probed the same way, on q
alone, and run on ``custom::rotary_mul`` (npu_rotary_mul: one tensor, half or interleave mode).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from collections.abc import Callable

import torch
from torch import nn

from ..ops.rope import apply_rotary_pos_emb as _apply, rotary_mul
from . import probe
from .base import Found, modeling_module, set_instance_attr

GLOBAL_NAME = "apply_rotary_pos_emb"
INTERLEAVE_NAME = "apply_rotary_pos_emb_interleave"  # DeepSeek-V3's (and its descendants') de-interleaving form
COMPLEX_NAME = "apply_rotary_emb"  # DeepSeek-V2's and Llama 4's: complex freqs_cis times q's pairs as complex


def _fused(q, k, cos, sin, unsqueeze_dim, mode):
    """(q, k) rotated by custom::apply_rotary_pos_emb, one launch for both, through its functional form
    (fresh outputs: HF's function leaves q and k alone, and a model may still read them). q and k are
    rotated in eager's promoted dtype (bf16 q with fp32 tables: fp32, as ``q * cos`` would be); k None
    (an indexer rotating q alone) is a key of no heads."""
    dtype = torch.promote_types(q.dtype, cos.dtype)
    q = q.to(dtype)
    k = q.narrow(-2 if unsqueeze_dim == 2 else 1, 0, 0) if k is None else k.to(dtype)
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    layout = "BNSD" if unsqueeze_dim == 1 else "BSND"
    if layout == "BNSD" and all(x.dim() == 4 and x.transpose(1, 2).is_contiguous() for x in (q, k)):
        # HF's q/k are BNSD views of BSND projections: rotate them as BSND (cos as BS1D), no copy to BNSD
        qo, ko = _apply(q.transpose(1, 2), k.transpose(1, 2), cos.transpose(1, 2), sin.transpose(1, 2), "BSND", mode)
        return qo.transpose(1, 2), ko.transpose(1, 2)
    return _apply(q, k, cos, sin, layout, mode)


def _pair_tables(t):
    """HF's ``cat(freqs, freqs)`` table as the pair layout ``(f0, f0, f1, f1, ...)`` of the interleave mode
    (GLM's ``t[..., :R/2].repeat_interleave(2)``: a copy, exact)."""
    return t[..., : t.shape[-1] // 2].repeat_interleave(2, dim=-1)


def _gather_pairs(x):
    """DeepSeek's layout: the interleaved pairs (x[2i], x[2i+1]) gathered into halves (x[0::2], x[1::2])."""
    return None if x is None else torch.cat((x[..., 0::2], x[..., 1::2]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Drop-in for HF's ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` on the fused q+k op;
    partial rotary (cos narrower than q): the first dims rotate, the rest pass through."""
    return _fused(q, k, cos, sin, unsqueeze_dim, "half")


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    """The same with the pair rotation ``(-x[2i+1], x[2i])`` (Cohere's and similar ``rotate_half``)."""
    return _fused(q, k, cos, sin, unsqueeze_dim, "interleave")


def apply_rotary_pos_emb_pairs(q, k, cos, sin, unsqueeze_dim=1):
    """GLM's: the pair rotation with HF's half-split tables re-laid as pairs (partial rotary as above)."""
    return _fused(q, k, _pair_tables(cos), _pair_tables(sin), unsqueeze_dim, "interleave")


def apply_rotary_pos_emb_half_tables(q, k, cos, sin, unsqueeze_dim=1):
    """GPT-OSS's: ``rotate_half`` with tables of the half width (each frequency once), widened to ours."""
    return _fused(q, k, torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1), unsqueeze_dim, "half")


def apply_rotary_pos_emb_negated(q, k, cos, sin, unsqueeze_dim=1):
    """NanoChat's: ``rotate_half`` with the signs flipped, i.e. ours with the sine table negated (exact)."""
    return _fused(q, k, cos, -sin, unsqueeze_dim, "half")


def apply_rotary_pos_emb_deinterleave(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """DeepSeek-V3's ``apply_rotary_pos_emb_interleave``: the pairs (x[2i], x[2i+1]) rotated by frequency i and
    written out as halves (rotated evens, then odds), i.e. ``rotate_half`` on the gathered input; the gather
    is the copy the functional op would make anyway (position_ids: unused there too)."""
    qo, ko = _fused(_gather_pairs(q), _gather_pairs(k), cos, sin, unsqueeze_dim, "half")
    return qo, (None if k is None else ko)


def apply_rotary_pos_emb_deinterleave_k_optional(q, k, cos, sin, unsqueeze_dim=1):
    """The same without position_ids (Mistral-Large-4's; its indexer passes k=None, rotating q alone)."""
    return apply_rotary_pos_emb_deinterleave(q, k, cos, sin, None, unsqueeze_dim)


def _rotated(x, cos, sin, mode):
    """One tensor through custom::rotary_mul (which casts its tables to x's dtype, as npu_rotary_mul does) in
    eager's promoted dtype, as ``x * cos`` would be; slices and transposes the models pass are made dense."""
    dtype = torch.promote_types(x.dtype, cos.dtype)
    return rotary_mul(x.to(dtype).contiguous(), cos.to(dtype), sin.to(dtype), mode)


def apply_rotary_pos_emb_one(x, cos, sin, unsqueeze_dim=1):
    """Gemma 4's single-tensor ``apply_rotary_pos_emb``: ``x * cos + rotate_half(x) * sin`` (full rotary)."""
    return _rotated(x, cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim), "half")


def apply_rotary_pos_emb_one_trailing_pairs(x, cos, sin, unsqueeze_dim=1):
    """DeepSeek-V4's: the trailing 2R' dims of x rotated pairwise by (R'-wide) tables each frequency once, at
    the tables' precision and at least fp32, returned in x's dtype; the leading dims pass through."""
    cos, sin = (t.repeat_interleave(2, dim=-1).unsqueeze(unsqueeze_dim) for t in (cos, sin))
    r, dtype = cos.shape[-1], torch.promote_types(torch.float32, cos.dtype)
    rotated = _rotated(x[..., -r:].to(dtype), cos, sin, "interleave").to(x.dtype)
    return torch.cat((x[..., :-r], rotated), dim=-1)


def apply_rotary_pos_emb_sin_cos(tensor, sin, cos):
    """GPT-J's and CodeGen's ``(tensor, sin, cos)``: x (B, S, N, D), tables (B, S, D/2) each frequency once,
    ``rotate_every_two``, i.e. the pair rotation over the tables re-laid as pairs (a copy of the small tables)."""
    cos, sin = (t[:, :, None, :].repeat_interleave(2, dim=3) for t in (cos, sin))
    return _rotated(tensor, cos, sin, "interleave")


def _rotate_complex(xq, xk, freqs_cis, unsqueeze_dim):
    """(x[2i] + i x[2i+1]) * freqs_cis[i] in fp32, returned in x's dtype: the pair rotation with the real and
    imaginary parts as pair tables (a copy of the small table, exact)."""
    cos, sin = (t.float().repeat_interleave(2, dim=-1) for t in (freqs_cis.real, freqs_cis.imag))
    qo, ko = _fused(xq.float(), xk.float(), cos, sin, unsqueeze_dim, "interleave")
    return qo.type_as(xq), ko.type_as(xk)


def apply_rotary_emb_bnsd(xq, xk, freqs_cis):
    """DeepSeek-V2's ``apply_rotary_emb``: q, k (B, N, S, D), freqs_cis (B, S, D/2)."""
    return _rotate_complex(xq, xk, freqs_cis, 1)


def apply_rotary_emb_bsnd(xq, xk, freqs_cis):
    """Llama 4's: q, k (B, S, N, D), freqs_cis (B, S, D/2)."""
    return _rotate_complex(xq, xk, freqs_cis, 2)


def _forward_with_global(cls_forward: types.FunctionType, fn_globals: dict) -> types.FunctionType:
    f = types.FunctionType(
        cls_forward.__code__, fn_globals, cls_forward.__name__, cls_forward.__defaults__, cls_forward.__closure__
    )
    f.__kwdefaults__ = cls_forward.__kwdefaults__
    f.__dict__.update(cls_forward.__dict__)
    f.__qualname__ = cls_forward.__qualname__
    f.__doc__ = cls_forward.__doc__
    return f


def _attention_modules(model: nn.Module):
    """(name, module, modeling module, class forward, the rotary globals that forward calls)."""
    for name, m in model.named_modules():
        mod = modeling_module(m)
        code = getattr(getattr(type(m), "forward", None), "__code__", None)
        if mod is None or code is None:
            continue
        names = [n for n in VARIANTS if n in code.co_names and callable(getattr(mod, n, None))]
        if names:
            yield name, m, mod, type(m).forward, names


@dataclasses.dataclass(frozen=True)
class Variant:
    """A rotary formula our op computes: its name (for reports), the drop-in (the replaced function's parameter
    names, returning (q_rotated, k_rotated)), the tables the probe gives it: 'full' (HF's cat(freqs, freqs)),
    'half' (each frequency once, GPT-OSS's) or 'complex' (freqs_cis = cos + i sin, each frequency once), and the
    layouts it is probed in (a function without unsqueeze_dim has one)."""

    formula: str
    function: Callable
    tables: str = "full"
    layouts: tuple[str, ...] = ("BNSD", "BSND")
    form: str = "qk"  # how it is called: (q, k, cos, sin, ...), one tensor (x, cos, sin, ...) or (tensor, sin, cos)


def _cast_back(v: Variant) -> Variant:
    """v returning q's and k's own dtypes (Cohere's, OLMo 2's, Ernie 4.5's functions compute in fp32 or the
    tables' precision and cast back; eager promotion would return fp32 for bf16 q with fp32 tables)."""
    f = v.function

    @functools.wraps(f)  # the signature the probe compares is f's
    def in_q_dtype(q, k, *args, **kwargs):
        if v.form != "qk":  # one tensor: k is a table
            return f(q, k, *args, **kwargs).to(q.dtype)
        qo, ko = f(q, k, *args, **kwargs)
        return qo.to(q.dtype), (None if ko is None else ko.to(k.dtype))

    return dataclasses.replace(v, formula=f"{v.formula}, returned in q's dtype", function=in_q_dtype)


_PAIRS = "x * c + rotate_interleave(x) * s, c = repeat_interleave(cos[..., :R/2], 2)"
_TRAILING = "one tensor, its trailing dims: x * c + rotate_interleave(x) * s, c = repeat_interleave(cos, 2), fp32"
_SIN_COS = "one tensor (tensor, sin, cos), BSND: x * c + rotate_interleave(x) * s, c = repeat_interleave(cos, 2)"
# {module global: the variants tried in order, the first the probe agrees with patches it; each is followed by
# its _cast_back form}
VARIANTS = {
    GLOBAL_NAME: (
        Variant("x * cos + rotate_half(x) * sin", apply_rotary_pos_emb),
        Variant("x * cos + rotate_interleave(x) * sin", apply_rotary_pos_emb_interleave),
        Variant(_PAIRS, apply_rotary_pos_emb_pairs),
        Variant("x * c + rotate_half(x) * s, c = cat(cos, cos)", apply_rotary_pos_emb_half_tables, "half"),
        Variant("x * cos - rotate_half(x) * sin", apply_rotary_pos_emb_negated),
        # single-tensor forms, on custom::rotary_mul
        Variant("one tensor: x * cos + rotate_half(x) * sin", apply_rotary_pos_emb_one, form="one"),
        Variant(_TRAILING, apply_rotary_pos_emb_one_trailing_pairs, "half", form="one"),
        Variant(_SIN_COS, apply_rotary_pos_emb_sin_cos, "half", ("BSND",), form="sin_cos"),
    ),
    INTERLEAVE_NAME: (
        Variant("rotate_half rope of cat(x[..., 0::2], x[..., 1::2])", apply_rotary_pos_emb_deinterleave),
        Variant("the same, k optional", apply_rotary_pos_emb_deinterleave_k_optional),
    ),
    COMPLEX_NAME: (
        Variant("complex(x[0::2], x[1::2]) * freqs_cis, BNSD", apply_rotary_emb_bnsd, "complex", ("BNSD",)),
        Variant("complex(x[0::2], x[1::2]) * freqs_cis, BSND", apply_rotary_emb_bsnd, "complex", ("BSND",)),
    ),
}
VARIANTS = {name: tuple(w for v in vs for w in (v, _cast_back(v))) for name, vs in VARIANTS.items()}


def _probe_inputs(rotary: int, layout_bsnd: bool, tables: str = "full"):
    gen = probe.generator()
    B, N, S, D = 2, 3, 5, 16
    shape = (B, S, N, D) if layout_bsnd else (B, N, S, D)
    q, k = (torch.randn(shape, generator=gen, dtype=torch.float64) for _ in range(2))
    pos = torch.arange(S, dtype=torch.float64)[None, :, None] + torch.tensor([0.0, 9.0])[:, None, None]
    freqs = pos * 10000.0 ** (-torch.arange(0, rotary, 2, dtype=torch.float64) / rotary)
    # HF's (B, S, R) layout: the half-split frequencies twice ('half', 'complex': once)
    emb = torch.cat((freqs, freqs), dim=-1) if tables == "full" else freqs
    return (q, k, emb.cos(), emb.sin(), 2 if layout_bsnd else 1)


def _call(fn: Callable, tables: str, form: str = "qk") -> Callable:
    """fn(q, k, cos, sin, unsqueeze_dim) as the models call it: unsqueeze_dim by name (DeepSeek's function takes
    position_ids before it); a complex-table function gets freqs_cis = cos + i sin and no unsqueeze_dim; a
    single-tensor one rotates q alone (its result as a 1-tuple)."""
    if form == "one":
        return lambda q, k, cos, sin, dim: (fn(q, cos, sin, unsqueeze_dim=dim),)
    if form == "sin_cos":
        return lambda q, k, cos, sin, dim: (fn(q, sin, cos),)
    if tables == "complex":
        return lambda q, k, cos, sin, dim: fn(q, k, torch.complex(cos, sin))
    return lambda q, k, cos, sin, dim: fn(q, k, cos, sin, unsqueeze_dim=dim)


def _dtype_disagreement(fn: Callable, v: Variant) -> str | None:
    """bf16 q and k with fp32 tables (Ernie's): eager promotes to fp32 where ``q * cos`` does, a function casting
    back returns bf16; ours must return what fn does (the values are the fp32 probe's formula)."""
    q, k, cos, sin, dim = _probe_inputs(16, v.layouts[0] == "BSND", v.tables)
    args = (q.bfloat16(), k.bfloat16(), cos.float(), sin.float(), dim)
    try:
        theirs = [t.dtype for t in _call(fn, v.tables, v.form)(*args)]
    except Exception:  # noqa: BLE001 - a function that cannot mix dtypes is never given mixed ones
        return None
    mine = [t.dtype for t in _call(v.function, v.tables, v.form)(*args)]
    return None if mine == theirs else f"returns {theirs} for bf16 q, k with fp32 cos, sin (ours {mine})"


def _disagreement(fn: Callable, v: Variant) -> str | None:
    """Full rotary in the variant's layouts must agree; partial rotary must agree where fn accepts it at all;
    and the result's dtype on mixed-precision inputs."""
    names, want = tuple(inspect.signature(fn).parameters), tuple(inspect.signature(v.function).parameters)
    if names != want:
        return f"{fn.__name__}({', '.join(names)}) is not ({', '.join(want)})"
    k_default = [getattr(inspect.signature(f).parameters.get(names[1]), "default", None) for f in (fn, v.function)]
    optional = [d is not inspect.Parameter.empty for d in k_default]
    if optional == [True, False]:  # Qwen4-Exp's indexer calls it on q alone
        return f"{fn.__name__}'s k is optional: the model also rotates a tensor alone through it"
    carrier = nn.Module()  # the function has no parameters: an empty part to run it on
    theirs, ours = (lambda _, *a, f=f: _call(f, v.tables, v.form)(*a) for f in (fn, v.function))
    cases = [(16, layout) for layout in v.layouts] + [(8, v.layouts[0])]
    for rotary, layout in cases:
        args = _probe_inputs(rotary, layout == "BSND", v.tables)
        why = probe.disagreement(carrier, theirs, ours, args, {})
        if why is not None and rotary < 16 and why.startswith("it fails"):
            continue  # fn rotates every dim only: the model cannot be using partial rotary through it
        if why is not None:
            return f"{'partial' if rotary < 16 else 'full'} rotary, {layout}: {why}"
    return _dtype_disagreement(fn, v)


def _verdict(fn: Callable, name: str) -> tuple[Variant | None, str]:
    """The first variant the probe agrees with, else why not: the reason for the first variant taking fn's
    parameters (the closest formula), or the parameter mismatch."""
    whys = []
    for v in VARIANTS[name]:
        why = _disagreement(fn, v)
        if why is None:
            return v, ""
        whys.append(why)
    same_args = [w for w in whys if " is not (" not in w]
    return None, (same_args or whys)[0]


def find(model: nn.Module) -> Found:
    found = Found(looked_for=f"attention module calling {GLOBAL_NAME}")  # or its _interleave form
    globals_copies, verdicts = {}, {}
    for name, m, mod, fwd, called in _attention_modules(model):
        if "forward" in m.__dict__:
            found.refused[type(m).__name__] = f"forward already replaced on {name}"
            continue
        ours = {}
        for fn_name in called:
            fn = getattr(mod, fn_name)
            if id(fn) not in verdicts:
                verdicts[id(fn)] = _verdict(fn, fn_name)
            variant, why = verdicts[id(fn)]
            if variant is None:
                found.refused[f"{mod.__name__.rsplit('.', 1)[-1]}.{fn_name}"] = why
            else:
                ours[fn_name] = variant.function
        if not ours:
            continue
        # one globals copy per modeling module, holding every rotary function of it that passed
        g = globals_copies.setdefault(id(mod), dict(vars(mod)))
        g.update(ours)
        found.targets.append((m, _forward_with_global(fwd, g)))
    return found


def patch(model: nn.Module, targets: list) -> list:
    return [set_instance_attr(m, "forward", types.MethodType(fwd, m)) for m, fwd in targets]
