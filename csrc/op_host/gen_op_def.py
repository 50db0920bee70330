"""op_proto/<family>/<op>.json -> <op>_def.h: the CANN OpDef of each op, generated so the JSON stays the one
source of truth for names, dtypes, formats and attrs (msopgen writes the same class into its own
op_host/<op>.cpp; build.sh overlays ours, csrc/op_host/<family>/<op>.cpp, which includes this header).

    python csrc/op_host/gen_op_def.py --proto-dir op_proto --out DIR [OP ...]

It also writes op_proto_gen.h, the tiling::OpSpec table (python/ascendc_ops/op_proto.py) the
problem functions in tiling/ check arguments against, as the torch bindings do.

Each csrc/op_host/<family>/<op>.cpp defines optiling::<Op>Tiling, ge::<Op>InferShape and ge::<Op>InferDataType
before including its header. Standard library only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

OP_PROTO_PY = Path(__file__).resolve().parents[2] / "python" / "ascendc_ops" / "op_proto.py"

GE_DTYPES = {
    "float16": "ge::DT_FLOAT16",
    "float": "ge::DT_FLOAT",
    "float32": "ge::DT_FLOAT",
    "bfloat16": "ge::DT_BF16",
    "int8": "ge::DT_INT8",
    "int32": "ge::DT_INT32",
    "int64": "ge::DT_INT64",
    "bool": "ge::DT_BOOL",
    "uint8": "ge::DT_UINT8",
}
GE_FORMATS = {"ND": "ge::FORMAT_ND"}
PARAM_TYPES = {"required": "REQUIRED", "optional": "OPTIONAL", "dynamic": "DYNAMIC"}
SOC = "ascend910b"  # msopgen's name for -c ai_core-Ascend910B
# Outputs the kernel writes only in part, so the framework zero-fills them first (InitValue(0)), as
# the torch path allocates them zeroed: rows past the last group, the dweight of an empty group,
# the permuted rows no sorted index reaches. A kernel contract, not a signature, hence not in the JSON.
ZEROED_OUTPUTS = {
    "GroupedMatmul": {"y"},
    "GroupedMatmulWeightGrad": {"dweight"},
    "MoeTokenUnpermuteGrad": {"permuted_tokens_grad"},
}


def snake(op: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


def attr_value(attr: dict) -> str:
    kind, default = attr["type"], attr.get("default_value")
    setter = {"float": "Float", "int": "Int", "bool": "Bool", "string": "String", "list_int": "ListInt"}[kind]
    if default is None:
        return f"{setter}()"
    if kind == "string":
        return f'{setter}("{default}")'
    if kind == "bool":
        return f"{setter}({'true' if str(default).lower() == 'true' else 'false'})"
    if kind == "float":
        return f"{setter}({float(default)!r}f)"
    if kind == "list_int":
        return f"{setter}({{{', '.join(str(int(v)) for v in default)}}})"
    return f"{setter}({int(default)})"


def param_lines(kind: str, descs: list[dict], zeroed: frozenset = frozenset()) -> list[str]:
    lines = []
    for d in descs:
        dtypes = ", ".join(GE_DTYPES[t] for t in d["type"])
        formats = ", ".join(GE_FORMATS[f] for f in d["format"])
        init = "\n        .InitValue(0)" if d["name"] in zeroed else ""
        lines.append(
            f'    this->{kind}("{d["name"]}")\n        .ParamType({PARAM_TYPES[d["param_type"]]})\n'
            f"        .DataType({{{dtypes}}})\n        .Format({{{formats}}}){init};"
        )
    return lines


def op_def_header(proto: dict, source: str) -> str:
    op = proto["op"]
    body = param_lines("Input", proto["input_desc"]) + param_lines(
        "Output", proto["output_desc"], frozenset(ZEROED_OUTPUTS.get(op, ()))
    )
    for a in proto.get("attr", []):
        option = "OPTIONAL" if a.get("param_type", "optional") == "optional" else "REQUIRED"
        body.append(f'    this->Attr("{a["name"]}").AttrType({option}).{attr_value(a)};')
    body.append(f"    this->SetInferShape(ge::{op}InferShape).SetInferDataType(ge::{op}InferDataType);")
    body.append(f'    this->AICore().SetTiling(optiling::{op}Tiling).AddConfig("{SOC}");')
    return (
        f"// Generated from {source} by csrc/op_host/gen_op_def.py -- do not edit.\n#pragma once\n"
        f'#include "register/op_def_registry.h"\n\nnamespace ops {{\nclass {op} : public OpDef {{\n public:\n'
        f"  explicit {op}(const char* name) : OpDef(name) {{\n"
        + "\n".join(body)
        + f"\n  }}\n}};\nOP_ADD({op});\n}}  // namespace ops\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proto-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("ops", nargs="*", help="snake_case op names (default: every JSON)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    spec = importlib.util.spec_from_file_location("op_proto", OP_PROTO_PY)
    op_proto = importlib.util.module_from_spec(spec)
    sys.modules["op_proto"] = op_proto  # its dataclasses look their module up
    spec.loader.exec_module(op_proto)
    for path in op_proto.paths(args.proto_dir):
        (proto,) = json.loads(path.read_text())
        if args.ops and snake(proto["op"]) not in args.ops:
            continue
        out = args.out / f"{snake(proto['op'])}_def.h"
        text = op_def_header(proto, f"op_proto/{path.parent.name}/{path.name}")
        if not out.exists() or out.read_text() != text:  # unchanged files keep their mtime
            out.write_text(text)
    op_proto.write_header(op_proto.load_all(args.proto_dir), args.out / "op_proto_gen.h")


if __name__ == "__main__":
    main()
