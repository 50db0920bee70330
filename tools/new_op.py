#!/usr/bin/env python3
"""The starting files of a new op: tools/new_op.py <family> <op> [--mix] [--root DIR].

Writes every file docs/adding-an-op.md lists, each one a marked starting point that fails loudly until it
is written, never a stub that passes:

- C++ files hold an ``#error`` naming what to write: the build (CMake compiles tiling/*.cpp,
  csrc/kernels/*.cpp, csrc/torch/*.cpp and tests/cpp/test_<family>_tiling.cpp) and tools/check_cann.py
  reject them until then;
- Python modules raise NotImplementedError at import, and the op's test fails;
- the prototype op_proto/<family>/<op>.json is a real one (x -> y in the three float dtypes) to edit, and the
  case file an empty list, which ``ascendc-ops verify --cases`` and tests/package/test_new_op.py refuse.

A new family gets its family files too (problem, tiling, kernel, op_host header, bindings, NPU launcher,
wrapper, reference, harness family, C++ tiling test); an op added to an existing family gets its per-op
files only, and the family files to extend are printed. ``--mix`` starts a family whose kernel is a MIX launch
(KERNEL_TYPE_MIX_AIC_1_2, as fused attention's): beside the entry, its AIC and AIV sources, the cross-core flags
they hand data over with and a buffer plan the kernel's Init and the tiling share, and the tiling, kernel,
binding and op_host files say where a mix kernel differs (the cube platform, the system workspace plus the
core groups' slots, the typed launch). Existing files are never overwritten. The shared
lists that name every family (python/ascendc_ops/ops/__init__.py, python/ascendc_ops/__init__.py,
python/ascendc_ops/harness/families/__init__.py) are edited by hand. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
FLOATS = ["float16", "float", "bfloat16"]


@dataclass(frozen=True)
class Names:
    family: str
    op: str

    @property
    def op_type(self) -> str:  # msopgen's op type: RmsNorm for rms_norm
        return "".join(w.capitalize() for w in self.op.split("_"))

    @property
    def family_type(self) -> str:
        return "".join(w.capitalize() for w in self.family.split("_"))

    @property
    def test_name(self) -> str:  # carries the family key (tests/package/test_family_keys.py)
        return f"test_{self.op}" if self.family in self.op else f"test_{self.family}_{self.op}"


def cpp_error(what: str, step: str, outline: str = "") -> str:
    """A C++ starting point: what to write, the #error that stops the build, then (commented) the shape it takes."""
    return (
        f"// Written by tools/new_op.py: {what}\n"
        f'#error "tools/new_op.py scaffold: {step} (docs/adding-an-op.md), then delete this line"\n'
        + "".join(f"// {line}".rstrip() + "\n" for line in outline.splitlines())
    )


def py_error(doc: str, step: str) -> str:
    return (
        f'"""{doc} Written by tools/new_op.py."""\n\n'
        f'raise NotImplementedError("tools/new_op.py scaffold: {step} (docs/adding-an-op.md)")\n'
    )


def prototype(n: Names) -> str:
    def tensor(name):
        return {"name": name, "param_type": "required", "format": ["ND"] * len(FLOATS), "type": FLOATS}

    entry = {"op": n.op_type, "language": "cpp", "input_desc": [tensor("x")], "output_desc": [tensor("y")]}
    return json.dumps([entry], indent=2) + "\n"


def failing_test(n: Names) -> str:
    return (
        f'"""{n.op} against its float64 golden (python/ascendc_ops/ops/{n.family}_reference.py), judged with\n'
        f'tests/accuracy.py; its readable errors, opcheck and empty tensors. Written by tools/new_op.py."""\n\n'
        "import pytest\n\n\n"
        f"def test_{n.op}_against_its_golden():\n"
        f"    pytest.fail(\"tools/new_op.py scaffold: write {n.op}'s tests (tests/ops/test_swiglu.py is one "
        "family's)\")\n"
    )


def mix_entry_outline(n: Names) -> str:
    """The shape of a MIX kernel's entry (csrc/kernels/attention.cpp is one)."""
    f, F, T = n.family, n.family.upper(), n.family_type
    return f"""The shape of a MIX entry (csrc/kernels/attention.cpp; the smallest, csrc/kernels/examples/
mix_matmul_epilogue_example.cpp):
  #include "{f}_cube.h"
  #include "{f}_vector.h"
  #define {F}_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)
    extern "C" __global__ __aicore__ void OP##_##SUFFIX({F}_PARAMS(GM_ADDR)) {{
      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per core group one AIC and two AIVs
      {T}TilingData t;
      CopyTiling(&t, tiling);
      GM_ADDR slots = GetUserWorkspace(workspace);  // group g's slots at g * t.workspacePerGroup
      // the AIC's group: GetBlockIdx(); an AIV's: GetBlockIdx() / GetTaskRation()
      if ASCEND_IS_AIC {{ {T}Cube<T> cube; cube.Init(..., slots, t); cube.Process(); }}
      if ASCEND_IS_AIV {{ {T}Vector<T> vec; vec.Init(..., slots, t); vec.Process(); }}
    }}
  {F}_DTYPES({F}_ENTRY, {f})"""


# A MIX kernel's family (--mix): what its files say where a vector family's differ, and the files only it has.
def mix_files(n: Names) -> tuple[dict[str, str], list[tuple[str, str, str, bool]]]:
    f = n.family
    why = {
        f"tiling/{f}_tiling_data.h": "the tiling struct the kernel reads (core groups, each group's workspace slots) "
        "and the X-macro entry lists",
        f"tiling/{f}_tiling.cpp": "the tiling: a pure function of the problem and `tiling::CubePlatform` (a core "
        "group per cube core), with the workspace bytes per group",
        f"csrc/kernels/{f}.cpp": 'the MIX kernel: one `extern "C"` entry per dtype, `KERNEL_TYPE_MIX_AIC_1_2`, the '
        "AIC and AIV sides",
        f"csrc/op_host/{f}/{f}_host.h": "what the op_host files call: the problem function, the tiling for "
        "`NpuCubePlatform(context)`, `Publish` with the groups' workspace bytes",
        f"csrc/torch/{f}_ops.cpp": "the CPU binding (`Prepare<Op>` with `TwinCubePlatform()`, the system workspace "
        "plus the groups', `LaunchTypedOnTwin(KERNEL_TYPE_MIX_AIC_1_2, ...)`) and the Meta kernel",
        f"csrc/torch/npu/{f}_npu.cpp": "the same `Prepare<Op>` with `npu::NpuCubePlatform()`, `npu::SysWorkspace` "
        "plus the groups' slots, on torch_npu's stream",
    }
    extra = [
        (
            f"csrc/kernels/{f}_cube.h",
            "the AIC side: loads, Mmad, Fixpipe into the group's workspace slot, then its flag",
            cpp_error(
                f"the {f} kernel's AIC side (csrc/kernels/attention_cube.h is one).",
                "write the AIC side",
                "Per task: load the operands into L1 / L0, Mmad, Fixpipe the fp32 result into the group's slot,\n"
                "CrossCoreSetFlag<2, PIPE_FIX>(kReady); CrossCoreWaitFlag<2>(kFree) before writing that slot again.",
            ),
            False,
        ),
        (
            f"csrc/kernels/{f}_vector.h",
            "the AIV side: each of the two takes half the rows, waits for the AIC's flag, answers with its own",
            cpp_error(
                f"the {f} kernel's AIV side (csrc/kernels/attention_vector.h is one).",
                "write the AIV side",
                "GetSubBlockIdx() picks this AIV's half of the rows; CrossCoreWaitFlag<2>(kReady) before reading the\n"
                "AIC's slot, CrossCoreSetFlag<2, PIPE_MTE3>(kFree) once done with it. Init carves UB by\n"
                f"tiling/{f}_buffers.h, in its order.",
            ),
            False,
        ),
        (
            f"csrc/kernels/{f}_task.h",
            "what both sides share: the tasks and how they are dealt to the core groups, the cross-core flag ids of "
            "the hand-offs (mode 2: an AIC and its two AIVs)",
            cpp_error(
                f"the {f} kernel's tasks and cross-core flags (csrc/kernels/attention_task.h is one).",
                "write the tasks and flags",
                "The tasks in the order the tiling counts them, dealt to the core groups by GetBlockIdx(); one\n"
                "flag id per hand-off (at most 16), each set as often as it is waited for: the twin runs the cores\n"
                "of a group together and reports a wait that no set answers.",
            ),
            False,
        ),
        (
            f"tiling/{f}_buffers.h",
            "the buffer plan: constexpr functions of the tiling's fields, carved by the kernel's Init and held "
            "to UB / L1 by the tiling",
            cpp_error(
                f"the {f} buffer plan (tiling/attention_buffers.h is one).",
                "write the buffer plan",
                "Each buffer's bytes from the tiling's fields, __aicore__ where a kernel header defined it; the\n"
                "kernel's Init carves them in this order and the tiling holds their sum to the budget.",
            ),
            False,
        ),
    ]
    return why, extra


# (path, why, content, per op: True / family: False); paths under --root. `mix`: a MIX kernel's family.
def files(n: Names, mix: bool = False) -> list[tuple[str, str, str, bool]]:
    rows = vector_files(n)
    if not mix:
        return rows
    why, extra = mix_files(n)
    kernel = f"csrc/kernels/{n.family}.cpp"
    rows = [
        (
            path,
            why.get(path, reason),
            cpp_error(f"the {n.family} MIX kernel.", "write the kernel", mix_entry_outline(n))
            if path == kernel
            else text,
            per_op,
        )
        for path, reason, text, per_op in rows
    ]
    return rows + extra


def vector_files(n: Names) -> list[tuple[str, str, str, bool]]:
    f, op = n.family, n.op
    return [
        (
            f"op_proto/{f}/{op}.json",
            "the prototype: inputs, outputs, dtype combinations, attrs; the schema and dtype checks follow",
            prototype(n),
            True,
        ),
        (
            f"csrc/kernels/op_package/{f}/{op}.cpp",
            "the op-package kernel entry (NPU): parameters are the JSON's inputs, then outputs",
            cpp_error(f"{op}'s op-package entry (csrc/kernels/op_package/README.md).", "write the entry"),
            True,
        ),
        (
            f"csrc/op_host/{f}/{op}.cpp",
            "the op package's tiling and infer functions: one ASCENDC_OP_HOST line",
            cpp_error(f"{op}'s op_host file (op_host_common.h, ASCENDC_OP_HOST).", "write the op_host file"),
            True,
        ),
        (f"cases/{f}/{op}.json", "msOpST-style cases for ascendc-ops verify (an empty list is refused)", "[]\n", True),
        (f"tests/ops/{n.test_name}.py", "the op's tests, failing until written", failing_test(n), True),
        (
            f"tiling/{f}_problem.h",
            "the problem function: arguments -> problem and output shapes, or a readable ArgError",
            cpp_error(f"the {f} problem function (tiling/swiglu_problem.h is one).", "write the problem function"),
            False,
        ),
        (
            f"tiling/{f}_tiling_data.h",
            "the tiling struct the kernel reads, and the entries' dtype lists and GM parameters",
            cpp_error(f"the {f} tiling struct and X-macro entry lists.", "write the tiling struct"),
            False,
        ),
        (
            f"tiling/{f}_tiling.h",
            "the tiling function's declaration and its result (struct, blockDim, key)",
            cpp_error(f"the {f} tiling declaration.", "declare the tiling"),
            False,
        ),
        (
            f"tiling/{f}_tiling.cpp",
            "the tiling: a pure function of the problem and tiling::PlatformInfo",
            cpp_error(f"the {f} tiling.", "write the tiling"),
            False,
        ),
        (
            f"tests/cpp/test_{f}_tiling.cpp",
            "C++ unit tests of the problem function and the tiling (CTest, one per family)",
            cpp_error(f"the {f} tiling unit tests (tests/cpp/test_swiglu_tiling.cpp is one).", "write the tests"),
            False,
        ),
        (
            f"csrc/kernels/{f}.cpp",
            'the Ascend C kernel: one extern "C" entry per dtype',
            cpp_error(f"the {f} kernel.", "write the kernel"),
            False,
        ),
        (
            f"csrc/op_host/{f}/{f}_host.h",
            "what the family's op_host files call: the problem function and the tiling via InputArg and Checked",
            cpp_error(f"the {f} op_host functions.", "write the op_host functions"),
            False,
        ),
        (
            f"csrc/torch/{f}_ops.h",
            "Prepare<Op>: the launch both backends share",
            cpp_error(f"the {f} bindings' header.", "declare Prepare<Op>"),
            False,
        ),
        (
            f"csrc/torch/{f}_ops.cpp",
            "the CPU binding (Prepare<Op>, LaunchOnTwin) and the Meta kernel",
            cpp_error(f"the {f} CPU and Meta bindings.", "write the bindings"),
            False,
        ),
        (
            f"csrc/torch/npu/{f}_npu.cpp",
            "the NPU launcher (PrivateUse1): the same Prepare<Op> on torch_npu's stream",
            cpp_error(f"the {f} NPU launcher.", "write the NPU launcher"),
            False,
        ),
        (
            f"python/ascendc_ops/ops/{f}.py",
            "the Python wrapper and register_autograd",
            py_error(f"The {f} ops' wrappers and autograd.", "write the wrapper"),
            False,
        ),
        (
            f"python/ascendc_ops/ops/{f}_reference.py",
            "the float64 NumPy golden",
            py_error(f"The {f} ops' float64 references.", "write the reference"),
            False,
        ),
        (
            f"python/ascendc_ops/harness/families/{f}.py",
            "how verify and bench run the family's ops",
            py_error(f"The {f} family's harness knowledge.", "write the harness family"),
            False,
        ),
    ]


# The lists every family is named in, edited by hand (they order the families).
SHARED = [
    ("python/ascendc_ops/ops/__init__.py", "import the family's module (registers its autograd)"),
    ("python/ascendc_ops/__init__.py", "export the wrappers"),
    ("python/ascendc_ops/harness/families/__init__.py", "add the family to FAMILIES"),
]


def family_files(root: Path, path: str) -> list[str]:
    """An existing family's file for a family path of files(), or its siblings of that kind
    (csrc/kernels/moe_routing_permute.cpp for csrc/kernels/moe_routing.cpp)."""
    p = Path(path)
    if (root / p).exists():
        return [path]
    return [str(q.relative_to(root)) for q in sorted((root / p.parent).glob(f"{p.stem}_*{p.suffix}"))]


def scaffold(family: str, op: str, root: Path, mix: bool = False) -> tuple[list[tuple[str, str]], list[str]]:
    """Writes the files; returns ([(path, why) written], [family files to extend])."""
    for name in (family, op):
        if not NAME.fullmatch(name):
            raise SystemExit(f"new_op: {name!r} is not a snake_case name")
    n = Names(family, op)
    if any((root / "op_proto").glob(f"*/{op}.json")):
        raise SystemExit(f"new_op: {op} has a prototype already")
    new_family = not (root / "op_proto" / family).is_dir()
    if mix and not new_family:
        raise SystemExit(f"new_op: --mix starts a family, and {family} exists (its ops share its kernel)")
    chosen = [(p, why, text) for p, why, text, per_op in files(n, mix) if per_op or new_family]
    existing = [p for p, _, _ in chosen if (root / p).exists()]
    if existing:
        raise SystemExit(f"new_op: would overwrite {existing}")
    for path, _, text in chosen:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    # a family started with --mix has an AIC side: its files to extend are a mix family's
    mix = mix or (root / "csrc/kernels" / f"{family}_cube.h").exists()
    extend = (
        []
        if new_family
        else sorted({e for p, *_, per_op in files(n, mix) if not per_op for e in family_files(root, p)})
    )
    return [(p, why) for p, why, _ in chosen], extend


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", help="the family key, e.g. rope (a new one: a new family)")
    parser.add_argument("op", help="the op's snake_case name, e.g. rotary_mul")
    parser.add_argument(
        "--mix", action="store_true", help="a new family whose kernel is a MIX launch (AIC + AIV, as attention's)"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree to write into (default: this checkout)")
    args = parser.parse_args()
    written, extend = scaffold(args.family, args.op, args.root, args.mix)
    for path, why in written:
        print(f"wrote  {path}: {why}")
    for path in extend:
        print(f"extend {path}")
    if not extend:
        for path, why in SHARED:
            print(f"edit   {path}: {why}")
    print("Each file fails (#error, NotImplementedError, a failing test, an empty case list) until written.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
