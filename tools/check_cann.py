#!/usr/bin/env python3
"""Compile every kernel and op_host source against CANN's public headers, syntax only, no NPU needed.

    tools/check_cann.py --asc-devkit DIR --metadef DIR [--asc-tools DIR] [--securec DIR] [FILE ...]

Kernels (csrc/kernels/*.cpp: direct-launch entries; csrc/kernels/examples/*.cpp: the hand-written
cube and mix templates; csrc/kernels/op_package/<family>/*.cpp: op-package entries) are compiled with
g++ -fsyntax-only in asc-devkit's CPU-debug configuration for the Ascend910B core type(s) their
KERNEL_TASK_TYPE_DEFAULT names (__NPU_ARCH__=2201; AIV_ONLY: the vector core, __DAV_C220_VEC__;
AIC_ONLY: the cube core, __DAV_C220_CUBE__; MIX or undeclared: both),
seeing asc-devkit's headers in CANN's installed layout (tikcfw/lib/matmul_intf.h, ...).
tiling/cube_tiling.h (the host's TCubeTiling) is held field for field to the kernel_tiling.h
CANN generates. op_host files are compiled against
metadef (register/op_def.h, exe_graph/runtime/tiling_context.h, ...) and asc-devkit's
tiling/platform/platform_ascendc.h, with their OpDef headers generated from op_proto/*/*.json.
With --torch-npu (a torch_npu package directory, e.g. unpacked from its wheel), the PrivateUse1
launchers in csrc/torch/npu/ are compiled too, against torch's, torch_npu's (and its ACL) headers,
with the aclrtlaunch_<kernel>.h headers CANN's ascendc_library() would generate, written here from
the kernels' entry points. Without FILEs every such file is checked, then negative controls
(mutated copies that must fail).
Exit status 1 if any file fails or any negative control compiles.

Header locations come from the arguments or ASCENDC_ASC_DEVKIT, ASCENDC_METADEF,
ASCENDC_ASC_TOOLS (CPU-debug stub_def.h, kernel_fp16.h: default <asc-devkit>/../asc-tools) and
ASCENDC_SECUREC (libboundscheck's securec.h, which metadef includes: default
<asc-devkit>/../libboundscheck) and ASCENDC_TORCH_NPU (optional). Files CANN does not publish are stubbed in
tools/cann_stubs/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUBS = ROOT / "tools" / "cann_stubs"
FAMILIES = {p.name for p in (ROOT / "op_proto").iterdir() if p.is_dir()}
KERNEL_DEFINES = ["-DASCENDC_CPU_DEBUG=1", "-D__NPU_ARCH__=2201", "-D__DAV_C220__"]
# Per core type, as asc-tools' own tests configure ascend910B1_AIV / ascend910B1_AIC.
CORE_DEFINES = {"AIV": ["-D__DAV_C220_VEC__", "-D__DAV_VEC__"], "AIC": ["-D__DAV_C220_CUBE__", "-D__DAV_CUBE__"]}
# What CANN's ascendc_library() generates per direct-launch kernel (asc-devkit
# cmake/asc/legacy_modules/util/extract_host_stub.py, generate_header_code): GM_ADDR -> void*.
ACLRTLAUNCH = """// STUB -- generated at CANN build time by ascendc_library(); written by tools/check_cann.py.
#pragma once
#include "acl/acl_base.h"
#ifndef ACLRT_LAUNCH_KERNEL
#define ACLRT_LAUNCH_KERNEL(kernel_func) aclrtlaunch_##kernel_func
#endif
extern "C" uint32_t aclrtlaunch_{name}(uint32_t blockDim, aclrtStream stream, {params});
"""
DTYPE_NAMES = {
    "float16": "half",
    "float": "float",
    "float32": "float",
    "bfloat16": "bfloat16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "int8": "int8_t",
    "uint8": "uint8_t",
    "bool": "bool",
}


def default_files(with_npu: bool) -> list[Path]:
    return (
        sorted((ROOT / "csrc" / "kernels").glob("*.cpp"))
        + sorted((ROOT / "csrc" / "kernels" / "examples").glob("*.cpp"))
        + sorted((ROOT / "csrc" / "kernels" / "op_package").glob("*/*.cpp"))
        + sorted((ROOT / "csrc" / "op_host").glob("*/*.cpp"))
        + (sorted((ROOT / "csrc" / "torch" / "npu").glob("*.cpp")) if with_npu else [])
    )


def core_types(path: Path) -> list[str]:
    """The core configurations CANN compiles a kernel file for, from its KERNEL_TASK_TYPE_DEFAULTs."""
    kinds = set(re.findall(r"KERNEL_TYPE_(AIV_ONLY|AIC_ONLY|MIX_\w+)", path.read_text()))
    # A MIX type with no core of one kind (MIX_AIV_1_0: vector cores with the cross-core scheduler) is
    # compiled for the kind it has only; the others for both.
    one_kind = {"AIV_ONLY": "AIV", "AIC_ONLY": "AIC", "MIX_AIV_1_0": "AIV", "MIX_AIC_1_0": "AIC"}
    if not kinds or any(k not in one_kind for k in kinds):
        return ["AIC", "AIV"]
    return sorted({one_kind[k] for k in kinds})


def install_layout(adk: Path, root: Path) -> Path:
    """asc-devkit's headers as CANN installs them (impl/adv_api/cmake/kernel_directory.cmake and
    kernel_headers.cmake): tikcfw/lib -> asc/include/adv_api plus its CREATE_LINK aliases
    (matmul_intf.h -> matmul/matmul_intf.h, ...). Returns the tikcfw directory to put on -I."""
    adv, links = root / "asc/include/adv_api", {}
    rules = (adk / "impl/adv_api/cmake/kernel_headers.cmake").read_text()
    for target, link in re.findall(
        r"CREATE_LINK\s+(\S+)\s+\$\{ASCENDC_INSTALL_BASE_PATH\}/asc/include/adv_api/(\S+)", rules
    ):
        links[link] = target
    real = {str(Path(link).parent) for link in links} | {"."}
    for d in sorted(real):  # directories that get aliases are real; the rest link to the source tree
        (adv / d).mkdir(parents=True, exist_ok=True)
        if (adk / "include/adv_api" / d).is_dir():
            for child in (adk / "include/adv_api" / d).iterdir():
                if not (adv / d / child.name).exists() and str(Path(d) / child.name) not in real:
                    (adv / d / child.name).symlink_to(child)
    for link, target in links.items():
        (adv / link).symlink_to(target)  # relative, as installed
    (root / "asc/impl").symlink_to(adk / "impl")  # the headers' "../../impl/..." includes
    (root / "tikcfw").mkdir()
    (root / "tikcfw/lib").symlink_to("../asc/include/adv_api")
    return root / "tikcfw"


def struct_fields(text: str, name: str) -> tuple[list[str], set[str]]:
    """Field names in order and the set of field types of `struct name` (fields all `= 0`-initialised)."""
    body = re.search(r"struct\s+" + name + r"\s*\{(.*?)\};", text, re.S)
    body = re.sub(r"//[^\n]*", "", body.group(1)) if body else ""
    return re.findall(r"(\w+)\s*=\s*0\b", body), set(re.findall(r"\b(u?int\d+_t|float|double|bool)\b", body))


def layer(path: Path) -> str:
    """Which kind of source a file is: its folder's name, or its family folder's parent's
    (csrc/op_host/<family>/<op>.cpp is an op_host file, as op_host/<op>.cpp of an msopgen project is)."""
    if path.parent.name in FAMILIES and path.parent.parent.name in ("op_host", "op_package"):
        return path.parent.parent.name
    return path.parent.name


def op_package_dtypes(op: str) -> list[str]:
    """-DDTYPE_<NAME>=<type> for the first dtype combination of op_proto/<family>/<op>.json, as the op build
    defines them."""
    (path,) = ROOT.glob(f"op_proto/*/{op}.json")
    (proto,) = json.loads(path.read_text())
    return [
        f"-DDTYPE_{d['name'].upper()}={DTYPE_NAMES[d['type'][0]]}" for d in proto["input_desc"] + proto["output_desc"]
    ]


class Checker:
    def __init__(self, args, work: Path):
        adk, meta = args.asc_devkit, args.metadef
        self.work, self.asc_devkit, self.project = work, adk, getattr(args, "project", None)
        gen = work / "gen"
        # kernel_tiling/kernel_tiling.h is generated at CANN build time by a public asc-devkit script
        (gen / "kernel_tiling").mkdir(parents=True)
        subprocess.run(
            [
                sys.executable,
                str(adk / "impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py"),
                str(adk / "include/adv_api"),
                str(gen / "kernel_tiling/kernel_tiling.h"),
            ],
            check=True,
            capture_output=True,
        )
        self.op_defs = work / "op_def"
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "csrc/op_host/gen_op_def.py"),
                "--proto-dir",
                str(ROOT / "op_proto"),
                "--out",
                str(self.op_defs),
            ],
            check=True,
        )
        tikcfw = install_layout(adk, work / "install")
        self.kernel_flags = (
            [
                "-std=c++17",
                "-fsyntax-only",
                *KERNEL_DEFINES,
                f"-I{STUBS}",
                f"-I{gen}",
                f"-I{tikcfw}",
                f"-I{args.asc_tools / 'cpudebug/include'}",
            ]
            + [
                f"-I{adk / p}"
                for p in (
                    "include",
                    "include/adv_api",
                    "include/basic_api",
                    "include/utils",
                    "impl",
                    "impl/basic_api",
                    ".",
                )
            ]
            + (
                []  # an msopgen project: only its own quoted includes, relative to each file
                if self.project
                else [
                    f"-I{ROOT / 'tiling'}",
                    f"-I{ROOT / 'csrc' / 'kernels'}",
                    f"-I{ROOT / 'csrc'}",
                    # a mutated copy elsewhere must find our kernel_utils.h, not asc-devkit's impl/basic_api one
                    f"-iquote{ROOT / 'csrc' / 'kernels'}",
                ]
            )
        )
        # NO_OPERATOR_IMPL: op_def.h then forward-declares ge::Operator instead of including the
        # graph engine's operator_reg.h (metadef builds its own OpDef library this way).
        self.host_flags = [
            "-std=c++17",
            "-fsyntax-only",
            "-DNO_OPERATOR_IMPL",
            # as CANN's npu_op_code_gen compiles an op project's op_host (compile_ascendc_all_ops_so.py)
            *(["-D_GLIBCXX_USE_CXX11_ABI=0"] if self.project else []),
            *([] if self.project else [f"-I{ROOT / 'csrc/op_host'}", f"-I{ROOT / 'tiling'}"]),
            f"-I{meta / 'inc/external'}",
            f"-I{meta / 'inc/external/asc'}",
            f"-I{meta / 'inc'}",
            f"-I{adk / 'include/utils'}",
            f"-I{args.securec / 'include'}",
            f"-I{STUBS}",
        ]

    def setup_npu(self, torch_npu: Path) -> None:
        """Flags for csrc/torch/npu: torch + torch_npu headers, op_proto_gen.h, aclrtlaunch_*.h."""
        import torch.utils.cpp_extension

        gen = self.work / "npu_gen"
        gen.mkdir()
        (script,) = ROOT.glob("python/ascendc_ops/**/op_proto.py")
        subprocess.run(
            [sys.executable, str(script), "--dir", str(ROOT / "op_proto"), "--header", str(gen / "op_proto_gen.h")],
            check=True,
        )
        for kernel in sorted((ROOT / "csrc" / "kernels").glob("*.cpp")):
            preprocess = ["g++", "-E", "-P", *[a for a in self.command(kernel)[1:] if a != "-fsyntax-only"]]
            expanded = subprocess.run(preprocess, capture_output=True, text=True, check=True).stdout
            for name, params in re.findall(r'extern "C"\s+void\s+(\w+)\(([^)]*)\)', expanded):
                names = [p.split("*")[-1].strip() for p in params.split(",")]
                if not all(re.fullmatch(r"\s*uint8_t\s*\*\s*\w+\s*", p) for p in params.split(",")):
                    continue  # not a kernel entry (every GM_ADDR parameter expands to uint8_t*)
                (gen / f"aclrtlaunch_{name}.h").write_text(
                    ACLRTLAUNCH.format(name=name, params=", ".join(f"void* {n}" for n in names))
                )
        self.npu_flags = [
            "-std=c++17",
            "-fsyntax-only",
            "-DASCENDC_OPS_WITH_NPU",
            *[f"-I{p}" for p in torch.utils.cpp_extension.include_paths()],
            f"-I{torch_npu / 'include'}",
            f"-I{ROOT / 'csrc/torch'}",
            f"-I{ROOT / 'csrc/torch/npu'}",
            f"-I{ROOT / 'tiling'}",
            f"-I{gen}",
            f"-I{self.asc_devkit / 'include/utils'}",
            f"-I{STUBS}",
        ]

    def command(self, path: Path, op_defs: Path | None = None, core: str | None = None) -> list[str]:
        if layer(path) == "npu":
            return ["g++", *self.npu_flags, str(path)]
        if layer(path) == "op_host":  # an msopgen project's op_host holds its own OpDef headers
            defs = [] if self.project and op_defs is None else [f"-I{op_defs or self.op_defs}"]
            return ["g++", *self.host_flags, *defs, str(path)]
        flags = [*self.kernel_flags, *CORE_DEFINES[core or core_types(path)[0]]]
        if layer(path) in ("op_package", "op_kernel"):
            return [
                "g++",
                *flags,
                "-include",
                "kernel_operator.h",
                "-include",
                str(STUBS / "op_kernel_tiling.h"),
                *op_package_dtypes(path.stem),
                str(path),
            ]
        return ["g++", *flags, str(path)]

    def jobs(self, path: Path) -> list[tuple[str, list[str]]]:
        """(name, command) per compile: a kernel once per core type it runs on."""
        base = self.project.parent if self.project and path.is_relative_to(self.project) else ROOT
        name = str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
        if layer(path) in ("npu", "op_host"):
            return [(name, self.command(path))]
        return [(f"{name} [{core}]", self.command(path, core=core)) for core in core_types(path)]

    def cube_tiling_matches(self, path: Path = ROOT / "tiling/cube_tiling.h") -> tuple[bool, str]:
        """tiling/cube_tiling.h (host) against the TCubeTiling CANN generates (kernel): same fields, order, types."""
        ours = struct_fields(path.read_text(), "TCubeTiling")
        cann = struct_fields((self.work / "gen/kernel_tiling/kernel_tiling.h").read_text(), "TCubeTiling")
        if ours == cann and ours[0]:
            return True, ""
        return False, f"error: TCubeTiling differs: ours {ours}, CANN's {cann}"

    @staticmethod
    def run(command) -> tuple[bool, str]:
        if callable(command):  # a check that is not a compile
            return command()
        result = subprocess.run(command, capture_output=True, text=True)
        errors = [line for line in result.stderr.splitlines() if "error" in line]
        return result.returncode == 0, "\n".join(errors[:8])

    def negative_controls(self) -> list[tuple[str, list[str], str]]:
        """Mutated copies of real sources, each with one error CANN's headers must reject, and a word
        the error must name (so a control cannot pass by failing for another reason)."""
        controls = []

        def mutate(name: str, source: Path, old: str, new: str, where: str) -> Path:
            text = source.read_text()
            if old not in text:
                raise SystemExit(f"check_cann: negative control '{name}' cannot find {old!r} in {source}")
            target = self.work / "neg" / name / where / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.replace(old, new, 1))
            return target

        kernels = ROOT / "csrc" / "kernels"
        bad = mutate(
            "kernel_unknown_api", kernels / "swiglu.cpp", "SwiGLU<float, false>(", "SwiGLUx<float, false>(", "kernels"
        )
        controls.append(("kernel calling a non-existent Ascend C API (SwiGLUx)", self.command(bad), "SwiGLUx"))
        bad = mutate(
            "kernel_wrong_args",
            kernels / "rope.cpp",
            "Gather(dst, src, offsetBuf_.Get<uint32_t>(), 0, rows * t_.rowPitch);",
            "Gather(dst, src, offsetBuf_.Get<uint32_t>(), rows * t_.rowPitch);",
            "kernels",
        )
        controls.append(("kernel calling Gather with a missing argument", self.command(bad), "Gather"))
        bad = mutate(
            "op_package_tiling",
            kernels / "op_package" / "swiglu" / "swiglu.cpp",
            "ProcessSwiglu<DTYPE_X>(x, y, tilingData, &pipe);",
            "ProcessSwiglu<DTYPE_X>(x, y, tiling, &pipe);",
            "op_package",
        )
        controls.append(
            ("op-package entry passing the raw GM tiling pointer as the struct", self.command(bad), "SwigluTilingData")
        )
        bad = mutate(
            "cross_core_set_mode",
            kernels / "examples" / "mix_matmul_epilogue_example.cpp",
            "CrossCoreSetFlag<2, PIPE_FIX>(mix_example::kCReady)",
            "CrossCoreSetFlag(mix_example::kCReady)",
            "examples",
        )
        shutil.copy(kernels / "examples" / "cube_matmul_example.h", bad.parent)  # its cube stage
        # CrossCoreSetFlag's modeId and pipe have no defaults (kernel_operator_block_sync_intf.h)
        controls.append(("CrossCoreSetFlag without its mode and pipe", self.command(bad), "CrossCoreSetFlag"))
        defs = self.work / "neg" / "op_def"
        shutil.copytree(self.op_defs, defs)
        text = (defs / "rms_norm_def.h").read_text()
        (defs / "rms_norm_def.h").write_text(text.replace(".DataType(", ".DataTypes(", 1))
        controls.append(
            (
                "OpDef with a wrong call (DataTypes)",
                self.command(ROOT / "csrc" / "op_host" / "rms_norm" / "rms_norm.cpp", defs),
                "DataTypes",
            )
        )
        bad = mutate(
            "op_host_context",
            ROOT / "csrc" / "op_host" / "op_host_common.h",
            "context->SetBlockDim(",
            "context->SetNumBlock(",
            "op_host",
        )
        shutil.copy(ROOT / "csrc" / "op_host" / "swiglu" / "swiglu.cpp", bad.parent / "swiglu.cpp")
        shutil.copy(ROOT / "csrc" / "op_host" / "swiglu" / "swiglu_host.h", bad.parent / "swiglu_host.h")
        controls.append(
            (
                "op_host calling a TilingContext method that does not exist (SetNumBlock)",
                self.command(bad.parent / "swiglu.cpp"),
                "SetNumBlock",
            )
        )
        bad = mutate("cube_matmul_obj", kernels / "grouped_matmul.cpp", "mm_, &t_.mm);", "mm_, t_.mm);", "kernels")
        controls.append(
            (
                "cube kernel registering its Matmul object with the TCubeTiling itself, not its address",
                self.command(bad),
                "GetCurTiling(AscendC::tiling::TCubeTiling&)",
            )
        )
        bad = mutate(
            "op_host_cube",
            ROOT / "csrc" / "op_host" / "npu_platform.h",
            "soc.GetCoreNumAic()",
            "soc.GetCoreNumCube()",
            "op_host",
        )
        for name in ("grouped_matmul.cpp", "grouped_matmul_host.h"):  # reaching the mutated reader before the real
            shutil.copy(ROOT / "csrc" / "op_host" / "grouped_matmul" / name, bad.parent / name)
        shutil.copy(ROOT / "csrc" / "op_host" / "op_host_common.h", bad.parent / "op_host_common.h")
        controls.append(
            (
                "op_host reading a platform_ascendc method that does not exist (GetCoreNumCube)",
                self.command(bad.parent / "grouped_matmul.cpp"),
                "GetCoreNumCube",
            )
        )
        bad = mutate(
            "cube_tiling_order",
            ROOT / "tiling" / "cube_tiling.h",
            "int32_t baseM = 0, baseN = 0,",
            "int32_t baseN = 0, baseM = 0,",
            "tiling",
        )
        controls.append(
            ("host TCubeTiling with two fields swapped", lambda: self.cube_tiling_matches(bad), "TCubeTiling differs")
        )
        if hasattr(self, "npu_flags"):
            bad = mutate(
                "npu_moe_kernel",
                ROOT / "csrc" / "torch" / "npu" / "grouped_matmul_npu.cpp",
                "grouped_matmul_weight_grad, GROUPED_MATMUL_WEIGHT_GRAD_PARAMS)",
                "grouped_matmul_wgrad, GROUPED_MATMUL_WEIGHT_GRAD_PARAMS)",
                "npu",
            )
            controls.append(
                (
                    "PrivateUse1 launcher launching a kernel no kernel file defines (grouped_matmul_wgrad)",
                    self.command(bad),
                    "grouped_matmul_wgrad",
                )
            )
            bad = mutate(
                "npu_stream",
                ROOT / "csrc" / "torch" / "npu" / "npu_launch.h",
                "OpCommand::RunOpApi(",
                "OpCommand::RunOpApis(",
                "npu",
            )
            shutil.copy(ROOT / "csrc" / "torch" / "npu" / "swiglu_npu.cpp", bad.parent / "swiglu_npu.cpp")
            controls.append(
                (
                    "PrivateUse1 launcher calling an OpCommand method that does not exist (RunOpApis)",
                    self.command(bad.parent / "swiglu_npu.cpp"),
                    "RunOpApis",
                )
            )
        return controls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    env = os.environ.get
    parser.add_argument("--asc-devkit", type=Path, default=env("ASCENDC_ASC_DEVKIT"))
    parser.add_argument("--metadef", type=Path, default=env("ASCENDC_METADEF"))
    parser.add_argument("--asc-tools", type=Path, default=env("ASCENDC_ASC_TOOLS"))
    parser.add_argument("--securec", type=Path, default=env("ASCENDC_SECUREC"))
    parser.add_argument(
        "--torch-npu",
        type=Path,
        default=env("ASCENDC_TORCH_NPU"),
        help="torch_npu package directory (has include/): also check csrc/torch/npu",
    )
    parser.add_argument(
        "--project",
        type=Path,
        help="an overlaid msopgen project (tools/op_project.py): check its op_host/ and op_kernel/ sources "
        "in its own layout instead of the repository's",
    )
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-negative", action="store_true", help="skip the negative controls")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    if args.asc_devkit is None or args.metadef is None:
        parser.error("needs --asc-devkit and --metadef (or ASCENDC_ASC_DEVKIT / ASCENDC_METADEF)")
    args.asc_tools = args.asc_tools or args.asc_devkit.parent / "asc-tools"
    args.securec = args.securec or args.asc_devkit.parent / "libboundscheck"
    for name, path, probe in [
        ("asc-devkit", args.asc_devkit, "include/kernel_operator.h"),
        ("metadef", args.metadef, "inc/external/exe_graph/runtime/tiling_context.h"),
        ("asc-tools", args.asc_tools, "cpudebug/include/stub_def.h"),
        ("securec", args.securec, "include/securec.h"),
    ]:
        if not (path / probe).is_file():
            parser.error(f"{name}: {path / probe} not found")

    if args.torch_npu and not (args.torch_npu / "include/torch_npu/csrc/framework/OpCommand.h").is_file():
        parser.error(f"torch-npu: {args.torch_npu}/include/torch_npu/csrc/framework/OpCommand.h not found")
    if args.project:
        args.project = args.project.resolve()
        files = [f.resolve() for f in args.files] or sorted(args.project.glob("op_kernel/*.cpp")) + sorted(
            args.project.glob("op_host/*.cpp")
        )
    else:
        files = [f.resolve() for f in args.files] or default_files(bool(args.torch_npu))
    if any(layer(f) == "npu" for f in files) and not args.torch_npu:
        parser.error("csrc/torch/npu files need --torch-npu (or ASCENDC_TORCH_NPU)")
    with tempfile.TemporaryDirectory(prefix="check_cann_") as tmp:
        checker = Checker(args, Path(tmp))
        if args.torch_npu:
            checker.setup_npu(args.torch_npu)
        jobs = [job for f in files for job in checker.jobs(f)]
        if not args.files and not args.project:  # the host writes TCubeTiling with our struct, the kernel reads CANN's
            jobs.append(("tiling/cube_tiling.h (TCubeTiling = CANN's kernel_tiling.h)", checker.cube_tiling_matches))
        negatives = [] if args.files or args.no_negative or args.project else checker.negative_controls()
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda job: checker.run(job[1]), jobs + [n[:2] for n in negatives]))
    failed = 0
    for (name, _), (ok, errors) in zip(jobs, results, strict=False):
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
        if not ok:
            failed += 1
            print(re.sub(r"^", "      ", errors, flags=re.M))
    for (name, _, expect), (ok, errors) in zip(negatives, results[len(jobs) :], strict=True):
        rejected = not ok and expect in errors
        print(
            f"{'PASS' if rejected else 'FAIL'}  negative control: {name} "
            + ("is rejected" if rejected else "compiled, but must not" if ok else f"failed without naming {expect}")
        )
        if not rejected:
            failed += 1
            print(re.sub(r"^", "      ", errors, flags=re.M))
    print(f"check_cann: {len(files)} files, {len(jobs)} checks, {len(negatives)} negative controls, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
