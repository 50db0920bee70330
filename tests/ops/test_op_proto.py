"""op_proto/*/*.json is the single source of the ops: the library registers exactly those ops, each
with the schema the JSON describes."""

import json

import torch

import ascendc_ops
from ascendc_ops import op_proto


def registered_custom_ops() -> set[str]:
    names = torch._C._dispatch_get_all_op_names()
    return {n.removeprefix("custom::").split(".")[0] for n in names if n.startswith("custom::")}


def test_library_registers_exactly_the_prototypes():
    assert ascendc_ops.library_path.exists()
    assert registered_custom_ops() == set(op_proto.load_all())


def test_registered_schemas_match_op_proto():
    for name, proto in op_proto.load_all().items():
        registered = str(getattr(torch.ops.custom, name).default._schema)
        described = str(torch._C.parse_schema("custom::" + proto.schema()))  # same printing of defaults
        assert registered == described, f"{name}: registered {registered!r} vs op_proto {proto.schema()!r}"


def test_prototypes_are_msopgen_descriptions():
    paths = op_proto.paths()
    assert len(paths) == len(op_proto.load_all()) > 0 and not list(op_proto.default_dir().glob("*.json"))
    for path in paths:  # op_proto/<family>/<op>.json
        (entry,) = json.loads(path.read_text())
        assert entry["language"] == "cpp" and entry["op"][0].isupper(), path.name
        assert op_proto.parse(path).name == path.stem, f"{path.name}: file name and op name differ"
        for desc in entry["input_desc"] + entry["output_desc"]:
            assert len(desc["type"]) == len(desc["format"]) == len(entry["input_desc"][0]["type"]), (path.name, desc)
