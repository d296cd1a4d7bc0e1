"""SciPy's special functions inside compiled code: the C functions ``scipy.special``'s
ufuncs run, called directly.

SciPy exports each special function's compiled scalar kernel through
``scipy.special.cython_special`` (one C function per type signature, with a trailing
``int`` flag). A node of a special-function op is written as a call of the variant whose
argument types are those of the loop ``scipy.special``'s ufunc would pick for the node's
operand dtypes (:func:`scalar_form`), so the compiled code computes what ``sg.evaluate``
does (the same C code; where the ufunc's float32 loop computes in double and rounds, the
double variant, rounded). The module binds each function once (:func:`binding_lines`): its
address registered with LLVM under a symbol of its own and a
``numba.types.ExternalFunction`` of that symbol, so Numba's disk cache, which stores the
symbol rather than an address, finds it again in another process.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> e = sg.scipy.special.erf(x)
>>> scalar_form(e.graph.nodes[e.node], e.graph.nodes).render(["v"], {})
'_sp_erf_d(v, 0)'
"""

from __future__ import annotations

import ctypes
import functools
import re
from typing import Any

import numpy as np

from ...template import Template
from ..numpy.table import NUMPY_TYPE, scalar_source

__all__ = ["SPECIAL", "binding_lines", "scalar_form"]

# op -> the name of its function in scipy.special (its ufunc) and in cython_special
SPECIAL = {name: name for name in (
    "erf", "erfc", "erfcinv", "erfcx", "erfinv", "ndtr", "ndtri", "log_ndtr", "logit",
    "gamma", "gammaln", "betaln", "xlogy", "xlog1py", "i0", "i0e", "i1", "i1e", "gammainc",
    "gammaincc", "betainc", "stdtr", "j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e", "jv",
    "yv", "yn", "iv", "ive", "kv", "kve")}
SPECIAL["digamma"] = "psi"
SPECIAL["polygamma"] = "polygamma"  # psi or a multiple of zeta (see _polygamma)

_C_TYPES = {"double": "float64", "float": "float32", "long": "int64", "Py_ssize_t": "int64"}
_CODE = {"float64": "d", "float32": "f", "int64": "l"}
_NUMBA = {"float64": "numba.float64", "float32": "numba.float32", "int64": "numba.int64"}

# binding name -> (cython_special's name of the C function, result dtype, argument dtypes)
_BOUND: dict[str, tuple[str, str, tuple[str, ...]]] = {}


@functools.cache
def _variants(name: str) -> dict[tuple[str, ...], tuple[str, str]]:
    """cython_special's C functions for ``name``: ``{argument dtypes: (exported name,
    result dtype)}`` (the ones of real types only)."""
    import scipy.special.cython_special as cs

    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    out: dict[tuple[str, ...], tuple[str, str]] = {}
    for key, capsule in sorted(cs.__pyx_capi__.items()):
        if key != name and not re.fullmatch(rf"__pyx_fuse_\d+{name}", key):
            continue
        m = re.fullmatch(r"(.+?) \((.*)\)", get(capsule).decode())
        if m is None:
            continue
        params = [p.strip() for p in m.group(2).split(",")]
        if params[-1] != "int __pyx_skip_dispatch" or m.group(1) not in _C_TYPES:
            continue
        types = tuple(_C_TYPES.get(p) for p in params[:-1])
        if None not in types:
            out.setdefault(types, (key, _C_TYPES[m.group(1)]))  # type: ignore[arg-type]
    return out


def _call(name: str, dtypes: tuple[str, ...], texts: list[str], out: str) -> str:
    """The call of scipy.special's ``name`` on ``texts`` (of ``dtypes``) giving dtype
    ``out``: the C variant of the ufunc's loop for those dtypes, else the double one."""
    import scipy.special

    ufunc = getattr(scipy.special, "psi" if name == "digamma" else name)
    cname = "psi" if name == "digamma" else name
    variants = _variants(cname)
    if hasattr(ufunc, "resolve_dtypes"):  # (zeta is a Python function around a ufunc)
        types = tuple(d.name for d in ufunc.resolve_dtypes((*map(np.dtype, dtypes), None)))[:-1]
    else:
        types = ("float64",) * len(dtypes)
    found = variants.get(types)
    if found is None:
        types = ("float64",) * len(dtypes)
        found = variants[types]
    key, result = found
    bind = f"_sp_{cname}_{''.join(_CODE[t] for t in types)}"
    _BOUND[bind] = (key, result, types)
    args = [t if d == want else f"{NUMPY_TYPE[want]}({t})"
            for t, d, want in zip(texts, dtypes, types)]
    text = f"{bind}({', '.join(args)}, 0)"
    return text if result == out else f"{NUMPY_TYPE[out]}({text})"


def scalar_form(n: Any, nodes: Any) -> Template | None:
    """The scalar form of special-function node ``n`` (None if SciPy has no compiled
    variant for its dtypes)."""
    dtypes = tuple(nodes[a].dtype for a in n.args)
    name = SPECIAL.get(n.op)
    if name is None or any(d not in _CODE for d in dtypes):
        return None
    if name == "polygamma":
        return _polygamma(n, dtypes[0])
    try:
        probe = _call(name, dtypes, [f"{{{k}}}" for k in range(len(dtypes))], n.dtype)
    except (KeyError, TypeError, ValueError, ImportError):
        return None
    return Template(probe)


def _polygamma(n: Any, dtype: str) -> Template:
    """SciPy's polygamma(n, x): psi(x) for n = 0, else (-1)**(n+1) gamma(n+1) zeta(n+1, x)
    (the factor a constant: n is static; the Hurwitz zeta :func:`_sg_zeta`, Cephes'
    algorithm as SciPy's), in float64, then the node's dtype."""
    import scipy.special

    order = int(n.attrs["n"])
    if order == 0:
        return Template(_call("digamma", (dtype,), ["{0}"], n.dtype))
    factor = float((-1.0) ** (order + 1) * scipy.special.gamma(order + 1.0))
    x = "{0}" if dtype == "float64" else "np.float64({0})"
    text = f"{scalar_source(factor)} * _sg_zeta({float(order + 1)!r}, {x})"
    return Template(text if n.dtype == "float64" else f"{NUMPY_TYPE[n.dtype]}({text})")


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _sg_zeta(x, q):  # (copied into modules and compiled there: no annotations)
    """The Hurwitz zeta function sum((k + q) ** -x, k >= 0), as Cephes computes it
    (SciPy's ``zeta``): Euler-Maclaurin summation."""
    if x == 1.0:
        return np.inf
    if x < 1.0:
        return np.nan
    if q <= 0.0:
        if q == np.floor(q):
            return np.inf
        if x != np.floor(x):
            return np.nan
    if q > 1e8:
        return (1.0 / (x - 1.0) + 1.0 / (2.0 * q)) * q ** (1.0 - x)
    s = q ** -x
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a ** -x
        s += b
        if abs(b / s) < 1.11022302462515654042e-16:
            return s
    w = a
    s += b * w / (x - 1.0)
    s -= 0.5 * b
    a = 1.0
    k = 0.0
    for j in range(12):
        a *= x + k
        b /= w
        t = a * b / _ZETA_A[j]
        s = s + t
        if abs(t / s) < 1.11022302462515654042e-16:
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s


def binding_lines(source: str) -> list[str]:
    """The module-level lines binding the SciPy functions ``source`` calls (none if it
    calls none): a helper and one assignment each."""
    lines = []
    if "_sg_zeta(" in source:
        from ...printer import helper_source

        lines += ["", "", f"_ZETA_A = {_ZETA_A!r}", "", "", "@_jit", *helper_source(_sg_zeta)]
    used = sorted(set(re.findall(r"\b_sp_\w+", source)) & set(_BOUND))
    if not used:
        return lines
    lines += ["", "", "def _scipy_special(name, result, *args):",
             '    """SciPy\'s compiled special function ``name`` (scipy.special.cython_special)'
             " as a",
             "    function Numba calls: its address registered under a symbol of its own, so"
             " Numba's",
             '    disk cache finds it in another process."""',
             "    import llvmlite.binding",
             "    from numba.extending import get_cython_function_address",
             "",
             '    symbol = "symgrad_scipy_" + name',
             "    llvmlite.binding.add_symbol(",
             '        symbol, get_cython_function_address("scipy.special.cython_special", name))',
             "    return numba.types.ExternalFunction(symbol, result(*args, numba.int32))",
             ""]
    for bind in used:
        key, result, types = _BOUND[bind]
        args = "".join(f", {_NUMBA[t]}" for t in types)
        lines.append(f"{bind} = _scipy_special({key!r}, {_NUMBA[result]}{args})")
    return lines
