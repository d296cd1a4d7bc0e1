"""The C printer: the Numba target's module with each kernel a C99 function.

:class:`CPrinter` plans a function as :class:`~..numba.printer.NumbaPrinter` does — the
same kernels (:func:`..numba.fusion.segments`, the same cost model), each kernel's body
printed by the Numba target's :class:`~..numba.loops.StepPrinter` — and writes each body
in C (:func:`.translate.translate`). The module is a NumPy driver: its text holds the C
source as the constant ``_C_SOURCE``, loads it once (:func:`.build.load_library`: compiled
by the system C compiler, cached on disk) and calls each kernel through a small Python
function that allocates the kernel's results (NumPy arrays, C-contiguous) and passes
every array as a pointer. A kernel whose lines have no C form stays NumPy's lines, each
counted with the reason (:meth:`~..numba.printer.NumbaPrinter.stats`); so does a scan
(the NumPy target's loop), and complex values (NumPy's calls).

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

from typing import TYPE_CHECKING, Any

from ...lines import call
from ...loops import LoopSpec
from ..numba import fusion, special
from ..numba.linalg import LINALG_FORMS
from ..numba.loops import StepPrinter
from ..numba.printer import NumbaPrinter
from ..numpy.printer import NumpyPrinter
from ..numpy.table import NUMPY_TYPE
from .scalars import CTYPE, PRELUDE, Unsupported
from .translate import translate

if TYPE_CHECKING:
    from ...printer import Printer

__all__ = ["CPrinter", "NOT_IN_C", "SCAN_WHY"]

SCAN_WHY = ("a loop: the C target runs scans as the NumPy target's loops (its kernels "
            "are straight-line code)")


NOT_IN_C: dict[str, str] = {
    **dict.fromkeys(special.SPECIAL, "a SciPy special function: SciPy's call in the driver "
                    "(its C kernels are bound for Numba, not for the C target)"),
    **dict.fromkeys(LINALG_FORMS, "LAPACK: NumPy's call in the driver (the C target "
                    "binds no LAPACK)"),
    **dict.fromkeys(("sort", "argsort", "searchsorted"),
                    "sorting: NumPy's call in the driver (the C target has no sort of "
                    "NumPy's order)"),
    **dict.fromkeys(("real", "imag", "conj", "angle"),
                    "complex values: NumPy's calls (the C target compiles real, integer and "
                    "boolean values)"),
}
"""The ops the Numba target compiles and the C target leaves to NumPy, and why."""


class CPrinter(NumbaPrinter):
    """The NumPy driver whose kernels are C functions (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.c_functions: list[str] = []
        self.c_signatures: dict[str, tuple[str, ...]] = {}

    def step_printer(self, body: Any) -> type[Printer]:
        return NumpyPrinter

    def render_loop(self, name: str, spec: LoopSpec, stmts: list[str], step: Printer,
                    lists: tuple = ()) -> list[str]:
        self._numpy("scan", SCAN_WHY)
        return NumpyPrinter.render_loop(self, name, spec, stmts, step, lists)

    def _why_numpy(self, n: Any) -> str | None:
        """Why node ``n`` is NumPy's call (the Numba target's reasons, and
        :data:`NOT_IN_C`)."""
        why = super()._why_numpy(n)
        if why is None and n.op in NOT_IN_C:
            return NOT_IN_C[n.op]
        dtypes = [self.graph.nodes[a].dtype for a in n.args] + ([] if n.is_call else [n.dtype])
        if why is None and any(d not in CTYPE for d in dtypes):
            return "complex values: NumPy's calls (the C target compiles real values)"
        return why

    def finish(self, out: list[str], code: list[str]) -> str:
        k = len(self.header())
        if self.c_functions:
            text = "\n\n".join([PRELUDE.rstrip("\n"), *self.c_functions])
            sigs = call("_C_SIGNATURES = {", [f"{n!r}: {s!r}" for n, s in
                                              self.c_signatures.items()], "}", "")
            kernels = [line for kernel in self.kernels for line in ("", "", *kernel.split("\n"))]
            out[k:k] = ["", f"_C_SOURCE = r'''{text}\n'''", "", *sigs,
                        "_C = _load_library(_C_SOURCE, _C_SIGNATURES)", *kernels]
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
        self.c_functions.append("\n".join([comment, *fn.lines]))
        self.c_signatures[kname] = tuple(fn.params)
        self.kernels.append("\n".join(self._wrapper(kname, params, seg, fn.raises)))
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

    def _wrapper(self, kname: str, params: list[str], seg: fusion.Segment,
                 raises: bool) -> list[str]:
        """The Python function calling C function ``kname``: checks its arrays' shapes
        and dtypes (a pointer carries neither), allocates the results, calls, and
        returns them (a 0-d one as a NumPy scalar)."""
        nodes = self.graph.nodes
        lines = call(f"def {kname}(", params, "):", "")
        lines.append(f'    """Calls the C function {kname} (compiled by symgrad\'s C target)."""')
        args = []
        for p, a in zip(params, seg.inputs):
            n = nodes[a]
            if n.shape:
                lines.append(f"    if {p}.shape != {tuple(n.shape)!r} or {p}.dtype != "
                             f"{NUMPY_TYPE[n.dtype]} or not {p}.flags.c_contiguous:")
                lines.append(f"        raise ValueError('{kname}: {p} must be a C-contiguous "
                             f"{n.dtype} array of shape {tuple(n.shape)!r}')")
                args.append(f"{p}.ctypes.data")
            else:
                args.append(p)
        rets = []
        for k, m in enumerate(seg.outputs):
            n = nodes[m]
            lines.append(f"    _o{k} = np.empty({tuple(n.shape)!r}, dtype={NUMPY_TYPE[n.dtype]})")
            args.append(f"_o{k}.ctypes.data")
            rets.append(f"_o{k}" if n.shape else f"_o{k}[()]")
        lines += [*call(f"_e = _C.{kname}(", args, ")", "    "),
                  "    if _e:",
                  f"        raise _failure(_e, {kname!r})",
                  f"    return {', '.join(rets)}"]
        return lines

    def _numpy_lines(self, seg: fusion.Segment, names: dict[str, Any], why: str) -> list[str]:
        """The segment's nodes as NumPy's lines, each counted with ``why``."""
        nodes = self.graph.nodes
        for m in seg.members:
            self._numpy(nodes[m].op, why)
        keep = {*seg.outputs, *seg.members, *seg.inputs}
        return NumpyPrinter.statements(self, list(seg.members), names, keep, False)


def _no_c(nodes: Any, seg: fusion.Segment) -> str | None:
    """Why segment ``seg`` has no C form before its body is printed (None: try it)."""
    for a in (*seg.inputs, *seg.members):
        if nodes[a].is_call:
            return "a call with several results: NumPy's (LAPACK) in the driver"
        if nodes[a].dtype not in CTYPE:
            return (f"dtype {nodes[a].dtype}: NumPy's call (the C target compiles real, "
                    "integer and boolean values)")
    return None
