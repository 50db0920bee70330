"""The NPU op project against op_proto/<family>/*.json, the one source of op signatures.

csrc/op_host/gen_op_def.py writes each op's CANN OpDef from its JSON; these tests read the generated
C++ back with an independent parser and hold it equal to the JSON (names, param types, dtypes,
formats, attrs and defaults), and hold each op's op_host file and op-package kernel entry to the
same signature (the entry's parameters are the inputs then outputs, in JSON order). Whether CANN
accepts the code is tools/check_cann.py's job (tests/npu/test_kernels_cann.py).
"""

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOS = sorted((ROOT / "op_proto").glob("*/*.json"), key=lambda p: p.name)
OPS = [p.stem for p in PROTOS]
FAMILY = {p.stem: p.parent.name for p in PROTOS}
GE_DTYPES = {
    "float16": "DT_FLOAT16",
    "float": "DT_FLOAT",
    "float32": "DT_FLOAT",
    "bfloat16": "DT_BF16",
    "int8": "DT_INT8",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "bool": "DT_BOOL",
    "uint8": "DT_UINT8",
}
# Ops with a prototype but no NPU op project yet (add them here only while their op_host file and
# op-package entry are being written; the report names what each needs).
NPU_PENDING: set[str] = set()


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_op_def", ROOT / "csrc" / "op_host" / "gen_op_def.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def proto(op):
    (entry,) = json.loads((ROOT / "op_proto" / FAMILY[op] / f"{op}.json").read_text())
    return entry


def parse_op_def(text):
    """The OpDef in generated C++, read back: class name, params, attrs, registration."""
    cls = re.search(r"class (\w+) : public OpDef", text).group(1)
    params = {"Input": [], "Output": []}
    for kind, name, ptype, dtypes, formats in re.findall(
        r'this->(Input|Output)\("(\w+)"\)\s*\.ParamType\((\w+)\)\s*\.DataType\(\{([^}]*)\}\)\s*'
        r"\.Format\(\{([^}]*)\}\)",
        text,
    ):
        params[kind].append(
            {
                "name": name,
                "param_type": ptype.lower(),
                "type": [d.strip().removeprefix("ge::") for d in dtypes.split(",")],
                "format": [f.strip().removeprefix("ge::FORMAT_") for f in formats.split(",")],
            }
        )
    attrs = [
        {"name": n, "param_type": t.lower(), "setter": s, "value": v}
        for n, t, s, v in re.findall(r'this->Attr\("(\w+)"\)\.AttrType\((\w+)\)\.(\w+)\(([^;]*)\);', text)
    ]
    return {
        "class": cls,
        "inputs": params["Input"],
        "outputs": params["Output"],
        "attrs": attrs,
        "registered": f"OP_ADD({cls});" in text,
        "functions": re.findall(r"(ge::\w+InferShape|ge::\w+InferDataType|optiling::\w+Tiling)", text),
        "soc": re.findall(r'AddConfig\("(\w+)"\)', text),
    }


def expected_params(descs):
    return [
        {
            "name": d["name"],
            "param_type": d["param_type"],
            "type": [GE_DTYPES[t] for t in d["type"]],
            "format": list(d["format"]),
        }
        for d in descs
    ]


def expected_attr_value(attr):
    kind, value = attr["type"], attr.get("default_value")
    if value is None:  # a required attr: the setter without a default
        return {"string": "String", "float": "Float", "int": "Int", "bool": "Bool", "list_int": "ListInt"}[kind], ""
    if kind == "string":
        return "String", f'"{value}"'
    if kind == "float":
        return "Float", float(value)
    if kind == "int":
        return "Int", int(value)
    if kind == "list_int":
        return "ListInt", "{" + ", ".join(str(int(v)) for v in value) + "}"
    return {"bool": "Bool"}[kind], str(value).lower()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("op_def")
    gen = load_generator()
    for path in PROTOS:
        (entry,) = json.loads(path.read_text())
        (out / f"{path.stem}_def.h").write_text(gen.op_def_header(entry, f"op_proto/{path.parent.name}/{path.name}"))
    return out


@pytest.mark.parametrize("op", OPS)
def test_op_def_equals_json(op, generated):
    p, d = proto(op), parse_op_def((generated / f"{op}_def.h").read_text())
    assert d["class"] == p["op"] and d["registered"]
    assert d["inputs"] == expected_params(p["input_desc"])
    assert d["outputs"] == expected_params(p["output_desc"])
    assert len(d["attrs"]) == len(p.get("attr", []))
    for got, want in zip(d["attrs"], p.get("attr", []), strict=True):
        setter, value = expected_attr_value(want)
        assert (got["name"], got["param_type"], got["setter"]) == (want["name"], want["param_type"], setter)
        if value == "":
            assert got["value"] == ""
        else:
            assert (
                float(got["value"].rstrip("f"))
                if setter == "Float"
                else int(got["value"])
                if setter == "Int"
                else got["value"]
            ) == value
    assert sorted(d["functions"]) == sorted(
        [f"ge::{p['op']}InferShape", f"ge::{p['op']}InferDataType", f"optiling::{p['op']}Tiling"]
    )
    assert d["soc"] == ["ascend910b"]


def test_partly_written_outputs_are_zero_filled(generated):
    """The outputs a kernel writes only in part (gen_op_def.ZEROED_OUTPUTS) are real outputs of their
    op and get InitValue(0); no other output does."""
    zeroed = load_generator().ZEROED_OUTPUTS
    for op in OPS:
        p, text = proto(op), (generated / f"{op}_def.h").read_text()
        names = {d["name"] for d in p["output_desc"]}
        assert zeroed.get(p["op"], set()) <= names
        got = set(re.findall(r'this->Output\("(\w+)"\)[^;]*\.InitValue\(0\);', text))
        assert got == zeroed.get(p["op"], set()), op


def test_parser_sees_a_changed_json(generated):
    """The comparison can fail: a JSON with one dtype changed does not match the real OpDef."""
    entry = proto("rms_norm")
    entry["input_desc"][1]["type"][0] = "float16"
    text = load_generator().op_def_header(entry, "op_proto/rms_norm/rms_norm.json")
    assert parse_op_def(text)["inputs"] != parse_op_def((generated / "rms_norm_def.h").read_text())["inputs"]


@pytest.mark.parametrize("op", OPS)
def test_op_host_file_defines_what_the_op_def_registers(op):
    if op in NPU_PENDING:
        pytest.skip(f"{op}: NPU op project pending")
    path = ROOT / "csrc" / "op_host" / FAMILY[op] / f"{op}.cpp"
    assert path.is_file(), f"{op}: no {path.relative_to(ROOT)} (see csrc/kernels/op_package/README.md)"
    text, cls = path.read_text(), proto(op)["op"]
    assert f'#include "{op}_def.h"' in text
    # <Op>Tiling, <Op>InferShape and <Op>InferDataType, by op_host_common.h's ASCENDC_OP_HOST
    assert re.search(rf"^ASCENDC_OP_HOST\({cls},", text, re.M), f"{path.name} does not define {cls}'s functions"


@pytest.mark.parametrize("op", OPS)
def test_op_package_entry_matches_json(op):
    if op in NPU_PENDING:
        pytest.skip(f"{op}: NPU op project pending")
    path = ROOT / "csrc" / "kernels" / "op_package" / FAMILY[op] / f"{op}.cpp"
    assert path.is_file(), f"{op}: no {path.relative_to(ROOT)}"
    text, p = path.read_text(), proto(op)
    match = re.search(rf'extern "C" __global__ __aicore__ void {op}\(([^)]*)\)', text)
    assert match, f"{path.name}: no entry named {op}"
    params = [arg.split()[-1] for arg in match.group(1).split(",")]
    assert all(arg.split()[0] == "GM_ADDR" for arg in match.group(1).split(","))
    inputs = [d["name"] for d in p["input_desc"]]
    # an output that is also an input (a ref tensor, apply_rotary_pos_emb's query) is <name>_ref, as msopgen names it
    outputs = [d["name"] + "_ref" if d["name"] in inputs else d["name"] for d in p["output_desc"]]
    assert params == inputs + outputs + ["workspace", "tiling"]
    names = {d["name"].upper() for d in p["input_desc"] + p["output_desc"]}
    used = set(re.findall(r"\bDTYPE_(\w+)", text))
    assert used and used <= names, f"{path.name} uses DTYPE_{sorted(used - names)}, not params of {op}"
    assert "GET_TILING_DATA_WITH_STRUCT" in text and "REGISTER_TILING_DEFAULT" in text
