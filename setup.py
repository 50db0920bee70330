"""Builds ascendc_ops: CMake compiles the CPU twin, the kernels and the torch bindings into
python/ascendc_ops/_C.so (plus the NPU backend where CANN and torch_npu exist)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"
LIBRARY = ROOT / "python" / "ascendc_ops" / "_C.so"
TORCH_RECORD = "_C.torch_version"  # read by python/ascendc_ops/_library.py
# torch >= 2.4: python/ascendc_ops registers its fake kernels and autograd with torch.library.register_fake and
# torch.library.register_autograd (and tests with torch.library.opcheck); these first shipped in torch 2.4.0
# (pytorch PRs #123937 and #124071, April 2024; LLaMA-Factory asks torch>=2.4.0 too). No upper bound: the
# library is compiled against the installed torch and refuses any other at import, so a cap would only make
# pip replace the torch that torch_npu was built for. Development pins live in requirements.txt only.
TORCH = "torch>=2.4"
# transformers 5's modeling code is what patching/ patches (on 4.x every kernel skips, saying so). The range
# covers LLaMA-Factory's transformers>=4.55.0,<=5.8.0 (its pyproject.toml); CI runs 5.8.0 and 5.23.0.
TRANSFORMERS = "transformers>=4.55"


class CMakeBuild(build_ext):
    def get_ext_filename(self, ext_name):
        return os.path.join(*ext_name.split(".")) + ".so"  # torch.ops.load_library wants a plain name

    def run(self):
        BUILD.mkdir(exist_ok=True)
        # ASCENDC_OPS_NATIVE=1: one library for this machine only (-march=native) instead of the ISA paths
        native = os.environ.get("ASCENDC_OPS_NATIVE") == "1"
        # configured every time: a build without the variable must not inherit a cached NATIVE=ON
        subprocess.check_call(
            [
                "cmake",
                "-S",
                str(ROOT),
                "-B",
                str(BUILD),
                f"-DPython3_EXECUTABLE={sys.executable}",
                "-DCMAKE_BUILD_TYPE=Release",
                f"-DASCENDC_OPS_NATIVE={'ON' if native else 'OFF'}",
            ]
        )
        if not native:  # _isa.py loads a _C_native.so whenever present: drop one a native build left
            (LIBRARY.parent / "_C_native.so").unlink(missing_ok=True)
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(BUILD), "-j", jobs])
        for ext in self.extensions:
            target = Path(self.get_ext_fullpath(ext.name))
            if target.resolve() != LIBRARY:
                target.parent.mkdir(parents=True, exist_ok=True)
                for library in LIBRARY.parent.glob("_C*.so"):  # every ISA path's library (_isa.py picks one)
                    shutil.copy2(library, target.parent / library.name)


class CMakeBuildRecordingTorch(CMakeBuild):
    """Also records which torch the library was compiled against (TORCH_RECORD, next to each _C.so copy):
    a C++ extension only loads into that torch, and _library.py checks the record before loading."""

    def run(self):
        try:
            import torch
        except ImportError:
            sys.exit(
                "ascendc-ops builds against the torch already installed: install torch first, then "
                "`pip install --no-build-isolation .` (an isolated build has no torch, see pyproject.toml)"
            )
        super().run()
        for directory in {LIBRARY.parent, *(Path(self.get_ext_fullpath(e.name)).parent for e in self.extensions)}:
            (directory / TORCH_RECORD).write_text(torch.__version__ + "\n")


class BuildPyWithProtos(build_py):
    """Ships op_proto/<family>/*.json inside the package, where op_proto.default_dir() looks first."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "ascendc_ops" / "op_proto"
        for proto in (ROOT / "op_proto").glob("*/*.json"):
            (target / proto.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(proto, target / proto.parent.name / proto.name)


setup(
    name="ascendc-ops",
    version="0.1.0",
    description="Fused LLM ops (RoPE, RMSNorm, SwiGLU, MoE) as Ascend C kernels, with a CPU twin",
    package_dir={"": "python"},
    packages=find_packages("python"),  # ascendc_ops and its subpackages (ops, harness, patching, ...)
    # The harness's facts: the pipeline model's platform tables and the imported cann-bench cases.
    package_data={"ascendc_ops.harness": ["platforms/*.json", "platforms/calibration/*.json", "data/*.json"]},
    ext_modules=[Extension("ascendc_ops._C", sources=[])],
    cmdclass={"build_ext": CMakeBuildRecordingTorch, "build_py": BuildPyWithProtos},
    install_requires=[TORCH, "numpy"],
    extras_require={"hf": [TRANSFORMERS], "plot": ["matplotlib"]},  # '.[hf]': HF model patching; '.[plot]': charts
    entry_points={"console_scripts": ["ascendc-ops=ascendc_ops.__main__:main"]},
    python_requires=">=3.10",
)
