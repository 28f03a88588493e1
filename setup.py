"""Build libhurray (one shared library) and the extensions linked to it.

`pip install .` compiles native/src/*.c into hurray/_native/lib/libhurray.so,
copies hurray.h, hurray_io.h and hurray_gguf.h to hurray/_native/include/, then builds the cffi module
hurray._ffi and the C extensions (hurray._protocol, _core, _pickle, _dlpack; sources in
src/hurray/_ext/) against that same library, found at run time through an $ORIGIN-relative rpath.
"""
import glob
import os
import shutil

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
NATIVE_INCLUDE = os.path.join(ROOT, "native", "include")
NATIVE_SOURCES = sorted(glob.glob(os.path.join(ROOT, "native", "src", "*.c")))
# -ffp-contract=off: no product and sum may fuse into one rounding (an FMA),
# or the dequantizer's float32 bits would differ from the formats'
# references (ADR-055); and never -ffast-math.
C_FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-fPIC", "-pthread", "-ffp-contract=off"]
EXT = "src/hurray/_ext/"
RUNTIME = EXT + "_pyruntime.c"
EXT_FLAGS = ["-std=c11", "-Wall", "-Wextra"]


class BuildWithLibhurray(build_ext):
    def build_extensions(self):
        package_dir = os.path.dirname(self.get_ext_fullpath("hurray._ffi"))
        lib_dir = os.path.join(package_dir, "_native", "lib")
        include_dir = os.path.join(package_dir, "_native", "include")
        self._build_library(lib_dir)
        os.makedirs(include_dir, exist_ok=True)
        for header in ("hurray.h", "hurray_io.h", "hurray_gguf.h"):
            shutil.copy2(os.path.join(NATIVE_INCLUDE, header), include_dir)
        for ext in self.extensions:
            ext.include_dirs.append(NATIVE_INCLUDE)
            ext.library_dirs.append(lib_dir)
            ext.libraries.append("hurray")
            ext.extra_link_args.append("-Wl,-rpath,$ORIGIN/_native/lib")
        super().build_extensions()

    def _build_library(self, lib_dir):
        objects = self.compiler.compile(
            [os.path.relpath(s, ROOT) for s in NATIVE_SOURCES],
            output_dir=os.path.join(self.build_temp, "libhurray"),
            include_dirs=[NATIVE_INCLUDE],
            extra_postargs=C_FLAGS,
        )
        os.makedirs(lib_dir, exist_ok=True)
        self.compiler.link_shared_object(
            objects,
            os.path.join(lib_dir, "libhurray.so"),
            extra_postargs=[
                "-pthread",
                "-Wl,-soname,libhurray.so",
                "-Wl,-z,defs",
                # Export the C ABI only; hurray__* internals stay private.
                "-Wl,--version-script=" + os.path.join(ROOT, "native", "libhurray.map"),
            ],
        )


setup(
    cffi_modules=["native/cffi_build.py:ffibuilder"],
    ext_modules=[
        # Their C sources live in src/hurray/_ext/ (not a package); each is
        # linked with the one CPython runtime, _pyruntime.c.
        Extension(
            "hurray._protocol",
            sources=[EXT + "_protocol.c", RUNTIME],
            depends=[EXT + "_pyruntime.h", EXT + "_protocol_api.h"],
            extra_compile_args=EXT_FLAGS,
        ),
        Extension(
            "hurray._core",
            sources=[EXT + "_core.c", EXT + "_core_checkpoint.c", EXT + "_core_dequant.c", EXT + "_core_nodes.c",
                     EXT + "_core_safetensors.c", RUNTIME],
            depends=[EXT + "_protocol_api.h", EXT + "_pyruntime.h", EXT + "_core_checkpoint.h",
                     EXT + "_core_dequant.h", EXT + "_core_nodes.h", EXT + "_core_safetensors.h"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=EXT_FLAGS,
        ),
        Extension(
            "hurray._pickle",
            sources=[EXT + "_pickle.c", RUNTIME],
            depends=[EXT + "_pyruntime.h"],
            extra_compile_args=EXT_FLAGS,
        ),
        Extension(
            "hurray._dlpack",
            sources=[EXT + "_dlpack.c", RUNTIME],
            depends=[EXT + "_pyruntime.h", EXT + "third_party/dlpack/dlpack.h"],
            extra_compile_args=EXT_FLAGS,
        ),
    ],
    cmdclass={"build_ext": BuildWithLibhurray},
)
