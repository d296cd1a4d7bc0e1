"""Compiling a ``backend="c"`` module's C text and loading it with :mod:`ctypes`.

:func:`load_library` is what a generated module calls, once, when it is run: it hashes
the C text with the compiler (its path, size and date), the flags and the route below, and
looks in ``<cache>/c/<hash>/`` (the folder rules of :mod:`symgrad.backends.disk_cache`:
private, verified) for ``module.so`` whose SHA-256 is the one recorded in ``module.json``
when this code wrote it; a missing, changed or unrecorded library is never loaded: the C
text is compiled again. Otherwise the system C compiler (``$CC``, else ``cc``, ``gcc`` or
``clang`` on ``PATH``) builds it with IEEE arithmetic as NumPy's — ``-O2 -fno-fast-math
-ffp-contract=off`` (no fused multiply-add: the same roundings as NumPy's separate
operations) ``-fno-math-errno`` (no value changes; ``sqrt`` inlined) ``-fwrapv`` (integer
overflow wraps, as NumPy's) — as C99, position-independent, shared, linked with ``-lm``.

Two routes (:data:`ROUTES`), tried in turn: :data:`LEAN`, one compiler run that parses no
system header (the C text declares the few C library names it uses) and, on Linux, links
without the C runtime's start files and libraries (``-nostdlib``: the process has them;
``-lm`` still binds the math functions' versions); and :data:`DRIVER`, the compiler's
plain route with the system headers. Where the lean route fails (its compile, its link, or
loading its library: an unresolved name), the driver route builds the library, the
failure is recorded in the cache (that C text does not try it again) and this process
stops trying it with that compiler: never a broken library, at worst one more compile.

No compiler is a :class:`~symgrad.errors.BackendError` naming the fix; a compiler's error
is one with the compiler's message; a C text over :data:`MAX_SOURCE_BYTES` is a
:class:`~symgrad.errors.LimitError` before anything runs.

>>> lib = load_library("int half(long long n) { return (int)(n / 2); }", {"half": ("int64",)})
>>> lib.half(7)
3
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....base.errors import BackendError, LimitError
from ....base.progress import step
from ... import disk_cache
from . import parts
from .scalars import DECLARATIONS

__all__ = ["DRIVER", "FLAGS", "LEAN", "MAX_SOURCE_BYTES", "ROUTES", "Route", "compiler",
           "data_offset", "failure", "load_library"]

FLAGS = ("-std=c99", "-O2", "-fno-fast-math", "-ffp-contract=off", "-fno-math-errno",
         "-fwrapv", "-fPIC", "-pipe")
MAX_SOURCE_BYTES = 64 << 20  # a C text this long would take the compiler minutes
COMPILE_TIMEOUT_S = 1800.0

_ARG = {"p": ctypes.py_object, "float64": ctypes.c_double, "float32": ctypes.c_float,
        "int64": ctypes.c_int64, "int32": ctypes.c_int32, "bool": ctypes.c_bool}
_LOADED: dict[str, Any] = {}
_LOCK = threading.Lock()
_LEAN_FAILED: set[str] = set()  # compilers whose lean route failed where the driver's did not


@dataclass(frozen=True)
class Route:
    """One way from C text to a shared library: one compiler run, ``[cc, *FLAGS, *flags,
    *defines, "-o", library, source, *libs]`` (:meth:`command`)."""

    name: str
    flags: tuple[str, ...]
    libs: tuple[str, ...] = ("-lm",)
    math_only: bool = False  # the libraries only where the text calls a math function

    def command(self, cc: str, data: bytes, out: str = "OUT", source: str = "SOURCE"
                ) -> list[str]:
        """The compiler's command line building ``out`` from ``source`` (holding C text
        ``data``): ``-DSG_DATA_OFFSET`` (:func:`data_offset`) where the text reads an
        array's data pointer."""
        defines = [f"-DSG_DATA_OFFSET={data_offset()}"] if b"SG_DATA(" in data else []
        libs = self.libs if not self.math_only or _calls_math(data) else ()
        return [cc, *FLAGS, *self.flags, *defines, "-o", out, source, *libs]


# a call of a C math function the prelude declares (every one the C target writes): the
# lean route links -lm only for such a text (the link's share of a small build is a fifth)
_MATH_NAMES = re.findall(rb"SG_MATH[12]\(([a-z]\w*)\)", DECLARATIONS.encode())
_MATH_CALL = re.compile(rb"\b(?:" + b"|".join(_MATH_NAMES) + rb")(?:f|##F)?\s*\(")

@functools.lru_cache(maxsize=8)
def _calls_math(data: bytes) -> bool:
    """Whether C text ``data`` calls a C math function (read once per text: a build
    writes the command line twice, for its cache key and to run it)."""
    return _MATH_CALL.search(data) is not None


_ELF = sys.platform.startswith(("linux", "freebsd"))
LEAN = Route("lean", ("-Werror=implicit-function-declaration", "-shared",
                      *(("-nostdlib",) if _ELF else ())), math_only=True)
"""No system header parsed (``SG_SYSTEM_HEADERS`` undefined: the C text declares what it
uses, and a function it does not declare fails this route); on ELF systems no start files
nor C library linked (the loading process has them), and ``-lm`` (its versioned names)
only for a text calling a math function."""
DRIVER = Route("driver", ("-DSG_SYSTEM_HEADERS", "-shared"))
"""The compiler's plain route: the system headers, the driver's own link."""
ROUTES = (LEAN, DRIVER)


_FOUND: dict[tuple[str, str], str] = {}  # ($CC, $PATH) -> the compiler found


def compiler() -> str:
    """The C compiler's command: ``$CC``, else the first of ``cc``, ``gcc``, ``clang`` on
    ``PATH`` (looked up once per value of ``$CC`` and ``$PATH``); a
    :class:`BackendError` naming the fix where there is none."""
    key = (os.environ.get("CC", ""), os.environ.get("PATH", ""))
    found = _FOUND.get(key)
    if found is None:
        if len(_FOUND) > 16:
            _FOUND.clear()
        found = _FOUND[key] = _find_compiler()
    return found


def _find_compiler() -> str:
    given = os.environ.get("CC", "").strip()
    if given:
        found = shutil.which(given)
        if found is None:
            raise BackendError(f"backend 'c': the C compiler $CC={given!r} is not found; set "
                               "CC to an installed compiler (gcc, clang), or use "
                               "backend='numba' or backend='numpy'")
        return found
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found is not None:
            return found
    raise BackendError("backend 'c' needs a C compiler: none of cc, gcc, clang is on PATH "
                       "and $CC is not set; install one (e.g. apt install gcc, xcode-select "
                       "--install), or use backend='numba' or backend='numpy'")


def load_library(source: str, signatures: dict[str, tuple[str, ...]],
                 entries: tuple[str, ...] | list[str] = ()) -> Any:
    """The loaded library of C text ``source`` (our own generated text), each function of
    ``signatures`` (name -> its parameters' kinds: ``"p"`` a NumPy array, passed as the
    object, whose data pointer the C reads at :func:`data_offset`, compiled in as
    ``SG_DATA_OFFSET``; else a scalar's dtype) typed for :mod:`ctypes`, returning ``int``
    (0: done), and each of ``entries`` (``METH_FASTCALL`` functions, the C target's
    ``<kernel>_py``) made a Python function (:func:`_entry`): the library's attribute of
    that name."""
    data = source.encode()
    if len(data) > MAX_SOURCE_BYTES:
        raise LimitError(f"backend 'c': the C text is {len(data):,} bytes, over the "
                         f"{MAX_SOURCE_BYTES:,}-byte budget; compile smaller functions, or "
                         "use backend='numba' or backend='numpy'")
    cc = compiler()
    texts = [t.encode() for t in parts.split(source)]
    with _LOCK:
        libs = _libraries(texts, cc)
    lib = libs[0] if len(libs) == 1 else parts.Joined(libs)
    if signatures or entries:
        for one in libs:
            _bind_blas(one)
    for name, kinds in signatures.items():
        f = getattr(lib, name)
        f.argtypes = [_ARG[k] for k in kinds]
        f.restype = ctypes.c_int
    for name in entries:
        if not isinstance(lib.__dict__.get(name), _BUILTIN):
            setattr(lib, name, _entry(lib, name))
    return lib


def _libraries(texts: list[bytes], cc: str) -> list[Any]:
    """The loaded library of each C text (one loaded before in this process is reused),
    those to build compiled at the same time, one compiler process each."""
    keys = [hashlib.sha256(b"\0".join([data, cc.encode()])).hexdigest() for data in texts]
    todo = [(k, data) for k, data in zip(keys, texts) if k not in _LOADED]
    if len(todo) == 1:
        _LOADED[todo[0][0]] = _library(todo[0][1], cc)
    elif todo:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(todo)) as pool:  # each thread waits on its compiler
            built = list(pool.map(lambda data: _library(data, cc), [d for _, d in todo]))
        _LOADED.update(zip([k for k, _ in todo], built))
    return [_LOADED[k] for k in keys]


class _MethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``: a C function Python calls."""

    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


_BUILTIN = type(len)
_METH_FASTCALL = 0x0080
_API_NAMES = ("PyLong_FromLong", "PyFloat_AsDouble", "PyLong_AsLongLong", "PyObject_IsTrue",
              "PyErr_Occurred", "PyEval_SaveThread", "PyEval_RestoreThread")  # SG_API's order
_API: list[Any] = []


def _entry(lib: Any, name: str) -> Any:
    """C function ``name`` of ``lib``, a ``METH_FASTCALL`` entry, as a Python function
    (``PyCFunction_NewEx``): called as any built-in function, with no :mod:`ctypes`
    conversion at the call; it releases the GIL while its kernel runs, as the Numba
    target's ``nogil`` functions do); its ``self`` is the array of the Python C API
    addresses it calls."""
    if not _API:  # (bound once per process)
        import numpy as np

        try:
            api = ctypes.pythonapi
            new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                    ctypes.py_object)(("PyCFunction_NewEx", api))
            table = np.array([ctypes.cast(getattr(api, n), ctypes.c_void_p).value
                              for n in _API_NAMES], dtype=np.uintp)
        except (AttributeError, OSError):
            raise BackendError("backend 'c' needs CPython's C API (ctypes.pythonapi); use "
                               "backend='numba' or backend='numpy'") from None
        _API[:] = (table, new)  # (one step: a thread racing here writes the same)
    table, new = _API
    method = _MethodDef(name.encode(), ctypes.cast(getattr(lib, name), ctypes.c_void_p).value,
                        _METH_FASTCALL, None)
    fn = new(ctypes.addressof(method), table, None)
    lib.__dict__.setdefault("_sg_methods", []).append(method)  # it must outlive fn
    return fn


def cache_key(data: bytes, cc: str, route: Route) -> str:
    """The hash naming the library of C text ``data`` built by compiler ``cc`` on
    ``route``: the text, the compiler (its path, and its file's size and date: an upgrade
    is a new key) and the route's whole command line (:data:`FLAGS`, its flags, defines and
    libraries)."""
    try:
        info = os.stat(cc)
        ident = f"{info.st_size}:{info.st_mtime_ns}"
    except OSError:
        ident = "?"
    parts = [data, ident.encode(), route.name.encode(),
             *(a.encode() for a in route.command(cc, data))]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


class _RouteFailed(Exception):
    """A route could not build or load the library (the next route is tried)."""


def _library(data: bytes, cc: str) -> Any:
    """The loaded library of C text ``data``: each route of :data:`ROUTES` in turn (the
    lean one skipped where it failed before with ``cc``); the last route's failure is the
    error raised."""
    routes = [r for r in ROUTES if not (r is LEAN and cc in _LEAN_FAILED)]
    for k, route in enumerate(routes):
        last = k == len(routes) - 1
        try:
            lib = _load(data, cc, route, last)
        except _RouteFailed:
            continue
        if route is not LEAN and LEAN in routes:
            _LEAN_FAILED.add(cc)  # the lean route failed where this one did not
        return lib
    raise AssertionError("unreachable: the last route raises")  # pragma: no cover


def _load(data: bytes, cc: str, route: Route, last: bool) -> Any:
    """The library of ``data`` built on ``route`` (from the cache where it is there),
    loaded; where it fails and this is not the ``last`` route: :class:`_RouteFailed`,
    recorded in the entry's folder."""
    folder = _folder(cache_key(data, cc, route))
    so, record = folder / "module.so", folder / "module.json"
    try:
        held = json.loads(record.read_text())
    except (OSError, ValueError):
        held = {}
    if not isinstance(held, dict):
        held = {}
    if held.get("failed") and not last:
        raise _RouteFailed(held["failed"])
    try:
        if held.get("so") is None or disk_cache.digest(so) != held["so"]:
            _compile(data, cc, route, folder, so)
            disk_cache.write(record, json.dumps({"so": disk_cache.digest(so)}).encode())
        return _open(so)
    except (BackendError, OSError) as e:
        if last:
            if isinstance(e, BackendError):
                raise
            raise BackendError(f"backend 'c': the library {so} the C compiler built does "
                               f"not load ({e}); use backend='numba' or backend='numpy'"
                               ) from None
        if so.exists():
            so.unlink()
        disk_cache.write(record, json.dumps({"failed": str(e)[-2000:]}).encode())
        raise _RouteFailed(str(e)) from None


def _open(so: Path) -> Any:
    """Library ``so`` loaded (every name bound now: an unresolved one is an OSError)."""
    return ctypes.CDLL(str(so))


def _folder(digest: str) -> Path:
    """The private cache folder of the entry ``digest`` (made where missing)."""
    folder = disk_cache.folder("c") / digest[:32]
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        reason = disk_cache.insecure(folder)
    except OSError as e:
        reason = str(e)
    if reason is not None:  # (the kind folder was checked: only a planted entry lands here)
        folder = Path(tempfile.mkdtemp(prefix="symgrad-c-"))
    return folder


def _compile(data: bytes, cc: str, route: Route, folder: Path, so: Path) -> None:
    """``data`` written as ``module.c`` and compiled on ``route`` into ``so``
    (atomically)."""
    c_file = folder / "module.c"
    disk_cache.write(c_file, data)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".module.", suffix=".so.tmp")
    os.close(fd)
    cmd = route.command(cc, data, tmp, str(c_file))
    try:
        with step("compile (C)", total=1, unit="module"):
            done = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip()
            raise BackendError(f"backend 'c': the C compiler failed ({' '.join(cmd)}):\n"
                               f"{message[-4000:]}")
        os.chmod(tmp, 0o700)
        os.replace(tmp, so)
    except subprocess.TimeoutExpired:
        raise LimitError(f"backend 'c': the C compiler ran over {COMPILE_TIMEOUT_S:.0f} s; "
                         "use backend='numba' or backend='numpy'") from None
    except OSError as e:
        raise BackendError(f"backend 'c': the C compiler {cc} could not run ({e}); install "
                           "gcc or clang, or use backend='numba' or backend='numpy'") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def failure(code: int, name: str) -> Exception:
    """The exception a C function's nonzero return ``code`` stands for."""
    if code == 1:
        return IndexError(f"{name}: index out of range (a traced index, as NumPy raises)")
    if code == 2:
        return MemoryError(f"{name}: the C function could not allocate its arrays")
    if code == 3:
        import numpy as np

        return np.linalg.LinAlgError(f"{name}: singular matrix (or, for cholesky, not "
                                     "positive definite): LAPACK's info > 0, as NumPy raises")
    if code == 5:
        return TypeError(f"{name}: the C function was called with a wrong number of "
                         "arguments")
    if code == 4:
        return BackendError(f"{name}: LAPACK is not bound (SciPy's cython_lapack); install "
                            "scipy, or use backend='numba' or backend='numpy'")
    return RuntimeError(f"{name}: the C function failed (code {code})")


def _bind_blas(lib: Any) -> None:
    """Give ``lib`` SciPy's BLAS ``dgemm``/``sgemm`` and LAPACK routines (the function
    pointers SciPy exports for Cython, ``scipy.linalg.cython_blas``/``cython_lapack``),
    each where its C text holds their setter; without SciPy its products run as loops
    (and its LAPACK calls return 4)."""
    try:
        blas = lib.sg_set_blas
    except AttributeError:  # C text without products
        blas = None
    try:
        lapack = lib.sg_set_lapack
    except AttributeError:  # C text without the LAPACK prelude
        lapack = None
    if blas is None and lapack is None:
        return
    try:
        from scipy.linalg import cython_blas, cython_lapack
    except ImportError:  # no SciPy
        return
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

    def pointer(module: Any, name: str) -> int:
        capsule = module.__pyx_capi__[name]
        return api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))

    if blas is not None:
        blas.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        blas.restype = None
        blas(pointer(cython_blas, "dgemm"), pointer(cython_blas, "sgemm"))
    if lapack is not None:
        names = [p + r for p in "ds" for r in ("getrf", "getri", "getrs", "potrf")]
        table = (ctypes.c_void_p * len(names))(*(pointer(cython_lapack, n) for n in names))
        lapack.argtypes = [ctypes.c_void_p]
        lapack.restype = None
        lapack(table)


_OFFSET: list[int] = []


def data_offset() -> int:
    """Where a NumPy array object holds its data pointer (bytes from the object's start):
    found once by reading two probe arrays' objects, and checked on both (NumPy's
    ``PyArrayObject`` keeps it first after the object header); a
    :class:`BackendError` where it is not found (an interpreter whose ``id`` is no
    address)."""
    if _OFFSET:
        return _OFFSET[0]
    import numpy as np

    probes = [np.zeros(3), np.ones(5)]
    found = None
    for off in range(8, 128, 8):
        if all(ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data
               for a in probes):
            found = off
            break
    if found is None:
        raise BackendError("backend 'c': cannot find the data pointer in a NumPy array "
                           "object on this interpreter; use backend='numba' or 'numpy'")
    _OFFSET.append(found)
    return found
