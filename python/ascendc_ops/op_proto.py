"""The msopgen op prototypes in op_proto/<family>/<op>.json, read once for everything derived from them.

The folder an op's JSON sits in names its family (rope, rms_norm, swiglu, grouped_matmul,
moe_routing): the key every layer's files of that family carry (`families()`).

Derived here: the torch schema of each op, its supported dtype combinations, its attributes with their
index and default, and the C++ header (`--header OUT`, torch-free) the bindings register those schemas
from, the problem functions in tiling/ check those dtypes against and the op_host reads the attributes by
(`<Op>Attrs`: one `tiling::Attr` per attribute, tiling/op_spec.h).
Only the standard library is imported, so the build can run this file as a script.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

# msopgen dtype names -> (torch dtype attribute, tiling::DType in tiling/platform.h)
DTYPES = {
    "float16": ("float16", "tiling::DType::kFloat16"),
    "float": ("float32", "tiling::DType::kFloat32"),
    "float32": ("float32", "tiling::DType::kFloat32"),
    "bfloat16": ("bfloat16", "tiling::DType::kBFloat16"),
    "int32": ("int32", "tiling::DType::kInt32"),
    "int64": ("int64", "tiling::DType::kInt64"),
    "bool": ("bool", "tiling::DType::kBool"),
    "uint8": ("uint8", "tiling::DType::kUInt8"),
}
ATTR_TYPES = {"string": "str", "float": "float", "int": "int", "bool": "bool", "list_int": "int[]"}
# msopgen attr types -> the tiling::Attr<T> of the generated header (the types CANN's RuntimeAttrs reads)
ATTR_CPP_TYPES = {"string": "const char*", "float": "float", "int": "int64_t", "bool": "bool"}


@dataclass(frozen=True)
class TensorDesc:
    name: str
    param_type: str  # required | optional | dynamic
    types: tuple[str, ...]  # one msopgen dtype per supported combination


@dataclass(frozen=True)
class AttrDesc:
    name: str
    type: str
    default: str | None
    nullable: bool = False  # an optional attr whose default_value is JSON null: `int? name=None`

    def schema_type(self) -> str:
        return ATTR_TYPES[self.type] + ("?" if self.nullable else "")

    def schema_default(self) -> str:
        if self.nullable:
            return "=None"
        if self.default is None:
            return ""
        if self.type == "string":
            return f"='{self.default}'"
        if self.type == "bool":
            return "=" + ("True" if str(self.default).lower() == "true" else "False")
        return f"={self.default}"

    def cpp_member(self, index: int) -> str:
        """This attribute in the generated <Op>Attrs: `tiling::Attr<T> name{index, default};` (op_spec.h)."""
        if self.type == "list_int":
            if self.default is not None:
                raise ValueError(f"{self.name}: a list_int attribute's default must be None")
            cpp, value = "tiling::AttrIntList", None
        elif self.nullable:
            cpp, value = f"std::optional<{ATTR_CPP_TYPES[self.type]}>", None
        else:
            cpp, value = ATTR_CPP_TYPES[self.type], self.default
        if value is None:
            init = f"{index}"
        elif self.type == "string":
            init = f'{index}, "{value}"'
        elif self.type == "bool":
            init = f"{index}, {'true' if str(value).lower() == 'true' else 'false'}"
        elif self.type == "float":
            init = f"{index}, {float(value)!r}f"
        else:
            init = f"{index}, {int(value)}"
        member = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), self.name)
        return f"  tiling::Attr<{cpp}> {member}{{{init}}};"


# Optional inputs that torch_npu's signature puts after the attributes (added in later versions, appended so that
# positional calls keep working; the grad's drop_mask and sink so too): the schema puts them last too.
TRAILING_INPUTS = {"FusionAttention": ("sink", "drop_mask"), "FusionAttentionGrad": ("drop_mask", "sink")}


@dataclass(frozen=True)
class OpProto:
    op: str  # msopgen CamelCase name
    inputs: tuple[TensorDesc, ...]
    outputs: tuple[TensorDesc, ...]
    attrs: tuple[AttrDesc, ...]

    @property
    def name(self) -> str:
        """The torch op name: RotaryMulGrad -> rotary_mul_grad."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.op).lower()

    @property
    def mutated(self) -> tuple[str, ...]:
        """Inputs the op writes in place: an output named like an input is that input (msopgen's ref
        tensors, as CANN's ApplyRotaryPosEmb declares query and key)."""
        names = {t.name for t in self.inputs}
        return tuple(t.name for t in self.outputs if t.name in names)

    def schema(self) -> str:
        alias = {name: f"({chr(ord('a') + i)}!)" for i, name in enumerate(self.mutated)}
        # optional: Tensor? name=None; dynamic (msopgen's list of tensors): Tensor[] name; in place: (a!) after Tensor
        suffix = {"optional": "?", "dynamic": "[]"}
        tensors = [
            f"Tensor{alias.get(t.name, '')}{suffix.get(t.param_type, '')} {t.name}"
            + ("=None" if t.param_type == "optional" else "")
            for t in self.inputs
        ]
        attrs = [f"{a.schema_type()} {a.name}{a.schema_default()}" for a in self.attrs]
        # Arguments without a default come first, as torch_npu orders them (query, key, value, head_num,
        # input_layout, then the optional tensors and attrs): required inputs, required attrs, the rest; the
        # inputs torch_npu appended after its attributes (TRAILING_INPUTS) last.
        required = [a for a in tensors if not a.endswith("=None")] + [a for a in attrs if "=" not in a]
        trailing = [f"Tensor? {name}=None" for name in TRAILING_INPUTS.get(self.op, ())]
        args = required + [a for a in tensors + attrs if a not in required + trailing] + trailing
        if self.mutated:
            if len(self.mutated) != len(self.outputs):
                raise ValueError(f"{self.op}: outputs mix in-place and new tensors")
            ret = "()"  # torch.library: a mutating op returns nothing; the wrapper returns the inputs
        elif len(self.outputs) == 1:
            ret = "Tensor[]" if self.outputs[0].param_type == "dynamic" else "Tensor"
        else:
            ret = "(" + ", ".join(f"Tensor {t.name}" for t in self.outputs) + ")"
        return f"{self.name}({', '.join(args)}) -> {ret}"


def parse(path: Path) -> OpProto:
    entries = json.loads(Path(path).read_text())
    if not isinstance(entries, list) or len(entries) != 1:
        raise ValueError(f"{path}: expected a list holding one msopgen op description")
    e = entries[0]

    def tensors(key):
        out = []
        for d in e.get(key, []):
            if len(d["type"]) != len(d["format"]):
                raise ValueError(f"{path}: {d['name']}: 'type' and 'format' lists differ in length")
            unknown = set(d["type"]) - DTYPES.keys()
            if unknown:
                raise ValueError(f"{path}: {d['name']}: unknown dtypes {sorted(unknown)}")
            out.append(TensorDesc(d["name"], d.get("param_type", "required"), tuple(d["type"])))
        return tuple(out)

    attrs = tuple(
        AttrDesc(
            a["name"],
            a["type"],
            a.get("default_value"),
            a.get("param_type") == "optional" and "default_value" in a and a["default_value"] is None,
        )
        for a in e.get("attr", [])
    )
    proto = OpProto(e["op"], tensors("input_desc"), tensors("output_desc"), attrs)
    lengths = {len(t.types) for t in proto.inputs + proto.outputs}
    if len(lengths) != 1:
        raise ValueError(f"{path}: every input and output must list the same number of dtype combinations")
    return proto


def default_dir() -> Path:
    """op_proto/ inside an installed package, else the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "op_proto", here.parent.parent / "op_proto"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("op_proto/ not found next to the package or in the source tree")


def paths(directory: Path | None = None) -> list[Path]:
    """Every prototype, op_proto/<family>/<op>.json, sorted by op name."""
    return sorted(Path(directory or default_dir()).glob("*/*.json"), key=lambda p: p.name)


def families(directory: Path | None = None) -> dict[str, list[str]]:
    """family -> its ops' names, from the folders of op_proto/."""
    out: dict[str, list[str]] = {}
    for path in paths(directory):
        out.setdefault(path.parent.name, []).append(path.stem)
    return out


def load_all(directory: Path | None = None) -> dict[str, OpProto]:
    protos = [parse(p) for p in paths(directory)]
    return {p.name: p for p in protos}


def resolve(name, protos: dict[str, OpProto] | None = None) -> str | None:
    """The torch op name `name` stands for: the torch op name (rope_customer) or the prototype's op type
    (RopeCustomer, as msOpST case files write it), in any case; None when no prototype has it."""
    if not isinstance(name, str):
        return None
    key = name.lower()
    for p in (protos if protos is not None else load_all()).values():
        if key in (p.name.lower(), p.op.lower()):
            return p.name
    return None


def cpp_attrs(p: OpProto) -> list[str]:
    """<Op>Attrs, one tiling::Attr a member in the prototype's order, and k<Op>Attrs; none for an op without
    attributes."""
    if not p.attrs:
        return []
    return [
        f"// {p.name}'s attributes: each one's index (the op_host's RuntimeAttrs index) and default.",
        f"struct {p.op}Attrs {{",
        *(a.cpp_member(i) for i, a in enumerate(p.attrs)),
        "};",
        f"inline constexpr {p.op}Attrs k{p.op}Attrs{{}};",
    ]


def cpp_header(protos: dict[str, OpProto]) -> str:
    lines = [
        "// Generated from op_proto/*/*.json by python/ascendc_ops/op_proto.py. Do not edit.",
        "#pragma once",
        "#include <cstdint>",
        "#include <optional>",
        "",
        '#include "op_spec.h"',
        "",
        "namespace ascendc_ops {",
    ]
    for p in protos.values():
        ident = "k" + p.op
        combos = ", ".join(
            "{" + ", ".join(DTYPES[t.types[i]][1] for t in p.inputs) + "}" for i in range(len(p.inputs[0].types))
        )
        names = ", ".join(f'"{t.name}"' for t in p.inputs)
        lines.append(f'inline const tiling::OpSpec {ident}{{"{p.name}", "{p.schema()}", {{{names}}}, {{{combos}}}}};')
        lines += cpp_attrs(p)
    lines.append(
        "inline const tiling::OpSpec* const kAllOps[] = {" + ", ".join("&k" + p.op for p in protos.values()) + "};"
    )
    lines += ["}  // namespace ascendc_ops", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--header", required=True, help="C++ header to write")
    parser.add_argument("--dir", type=Path, default=None, help="op_proto directory")
    args = parser.parse_args()
    write_header(load_all(args.dir), Path(args.header))


def write_header(protos: dict[str, OpProto], out: Path) -> None:
    text = cpp_header(protos)
    if not out.exists() or out.read_text() != text:  # keep the timestamp when nothing changed
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


if __name__ == "__main__":
    main()
