"""C's scalars for the C target: its types, Numba's promotion rules (NumPy's), and each
NumPy scalar function's C form (:func:`np_call`), with :data:`PRELUDE`, the helpers where
C's functions differ from NumPy's.

>>> np_call("maximum", [("a", "float64"), ("b", "float32")])
('sg_maximum_d(a, ((double)b))', 'float64')
>>> np_call("exp", [("x", "float32")])
('expf(x)', 'float32')
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ....base.errors import SymgradError

__all__ = ["BLAS", "CONSTS", "CTYPE", "DATA", "DECLARATIONS", "FLOAT", "HELPERS", "NP_DTYPE",
           "PRELUDE", "SUFFIX", "Unsupported", "c_literal", "cast", "np_call", "paren", "prelude",
           "promote", "truth", "widens"]


class Unsupported(SymgradError):
    """A construct of a compiled function with no C form here (its lines stay NumPy's)."""


CTYPE = {"float64": "double", "float32": "float", "int64": "int64_t", "int32": "int32_t",
         "bool": "_Bool"}
NP_DTYPE = {"float64": "float64", "float32": "float32", "int64": "int64", "int32": "int32",
             "bool_": "bool"}
FLOAT = ("float64", "float32")

DECLARATIONS = r"""#if defined(__GNUC__) && !defined(SG_SYSTEM_HEADERS)
/* the C library's few names this text uses, declared here: parsing the system headers
   would take a third of a small module's compile (-DSG_SYSTEM_HEADERS includes them) */
typedef __INT64_TYPE__ int64_t;
typedef __INT32_TYPE__ int32_t;
typedef __SIZE_TYPE__ size_t;
#define INT64_C(c) c ## LL
#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) (sizeof(x) == sizeof(float) ? __builtin_signbitf(x) : __builtin_signbit(x))
void *malloc(size_t);
void free(void *);
void *memset(void *, int, size_t);
void *memcpy(void *, const void *, size_t);
#define SG_MATH1(F) double F(double); float F##f(float);
#define SG_MATH2(F) double F(double, double); float F##f(float, float);
SG_MATH1(exp) SG_MATH1(log) SG_MATH1(log1p) SG_MATH1(expm1) SG_MATH1(sqrt) SG_MATH1(sin)
SG_MATH1(cos) SG_MATH1(tan) SG_MATH1(tanh) SG_MATH1(sinh) SG_MATH1(cosh) SG_MATH1(asin)
SG_MATH1(acos) SG_MATH1(atan) SG_MATH1(asinh) SG_MATH1(acosh) SG_MATH1(atanh) SG_MATH1(exp2)
SG_MATH1(log2) SG_MATH1(log10) SG_MATH1(cbrt) SG_MATH1(floor) SG_MATH1(ceil) SG_MATH1(rint)
SG_MATH1(trunc) SG_MATH1(fabs)
SG_MATH2(atan2) SG_MATH2(hypot) SG_MATH2(copysign) SG_MATH2(fmod) SG_MATH2(fmax)
SG_MATH2(fmin) SG_MATH2(pow)
#else
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#endif
"""

HELPERS = r"""/* NumPy's semantics where C's differ: NaN propagates through maximum/minimum,
   sign(NaN) is NaN, logaddexp and remainder are npy_logaddexp and npy_remainder, floor
   division is npy_divmod's quotient. */
#define SG_FLOAT_HELPERS(T, S, F) \
static inline T sg_maximum##S(T a, T b) { return (a >= b || a != a) ? a : b; } \
static inline T sg_minimum##S(T a, T b) { return (a <= b || a != a) ? a : b; } \
static inline T sg_sign##S(T a) { return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; } \
static inline T sg_logaddexp##S(T x, T y) { \
    if (x == y) return x + log##F((T)2); \
    T d = x - y; \
    if (d > 0) return x + log1p##F(exp##F(-d)); \
    if (d <= 0) return y + log1p##F(exp##F(d)); \
    return d; } \
static inline T sg_logaddexp2##S(T x, T y) { \
    if (x == y) return x + 1; \
    T d = x - y; \
    if (d > 0) return x + log1p##F(exp2##F(-d)) / log##F((T)2); \
    if (d <= 0) return y + log1p##F(exp2##F(d)) / log##F((T)2); \
    return d; } \
static inline T sg_remainder##S(T a, T b) { \
    T mod = fmod##F(a, b); \
    if (b == 0) return mod; \
    if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; } \
    else mod = copysign##F((T)0, b); \
    return mod; } \
static inline T sg_floordiv##S(T a, T b) { \
    T mod = fmod##F(a, b); \
    if (b == 0) return a / b; \
    T div = (a - mod) / b; \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1; \
    if (div != 0) { T fl = floor##F(div); if (div - fl > (T)0.5) fl += 1; return fl; } \
    return copysign##F((T)0, a / b); }
SG_FLOAT_HELPERS(double, _d, )
SG_FLOAT_HELPERS(float, _f, f)
#define SG_INT_HELPERS(T, S) \
static inline T sg_maximum##S(T a, T b) { return a >= b ? a : b; } \
static inline T sg_minimum##S(T a, T b) { return a <= b ? a : b; } \
static inline T sg_sign##S(T a) { return (T)((a > 0) - (a < 0)); } \
static inline T sg_abs##S(T a) { return a < 0 ? -a : a; } \
static inline T sg_pyfloordiv##S(T a, T b) { \
    T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; } \
static inline T sg_pymod##S(T a, T b) { \
    T m = a % b; return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m; }
SG_INT_HELPERS(int64_t, _l)
SG_INT_HELPERS(int32_t, _i)
"""

BLAS = r"""/* BLAS's gemm (Fortran's, column-major), bound by the loader to SciPy's (sg_set_blas);
   unbound, products run as loops */
typedef void (*sg_dgemm_t)(char *, char *, int *, int *, int *, double *, double *, int *,
                           double *, int *, double *, double *, int *);
typedef void (*sg_sgemm_t)(char *, char *, int *, int *, int *, float *, float *, int *,
                           float *, int *, float *, float *, int *);
static sg_dgemm_t sg_dgemm = 0;
static sg_sgemm_t sg_sgemm = 0;
void sg_set_blas(void *d, void *s) { sg_dgemm = (sg_dgemm_t)d; sg_sgemm = (sg_sgemm_t)s; }
"""

DATA = r"""/* a NumPy array's data pointer, read from the array object at the offset the loader
   found (it compiles with -DSG_DATA_OFFSET=...): the entries Python calls take the arrays
   themselves */
#ifndef SG_DATA_OFFSET
#define SG_DATA_OFFSET 16
#endif
#define SG_DATA(o) (*(void **)((char *)(o) + SG_DATA_OFFSET))

/* an entry Python calls is a METH_FASTCALL function (self, arguments, their number) whose
   self is an array of the addresses of the Python C API functions it calls (the loader's:
   PyLong_FromLong, PyFloat_AsDouble, PyLong_AsLongLong, PyObject_IsTrue, PyErr_Occurred,
   PyEval_SaveThread, PyEval_RestoreThread: the GIL is released while the kernel runs) */
#define SG_API(s, k) (((void **)SG_DATA(s))[k])
#define SG_RESULT(s, v) (((void *(*)(long))SG_API(s, 0))((long)(v)))
#define SG_FLOAT(s, o) (((double (*)(void *))SG_API(s, 1))(o))
#define SG_INT(s, o) (((long long (*)(void *))SG_API(s, 2))(o))
#define SG_BOOL(s, o) (((int (*)(void *))SG_API(s, 3))(o))
#define SG_ERROR(s) (((void *(*)(void))SG_API(s, 4))())
#define SG_UNLOCK(s) (((void *(*)(void))SG_API(s, 5))())
#define SG_LOCK(s, t) (((void (*)(void *))SG_API(s, 6))(t))
"""
PRELUDE = "\n".join([DECLARATIONS, HELPERS, BLAS, DATA])
"""Every part of a module's C text before its functions (:func:`prelude`: the parts one uses)."""

_HELPER_NAMES = sorted(set(re.findall(r"\bsg_(\w+)##S", HELPERS)), key=len, reverse=True)
_HELPER_CALL = re.compile(r"\bsg_(" + "|".join(_HELPER_NAMES) + r")_[dfli]\(")


def prelude(functions: str) -> str:
    """The parts of :data:`PRELUDE` that C functions ``functions`` use: the declarations,
    then the NumPy helpers, BLAS's pointers and the data-pointer reader each where they are
    called (every part a module does not use is compile time for nothing).

    >>> text = prelude("int f(double *o0) { o0[0] = sg_sign_d(o0[0]); return 0; }")
    >>> "sg_sign##S" in text, "sg_dgemm_t" in text, "SG_DATA(o)" in text
    (True, False, False)
    """
    parts = [DECLARATIONS]
    if _HELPER_CALL.search(functions):
        parts.append(HELPERS)
    if re.search(r"\bsg_[ds]gemm\b", functions):
        parts.append(BLAS)
    if "SG_DATA(" in functions:
        parts.append(DATA)
    return "\n".join(parts)

SUFFIX = {"float64": "_d", "float32": "_f", "int64": "_l", "int32": "_i"}

# NumPy's scalar function -> C's (a float argument; float32 takes the "f" variant)
_MATH1 = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
          "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "sinh": "sinh",
          "cosh": "cosh", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
          "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "exp2": "exp2",
          "log2": "log2", "log10": "log10", "cbrt": "cbrt", "floor": "floor", "ceil": "ceil",
          "rint": "rint", "trunc": "trunc"}
_MATH2 = {"arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod",
          "fmax": "fmax", "fmin": "fmin", "power": "pow"}
_HELPER1 = {"sign"}
_HELPER2 = {"maximum", "minimum", "logaddexp", "logaddexp2", "remainder", "floor_divide"}
CONSTS = {"inf": "INFINITY", "nan": "NAN", "pi": "3.141592653589793", "e": "2.718281828459045"}



def np_call(f: str, args: list[tuple[str, str]]) -> tuple[str, str]:
    """(C text, dtype) of NumPy's scalar function ``np.<f>`` of ``args`` ((C text,
    dtype) each): :class:`Unsupported` where it has no C form here."""
    if f in NP_DTYPE:  # a NumPy scalar type: a conversion
        (text, t), = args
        return cast(text, t, NP_DTYPE[f]), NP_DTYPE[f]
    if f in ("isnan", "isinf", "isfinite", "signbit"):
        (text, t), = args
        if t not in FLOAT:
            return ("0" if f != "isfinite" else "1"), "bool"
        return f"({f}({text}) != 0)", "bool"
    if f in ("logical_not", "logical_and", "logical_or", "logical_xor"):
        ts = [truth(*a) for a in args]
        op = {"logical_and": " && ", "logical_or": " || ", "logical_xor": " != "}
        return (f"(!{ts[0]})" if f == "logical_not" else
                f"({op[f].join(ts)})"), "bool"
    t = promote(*(a[1] for a in args)) if args else "float64"
    if f in ("square", "negative", "abs", "reciprocal", "deg2rad", "rad2deg"):
        (text, t0), = args
        t = "int64" if t0 in ("bool", "int32") and f != "abs" else t0
        x = cast(text, t0, t)
        if f == "square":
            return f"({paren(x)} * {paren(x)})", t
        if f == "negative":
            return f"(-{paren(x)})", t
        if f == "abs":
            if t == "bool":
                return x, t
            return (f"fabs{'f' if t == 'float32' else ''}({x})" if t in FLOAT else
                    f"sg_abs{SUFFIX[t]}({x})"), t
        if t not in FLOAT:
            raise Unsupported(f"np.{f} of an integer")
        k = {"reciprocal": "1", "deg2rad": "(3.141592653589793 / 180.0)",
             "rad2deg": "(180.0 / 3.141592653589793)"}[f]
        k = k if t == "float64" else f"(float){k}"
        return (f"({k} / {paren(x)})" if f == "reciprocal" else f"({x} * {k})"), t
    if f in _HELPER1 or f in _HELPER2:
        if f in ("logaddexp", "logaddexp2", "remainder", "floor_divide") and t not in FLOAT:
            t = "float64" if f.startswith("log") else t
            if t not in FLOAT:
                raise Unsupported(f"np.{f} of integers")
        if t == "bool":
            raise Unsupported(f"np.{f} of booleans")
        f = "floordiv" if f == "floor_divide" else f
        return f"sg_{f}{SUFFIX[t]}(" + ", ".join(cast(a, ta, t) for a, ta in args) + ")", t
    if f in _MATH1 or f in _MATH2 or f == "float_power":
        if f == "float_power":
            t = "float64" if t != "float32" else "float64"
        elif t not in FLOAT:
            t = "float64"
        name = _MATH1.get(f) or _MATH2.get(f) or "pow"
        name += "f" if t == "float32" else ""
        if len(args) != (1 if f in _MATH1 else 2):
            raise Unsupported(f"np.{f} with {len(args)} arguments")
        return f"{name}(" + ", ".join(cast(a, ta, t) for a, ta in args) + ")", t
    raise Unsupported(f"np.{f}: no C form")


_ORDER = ["bool", "int32", "int64", "float32", "float64"]


def promote(*ts: str) -> str:
    """Numba's type of an operation on scalars of dtypes ``ts`` (NumPy's promotion)."""
    out = ts[0]
    for t in ts[1:]:
        out = np.promote_types(out if out != "bool" else "?", t if t != "bool" else "?").name
    return "bool" if out == "bool" else out


def widens(held: str, new: str) -> bool:
    """Whether a ``held`` variable takes a ``new`` value without losing it."""
    return promote(held, new) == held


def truth(text: str, t: str) -> str:
    """``text`` (of dtype ``t``) as a C truth value."""
    return text if t == "bool" else f"({text} != 0)"


def cast(text: str, src: str, dst: str) -> str:
    """``text`` (of dtype ``src``) as ``dst`` (unchanged where they agree; to bool: ``!= 0``)."""
    if src == dst:
        return text
    if dst == "bool":
        return f"({paren(text)} != 0)"
    return f"(({CTYPE[dst]}){paren(text)})"


def c_literal(x: Any, dtype: str) -> str:
    """Python value ``x`` as a C literal of ``dtype``."""
    if dtype == "bool":
        return "1" if x else "0"
    if dtype in ("int64", "int32"):
        x = int(x)
        if abs(x) < 2 ** 31:
            return str(x) if x >= 0 else f"({x})"
        return f"INT64_C({x})" if x >= 0 else f"(-INT64_C({-x}))"
    x = float(x)
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    text = repr(x)
    text = text if ("e" in text or "." in text) else text + ".0"
    return (f"({text})" if x < 0 else text) if dtype == "float64" else f"((float){text})"


def paren(text: str) -> str:
    """``text`` in parentheses unless it is a name or a number."""
    return text if text.replace("_", "").isalnum() else f"({text})"
