#!/usr/bin/env python3
"""The NPU op project: msopgen generates it from op_proto/*/*.json, our sources are overlaid onto it.

    tools/op_project.py --out build/op_project [--cann DIR] [--no-check]

One project for every op. The steps, used by build.sh on a CANN machine and by
tests/npu/test_msopgen.py anywhere a checkout of msopgen is given:

1. merge op_proto/<family>/*.json into one list (<out>.json);
2. run msopgen once per op (it generates one op per call and would ask on stdin which op of a list
   to take): ``msopgen gen -i <out>.json -c ai_core-Ascend910B2 -lan cpp -f pytorch -op <Op>``,
   ``-m 0`` for the first op (new project), ``-m 1`` (add an op) for the rest, into <out>.generated
   (kept for comparison), then copied to <out>. ``Ascend910B2`` is what msopgen maps to the
   ``ascend910b`` compute unit (Atlas A2; plain ``Ascend910B`` would mean the old ``ascend910``),
   ``-f pytorch`` drops the TensorFlow parser plugins msopgen writes by default;
3. the overlay, flattened to the per-op layout msopgen generates: op_host/<op>.cpp (ours, from
   csrc/op_host/<family>/, with the OpDef gen_op_def.py writes from the JSON as <op>_def.h) and the
   problem / tiling sources of tiling/ into op_host/; op_kernel/<op>.cpp (our op-package entry,
   csrc/kernels/op_package/<family>/) and its kernel body in op_kernel/kernels/;
   op_kernel/<op>_tiling.h rewritten to include the tiling struct our entry registers;
   op_host/CMakeLists.txt told to compile C++17 (CANN's op_host code generation says -std=c++11);
4. CMakePresets.json: vendor_name ascendc_ops, and ASCEND_CANN_PACKAGE_PATH with --cann;
5. unless --no-check: check() -- every op generated, every replaced file in the same role as the
   generated one (kernel entry name and parameters, registered tiling struct, OpDef class,
   parameters, attrs, SoC and registration), no stub left. Exit status 1 on any problem.

msopgen comes from --msopgen (a command), else ASCENDC_MSOPGEN (a checkout of Ascend/msopgen; its
op-project templates from ASCENDC_ASC_TOOLS, a checkout of hicann/asc-tools), else ``msopgen`` on
PATH (a CANN toolkit). Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPUTE_UNIT = "ai_core-Ascend910B2"
SOC = "ascend910b"  # what msopgen writes for COMPUTE_UNIT (AddConfig, ASCEND_COMPUTE_UNIT)
FRAMEWORK = "pytorch"
CXX17_FLAG = "-std=c++17"
CXX17_MARK = "# ascendc_ops (tools/op_project.py): op_host and tiling/ are C++17"
ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+__aicore__\s+void\s+(\w+)\s*\(([^)]*)\)')


def snake(op: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


def protos(proto_dir: Path = ROOT / "op_proto") -> list[dict]:
    """Every op's prototype, in op name order (op_proto.paths)."""
    return [json.loads(p.read_text())[0] for p in sorted(proto_dir.glob("*/*.json"), key=lambda p: p.name)]


def msopgen_command(explicit: str | None, work: Path) -> list[str]:
    """How to run msopgen: a given command, a checkout (ASCENDC_MSOPGEN), or the toolkit's."""
    if explicit:
        return shlex.split(explicit)
    checkout = os.environ.get("ASCENDC_MSOPGEN")
    if checkout:
        # msopgen finds its templates at <package>/../new_op_project_template (a link its setup.py
        # makes to asc-tools); a copy of the small package with that link keeps the checkout untouched.
        tools = Path(os.environ.get("ASCENDC_ASC_TOOLS") or Path(checkout) / "thirdparty/asc-tools")
        templates = tools / "utils/templates/new_op_project_template"
        if not (templates / "custom_op/CMakeLists.txt").is_file():
            raise SystemExit(f"op_project: no msopgen templates at {templates} (set ASCENDC_ASC_TOOLS)")
        pkg = work / "msopgen_pkg"
        shutil.rmtree(pkg, ignore_errors=True)
        shutil.copytree(Path(checkout) / "msopgen", pkg / "msopgen", ignore=shutil.ignore_patterns("__pycache__"))
        (pkg / "msopgen/new_op_project_template").symlink_to(templates)
        return ["env", f"PYTHONPATH={pkg}", sys.executable, "-m", "msopgen.msopgen"]
    if shutil.which("msopgen"):
        return ["msopgen"]
    raise SystemExit("op_project: no msopgen (set ASCENDC_MSOPGEN to a checkout, or put a CANN toolkit's on PATH)")


def generate(out: Path, msopgen: list[str], proto_dir: Path = ROOT / "op_proto") -> Path:
    """msopgen's own project for every op of proto_dir, in <out>.generated; returns that path."""
    merged, generated = out.parent / f"{out.name}.json", out.parent / f"{out.name}.generated"
    merged.write_text(json.dumps(protos(proto_dir), indent=1))
    shutil.rmtree(generated, ignore_errors=True)
    for k, proto in enumerate(protos(proto_dir)):
        cmd = [*msopgen, "gen", "-i", str(merged), "-c", COMPUTE_UNIT, "-lan", "cpp", "-f", FRAMEWORK]
        cmd += ["-op", proto["op"], "-m", "1" if k else "0", "-out", str(generated)]
        result = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0 or "[ERROR]" in result.stdout + result.stderr:
            raise SystemExit(f"op_project: msopgen failed for {proto['op']}:\n{result.stdout}{result.stderr}")
    return generated


def tiling_struct(kernel_text: str) -> str | None:
    found = re.search(r"REGISTER_TILING_DEFAULT\((\w+)\)", kernel_text)
    return found.group(1) if found else None


def struct_header(struct: str, headers: list[Path]) -> Path:
    """The header among `headers` that defines `struct`."""
    for h in headers:
        if re.search(rf"\bstruct\s+{struct}\s*\{{", h.read_text()):
            return h
    raise SystemExit(f"op_project: no tiling/*_tiling_data.h defines {struct}")


def tiling_headers(sources: list[Path]) -> list[Path]:
    """The tiling/ headers `sources` reach through quoted includes (tiling data, cube tiling, ...)."""
    found: set[Path] = set()
    todo = list(sources)
    while todo:
        for name in re.findall(r'#include\s+"([^"/]+)"', todo.pop().read_text()):
            header = ROOT / "tiling" / name
            if header.is_file() and header not in found:
                found.add(header)
                todo.append(header)
    return sorted(found)


def overlay(project: Path, cann: str | None = None, proto_dir: Path = ROOT / "op_proto") -> None:
    """Our sources onto msopgen's project (see the module docstring, step 3-4)."""
    host, kernel = project / "op_host", project / "op_kernel"
    subprocess.run(
        [sys.executable, str(ROOT / "csrc/op_host/gen_op_def.py"), "--proto-dir", str(proto_dir), "--out", str(host)],
        check=True,
    )
    for src in [*ROOT.glob("csrc/op_host/**/*.cpp"), *ROOT.glob("csrc/op_host/**/*.h"), *ROOT.glob("tiling/*.cpp")]:
        shutil.copy(src, host)
    for src in ROOT.glob("tiling/*.h"):
        shutil.copy(src, host)
    (kernel / "kernels").mkdir(exist_ok=True)
    for src in [*ROOT.glob("csrc/kernels/op_package/*/*.cpp"), *ROOT.glob("csrc/kernels/op_package/*/*.h")]:
        shutil.copy(src, kernel)
    kernel_deps = [*ROOT.glob("csrc/kernels/*.cpp"), *ROOT.glob("csrc/kernels/*.h")]
    kernel_deps += tiling_headers(kernel_deps)
    for src in kernel_deps:
        shutil.copy(src, kernel / "kernels")
    data_headers = sorted((kernel / "kernels").glob("*_tiling_data.h"))
    for proto in protos(proto_dir):
        op = snake(proto["op"])
        struct = tiling_struct((kernel / f"{op}.cpp").read_text())
        header = struct_header(struct, data_headers) if struct else None
        (kernel / f"{op}_tiling.h").write_text(
            f"// {op}'s tiling struct, written by tools/op_project.py over msopgen's placeholder: the entry\n"
            f"// op_kernel/{op}.cpp registers {struct} (REGISTER_TILING_DEFAULT), op_host/{op}.cpp fills it\n"
            f"// (GetTilingData<{struct}>).\n#pragma once\n" + (f'#include "kernels/{header.name}"\n' if header else "")
        )
    # CANN's npu_op_code_gen compiles op_host/ at configure time with a fixed -std=c++11 (asc-devkit
    # fwk_modules/util/compile_ascendc_all_ops_so.py; its COMPILE_OPTIONS come after it, so they win)
    # and the op libraries ask only for cxx_std_11; our op_host and tiling code is C++17.
    cmake = host / "CMakeLists.txt"
    text = cmake.read_text()
    if "npu_op_code_gen(" not in text:
        raise SystemExit(f"op_project: {cmake} has no npu_op_code_gen() (msopgen's template changed)")
    if CXX17_MARK not in text:
        text = text.replace("npu_op_code_gen(", f"npu_op_code_gen(\n    COMPILE_OPTIONS {CXX17_FLAG}", 1)
        cmake.write_text(f"{CXX17_MARK}\nset(CMAKE_CXX_STANDARD 17)\nset(CMAKE_CXX_STANDARD_REQUIRED ON)\n" + text)
    presets_path = project / "CMakePresets.json"
    presets = json.loads(presets_path.read_text())
    for preset in presets["configurePresets"]:
        cache = preset["cacheVariables"]
        cache["vendor_name"] = {"type": "STRING", "value": "ascendc_ops"}
        if cann:
            cache["ASCEND_CANN_PACKAGE_PATH"] = {"type": "PATH", "value": cann}
    presets_path.write_text(json.dumps(presets, indent=2) + "\n")


# --- check -------------------------------------------------------------------------------------


def entry(text: str) -> tuple[str, list[str]] | None:
    """(name, [(type, name), ...]) of the kernel entry in a source."""
    found = ENTRY.search(text)
    if not found:
        return None
    params = [" ".join(p.split()) for p in found.group(2).split(",") if p.strip()]
    return found.group(1), params


def op_def(text: str) -> dict:
    """The OpDef of a C++ source, read back (works on msopgen's and on gen_op_def.py's layout)."""
    cls = re.search(r"class\s+(\w+)\s*:\s*public\s+OpDef", text)
    params = [
        (kind, name, ptype, [d.strip() for d in dtypes.split(",")])
        for kind, name, ptype, dtypes in re.findall(
            r'this->(Input|Output)\("(\w+)"\)\s*\.ParamType\((\w+)\)\s*\.DataType\(\{([^}]*)\}\)', text
        )
    ]
    # an Attr without AttrType is required (metadef pkg_inc/base/asc/opdef/op_def_impl.h: `required = true`);
    # msopgen writes required attrs that way
    attrs = [
        (n, t or "REQUIRED", s)
        for n, t, s in re.findall(r'this->Attr\("(\w+)"\)\s*(?:\.AttrType\((\w+)\)\s*)?\.(\w+)\(', text)
    ]
    return {
        "class": cls.group(1) if cls else None,
        "params": params,
        "attrs": attrs,
        "registered": re.findall(r"OP_ADD\((\w+)\)", text),
        "soc": re.findall(r'AddConfig\("(\w+)"\)', text),
        "tiling": bool(re.search(r"\.SetTiling\(", text)),
        "infer": bool(re.search(r"SetInferShape\(", text)) and bool(re.search(r"SetInferDataType\(", text)),
    }


def with_includes(path: Path, seen: set[Path] | None = None) -> str:
    """A source with every quoted include it reaches in its own directory tree, as one text."""
    seen = set() if seen is None else seen
    if path in seen or not path.is_file():
        return ""
    seen.add(path)
    text = path.read_text()
    parts = [text]
    for inc in re.findall(r'#include\s+"([^"]+)"', text):
        for base in (path.parent, path.parent / "kernels"):
            if (base / inc).is_file():
                parts.append(with_includes((base / inc).resolve(), seen))
                break
    return "\n".join(parts)


def check(project: Path, generated: Path, proto_dir: Path = ROOT / "op_proto") -> list[str]:
    """Problems of the overlaid project against msopgen's (empty: fits)."""
    problems = []
    for proto in protos(proto_dir):
        op_type, op = proto["op"], snake(proto["op"])
        files = {k: f"{d}/{op}{s}" for k, d, s in [("host", "op_host", ".cpp"), ("kernel", "op_kernel", ".cpp")]}
        files["tiling"] = f"op_kernel/{op}_tiling.h"
        missing = [f for f in files.values() if not (generated / f).is_file() or not (project / f).is_file()]
        if missing:
            problems.append(f"{op_type}: msopgen did not generate {missing}")
            continue
        gen = {k: (generated / f).read_text() for k, f in files.items()}
        ours = {k: (project / f).read_text() for k, f in files.items()}
        for k, f in files.items():
            if gen[k] == ours[k]:
                problems.append(f"{op_type}: {f} is msopgen's, not replaced")
        # kernel entry: name and parameter list as generated
        if entry(gen["kernel"]) != entry(ours["kernel"]):
            problems.append(f"{op_type}: kernel entry {entry(ours['kernel'])} != generated {entry(gen['kernel'])}")
        # tiling: the entry registers a struct, reads it with the same struct, the tiling header
        # defines it, the op_host writes it (msopgen: REGISTER_TILING_DEFAULT(T) + GetTilingData<T>)
        struct = tiling_struct(ours["kernel"])
        if tiling_struct(gen["kernel"]) is None or f"GetTilingData<{tiling_struct(gen['kernel'])}>" not in gen["host"]:
            problems.append(f"{op_type}: msopgen's layout changed (no REGISTER_TILING_DEFAULT / GetTilingData<T>)")
        if struct is None:
            problems.append(f"{op_type}: op_kernel/{op}.cpp registers no tiling struct")
        else:
            if not re.search(rf"GET_TILING_DATA_WITH_STRUCT\({struct}\s*,", ours["kernel"]):
                problems.append(f"{op_type}: the entry reads its tiling with another struct than {struct}")
            if not re.search(rf"\bstruct\s+{struct}\s*\{{", with_includes(project / files["tiling"])):
                problems.append(f"{op_type}: {files['tiling']} does not define {struct}")
            host_text = with_includes(project / files["host"])
            if not re.search(rf"\b{struct}\b", host_text) or "GetTilingData<" not in host_text:
                problems.append(f"{op_type}: op_host/{op}.cpp does not reach {struct} and GetTilingData<T>")
        # OpDef: class, registration, params, attrs, SoC, the three functions
        g, o = op_def(gen["host"]), op_def(with_includes(project / files["host"]))
        if g["class"] != op_type or g["registered"] != [op_type]:
            problems.append(f"{op_type}: msopgen's OpDef is {g['class']} / OP_ADD{g['registered']}")
        for key in ("class", "registered", "params", "attrs", "soc"):
            if o[key] != g[key]:
                problems.append(f"{op_type}: OpDef {key}: ours {o[key]} != generated {g[key]}")
        if not (o["tiling"] and o["infer"]):
            problems.append(f"{op_type}: OpDef without SetTiling / SetInferShape / SetInferDataType")
    cmake = (project / "op_host/CMakeLists.txt").read_text()
    if CXX17_MARK not in cmake or f"COMPILE_OPTIONS {CXX17_FLAG}" not in cmake:
        problems.append("op_host/CMakeLists.txt does not build op_host as C++17")
    for path in sorted([*project.glob("op_host/**/*"), *project.glob("op_kernel/**/*")]):
        if path.suffix in (".cpp", ".h", ".cc") and re.search(r"\bTODO\b", path.read_text()):
            problems.append(f"stub left: {path.relative_to(project)} has a TODO")
    generated_ops = {snake(p.stem) for p in generated.glob("op_kernel/*.cpp")}
    if generated_ops != {snake(p["op"]) for p in protos(proto_dir)}:
        problems.append(f"generated ops {sorted(generated_ops)} != op_proto")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build/op_project")
    parser.add_argument("--proto-dir", type=Path, default=ROOT / "op_proto")
    parser.add_argument("--msopgen", help="command that runs msopgen (default: ASCENDC_MSOPGEN, else PATH)")
    parser.add_argument("--cann", help="ASCEND_CANN_PACKAGE_PATH for CMakePresets.json")
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    generated = generate(out, msopgen_command(args.msopgen, out.parent), args.proto_dir)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(generated, out)
    overlay(out, args.cann, args.proto_dir)
    problems = [] if args.no_check else check(out, generated, args.proto_dir)
    for p in problems:
        print(f"op_project: {p}", file=sys.stderr)
    n = len(protos(args.proto_dir))
    print(f"op_project: {out} ({n} ops; msopgen's own project in {generated}); {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
