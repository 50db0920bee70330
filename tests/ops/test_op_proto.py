"""op_proto/*/*.json is the single source of the ops: the library registers exactly those ops, each
with the schema the JSON describes."""

import json

import pytest
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


def test_header_carries_each_attribute_with_its_index_and_default():
    """op_proto_gen.h's <Op>Attrs: one tiling::Attr per attribute, at its index among the op's attributes (where a
    CANN op_host reads it) with the prototype's default, which the op_host uses where the graph leaves it out."""
    protos = op_proto.load_all()
    header = op_proto.cpp_header(protos)
    lines = header.splitlines()
    for proto in protos.values():
        if not proto.attrs:
            assert f"struct {proto.op}Attrs" not in header
            continue
        body = lines[lines.index(f"struct {proto.op}Attrs {{") + 1 :]
        body = body[: body.index("};")]
        assert len(body) == len(proto.attrs), proto.name
        for index, (attr, line) in enumerate(zip(proto.attrs, body, strict=True)):
            assert f"{{{index}" in line and line == attr.cpp_member(index), (proto.name, line)
        assert f"inline constexpr {proto.op}Attrs k{proto.op}Attrs{{}};" in header
    attention = "\n".join(lines[lines.index("struct FusionAttentionAttrs {") :][:10])
    assert "tiling::Attr<int64_t> headNum{0};" in attention  # required: no default
    assert "tiling::Attr<float> scale{2, 1.0f};" in attention
    assert "tiling::Attr<int64_t> preTockens{3, 2147483647};" in attention
    assert "tiling::Attr<tiling::AttrIntList> actualSeqKvlen{6};" in attention  # None
    assert "tiling::Attr<std::optional<int64_t>> numOutTokens{0};" in header  # an int whose default is None
    assert 'tiling::Attr<const char*> rotaryMode{1, "half"};' in header


def test_a_list_attribute_default_other_than_none_is_refused():
    attr = op_proto.AttrDesc("restore_shape", "list_int", [1, 2])
    with pytest.raises(ValueError, match="default must be None"):
        attr.cpp_member(0)
