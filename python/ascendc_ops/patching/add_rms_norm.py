"""fused_add_rmsnorm: a decoder layer's residual add feeding a norm on ``torch.ops.custom.add_rms_norm``
(npu_add_rms_norm), the residual stream carried through.

Found by structure in the layer's own forward: any module whose class forward has, in one statement list,

    h = r + h          # (or h + r) the residual add
    r = h              # the sum becomes the residual stream
    h = self.<norm>(h) # and feeds a norm

(Llama/Qwen's ``post_attention_layernorm``, Gemma's ``pre_feedforward_layernorm``: whatever the names). Each such
triple becomes ``h, r = self._ascendc_add_rms_norm_pair(self.<norm>, r, h)`` (``add_rms_norm_pair``): the forward's
source parsed, the triples replaced, the def compiled over its own globals, its wrappers (HF's gradient
checkpointing) re-created around it, and the result set as the layer's instance ``forward`` (as fused_rope does;
class, module and other models untouched; revert deletes it). A triple is
rewritten only if ``self.<norm>`` is RMSNorm-like (``rms_norm._is_candidate``) and the probe agrees: the original
three statements, run with the norm's class forward, against our op (``probe.disagreement``, random weight, a row
whose mean square is about eps); Gemma's (1 + w) norms are left with the reason.

HF's checkpointing wrapper checkpoints only when it is the class's outermost ``forward``: FSDP2's ``fully_shard``
swaps in a subclass with its own wrapper, so with gradient checkpointing and FSDP2, apply this kernel after
``fully_shard`` (measured: patched before, the layers ran un-checkpointed; after, both checkpointed).

At run time the fused op is used when both addends have one dtype and shape and the norm has no hooks; otherwise
(mixed dtypes, a hooked norm) the two plain steps run, the norm through its own module call.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import math
import textwrap
import types

import torch
from torch import nn

from . import probe
from .base import Found, call_op, set_instance_attr
from .rms_norm import _eps_attr, _is_candidate

# The rewritten forward reaches the helper as an instance attribute of the layer: a name added to a copy of the
# modeling module's globals is not found by torch.compile's guards, which look globals up in the module itself.
HELPER_ATTR = "_ascendc_add_rms_norm_pair"
_FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _hooked(m: nn.Module) -> bool:
    return bool(
        m._forward_hooks
        or m._forward_pre_hooks
        or nn.modules.module._global_forward_hooks
        or nn.modules.module._global_forward_pre_hooks
    )


def _fused(norm: nn.Module, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(norm(x1 + x2), x1 + x2) in one op; the norm output's dtype as HF's: promote(weight, x)."""
    weight = norm.weight
    out_dtype = torch.promote_types(weight.dtype, x1.dtype)
    if x1.dtype == torch.float32 and weight.dtype != torch.float32:
        weight = weight.float()  # the op takes (fp32 x, fp32 gamma) only, as HF promotes the weight
    y, _, x = call_op(torch.ops.custom.add_rms_norm.default, x1, x2, weight, getattr(norm, _eps_attr(norm)))
    return (y if y.dtype == out_dtype else y.to(out_dtype)), x


def add_rms_norm_pair(norm: nn.Module, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """What the rewritten triple calls: (normed, residual) with residual = x1 + x2."""
    w = norm.weight
    if (
        x1.dtype == x2.dtype
        and x1.dtype in _FUSED_DTYPES
        and x1.shape == x2.shape
        and (w.dtype in (x1.dtype, torch.float32) or x1.dtype == torch.float32)
        and not _hooked(norm)
    ):
        return _fused(norm, x1, x2)
    x = x1 + x2  # the layer's own two steps: promotion, broadcasting and hooks as before
    return norm(x), x


@dataclasses.dataclass(frozen=True)
class Pair:
    """One matched triple: the norm's attribute, the residual and hidden names, the add's operand order."""

    norm: str
    residual: str
    hidden: str
    addends: tuple[str, str]
    original: tuple[ast.stmt, ...]


def _name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _assign_to(stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return _name(stmt.targets[0])
    return None


def _match(a, b, c) -> Pair | None:
    h = _assign_to(a)
    if h is None or not (isinstance(a.value, ast.BinOp) and isinstance(a.value.op, ast.Add)):
        return None
    addends = (_name(a.value.left), _name(a.value.right))
    r = next((n for n in addends if n != h), None)
    if r is None or set(addends) != {h, r} or _assign_to(b) != r or _name(b.value) != h or _assign_to(c) != h:
        return None
    call = c.value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and _name(call.func.value) == "self"
        and len(call.args) == 1
        and _name(call.args[0]) == h
        and not call.keywords
    ):
        return None
    return Pair(call.func.attr, r, h, addends, (a, b, c))


def _replacement(pair: Pair) -> ast.stmt:
    x1, x2 = pair.addends
    src = f"{pair.hidden}, {pair.residual} = self.{HELPER_ATTR}(self.{pair.norm}, {x1}, {x2})"
    stmt = ast.parse(src).body[0]
    return ast.copy_location(stmt, pair.original[0])


def _statement_lists(fn: ast.FunctionDef):
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                yield stmts


def _pairs(fn: ast.FunctionDef) -> list[tuple[list, int, Pair]]:
    found = []
    for stmts in list(_statement_lists(fn)):
        i = 0
        while i + 2 < len(stmts):
            pair = _match(*stmts[i : i + 3])
            if pair is not None:
                found.append((stmts, i, pair))
                i += 3
            else:
                i += 1
    return found


@dataclasses.dataclass
class LayerForm:
    """A layer class's forward, parsed: its triples, or why it cannot be rewritten."""

    chain: list = dataclasses.field(default_factory=list)  # the class forward and what it wraps, outermost first
    tree: ast.Module | None = None
    pairs: list = dataclasses.field(default_factory=list)
    why: str = ""


def _chain(fwd) -> list:
    """fwd and the functions it wraps (``__wrapped__``), outermost first: HF's gradient-checkpointing wrapper."""
    chain = [fwd]
    while isinstance(getattr(chain[-1], "__wrapped__", None), types.FunctionType):
        chain.append(chain[-1].__wrapped__)
    return chain


def _wraps_by_cell(wrapper, inner) -> bool:
    return any(c.cell_contents is inner for c in wrapper.__closure__ or () if _filled(c))


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _parse(cls: type) -> LayerForm:
    fwd = getattr(cls, "forward", None)
    if not isinstance(fwd, types.FunctionType):
        return LayerForm(why="its forward is not a Python function")
    chain = _chain(fwd)
    inner = chain[-1]
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inner)))
    except (OSError, TypeError, SyntaxError) as e:
        return LayerForm(why=f"its forward's source cannot be read ({type(e).__name__})")
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef) or fn.name != inner.__name__:
        return LayerForm(why="its forward's source is not one def")
    form = LayerForm(chain, tree, _pairs(fn))
    if form.pairs and inner.__code__.co_freevars:  # super() or a closure: a re-compiled def would lose the cells
        form.why = f"its forward uses closure cells ({', '.join(inner.__code__.co_freevars)})"
    elif form.pairs and not all(_wraps_by_cell(w, i) for w, i in zip(chain, chain[1:], strict=False)):
        form.why = "its forward is wrapped by a decorator that does not hold it in a closure cell"
    return form


def _rewrap(chain: list, new_inner: types.FunctionType) -> types.FunctionType:
    """The wrappers of ``chain`` re-created around new_inner (each cell holding the old inner now holds the new
    one; the rest, e.g. HF's ``is_outermost`` check against the class's wrapper, as it was)."""
    new = new_inner
    for wrapper, inner in reversed(list(zip(chain, chain[1:], strict=False))):
        cells = tuple(
            types.CellType(new) if _filled(c) and c.cell_contents is inner else c for c in wrapper.__closure__
        )
        f = types.FunctionType(wrapper.__code__, wrapper.__globals__, wrapper.__name__, wrapper.__defaults__, cells)
        f.__kwdefaults__ = wrapper.__kwdefaults__
        f.__dict__.update(wrapper.__dict__)
        f.__qualname__, f.__doc__, f.__wrapped__ = wrapper.__qualname__, wrapper.__doc__, new
        new = f
    return new


def _compile(form: LayerForm, keep: set[int]) -> types.FunctionType:
    """The forward with the triples at indices ``keep`` replaced, in its wrappers."""
    inner = form.chain[-1]
    tree = copy.deepcopy(form.tree)
    ast.increment_lineno(tree, inner.__code__.co_firstlineno - 1)  # tracebacks point into the source file
    fn = tree.body[0]
    fn.decorator_list = []  # their wrappers are in the chain, re-created around the new def
    new_pairs = _pairs(fn)
    for k in sorted(keep, reverse=True):  # last first: earlier indices in the same list stay valid
        stmts, i, pair = new_pairs[k]
        stmts[i : i + 3] = [_replacement(pair)]
    ast.fix_missing_locations(tree)
    code = compile(tree, inspect.getsourcefile(inner) or "<ascendc_ops>", "exec")
    ns: dict = {}
    exec(code, inner.__globals__, ns)  # noqa: S102 - the layer's own source, rewritten: defines its forward only
    f = ns[fn.name]
    f.__qualname__, f.__doc__ = inner.__qualname__, inner.__doc__
    f.__dict__.update(inner.__dict__)
    return _rewrap(form.chain, f)


class _ClassForward(nn.Module):
    """The norm through its class's forward (an instance forward, e.g. fused_rmsnorm's, is not the original)."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.m = norm

    def forward(self, h):
        return type(self.m).forward(self.m, h)


def _segment(pair: Pair, module_globals: dict):
    """The three original statements as ``f(self, r, h) -> (h, r)``."""
    fn = ast.parse(f"def _segment(self, {pair.residual}, {pair.hidden}):\n    pass").body[0]
    fn.body = [*pair.original, ast.parse(f"return {pair.hidden}, {pair.residual}").body[0]]
    tree = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    ns: dict = {}
    exec(compile(tree, "<ascendc_ops probe>", "exec"), dict(module_globals), ns)  # noqa: S102
    return ns["_segment"]


def _probe(pair: Pair, norm: nn.Module, module_globals: dict) -> str | None:
    eps = getattr(norm, _eps_attr(norm))
    carrier = nn.Module()
    carrier.add_module(pair.norm, _ClassForward(norm))
    gen = probe.generator()
    width = norm.weight.shape[0]
    r, h = (torch.randn(2, 3, width, generator=gen, dtype=torch.float64) for _ in range(2))
    r[1, 1] *= math.sqrt(eps)  # a row whose sum's mean square is about eps: where the epsilon's place matters
    h[1, 1] *= math.sqrt(eps)
    params = {f"{pair.norm}.m.weight": torch.randn(width, generator=gen, dtype=torch.float64)}
    theirs = _segment(pair, module_globals)
    first = pair.addends[0] == pair.residual

    def ours(part, r, h):
        y, x = _fused(getattr(part, pair.norm).m, *((r, h) if first else (h, r)))
        return y, x

    why = probe.disagreement(carrier, theirs, ours, (r, h), params)
    return None if why is None else f"not (weight * x * rsqrt(mean(x^2) + eps), x = r + h): {why}"


def find(model: nn.Module) -> Found:
    found = Found(looked_for="decoder layer whose residual add feeds a norm (h = r + h; r = h; h = self.norm(h))")
    forms: dict[type, LayerForm] = {}
    verdicts: dict[tuple, str | None] = {}
    compiled: dict[tuple, types.FunctionType] = {}
    for name, m in model.named_modules():
        cls = type(m)
        if cls not in forms:
            forms[cls] = _parse(cls) if any(_is_candidate(c) for c in m.children()) else LayerForm()
        form = forms[cls]
        if not form.pairs:
            continue
        part = cls.__name__
        if form.why:
            found.refused[part] = form.why
            continue
        if "forward" in m.__dict__:
            found.refused[part] = f"forward already replaced on {name}"
            continue
        keep = set()
        for k, (_, _, pair) in enumerate(form.pairs):
            norm = getattr(m, pair.norm, None)
            if not isinstance(norm, nn.Module) or not _is_candidate(norm):
                continue  # the add feeds something else (OLMo 2's post-norm layers: the MLP): no add + norm pair
            if "forward" in norm.__dict__ and getattr(norm.forward, "__module__", "").split(".")[0] != "ascendc_ops":
                found.refused[f"{part}.{pair.norm}"] = "its forward was replaced by someone else"
                continue
            key = (cls, k, type(norm), getattr(norm, _eps_attr(norm)), norm.weight.shape[0])
            if key not in verdicts:
                verdicts[key] = _probe(pair, norm, form.chain[-1].__globals__)
            if verdicts[key] is None:
                keep.add(k)
            else:
                found.refused[f"{part}.{pair.norm}"] = verdicts[key]
        if keep:
            ckey = (cls, frozenset(keep))
            if ckey not in compiled:
                compiled[ckey] = _compile(form, keep)
            found.targets.append((m, compiled[ckey]))
    return found


def patch(model: nn.Module, targets: list) -> list:
    records = []
    for m, fwd in targets:
        records.append(set_instance_attr(m, HELPER_ATTR, add_rms_norm_pair))  # a plain function: not bound
        records.append(set_instance_attr(m, "forward", types.MethodType(fwd, m)))
    return records
