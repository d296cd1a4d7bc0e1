"""The C printer: the Numba target's module with each kernel a C99 function.

:class:`CPrinter` plans a function as :class:`~..numba.printer.NumbaPrinter` does — the
same kernels (:func:`..numba.fusion.segments`, the same cost model), each kernel's body
printed by the Numba target's :class:`~..numba.loops.StepPrinter` — and writes each body
in C (:func:`.translate.translate`). The module is a NumPy driver: its text holds the C
source as the constant ``_C_SOURCE``, loads it once (:func:`.build.load_library`: compiled
by the system C compiler, cached on disk) and calls each kernel through a small Python
function that checks its arrays, allocates the kernel's results (NumPy arrays,
C-contiguous) and passes every array (the C reads its data pointer). A scan is one C
function running every step (its nested scans C functions it calls), written from the
Numba target's loop function. A kernel whose lines have no C form stays NumPy's lines, and
a scan whose step has one the NumPy target's loop, each counted with the reason
(:meth:`~..numba.printer.NumbaPrinter.stats`; :data:`NOT_IN_C`, :func:`c_why`).

>>> import symgrad as sg
>>> x = sg.var("x", shape=(8,))
>>> src = sg.to_source(sg.sum(sg.tanh(x) * x), backend="c")
>>> [ln.strip() for ln in src.splitlines() if "_f_kernel(" in ln][-1]
't3 = _f_kernel(np.ascontiguousarray(x))  # compiled (C): 3 ops'
>>> print(src[src.index("int _f_kernel("):src.index("return 0;")].strip())
int _f_kernel(const double *p_x, double *o0) {
    double v1_t3;
    double v3_t3_x0;
    double v4_t3_v1;
    double v5_t3_v2;
    v1_t3 = ((double)0);
    for (int64_t v2_t3_i0 = 0; v2_t3_i0 < 8; v2_t3_i0++) {
        v3_t3_x0 = p_x[v2_t3_i0];
        v4_t3_v1 = tanh(v3_t3_x0);
        v5_t3_v2 = (v4_t3_v1 * v3_t3_x0);
        v1_t3 = (v1_t3 + v5_t3_v2);
    }
    o0[0] = v1_t3;
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from ...lines import call
from ...loops import LoopSpec
from ..numba import fusion, special
from ..numba.linalg import LINALG_FORMS
from ..numba.loops import StepPrinter, compiled_loop, lacking, loop_ops
from ..numba.printer import NumbaPrinter
from ..numpy.printer import NumpyPrinter
from ..numpy.table import NUMPY_TYPE
from . import parts
from .arrays import LAPACK_OPS, LAPACK_PRELUDE
from .scalars import CTYPE, Unsupported, prelude
from .translate import translate

if TYPE_CHECKING:
    from ....ir.body import Body
    from ...printer import Printer

__all__ = ["BY_ATTRIBUTES", "CPrinter", "CStepPrinter", "NOT_IN_C", "c_why"]

_PY = {"float64": "float", "float32": "float", "int64": "int", "int32": "int", "bool": "bool"}


NOT_IN_C: dict[str, str] = {
    **dict.fromkeys(special.SPECIAL, "a SciPy special function: SciPy's call in the driver "
                    "(its C kernels are bound for Numba, not for the C target)"),
    **dict.fromkeys(sorted(set(LINALG_FORMS) - {"band"} - LAPACK_OPS), "LAPACK: NumPy's call "
                    "in the driver (the C target binds getrf, getri, getrs and potrf only)"),
    **dict.fromkeys(("sort", "argsort", "searchsorted"),
                    "sorting: NumPy's call in the driver (the C target has no sort of "
                    "NumPy's order)"),
    **dict.fromkeys(("while_loop", "while_vjp"),
                    "a while loop: NumPy's run-time loop in the driver, its condition and "
                    "step the module's functions (their kernels C; the loop is compiled "
                    "whole under backend='numba' only)"),
    **dict.fromkeys(("real", "imag", "conj", "angle"),
                    "complex values: NumPy's calls (the C target compiles real, integer and "
                    "boolean values)"),
}
"""The ops the Numba target compiles and the C target leaves to NumPy, and why."""

NO_SCIPY = ("LAPACK without SciPy: NumPy's call in the driver (the C target calls SciPy's "
            "LAPACK; install scipy)")


def _lapack_here(n: Any) -> str | None:
    return None if find_spec("scipy") is not None else NO_SCIPY


# op -> why a node of it has no C form for its attributes (None: it has one)
BY_ATTRIBUTES: dict[str, Callable[[Any], str | None]] = {
    "matrix_power": lambda n: _lapack_here(n) if int(n.attrs.get("n", 0)) < 0 else None,
    **dict.fromkeys(LAPACK_OPS, _lapack_here),
}


# ops the Numba target also names, whose reason under the C target is the C target's
_OWN_REASON = frozenset(("while_loop", "while_vjp"))


def c_why(n: Any) -> str | None:
    """Why node ``n`` (which the Numba target compiles) has no C form (None: it has)."""
    rule = BY_ATTRIBUTES.get(n.op)
    return (rule(n) if rule is not None else None) or NOT_IN_C.get(n.op)


class CPrinter(NumbaPrinter):
    """The NumPy driver whose kernels are C functions (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.c_functions: list[str] = []
        self.c_entries: list[str] = []  # the entries Python calls (METH_FASTCALL)
        self.c_calls: dict[str, Any] = {}  # a loop's C function -> its CFunction
        self.c_refused: dict[str, str] = {}  # a nested loop without a C form -> why
        self.c_dtypes: dict[str, str] = {}  # the wrappers' dtype constants

    def step_printer(self, body: Any) -> type[Printer]:
        # a step the C target cannot compile runs on NumPy
        return NumpyPrinter if self._step_lacks(body) else CStepPrinter

    def _step_lacks(self, body: Any) -> list[tuple[str, str]]:
        """``(op, why)`` of each node of step ``body`` (and of the loops nested in it) the C
        target cannot compile in a loop: the Numba target's
        (:func:`..numba.loops.lacking`), then :data:`NOT_IN_C`'s; an op both refuse gives
        the C target's reason."""
        lacks = lacking(body, self.lowered, also=c_why)
        return [(op, NOT_IN_C.get(op, why) if op in _OWN_REASON else why) for op, why in lacks]

    def c_loop_function(self, name: str, spec: LoopSpec, stmts: list[str]) -> Any:
        """Scan ``spec`` (its step's lines ``stmts``) as the C function ``name`` (the
        Numba target's loop function, in C), kept in the module's C text: its
        :class:`~.translate.CFunction` and its inputs' ``(dtype, shape)``."""
        text = compiled_loop(name, spec, stmts, wrapper=False)
        first = next(k for k, ln in enumerate(text) if ln.startswith("def "))
        source = "\n".join(text[first:])
        avals = spec.body.avals()
        nc, nx = spec.nc, spec.nx
        shapes = [*avals[:nc], *(((spec.length, *s), d) for s, d in avals[nc:nc + nx]),
                  *avals[nc + nx:]]
        inputs = {p: (d, tuple(s)) for p, (s, d) in zip(spec.signature, shapes)}
        ret = ast.parse(source).body[0].body[-1]
        if not isinstance(ret, ast.Return) or not isinstance(ret.value, ast.Tuple):
            raise Unsupported("a loop function's return")
        outs = [ast.unparse(e) for e in ret.value.elts]
        fn = translate(source, inputs, outs, name, [spec.aval(p)[1] for p in spec.parts],
                       self.c_calls)
        self._keep(fn, f"/* {name}: {spec.length} steps of a scan */")
        self.c_calls[name] = fn
        return fn, inputs

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        """A scan as one C function running every step (and a Python function calling
        it), or the NumPy target's loop where its step has no C form: counted among the
        NumPy calls, with the reason."""
        lacks = self._step_lacks(spec.body)
        if not lacks:
            try:
                return self._c_loop(name, spec, stmts)
            except Unsupported as e:  # the step's lines are still Python: NumPy runs them
                text = "\n".join(stmts)
                inner = [f"its nested loop has no C form: {why}"
                         for n, why in self.c_refused.items() if f"{n}(" in text]
                lacks = [("scan", (inner or [f"no C form: {e}"])[0])]
        op, why = lacks[0]
        self._numpy("scan", f"its step holds {op}: {why}" if op != "scan" else why)
        for op, why in lacks:
            if op != "scan":
                self._numpy(op, why)
        return NumpyPrinter.render_loop(self, name, spec, stmts, step, lists)

    def _c_loop(self, name: str, spec: LoopSpec, stmts: list[str]) -> list[str]:
        """Scan ``spec`` as the C function ``<name>_c`` and the Python function ``name``
        calling it."""
        cname = f"{name}_c"
        fn, inputs = self.c_loop_function(cname, spec, stmts)
        self.fused.append((name, loop_ops(spec.body, self.lowered)))
        return self._wrapper(name, cname, list(spec.signature),
                             [inputs[p] for p in spec.signature], fn, convert=True)

    def _while_bodies(self, n: Any) -> None:
        """None: a while loop runs as the driver's loop over its callbacks (its compiled
        loop is Numba's text)."""
        return None

    def _why_numpy(self, n: Any) -> str | None:
        """Why node ``n`` is NumPy's call (the Numba target's reasons, and
        :data:`NOT_IN_C`)."""
        if n.op in _OWN_REASON:
            return NOT_IN_C[n.op]
        why = super()._why_numpy(n)
        if why is None and c_why(n) is not None:
            return c_why(n)
        dtypes = [self.graph.nodes[a].dtype for a in n.args] + ([] if n.is_call else [n.dtype])
        if why is None and any(d not in CTYPE for d in dtypes):
            return "complex values: NumPy's calls (the C target compiles real values)"
        return why

    def finish(self, out: list[str], code: list[str]) -> str:
        k = len(self.header())
        if self.c_functions:
            functions = "\n\n".join(self.c_functions)
            lapack = [LAPACK_PRELUDE.strip("\n")] if "sg_getrf[" in functions else []
            text = "\n\n".join([prelude(functions).rstrip("\n"), *lapack,
                                 *(f"{parts.MARK}\n{f}" for f in self.c_functions)])
            entries = call("_C_ENTRIES = [", [f"{n!r}" for n in self.c_entries], "]", "")
            kernels = [line for kernel in self.kernels for line in ("", "", *kernel.split("\n"))]
            out[k:k] = ["", f"_C_SOURCE = r'''{text}\n'''", "", *entries,
                        "_C = _load_library(_C_SOURCE, {}, _C_ENTRIES)",
                        *(f"{n} = {v}" for n, v in sorted(self.c_dtypes.items())), *kernels]
        return NumpyPrinter.finish(self, out, code)

    def _kernel(self, seg: fusion.Segment, names: dict[str, Any]) -> list[str]:
        """Segment ``seg`` as a C function and the driver's call of it; NumPy's lines,
        each counted with the reason, where its body has no C form."""
        nodes = self.graph.nodes
        assert self._current is not None
        if self._body is None:
            self._body = StepPrinter(self.lowered, self.state, self.loops.root)
        local = dict(self._current.names)
        local.update({a: self.state.consts[a] for a in seg.inputs if a in self.state.consts})
        params = [local[a] for a in seg.inputs]
        outs = [local[m] for m in seg.outputs]
        why = _no_c(nodes, seg)
        if why is None:
            body = self._body.statements(seg.members, local, set(seg.outputs),
                                         comments=False)
            text = "\n".join([f"def _k({', '.join(params)}):", *body, "    pass"])
            kname = self.helper_name(self._current, "kernel")
            try:
                fn = translate(text, {p: (nodes[a].dtype, tuple(nodes[a].shape))
                                      for p, a in zip(params, seg.inputs)}, outs, kname,
                               [nodes[m].dtype for m in seg.outputs])
            except Unsupported as e:
                why = f"no C form: {e}"
        if why is not None:
            return self._numpy_lines(seg, names, why)
        ops = [nodes[m].op for m in seg.members]
        comment = "/* " + ", ".join(f"{names.get(m, '?')} = {nodes[m].op}"
                                    for m in seg.members)[:200].replace("*/", "* /") + " */"
        self._keep(fn, comment)
        types = [(nodes[a].dtype, tuple(nodes[a].shape)) for a in seg.inputs]
        self.kernels.append("\n".join(self._wrapper(kname, kname, params, types, fn)))
        self.fused.append((kname, ops))
        self._contiguous.update(seg.outputs)
        args = []
        for a in seg.inputs:
            n = nodes[a]
            text = self.operand(a, n, names)
            args.append(text if a in self._contiguous else
                        f"np.ascontiguousarray({text})" if n.shape
                        else f"{NUMPY_TYPE[n.dtype]}({text})")
        held = [names[m] for m in seg.outputs]
        out = call(f"{', '.join(held)} = {kname}(", args, ")")
        out[0] += f"  # compiled (C): {len(ops)} ops" if len(out[0]) < 76 else ""
        return out

    def _keep(self, fn: Any, comment: str) -> None:
        """C function ``fn`` in the module's C text, with ``<name>_py``, the entry Python
        calls: a ``METH_FASTCALL`` function (:func:`.build.load_library` makes it a Python
        function: no :mod:`ctypes` at the call) taking each array as the NumPy array
        itself, whose data pointer it reads (:data:`.scalars.PRELUDE`'s ``SG_DATA``: far
        cheaper than ``ndarray.ctypes``), and each scalar as a Python number; the GIL is
        released while the C function runs."""
        get = {"float64": "SG_FLOAT", "float32": "(float)SG_FLOAT", "int64": "SG_INT",
               "int32": "(int32_t)SG_INT", "bool": "(_Bool)SG_BOOL"}
        lines = [f"void *{fn.name}_py(void *self, void *const *a, long n) {{",
                 f"    if (n != {len(fn.params)}) return SG_RESULT(self, 5);"]
        args = []
        for k, kind in enumerate(fn.params):
            if kind == "p":
                lines.append(f"    void *x{k} = SG_DATA(a[{k}]);")
            else:
                lines.append(f"    {CTYPE[kind]} x{k} = {get[kind]}(self, a[{k}]);")
            args.append(f"x{k}")
        if len(args) > fn.params.count("p"):  # a number Python could not convert
            lines.append("    if (SG_ERROR(self)) return 0;")
        lines += ["    void *gil = SG_UNLOCK(self);", f"    int e = {fn.name}({', '.join(args)});",
                  "    SG_LOCK(self, gil);", "    return SG_RESULT(self, e);", "}"]
        self.c_functions.append("\n".join([comment, *fn.lines, "", *lines]))
        self.c_entries.append(f"{fn.name}_py")

    def _wrapper(self, name: str, cname: str, params: list[str],
                 types: list[tuple[str, tuple]], fn: Any, convert: bool = False) -> list[str]:
        """The Python function ``name`` calling C function ``cname`` over ``params`` (of
        ``types``: dtype and shape): its arrays checked (a pointer carries neither shape
        nor dtype) — or, with ``convert``, made C-contiguous of their dtype first —, the
        results allocated, and returned (a 0-d one as a NumPy scalar). Its parameters are
        ``_a0``, ``_a1``...: no variable's name shadows the module's names in it."""
        own = [f"_a{k}" for k in range(len(params))]
        lines = call(f"def {name}(", own, "):", "")
        lines.append(f'    """Calls the C function {cname} (compiled by symgrad\'s C target)'
                     f' with {", ".join(params)}."""')
        args = []
        for shown, p, (dtype, shape) in zip(params, own, types):
            if shape:
                dt = self._dtype(dtype)
                if convert:  # then only its shape can be wrong
                    lines.append(f"    {p} = np.ascontiguousarray({p}, dtype={dt})")
                    lines.append(f"    if {p}.shape != {tuple(shape)!r}:")
                else:  # (a dtype is compared by identity first: the common case, cheaply)
                    lines.append(f"    if (type({p}) is not np.ndarray or {p}.shape != "
                                 f"{tuple(shape)!r}")
                    lines.append(f"            or ({p}.dtype is not {dt} and {p}.dtype != {dt})")
                    lines.append(f"            or not {p}.flags.c_contiguous):")
                lines.append(f"        raise ValueError('{name}: {shown} must be a C-contiguous '")
                lines.append(f"                         '{dtype} array of shape {tuple(shape)!r}')")
                args.append(p)
            else:
                args.append(f"{_PY[dtype]}({p})")
        rets = []
        for k, (dtype, shape) in enumerate(fn.outs):
            lines.append(f"    _o{k} = np.empty({tuple(shape)!r}, {self._dtype(dtype)})")
            args.append(f"_o{k}")
            rets.append(f"_o{k}" if shape else f"_o{k}[()]")
        ret = (f"({', '.join(rets)},)" if len(rets) == 1 else f"({', '.join(rets)})"
               ) if convert else ", ".join(rets)
        return [*lines, *call(f"_e = _C.{cname}_py(", args, ")", "    "), "    if _e:",
                f"        raise _failure(_e, {name!r})", f"    return {ret}"]

    def _dtype(self, dtype: str) -> str:
        """The module's name of NumPy's dtype object ``dtype`` (bound once, when the module
        runs: a type such as ``np.float64`` is converted to a dtype at every call)."""
        name = f"_DT_{dtype}"
        self.c_dtypes[name] = f"np.dtype({NUMPY_TYPE[dtype]})"
        return name

    def _numpy_lines(self, seg: fusion.Segment, names: dict[str, Any], why: str) -> list[str]:
        """The segment's nodes as NumPy's lines, each counted with ``why``."""
        nodes = self.graph.nodes
        for m in seg.members:
            self._numpy(nodes[m].op, why)
        keep = {*seg.outputs, *seg.members, *seg.inputs}
        return NumpyPrinter.statements(self, list(seg.members), names, keep, False)


class CStepPrinter(StepPrinter):
    """The step of a loop compiled in C: a loop nested in it is a C function of its own
    (kept with the module's C text), which the step's C calls."""

    def step_printer(self, body: Body) -> type[Printer]:
        return CStepPrinter

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        root = self.loops.root.printer  # the module's CPrinter: it keeps the C text
        try:
            root.c_loop_function(name, spec, stmts)
        except Unsupported as e:  # a Python function: the outer loop's C cannot call it,
            # so that loop is the NumPy target's too (its lines run in Python)
            root.c_refused[name] = str(e)
            return NumpyPrinter.render_loop(self, name, spec, stmts, step, lists)
        return []


def _no_c(nodes: Any, seg: fusion.Segment) -> str | None:
    """Why segment ``seg`` has no C form before its body is printed (None: try it)."""
    for a in (*seg.inputs, *seg.members):
        if nodes[a].is_call:
            return "a call with several results: NumPy's (LAPACK) in the driver"
        if nodes[a].dtype not in CTYPE:
            return (f"dtype {nodes[a].dtype}: NumPy's call (the C target compiles real, "
                    "integer and boolean values)")
    return None
