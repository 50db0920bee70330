"""What a causal LM's forward does between its LM head and its loss, read from the forward's source.

fused_linear_cross_entropy replaces ``logits = self.lm_head(hidden_states)`` ... ``self.loss_function(logits,
labels, ...)`` by one op, so it must know every step between the two. ``read(cls)`` finds, in the class's forward
(below its decorators): exactly one call of ``self.lm_head``, assigned to a name (the logits), and exactly one call
of ``self.loss_function`` taking that name as its logits and ``labels`` as its labels, under ``if labels is not
None``. The statements in between that touch the logits (``logits = logits * self.logit_scale``, Gemma's softcap
block, ``.float()``) become the *tail*: a function ``tail(self, head_output) -> logits`` compiled from those same
statements in the modeling module's namespace. After the loss the logits may only be returned.

``reduce(tail, model)`` runs the tail on a recorder (``_Trace``) with the model's own config and attributes, and
folds what it did into the op's two knobs: ``logits = softcap * tanh(scale * (h W^T) / softcap)``, i.e. our op on
hidden states multiplied by ``scale``. Anything else done to the logits (another function, a tensor-valued or
learned scale, a scale after the softcap) is a refusal with the reason. The probe then runs the real tail on real
logits against our op (linear_cross_entropy.py), so this reading is checked, not trusted.
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
import textwrap
from collections.abc import Callable

import torch

HEAD, LOSS = "lm_head", "loss_function"
_HEAD_OUTPUT = "_ascendc_head_output"


class Refusal(Exception):
    """The forward does not have the structure the fused loss replaces; the message says what differs."""


def _is_self_call(node: ast.AST, attr: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == attr
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _source_function(cls: type) -> tuple[ast.FunctionDef, dict]:
    fn = cls.forward
    while hasattr(fn, "__wrapped__"):  # @can_return_tuple, @auto_docstring, ...: the body is the innermost
        fn = fn.__wrapped__
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError) as e:
        raise Refusal(f"its forward's source cannot be read ({type(e).__name__})") from None
    module = sys.modules.get(fn.__module__)
    return tree.body[0], vars(module) if module is not None else {}


def _loss_call(stmt: ast.stmt, logits: str) -> ast.Call:
    """The ``self.loss_function`` call in an ``if labels is not None:`` statement, checked for its arguments."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    guarded = (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "labels"
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )
    call = next(n for n in ast.walk(stmt) if _is_self_call(n, LOSS))
    if not guarded:
        raise Refusal("its loss_function call is not under `if labels is not None`")
    args = {**dict(zip(("logits", "labels"), call.args, strict=False)), **{k.arg: k.value for k in call.keywords}}
    if not (isinstance(args.get("logits"), ast.Name) and args["logits"].id == logits):
        got = ast.unparse(args["logits"]) if "logits" in args else "nothing"
        raise Refusal(f"its loss_function takes {got} as the logits, not the LM head's {logits}")
    if not (isinstance(args.get("labels"), ast.Name) and args["labels"].id == "labels"):
        raise Refusal("its loss_function is not given the forward's labels")
    return call


def read(cls: type) -> Callable:
    """The tail function of ``cls.forward`` (see the module docstring), or Refusal(why)."""
    fn, namespace = _source_function(cls)
    heads = [n for n in ast.walk(fn) if _is_self_call(n, HEAD)]
    losses = [n for n in ast.walk(fn) if _is_self_call(n, LOSS)]
    if not losses:
        raise Refusal(f"its forward computes its loss without self.{LOSS} (not transformers' ForCausalLMLoss)")
    if len(heads) != 1 or len(losses) != 1:
        raise Refusal(
            f"its forward calls self.{HEAD} {len(heads)} times and self.{LOSS} {len(losses)} times (not once)"
        )
    body = fn.body
    at = next((i for i, s in enumerate(body) if any(n is heads[0] for n in ast.walk(s))), None)
    stmt = body[at] if at is not None else None
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        raise Refusal(f"its self.{HEAD} call is not a top-level `logits = ...` assignment")
    logits = stmt.targets[0].id
    end = next((i for i, s in enumerate(body) if any(n is losses[0] for n in ast.walk(s))), None)
    if end is None or end <= at:
        raise Refusal(f"its self.{LOSS} call does not follow the LM head at the top level")
    _loss_call(body[end], logits)
    if not isinstance(body[end].body[0], ast.Assign) or not _is_self_call(body[end].body[0].value, LOSS):
        raise Refusal(f"`loss = self.{LOSS}(...)` is not the first statement under `if labels is not None`")
    later = _unpacked_uses(body[end + 1 :], logits)
    if later:
        raise Refusal(f"its forward uses the logits after the loss: {later.splitlines()[0][:80]}")
    # the head statement with the head call made a parameter, then every statement until the loss (a softcap's
    # `cap = self.config...` too; one reading the forward's other locals fails on the recorder: a refusal)
    head_stmt = _Replace(heads[0]).visit(ast.parse(ast.unparse(stmt)).body[0])
    steps = [head_stmt, *body[at + 1 : end]]
    tail = ast.FunctionDef(
        name="tail",
        args=ast.arguments(
            posonlyargs=[], args=[ast.arg("self"), ast.arg(_HEAD_OUTPUT)], kwonlyargs=[], kw_defaults=[], defaults=[]
        ),
        body=[*steps, ast.Return(ast.Name(logits, ast.Load()))],
        decorator_list=[],
        type_params=[],
    )
    code = compile(ast.fix_missing_locations(ast.Module([tail], type_ignores=[])), f"<{cls.__name__} tail>", "exec")
    local: dict = {}
    exec(code, namespace, local)  # noqa: S102 - the model's own statements, in its own module's namespace
    return local["tail"]


def _unpacked_uses(stmts: list, logits: str) -> str:
    """The first use of the logits after the loss other than being packed into the output (a keyword of the
    output class, an element of the return tuple, the value returned); "" when there is none."""
    for stmt in stmts:
        parents = {id(c): n for n in ast.walk(stmt) for c in ast.iter_child_nodes(n)}
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == logits:
                parent = parents.get(id(n))
                if not isinstance(parent, ast.keyword | ast.Tuple | ast.List | ast.Return):
                    return ast.unparse(parent)
    return ""


class _Replace(ast.NodeTransformer):
    """The LM head call (matched by its source text: the statement was re-parsed) -> the tail's parameter."""

    def __init__(self, call: ast.Call):
        self.text = ast.unparse(call)

    def visit_Call(self, node: ast.Call):
        if ast.unparse(node) == self.text:
            return ast.Name(_HEAD_OUTPUT, ast.Load())
        return self.generic_visit(node)


class _Trace:
    """Stands for the logits in the tail: records scalar multiplications and divisions, tanh and dtype casts;
    anything else raises Refusal (the tail does something our op has no knob for)."""

    def __init__(self):
        self.steps: list[tuple[str, float]] = []

    def _scalar(self, value, op: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            kind = "a tensor" if isinstance(value, torch.Tensor) else type(value).__name__
            raise Refusal(f"it {op}s the logits by {kind}, not a constant number")
        return float(value)

    def __mul__(self, value):
        self.steps.append(("mul", self._scalar(value, "multiplie")))
        return self

    __rmul__ = __mul__

    def __truediv__(self, value):
        self.steps.append(("mul", 1.0 / self._scalar(value, "divide")))
        return self

    def float(self):  # casts and layout: ForCausalLMLoss upcasts anyway, the op accumulates in fp32
        return self

    def to(self, *args, **kwargs):
        return self

    def contiguous(self):
        return self

    def tanh(self):
        self.steps.append(("tanh", 0.0))
        return self

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.tanh, torch.Tensor.tanh) and len(args) == 1 and isinstance(args[0], _Trace):
            args[0].steps.append(("tanh", 0.0))
            return args[0]
        raise Refusal(f"it applies {getattr(func, '__name__', func)} to the logits")

    def __getattr__(self, name):
        raise Refusal(f"it uses logits.{name}")


def reduce(tail: Callable, model) -> tuple[float, float | None]:
    """(scale, softcap): what the tail does to the logits as our op's knobs (see the module docstring)."""
    trace = _Trace()
    try:
        out = tail(model, trace)
    except Refusal:
        raise
    except Exception as e:  # noqa: BLE001 - the tail touched the logits in a way the recorder does not take
        raise Refusal(f"its logits step fails on the recorder ({type(e).__name__}: {e})") from None
    if out is not trace:
        raise Refusal("its logits are replaced between the LM head and the loss")
    tanhs = [i for i, (op, _) in enumerate(trace.steps) if op == "tanh"]
    before = math.prod(v for op, v in trace.steps[: tanhs[0] if tanhs else None] if op == "mul")
    if not tanhs:
        return before, None
    after = trace.steps[tanhs[0] + 1 :]
    cap = math.prod(v for _, v in after)
    if len(tanhs) > 1 or any(op != "mul" for op, _ in after) or not cap > 0:
        raise Refusal(f"its logit steps {trace.steps} are not scale then softcap (c * tanh(x / c), c > 0)")
    return before * cap, cap  # c tanh(a x) = c tanh((a c) x / c)
