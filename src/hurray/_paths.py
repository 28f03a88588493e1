"""Where the installed native library and header live inside the package."""
import os

_NATIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native")


def get_include() -> str:
    """The directory holding hurray.h, hurray_io.h and hurray_gguf.h, for compiling C code against hurray-ffi."""
    return os.path.join(_NATIVE, "include")


def get_library() -> str:
    """The path of the shared library libhurray that this package uses."""
    return os.path.join(_NATIVE, "lib", "libhurray.so")


def compile_flags() -> list[str]:
    """Flags enough to compile a C file that includes hurray.h."""
    return ["-I" + get_include()]


def link_flags() -> list[str]:
    """Flags enough to link against libhurray and find it at run time."""
    lib_dir = os.path.dirname(get_library())
    return ["-L" + lib_dir, "-lhurray", "-Wl,-rpath," + lib_dir]
