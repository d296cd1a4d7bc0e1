"""A compiled function's body, as the Numba target writes it, in C99.

The Numba target writes each kernel (and each scan) as a small Python function in a fixed
subset — ``for i in range(n):`` loops over literal ranges, scalar expressions of NumPy
scalar functions, arrays allocated with ``np.empty``/``np.zeros``/``np.full``, element
reads and writes, views (``.T``, ``np.transpose``, basic slices, ``reshape`` of a
contiguous array, ``np.broadcast_to``), ``np.dot`` — over arrays of static shape
(:mod:`..numba.nests`). :func:`translate` reads that text (:mod:`ast`, never run) and
writes the same computation as one C function: every shape and stride is a literal, so a
view is a pointer, an offset and strides known here, an element read one flat subscript,
and a local array one ``malloc`` made before the first statement (freed after the last).
Scalar types follow Numba's rules (NumPy's promotion of the operands' types; integer
arithmetic in 64 bits), NaN-aware ``maximum``/``minimum``/``sign`` and NumPy's
``logaddexp``/``remainder``/floor division are helpers of :data:`PRELUDE`.

Anything outside the subset — a call with no C form (SciPy's special functions, sorting,
LAPACK), complex numbers, a construct not listed above — raises :class:`Unsupported`
naming it: the caller keeps those lines NumPy's (never a guess).

>>> src = '''
... def k(x, y):
...     t = np.empty((3,), dtype=np.float64)
...     for i in range(3):
...         t[i] = np.exp(x[i]) * y
...     return t
... '''
>>> fn = translate(src, {"x": ("float64", (3,)), "y": ("float64", ())}, ["t"])
>>> print("\\n".join(fn.lines[-5:]))
    for (int64_t v1_i = 0; v1_i < 3; v1_i++) {
        o0[v1_i] = (exp(p_x[v1_i]) * s_y);
    }
    return 0;
}
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from .arrays import LAPACK_OPS, Arr, CFunction, c_strides, gemm_lines, lapack_lines
from .fuse import fused_scatters
from .scalars import (
    CONSTS,
    CTYPE,
    FLOAT,
    SUFFIX,
    Unsupported,
    c_literal,
    cast,
    np_call,
    paren,
    promote,
    truth,
    widens,
)
from .syntax import BINOP, CMP, dtype_kw, int_literal, linalg_name, literal, load, np_name, root

__all__ = ["CFunction", "Unsupported", "translate"]


class _Translator:
    def __init__(self, inputs: dict[str, tuple[str, tuple[int, ...]]],
                 outputs: list[str]) -> None:
        self.inputs, self.outputs = inputs, outputs
        self.env: dict[str, Any] = {}
        self.decls: dict[str, str] = {}  # C local -> its type (hoisted declarations)
        self.allocs: list[tuple[str, str, int]] = []  # (C pointer, C type, elements)
        self.body: list[str] = []
        self.depth = 1
        self.count = 0
        self.raises = False
        self.assigned: dict[str, int] = {}
        self.out_alias: dict[str, int] = {}  # a returned name bound once -> its output
        self.bound: dict[str, int] = {}  # an array's name -> the depth it was bound at
        self.calls: dict[str, CFunction] = {}

    # -- names -------------------------------------------------------------------------

    def fresh(self, name: str) -> str:
        self.count += 1
        return f"v{self.count}_{name.lstrip('_')}"[:60]

    def emit(self, line: str) -> None:
        self.body.append("    " * self.depth + line)

    # -- statements ----------------------------------------------------------------------

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise Unsupported("a chained assignment")
            if isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) \
                    and s.value.func.id in self.calls:
                self.call_loop(s.targets[0], s.value)
            elif isinstance(s.targets[0], ast.Tuple):
                self.moves(s.targets[0], s.value)
            else:
                self.assign(s.targets[0], s.value)
        elif isinstance(s, ast.AugAssign):
            op = BINOP.get(type(s.op))
            if op is None:
                raise Unsupported(f"augmented {type(s.op).__name__}")
            target = ast.BinOp(left=load(s.target), op=s.op, right=s.value)
            self.assign(s.target, target)
        elif isinstance(s, ast.For):
            self.loop(s)
        elif isinstance(s, ast.If):
            cond, _ = self.expr(s.test)
            self.emit(f"if ({cond}) {{")
            self.block(s.body)
            if s.orelse:
                self.emit("} else {")
                self.block(s.orelse)
            self.emit("}")
        elif isinstance(s, ast.Raise):
            self.raises = True
            self.emit("return 1; /* index out of range: IndexError */")
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            pass  # a docstring
        else:
            raise Unsupported(f"statement {type(s).__name__}")

    def block(self, stmts: list[ast.stmt]) -> None:
        self.depth += 1
        for s in stmts:
            self.stmt(s)
        self.depth -= 1

    def loop(self, s: ast.For) -> None:
        it = s.iter
        if (not isinstance(s.target, ast.Name) or not isinstance(it, ast.Call)
                or not isinstance(it.func, ast.Name) or it.func.id != "range" or s.orelse
                or not 1 <= len(it.args) <= 3):
            raise Unsupported("a loop other than for i in range(...)")
        bounds = [self.expr(a)[0] for a in it.args[:2]]
        start, stop = (["0"] + bounds)[-2:]
        step = int(literal(it.args[2])) if len(it.args) == 3 else 1
        if step == 0:
            raise Unsupported("a range of step 0")
        name = s.target.id
        c = self.fresh(name)
        self.env[name] = (c, "int64")
        self.bound[name] = self.depth
        test = f"{c} < {stop}" if step > 0 else f"{c} > {stop}"
        inc = f"{c}++" if step == 1 else f"{c} += {step}"
        self.emit(f"for (int64_t {c} = {start}; {test}; {inc}) {{")
        self.block(s.body)
        self.emit("}")

    def call_loop(self, target: ast.expr, value: ast.Call) -> None:
        """``a, b = loop(x, y)``: a call of another C function (a nested loop), its
        arrays passed C-contiguous, its results written to local arrays and scalars."""
        fn = self.calls[value.func.id]
        if value.keywords or len(value.args) != len(fn.params) - len(fn.outs):
            raise Unsupported(f"a call of {fn.name}")
        args = []
        for a, kind in zip(value.args, fn.params):
            if kind == "p":
                arr = self.array(a)
                if not arr.contiguous():
                    arr = self.copy(arr, "_arg")
                args.append(f"&{arr.at(['0'] * len(arr.shape))}")
            else:
                text, dtype = self.expr(a)
                args.append(cast(text, dtype, kind))
        temps: list[ast.expr] = []
        for dtype, shape in fn.outs:
            tmp = self.fresh("r")
            if shape:
                arr = self.alloc(tmp, shape, dtype)
                self.env[tmp] = arr
                args.append(arr.base)
            else:
                self.decls[tmp] = CTYPE[dtype]
                self.env[tmp] = (tmp, dtype)
                args.append(f"&{tmp}")
            temps.append(ast.Name(id=tmp, ctx=ast.Load()))
        code = self.fresh("code")
        self.decls[code] = "int"
        self.emit(f"{code} = {fn.name}({', '.join(args)});")
        self.emit(f"if ({code}) return {code};")
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if len(names) != len(temps):
            raise Unsupported(f"the results of {fn.name}")
        for t, v in zip(names, temps):
            if isinstance(t, ast.Name) and t.id != "_":
                self.assign(t, v)

    def moves(self, target: ast.Tuple, value: ast.expr) -> None:
        """``a, b = x, y`` (a loop's carries): every value read before any is written."""
        if not isinstance(value, ast.Tuple) or len(value.elts) != len(target.elts) or not all(
                isinstance(t, ast.Name) for t in target.elts):
            raise Unsupported("a tuple assignment other than names = values")
        written = {self.env[t.id].base for t in target.elts
                   if isinstance(self.env.get(t.id), Arr)}
        temps: list[ast.expr] = []
        for v in value.elts:
            arr = self.array_value(v, "_mv")
            if arr is not None:
                if arr.base in written:
                    arr = self.copy(arr, "_mv")
                tmp = self.fresh("mv")
                self.env[tmp] = arr
            else:
                text, dtype = self.expr(v)
                tmp = self.fresh("mv")
                self.decls[tmp] = CTYPE[dtype]
                self.env[tmp] = (tmp, dtype)
                self.emit(f"{tmp} = {text};")
            temps.append(ast.Name(id=tmp, ctx=ast.Load()))
        for t, v in zip(target.elts, temps):
            self.assign(t, v)

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Subscript):
            arr = self.array(target.value)
            idx = self.index(arr, target.slice)
            if not isinstance(idx, str):
                raise Unsupported("an array assigned to a slice")
            text, dtype = self.expr(value)
            self.emit(f"{idx} = {cast(text, dtype, arr.dtype)};")
            return
        if not isinstance(target, ast.Name):
            raise Unsupported(f"assignment to {type(target).__name__}")
        name = target.id
        if isinstance(value, ast.Call) and linalg_name(value.func) == "det":
            self.lapack("det", value, name)
            return
        if (isinstance(value, ast.Call) and np_name(value.func) == "dot"
                and all(len(self.array(a).shape) == 1 for a in value.args)):
            self.vdot(value, name)
            return
        arr = self.array_value(value, name)
        if arr is not None:
            held = self.env.get(name)
            if isinstance(held, Arr) and self.bound.get(name, 1) < self.depth:
                # a loop's carry: its buffer takes the new value (later steps read it)
                if not held.owned or held.shape != arr.shape or held.dtype != arr.dtype:
                    raise Unsupported(f"{name} changes inside a loop")
                if held.base != arr.base or held.offset != arr.offset:
                    self.copy_into(held, arr)
                return
            self.env[name] = arr
            self.bound[name] = self.depth
            return
        text, dtype = self.expr(value)
        held = self.env.get(name)
        if isinstance(held, tuple) and (held[1] == dtype or self.depth > 1):
            c = held[0]
            if held[1] != dtype and not widens(held[1], dtype):
                raise Unsupported(f"{name} changes type inside a loop")
        else:
            if self.depth > 1 and name in self.env:
                raise Unsupported(f"{name} changes kind inside a loop")
            c = self.fresh(name)
            self.decls[c] = CTYPE[dtype]
            self.env[name] = (c, dtype)
            held = (c, dtype)
        self.emit(f"{c} = {cast(text, dtype, held[1])};")

    # -- arrays ----------------------------------------------------------------------------

    def alloc(self, name: str, shape: tuple[int, ...], dtype: str) -> Arr:
        out = self.out_alias.get(name)
        if out is not None and self.assigned.get(name) == 1:
            return Arr(f"o{out}", dtype, shape, c_strides(shape), owned=True)
        c = self.fresh(name)
        self.allocs.append((c, CTYPE[dtype], max(1, math.prod(shape))))
        return Arr(c, dtype, shape, c_strides(shape), owned=True)

    def fill(self, arr: Arr, value: str) -> None:
        n = math.prod(arr.shape)
        if n == 0:
            return
        if value == "0":
            self.emit(f"memset({arr.base}, 0, {n} * sizeof({CTYPE[arr.dtype]}));")
        else:
            i = self.fresh("f")
            self.emit(f"for (int64_t {i} = 0; {i} < {n}; {i}++) {arr.base}[{i}] = {value};")

    def copy(self, src: Arr, name: str) -> Arr:
        dst = self.alloc(name, src.shape, src.dtype)
        self.copy_into(dst, src)
        return dst

    def copy_into(self, dst: Arr, src: Arr) -> None:
        idx = []
        for d in src.shape:
            i = self.fresh("c")
            self.emit(f"for (int64_t {i} = 0; {i} < {d}; {i}++) {{")
            self.depth += 1
            idx.append(i)
        self.emit(f"{dst.at(idx)} = {cast(src.at(idx), src.dtype, dst.dtype)};")
        for _ in src.shape:
            self.depth -= 1
            self.emit("}")

    def array_value(self, v: ast.expr, name: str) -> Arr | None:
        """The array ``v`` is (a new one, or a view), or None for a scalar."""
        if isinstance(v, ast.Call):
            f = np_name(v.func)
            if f in ("empty", "zeros", "full"):
                shape = literal(v.args[0])
                shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
                dtype = dtype_kw(v)
                arr = self.alloc(name, shape, dtype)
                if f == "zeros":
                    self.fill(arr, "0")
                elif f == "full":
                    text, t = self.expr(v.args[1])
                    self.fill(arr, cast(text, t, dtype))
                return arr
            if f == "array":
                data = literal(v.args[0])
                dtype = dtype_kw(v)
                if not data:
                    return self.alloc(name, (0,), dtype)
                c = self.fresh(name)  # the values, once, in the library's read-only data
                self.emit(f"static const {CTYPE[dtype]} {c}[{len(data)}] = {{"
                          + ", ".join(c_literal(x, dtype) for x in data) + "};")
                return Arr(c, dtype, (len(data),), (1,))
            if f == "dot":
                return self.dot(v, name)
            if linalg_name(v.func) in LAPACK_OPS - {"det"}:
                return self.lapack(linalg_name(v.func), v, name)
            if f == "eye":
                n = int(literal(v.args[0]))
                dtype = dtype_kw(v)
                arr = self.alloc(name, (n, n), dtype)
                self.fill(arr, "0")
                i = self.fresh("e")
                self.emit(f"for (int64_t {i} = 0; {i} < {n}; {i}++) {arr.base}[{i} * {n + 1}] = 1;")
                return arr
            if f in ("transpose", "broadcast_to", "ascontiguousarray"):
                src = self.array(v.args[0])
                if f == "transpose":
                    perm = tuple(literal(v.args[1]))
                    return Arr(src.base, src.dtype, tuple(src.shape[p] for p in perm),
                               tuple(src.strides[p] for p in perm), src.offset)
                if f == "ascontiguousarray":
                    return src if src.contiguous() else self.copy(src, name)
                shape = tuple(literal(v.args[1]))
                lead = len(shape) - len(src.shape)
                strides = [0] * lead + [0 if s == 1 and shape[lead + d] != 1 else st
                                        for d, (s, st) in enumerate(zip(src.shape, src.strides))]
                return Arr(src.base, src.dtype, shape, tuple(strides), src.offset)
            if isinstance(v.func, ast.Attribute) and v.func.attr in ("reshape", "copy"):
                src = self.array(v.func.value)
                if v.func.attr == "copy":
                    return self.copy(src, name)
                shape = literal(v.args[0])
                shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
                if not src.contiguous():
                    src = self.copy(src, name)
                return Arr(src.base, src.dtype, shape, c_strides(shape), src.offset,
                           src.owned)
            return None
        if isinstance(v, ast.Attribute) and v.attr == "T":
            src = self.array(v.value)
            return Arr(src.base, src.dtype, src.shape[::-1], src.strides[::-1], src.offset)
        if isinstance(v, ast.Name) and isinstance(self.env.get(v.id), Arr):
            return self.env[v.id]
        if isinstance(v, ast.Subscript) and isinstance(self.env.get(root(v)), Arr):
            got = self.index(self.array(v.value), v.slice)
            return got if isinstance(got, Arr) else None
        return None

    def array(self, v: ast.expr) -> Arr:
        got = self.array_value(v, "_view") if not isinstance(v, ast.Name) else self.env.get(v.id)
        if not isinstance(got, Arr):
            raise Unsupported(f"an array expected: {ast.unparse(v)}")
        return got

    def index(self, arr: Arr, key: ast.expr) -> Arr | str:
        """``arr[key]``: an element (C text) or a view."""
        parts = key.elts if isinstance(key, ast.Tuple) else [key]
        if len(parts) > len(arr.shape):
            raise Unsupported("too many indices")
        offset = [] if arr.offset == "0" else [arr.offset]
        shape, strides = [], []
        for d, p in enumerate(parts):
            size, st = arr.shape[d], arr.strides[d]
            if isinstance(p, ast.Slice):
                r = range(*slice(*(None if e is None else literal(e)
                                   for e in (p.lower, p.upper, p.step))).indices(size))
                if r.start and st:
                    offset.append(f"{r.start * st}")
                shape.append(len(r))
                strides.append(st * r.step)
            else:
                const = int_literal(p)
                if const is not None:  # Python's negative index counts from the end
                    if not -size <= const < size:
                        raise Unsupported(f"index {const} out of range for an axis of {size}")
                    p = ast.Constant(const % size)
                text, dtype = self.expr(p)
                if dtype not in ("int64", "int32"):
                    raise Unsupported("a non-integer index")
                if st and text != "0":
                    offset.append(text if st == 1 else f"{st} * {paren(text)}")
        shape += arr.shape[len(parts):]
        strides += arr.strides[len(parts):]
        off = " + ".join(offset) or "0"
        if not shape:
            return f"{arr.base}[{off}]"
        return Arr(arr.base, arr.dtype, tuple(shape), tuple(strides),
                   off if len(offset) <= 1 else f"({off})")

    def dot(self, v: ast.Call, name: str) -> Arr | None:
        a, b = (self.array(x) for x in v.args)
        dtype = a.dtype
        if a.dtype != b.dtype or dtype not in FLOAT or not (1 <= len(a.shape) <= 2
                                                              and 1 <= len(b.shape) <= 2):
            raise Unsupported("np.dot of these operands")
        m = a.shape[0] if len(a.shape) == 2 else 1
        k = a.shape[-1]
        n = b.shape[1] if len(b.shape) == 2 else 1
        if len(a.shape) == 1 and len(b.shape) == 1:
            raise Unsupported("np.dot of two vectors in an expression")
        shape = tuple(s for s, keep in ((m, len(a.shape) == 2), (n, len(b.shape) == 2)) if keep)
        out = self.alloc(name, shape, dtype)
        A = a if len(a.shape) == 2 else Arr(a.base, dtype, (1, k), (0, a.strides[0]), a.offset)
        B = b if len(b.shape) == 2 else Arr(b.base, dtype, (k, 1), (b.strides[0], 0), b.offset)
        C = Arr(out.base, dtype, (m, n), (n, 1))
        self.gemm(A, B, C, m, k, n)
        return out

    def lapack(self, op: str, v: ast.Call, name: str) -> Arr | None:
        """``name = np.linalg.<op>(A[, b])`` of one square matrix (:func:`.arrays.lapack_lines`)."""
        args = [self.array(a) for a in v.args]
        A = args[0]
        n = A.shape[0] if len(A.shape) == 2 and A.shape[0] == A.shape[1] else -1
        if v.keywords or n < 1 or A.dtype not in FLOAT or any(b.dtype != A.dtype
                                                             for b in args):
            raise Unsupported(f"np.linalg.{op} of these operands")
        W = self.copy(A, name if op in ("inv", "cholesky") else "_lu")
        piv, info = self.alloc("_piv", (n,), "int32").base, self.fresh("info")
        self.decls[info] = "int"
        X, nrhs, work, result = None, 0, "", ""
        if op == "solve":
            b = args[1]
            if len(b.shape) not in (1, 2) or b.shape[0] != n:
                raise Unsupported("np.linalg.solve of these operands")
            nrhs = 1 if len(b.shape) == 1 else b.shape[1]
            # LAPACK's columns: the right-hand sides, each contiguous (b.T's rows)
            X = self.copy(b if len(b.shape) == 1 else Arr(b.base, b.dtype, b.shape[::-1],
                                                           b.strides[::-1], b.offset), "_rhs")
        elif op == "inv":
            work = self.alloc("_work", (n, n), A.dtype).base
        elif op == "det":
            result = self.fresh(name)
            self.decls[result] = CTYPE[A.dtype]
        for line in lapack_lines(op, W, n, piv, info, X, nrhs, work, result):
            self.emit(line)
        if op == "det":
            self.env[name] = (result, A.dtype)
            return None
        if op == "solve":
            assert X is not None
            return X if len(args[1].shape) == 1 else Arr(
                X.base, X.dtype, X.shape[::-1], X.strides[::-1], X.offset, True)
        return W

    def vdot(self, v: ast.Call, name: str) -> None:
        """``name = np.dot(a, b)`` of two vectors: a scalar summed in order."""
        a, b = (self.array(x) for x in v.args)
        if a.dtype != b.dtype or a.dtype not in FLOAT:
            raise Unsupported("np.dot of these operands")
        held = self.env.get(name)
        if isinstance(held, tuple) and held[1] == a.dtype:
            acc = held[0]
        else:
            acc = self.fresh(name)
            self.decls[acc] = CTYPE[a.dtype]
            self.env[name] = (acc, a.dtype)
        self.emit(f"{acc} = 0;")
        i = self.fresh("k")
        self.emit(f"for (int64_t {i} = 0; {i} < {a.shape[0]}; {i}++) "
                  f"{acc} += {a.at([i])} * {b.at([i])};")

    def gemm(self, A: Arr, B: Arr, C: Arr, m: int, k: int, n: int) -> None:
        """C = A @ B (:func:`.arrays.gemm_lines`)."""
        lines, decls = gemm_lines(A, B, C, m, k, n, self.fresh)
        self.decls.update(decls)
        for line in lines:
            self.emit(line)

    # -- scalar expressions --------------------------------------------------------------------

    def expr(self, e: ast.expr) -> tuple[str, str]:
        """(C text, dtype) of scalar expression ``e``."""
        if isinstance(e, ast.Constant):
            v = e.value
            if isinstance(v, bool):
                return ("1" if v else "0"), "bool"
            if isinstance(v, int):
                return c_literal(v, "int64"), "int64"
            if isinstance(v, float):
                return c_literal(v, "float64"), "float64"
            raise Unsupported(f"constant {v!r}")
        if isinstance(e, ast.Name):
            held = self.env.get(e.id)
            if isinstance(held, tuple):
                return held
            raise Unsupported(f"name {e.id} is not a scalar")
        if isinstance(e, ast.Attribute):
            if np_name(e) in CONSTS:
                return CONSTS[np_name(e)], "float64"
            raise Unsupported(f"attribute {ast.unparse(e)}")
        if isinstance(e, ast.Subscript):
            got = self.index(self.array(e.value), e.slice)
            if not isinstance(got, str):
                raise Unsupported("an array where a scalar is read")
            return got, self.array(e.value).dtype
        if isinstance(e, ast.UnaryOp):
            text, t = self.expr(e.operand)
            if isinstance(e.op, ast.Not):
                return f"(!{paren(text)})", "bool"
            if isinstance(e.op, ast.USub):
                t2 = "int64" if t == "bool" else t
                return f"(-{paren(cast(text, t, t2))})", t2
            if isinstance(e.op, ast.UAdd):
                return text, t
            raise Unsupported("unary ~")
        if isinstance(e, ast.BinOp):
            return self.binop(e)
        if isinstance(e, ast.BoolOp):
            op = " && " if isinstance(e.op, ast.And) else " || "
            return "(" + op.join(truth(*self.expr(v)) for v in e.values) + ")", "bool"
        if isinstance(e, ast.Compare):
            terms, left = [], self.expr(e.left)
            for op, right in zip(e.ops, e.comparators):
                r = self.expr(right)
                t = promote(left[1], r[1])
                sym = CMP.get(type(op))
                if sym is None:
                    raise Unsupported(f"comparison {type(op).__name__}")
                terms.append(f"{cast(left[0], left[1], t)} {sym} {cast(r[0], r[1], t)}")
                left = r
            return "(" + " && ".join(terms) + ")", "bool"
        if isinstance(e, ast.IfExp):
            c = truth(*self.expr(e.test))
            a, b = self.expr(e.body), self.expr(e.orelse)
            t = promote(a[1], b[1])
            return f"({c} ? {cast(a[0], a[1], t)} : {cast(b[0], b[1], t)})", t
        if isinstance(e, ast.Call):
            return self.call(e)
        raise Unsupported(f"expression {type(e).__name__}")

    def binop(self, e: ast.BinOp) -> tuple[str, str]:
        (a, ta), (b, tb) = self.expr(e.left), self.expr(e.right)
        t = promote(ta, tb)
        if isinstance(e.op, ast.Div):
            t = t if t in FLOAT else "float64"
        elif t == "bool" or t == "int32":
            t = "int64"  # Numba's integer arithmetic: 64 bits
        a, b = cast(a, ta, t), cast(b, tb, t)
        if isinstance(e.op, ast.Pow):
            if t not in FLOAT:
                raise Unsupported("an integer power")
            return f"pow{'f' if t == 'float32' else ''}({a}, {b})", t
        if isinstance(e.op, ast.FloorDiv):
            return (f"sg_floordiv{SUFFIX[t]}({a}, {b})" if t in FLOAT else
                    f"sg_pyfloordiv{SUFFIX[t]}({a}, {b})"), t
        if isinstance(e.op, ast.Mod):
            return (f"sg_remainder{SUFFIX[t]}({a}, {b})" if t in FLOAT else
                    f"sg_pymod{SUFFIX[t]}({a}, {b})"), t
        op = BINOP.get(type(e.op))
        if op is None or op in ("//", "%", "**"):
            raise Unsupported(f"operator {type(e.op).__name__}")
        return f"({a} {op} {b})", t

    def call(self, e: ast.Call) -> tuple[str, str]:
        f = np_name(e.func)
        if isinstance(e.func, ast.Name) and e.func.id == "_sg_floordiv":
            f = "floor_divide"
        if isinstance(e.func, ast.Name) and e.func.id in ("max", "min") and not e.keywords:
            args = [self.expr(a) for a in e.args]
            if len(args) == 2 and all(t in ("int64", "int32") for _, t in args):
                return f"sg_{e.func.id}imum_l({args[0][0]}, {args[1][0]})", "int64"
        if f is None or e.keywords:
            raise Unsupported(f"call {ast.unparse(e.func)}")
        try:
            args = [self.expr(a) for a in e.args]
        except Unsupported as err:  # an array where a scalar function takes scalars
            raise Unsupported(f"np.{f}: {err}") from None
        return np_call(f, args)


def translate(source: str, inputs: dict[str, tuple[str, tuple[int, ...]]],
              outputs: list[str], name: str | None = None,
              out_dtypes: list[str] | None = None,
              calls: dict[str, CFunction] | None = None) -> CFunction:
    """The C function computing Python function ``source`` (one ``def``, in the Numba
    target's subset; its ``return`` is ignored): ``inputs`` gives each parameter's
    ``(dtype, shape)``; ``outputs`` the local names it hands back, each written to an
    output pointer ``o<k>`` (a 0-d one: one element) of dtype ``out_dtypes[k]`` (default:
    the value's); ``calls``: the C functions (loops) it may call, by name. Raises
    :class:`Unsupported`."""
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise Unsupported("not a function")
    t = _Translator(inputs, outputs)
    t.calls = calls or {}
    stack = list(fn.body)  # the statements, nested ones too (an expression assigns none)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Assign):
            for tg in node.targets:
                if isinstance(tg, ast.Name):
                    t.assigned[tg.id] = t.assigned.get(tg.id, 0) + 1
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            t.assigned[node.target.id] = 2
        stack += [*getattr(node, "body", ()), *getattr(node, "orelse", ())]
    returned = [n.id for s in fn.body if isinstance(s, ast.Return) for n in ast.walk(s)
                if isinstance(n, ast.Name)]
    fn.body = fused_scatters(fn.body, list(outputs), source, returned)
    params: list[str] = []
    sig: list[str] = []
    for p in fn.args.args:
        dtype, shape = inputs[p.arg]
        if dtype not in CTYPE:
            raise Unsupported(f"dtype {dtype}")
        if shape:
            c = f"p_{p.arg}"
            t.env[p.arg] = Arr(c, dtype, tuple(shape), c_strides(tuple(shape)))
            sig.append(f"const {CTYPE[dtype]} *{c}")
            params.append("p")
        else:
            c = f"s_{p.arg}".replace("s__", "s_")
            t.env[p.arg] = (c, dtype)
            sig.append(f"{CTYPE[dtype]} {c}")
            params.append(dtype)
    for k, o in enumerate(outputs):
        if o not in t.inputs and o not in t.out_alias:
            t.out_alias[o] = k
    body = [s for s in fn.body if not isinstance(s, ast.Return)]
    for s in body:
        t.stmt(s)
    out_types, out_shapes = [], []
    for k, o in enumerate(outputs):
        held = t.env.get(o)
        if held is None:
            raise Unsupported(f"output {o} is not assigned")
        dtype = out_dtypes[k] if out_dtypes else _out_type(held)
        out_types.append(dtype)
        out_shapes.append(held.shape if isinstance(held, Arr) else ())
        if isinstance(held, Arr):
            if held.base != f"o{k}":
                t.copy_into(Arr(f"o{k}", dtype, held.shape, c_strides(held.shape)), held)
        else:
            t.emit(f"o{k}[0] = {cast(held[0], held[1], dtype)};")
    sig += [f"{CTYPE[d]} *o{k}" for k, d in enumerate(out_types)]
    params += ["p"] * len(outputs)
    fname = name or fn.name
    # internal linkage: the compiler inlines it into its one caller (its entry) and
    # compiles it once; only the entries Python calls are exported
    lines = [f"static int {fname}(" + ", ".join(sig) + ") {"]
    lines += [f"    {ty} {c};" for c, ty in t.decls.items()]
    lines += [f"    {ty} *{c} = ({ty} *)malloc({n} * sizeof({ty}));" for c, ty, n in t.allocs]
    if t.allocs:
        lines.append("    if (" + " || ".join(f"!{c}" for c, _, _ in t.allocs) + ") return 2;")
    body_lines = t.body
    frees = [f"free({c});" for c, _, _ in t.allocs]
    if t.allocs:  # every return frees the local arrays
        lines += [re.sub(r"\breturn (?!0;)(\w+);", "{ " + " ".join(frees) + r" return \1; }", ln)
                  for ln in body_lines]
        lines += ["    " + f for f in frees]
    else:
        lines += body_lines
    lines += ["    return 0;", "}"]
    return CFunction(fname, lines, params, t.raises, list(zip(out_types, out_shapes)))


def _out_type(held: Any) -> str:
    return held.dtype if isinstance(held, Arr) else held[1]
