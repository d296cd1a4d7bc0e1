"""What to emit, resolved once: the stages between a user's call and the emitted text.

``to_source``, ``compile``, ``scipy_functions``, the CLI and the sparse path all build a
:class:`Request` (the outputs in one graph, the inputs in call order, the output names,
the target and the options, every user value made exact and checked), then
:func:`lower` runs the compile pipeline on it once: the :class:`Lowered` stage holds the
graph to emit, and its :meth:`Lowered.source` is the module's text (printed by the
target's printer, :mod:`symgrad.backends.targets`). Each stage prints as a short summary,
as JAX's ``Traced -> Lowered -> Compiled``.

>>> import symgrad as sg
>>> x = sg.var("x", shape=(3,))
>>> f = sg.sum(sg.sin(x))
>>> req = request([f, sg.grad(f, x)], name="g", output_names=["value", "dx"])
>>> print(req)
request for numpy (scalars='math', optimize, exact): def g(x) -> (value, dx)
>>> print(lower(req))
lowered for numpy: 4 nodes; def g(x) -> (value, dx)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..base.errors import BackendError, SymgradError
from ..ir.body import Body
from ..ir.expr import Expr
from ..ir.graph import Graph
from .boundary import emit_request, exact_flag
from .docstring import Derivative, derivatives
from .loops import printed_bodies
from .naming import check_function_name
from .target import Target
from .targets import TARGETS, target

__all__ = ["Function", "Lowered", "Request", "lower", "optimized_body", "request"]


@dataclass(frozen=True)
class Function:
    """One function of the module: ``def name(*inputs)`` returning ``outputs``."""

    name: str
    outputs: tuple[int, ...]  # node ids in the request's graph
    inputs: tuple[str, ...]  # variable names in call order
    single: bool  # one output returned bare (not a tuple)
    output_names: tuple[str, ...] | None = None  # names of the results in the code
    notes: tuple[str | None, ...] = ()  # what each result is, for the docstring (None: said
    # by symgrad: the derivative it is, or the expression)
    exprs: tuple[Expr, ...] = ()  # the outputs as the user gave them (their own graphs)

    def __str__(self) -> str:
        outs = ", ".join(self.output_names or [f"<{len(self.outputs)} outputs>"])
        outs = outs if self.single else f"({outs})"
        return f"def {self.name}({', '.join(self.inputs)}) -> {outs}"


@dataclass(frozen=True)
class Request:
    """A resolved emit request: every later step reads it and nothing re-checks it."""

    graph: Graph
    functions: tuple[Function, ...]
    target: Target
    scalars: str = "math"
    optimize: bool = True
    fast_math: bool = False
    constants: tuple[tuple[str, Any], ...] = ()  # public module constants (a pattern)
    # the names of the constants holding the (one) function's sparse pattern: rows, cols,
    # shape (a sparse derivative's request; None otherwise)
    pattern: tuple[str, str, str] | None = None

    def __str__(self) -> str:
        opts = [f"scalars={self.scalars!r}", "optimize" if self.optimize else "as built",
                "fast_math" if self.fast_math else "exact"]
        return (f"request for {self.target.name} ({', '.join(opts)}): "
                + "; ".join(map(str, self.functions)))

    def with_constants(self, *constants: tuple[str, Any]) -> Request:
        """The request with more public module constants (``("HESS_LAYOUT", ...)``)."""
        return replace(self, constants=(*self.constants, *constants))

    def with_notes(self, *notes: str | None) -> Request:
        """The request whose (one) function's docstring says ``notes[k]`` of output ``k``."""
        (fn,) = self.functions
        return replace(self, functions=(replace(fn, notes=tuple(notes)),))


@dataclass(frozen=True)
class Lowered:
    """The graph to emit (the request's, rebuilt through the compile pipeline), with each
    function's outputs as ids of it and the Exprs the docstrings print for them; the step
    bodies of its loops as emitted (:attr:`bodies`, through the same passes); for the stage
    of one loop step (:meth:`step`), that step's body."""

    request: Request
    graph: Graph
    functions: tuple[Function, ...]
    shown: dict[int, Expr]  # output id -> the Expr as the user wrote it
    derivatives: dict[int, Derivative] = field(default_factory=dict)  # outputs that are ones
    # each loop body the module prints (nested loops' too) -> that body as emitted: filled
    # by lower(); a body first asked for by :meth:`optimized` is added (shared by the steps)
    bodies: dict[Body, Body] = field(default_factory=dict)
    body: Body | None = None  # the step's body (as emitted) of a loop step's stage

    def params(self, k: int = 0) -> list[Any]:
        """The input nodes (of :attr:`graph`) of function ``k``, in call order."""
        variables = self.graph.variables
        return [self.graph.nodes[variables[n]] for n in self.functions[k].inputs]

    def optimized(self, body: Body) -> Body:
        """Loop body ``body`` as emitted: through the passes the request runs on the
        function around it (once; kept in :attr:`bodies`)."""
        found = self.bodies.get(body)
        if found is None:
            found = self.bodies[body] = optimized_body(body, self.request)
        return found

    def step(self, body: Body) -> Lowered:
        """The stage of one step of loop body ``body``: the function ``step`` from the
        inputs of the body as emitted (:meth:`optimized`) to its outputs."""
        new = self.optimized(body)
        graph, nodes = new.graph, new.graph.nodes
        if any(nd.is_const and nd.shape != () for nd in nodes):
            raise SymgradError("a loop body holds an array constant; it cannot be emitted")
        fn = Function("step", tuple(new.outputs), tuple(nodes[v].name for v in new.inputs),
                      False)
        return Lowered(replace(self.request, graph=graph, functions=(fn,)), graph, (fn,), {},
                       bodies=self.bodies, body=new)

    def source(self) -> str:
        """The module's text, printed by the target's printer."""
        return self.request.target.printer(self).module()

    def __str__(self) -> str:
        return (f"lowered for {self.request.target.name}: {len(self.graph)} nodes; "
                + "; ".join(map(str, self.functions)))


def request(outputs: Expr | Sequence[Expr] | Any, inputs: Sequence[Expr | str] | None = None,
            name: str = "f", *, output_names: Sequence[str] | None = None,
            scalars: str = "math", optimize: bool = True, fast_math: bool = False,
            backend: str = "numpy") -> Request:
    """The :class:`Request` of ``to_source``/``compile``'s arguments (see
    :func:`~symgrad.to_source`); a sparse derivative gives one function returning ``data``
    and its pattern as the constants ``ROWS``, ``COLS`` and ``SHAPE``."""
    from ..transforms.sparse import SparseExpr

    name, inputs, output_names, scalars = emit_request(name, inputs, output_names, scalars)
    if scalars not in ("numpy", "math"):
        raise SymgradError(f"scalars must be 'numpy' or 'math', got {scalars!r}")
    check_function_name(name)
    tgt = target(backend)
    optimize = exact_flag(optimize, "optimize")
    fast_math = exact_flag(fast_math, "fast_math")
    if fast_math and not optimize:
        raise SymgradError("fast_math=True needs optimize=True")
    if isinstance(outputs, SparseExpr):
        return _sparse(outputs, inputs, name, scalars, tgt)
    graph, ids, single = output_list(outputs)
    if output_names is not None and len(output_names) != len(ids):
        raise SymgradError(f"output_names has {len(output_names)} names for {len(ids)} outputs")
    fn = Function(name, tuple(ids), call_order(graph, ids, inputs), single,
                  None if output_names is None else tuple(output_names),
                  exprs=(outputs,) if single else tuple(outputs))
    return Request(graph, (fn,), tgt, scalars, optimize, fast_math)


def _sparse(s: Any, inputs: Any, name: str, scalars: str, tgt: Target) -> Request:
    """The request of a sparse derivative: ``def name(*inputs) -> data`` (the non-zeros, in
    a fixed row-major pattern) with the pattern as module constants ``ROWS``, ``COLS`` and
    ``SHAPE``, ready for ``scipy.sparse.csr_matrix((data, (ROWS, COLS)), SHAPE)`` or an
    IPOPT-style ``(iRow, jCol, values)`` interface. NumPy only: the pattern is NumPy arrays.

    >>> import symgrad as sg
    >>> x = sg.var("x", shape=(4,))
    >>> req = request(sg.jacobian(x[1:] * x[:-1], x, sparse=True), name="jac")
    >>> [c for c, _ in req.constants], req.constants[2][1]
    (['ROWS', 'COLS', 'SHAPE'], (3, 4))
    """
    if not tgt.numpy_only:
        raise BackendError(
            f"sparse derivatives are emitted for backend='numpy' only (their pattern is NumPy "
            f"arrays), not {tgt.name!r}; emit the dense derivative for {tgt.name!r}, or "
            "use backend='numpy'")
    graph, ids = s.data.graph, (s.data.node,)
    fn = Function(name, ids, call_order(graph, list(ids), inputs), True, ("data",))
    return Request(graph, (fn,), tgt, scalars, False, False, pattern_constants(s),
                   ("ROWS", "COLS", "SHAPE"))


def pattern_constants(s: Any, prefix: str = "") -> tuple[tuple[str, Any], ...]:
    """``ROWS``, ``COLS`` and ``SHAPE`` (with ``prefix``) of sparse derivative ``s``."""
    return ((f"{prefix}ROWS", s.rows), (f"{prefix}COLS", s.cols),
            (f"{prefix}SHAPE", tuple(s.pattern.shape)))


def lower(req: Request) -> Lowered:
    """The request's graph through the stages ``compile`` runs
    (:func:`symgrad.passes.pipeline.compile_stages`: the compile passes if ``optimize``,
    the non-exact ones too if ``fast_math``, then the target's own ``passes``, then calls
    that are one loop made one call); the step body of each of its loops (nested ones
    too) through the same passes, once."""
    from ..passes import pipeline

    graph = req.graph
    groups = [list(fn.outputs) for fn in req.functions]
    stages = pipeline.compile_stages(req.optimize, req.fast_math, req.target.passes)
    new, new_groups = pipeline.run_stages(stages, graph, groups)
    fns = tuple(replace(fn, outputs=tuple(ids)) for fn, ids in zip(req.functions, new_groups))
    shown = {n: fn.exprs[k] if fn.exprs else Expr(graph, o)
             for fn, new_fn in zip(req.functions, fns)
             for k, (n, o) in enumerate(zip(new_fn.outputs, fn.outputs))}
    lowered = Lowered(req, new, fns, shown, _derivatives(shown, new))
    stack = printed_bodies(new)
    while stack:  # every step a loop function prints, nested loops' included
        body = stack.pop()
        if body not in lowered.bodies:
            stack += printed_bodies(lowered.optimized(body).graph)
    return lowered


def optimized_body(body: Body, req: Request) -> Body:
    """``body`` rebuilt through the passes ``req`` runs on the function around it (the
    compile passes; with ``fast_math`` the others too, so ``t - t`` in a step's VJP goes),
    remembered by the body (:meth:`~symgrad.ir.body.Body.memo`, as its VJP is)."""
    if not req.optimize:
        return body

    def build() -> Body:
        from ..passes import pipeline

        new, (outs,) = pipeline.optimize(body.graph, [list(body.outputs)], req.fast_math,
                                         req.target.passes)
        nodes = body.graph.nodes
        ins = [new.variables[nodes[v].name] for v in body.inputs]
        folded = any(nd.is_const and nd.shape != () for nd in new.nodes)
        # a folded array constant has no place in a step (its constants are operands)
        return body if folded else Body(new, ins, outs, body.n_in)

    return body.memo(("optimized", req.fast_math, req.target.passes), build)


def _derivatives(shown: dict[int, Expr], graph: Graph) -> dict[int, Derivative]:
    """The outputs that are derivatives, read from the graphs the user built them in (the
    compile passes and the import into one graph keep no transform records of them); the
    variables as nodes of ``graph``."""
    found: dict[int, dict[int, Derivative]] = {}
    outputs = {(id(e.graph), e.node): i for i, e in shown.items()}
    others: dict[tuple[int, int], int] = {}
    out = {}
    for i, e in shown.items():
        table = found.get(id(e.graph))
        if table is None:
            table = found[id(e.graph)] = derivatives(e.graph)
        d = table.get(e.node)
        if d is not None:
            def var(v: int | None, g: Graph = e.graph) -> int | None:
                return None if v is None else graph.variables.get(g.nodes[v].name, -1)

            def of(j: int | None, g: Graph = e.graph) -> int | None:
                """An output too, or else a negative id (no line here) of its own."""
                if j is None:
                    return None
                return outputs.get((id(g), j), -1 - others.setdefault((id(g), j), len(others)))

            out[i] = Derivative(d.kind, var(d.var), of(d.of), var(d.first),
                                tuple(var(w) for w in d.wrt), tuple(var(w) for w in d.chain),
                                of(d.root))
    return out


# -- outputs and inputs ----------------------------------------------------------------------


def output_list(outputs: Any) -> tuple[Graph, list[int], bool]:
    """The outputs as node ids of one graph (imported into the largest one if needed)."""
    single = isinstance(outputs, Expr)
    outs = [outputs] if single else list(outputs) if isinstance(outputs, (list, tuple)) else None
    if not outs:
        raise SymgradError("to_source needs an Expr or a non-empty list of Exprs to emit")
    for e in outs:
        if not isinstance(e, Expr):
            raise SymgradError(f"can only emit symgrad expressions, got {type(e).__name__}")
    graph = max((e.graph for e in outs), key=len)
    ids = [e.node if e.graph is graph else graph.import_node(e.graph, e.node) for e in outs]
    return graph, ids, single


def call_order(graph: Graph, outs: Sequence[int], inputs: Any) -> tuple[str, ...]:
    """The names of the parameters in call order: ``inputs`` checked, or by default the
    variables in the order they first appear in the outputs (see :func:`resolve_inputs`)."""
    nodes = graph.nodes
    used = [i for i in graph.ancestors(outs) if nodes[i].is_var]
    return tuple(nodes[i].name for i in resolve_inputs(graph, inputs, used, outs))


def resolve_inputs(graph: Graph, inputs: Any, used: list[int],
                   outputs: Sequence[int] = ()) -> list[int]:
    """Parameter node ids in call order; every used variable must be among them.

    Without ``inputs``: the order in which the variables first appear when the outputs are
    read left to right, operands in order (``V @ tanh(W @ x + b) + g`` -> V, W, x, b, g),
    the outputs one after another; variables no output reaches that way come last, by id.
    """
    nodes = graph.nodes
    if inputs is None:
        return first_appearance(graph, outputs, used)
    if isinstance(inputs, (str, Expr)):
        inputs = [inputs]
    params: list[int] = []
    for item in inputs:
        if isinstance(item, Expr):
            if not item.data.is_var:
                from .docstring import expr_text

                raise SymgradError("inputs must be variables, got the expression "
                                   f"{expr_text(item)}")
            item = item.name
        if not isinstance(item, str):
            raise SymgradError(f"inputs are variable Exprs or names, got {item!r}")
        if item not in graph.variables:
            known = ", ".join(sorted(graph.variables)) or "none"
            raise SymgradError(f"input '{item}' is not a variable of these expressions "
                               f"(their variables: {known})")
        i = graph.variables[item]
        if i in params:
            raise SymgradError(f"input '{item}' is listed twice")
        params.append(i)
    missing = [nodes[i].name for i in used if i not in params]
    if missing:
        listed = ", ".join(str(nodes[i].name) for i in params) or "none"
        raise SymgradError(
            f"the outputs use variable(s) {', '.join(map(repr, missing))} that are not in "
            f"inputs (inputs: {listed}); add them to inputs or leave inputs=None"
        )
    return params


def first_appearance(graph: Graph, outputs: Sequence[int], among: Sequence[int]) -> list[int]:
    """The variables ``among`` in reading order of ``outputs`` (an iterative pre-order
    walk, each node once)."""
    wanted, seen, out = set(among), set(), []
    stack = list(reversed(outputs))
    nodes = graph.nodes
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        if i in wanted:
            out.append(i)
        stack.extend(reversed(nodes[i].args))
    return out + sorted(wanted.difference(out))


def numpy_request(graph: Graph, functions: Sequence[Function],
                  constants: Sequence[tuple[str, Any]] = (), tgt: Target | None = None
                  ) -> Request:
    """A request for NumPy source (or ``tgt``'s: Numba's NumPy driver) of several functions
    over ``graph`` (SciPy's helpers), through the exact compile passes."""
    return Request(graph, tuple(functions), tgt or TARGETS["numpy"], constants=tuple(constants))
