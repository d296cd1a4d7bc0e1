"""The ``symgrad`` command: derivatives, NumPy source, DOT graphs and backprop tables.

Subcommands: ``grad``, ``source``, ``dot``, ``html``, ``explain``, ``demo`` (``symgrad CMD
--help``); ``symgrad --version``. User mistakes (bad expression text, shapes, options, files
that cannot be written, a closed output pipe) exit with status 2 and a one-paragraph message
on stderr, never a traceback. Long steps report their progress on stderr (timings at INFO,
a bar when a step is predicted to take over a second and stderr is a terminal); ``--quiet``
turns that off, ``--verbose`` shows every step.

>>> main(["grad", "x * y + sin(x)", "--wrt", "x,y"])  # doctest: +SKIP
d/dx = cos(x) + y
d/dy = x
0
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from ..base.errors import SymgradError

_SHAPE = re.compile(r"\s*([^\W\d]\w*)\s*=\s*(\(\s*\)|\d+(?:\s*x\s*\d+)*)?\s*\Z")
_DTYPE = re.compile(r"\s*([^\W\d]\w*)\s*=\s*(\w+)\s*\Z")


class UsageError(SymgradError):
    """A command-line option that cannot be understood."""


# -- option parsing ------------------------------------------------------------------------


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: ``x=[1,2],y=3`` -> ``["x=[1,2]", "y=3"]``."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``["W=4x3", "x=3", "s="]`` -> ``{"W": (4, 3), "x": (3,), "s": ()}``.

    >>> parse_shapes(["W=4x3,x=3", "s="])
    {'W': (4, 3), 'x': (3,), 's': ()}
    """
    out: dict[str, tuple[int, ...]] = {}
    for item in items:
        for part in _split_top(item):
            m = _SHAPE.match(part)
            if not m:
                raise UsageError(f"bad --shape {part!r}: write NAME=4x3 for a 4 by 3 array, "
                                 "NAME=3 for a vector, NAME= for a scalar")
            dims = m.group(2) or ""
            out[m.group(1)] = tuple(int(d) for d in re.findall(r"\d+", dims))
    return out


def parse_dtypes(items: Sequence[str]) -> dict[str, str]:
    """``["y=int64"]`` -> ``{"y": "int64"}``.

    >>> parse_dtypes(["y=int64,m=bool"])
    {'y': 'int64', 'm': 'bool'}
    """
    out: dict[str, str] = {}
    for item in items:
        for part in _split_top(item):
            m = _DTYPE.match(part)
            if not m:
                raise UsageError(f"bad --dtype {part!r}: write NAME=int64 (or float64, "
                                 "float32, int32, bool)")
            out[m.group(1)] = m.group(2)
    return out


def parse_values(items: Sequence[str]) -> dict[str, Any]:
    """``["x1=2,x2=3", "v=[1,2]"]`` -> ``{"x1": 2, "x2": 3, "v": [1, 2]}`` (literals only).

    >>> parse_values(["x1=2,x2=-3.5", "v=[1, 2]"])
    {'x1': 2, 'x2': -3.5, 'v': [1, 2]}
    """
    out: dict[str, Any] = {}
    for item in items:
        for part in _split_top(item):
            name, sep, text = part.partition("=")
            name = name.strip()
            if not sep or not name.isidentifier():
                raise UsageError(f"bad --at {part!r}: write NAME=VALUE, e.g. x1=2,x2=3 "
                                 "or v=[1,2,3]")
            out[name] = _literal(name, text)
    return out


def parse_names(text: str | None, option: str) -> list[str] | None:
    """``"W,x,b"`` -> ``["W", "x", "b"]`` (None stays None).

    >>> parse_names("W, x,b", "--inputs")
    ['W', 'x', 'b']
    """
    if text is None:
        return None
    names = [w.strip() for w in text.split(",") if w.strip()]
    if not names:
        raise UsageError(f"{option} needs at least one variable name, e.g. {option} x,y")
    for name in names:
        if not name.isidentifier():
            raise UsageError(f"{option}: {name!r} is not a variable name")
    return names


def _literal(name: str, text: str) -> Any:
    if len(text) > 100_000:
        raise UsageError(f"--at value for {name!r} is too long")
    import ast

    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    stack = [value]
    while stack:  # numbers or (nested) lists of numbers only
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise UsageError(f"--at value for {name!r} must be a number or a list of "
                             f"numbers, got {text.strip()!r}")
    import numpy as np

    try:
        np.array(value, dtype=float)
    except ValueError:
        raise UsageError(f"--at value for {name!r} is ragged: every row of an array needs "
                         f"the same length, got {text.strip()!r}") from None
    return value


def _wrt_names(text: str | None) -> list[str] | None:
    return parse_names(text, "--wrt")


# -- building the expression -----------------------------------------------------------------


def _expression(args: argparse.Namespace, values: dict[str, Any] | None = None):
    import numpy as np

    from ..base.progress import step
    from ..frontend.parse import parse

    shapes = parse_shapes(args.shape)
    dtypes = parse_dtypes(args.dtype)
    for name, v in (values or {}).items():  # --at arrays declare their own shapes
        if name not in shapes:
            shapes[name] = np.shape(v)
    with step("parse", unit="character") as s:
        s.update(len(args.expr))
        return parse(args.expr, shapes=shapes, dtypes=dtypes)


def _known_at(f, values: dict[str, Any]) -> None:
    """``--at`` names must be variables of the expression (a typo is an error, not ignored)."""
    unknown = [k for k in values if k not in f.graph.variables]
    if unknown:
        known = ", ".join(sorted(f.graph.variables)[:20]) or "none"
        raise UsageError(f"--at names {', '.join(map(repr, unknown[:5]))}, not a variable of "
                         f"the expression (its variables: {known})")


def _targets(f, names: list[str] | None) -> list[str]:
    from ..ir.shapes import is_float

    if names is not None:
        return names
    g = f.graph
    found = sorted(n.name for i in g.ancestors([f.node]) if (n := g.nodes[i]).is_var
                   and is_float(n.dtype))
    if not found:
        raise UsageError("the expression has no float variables to differentiate")
    return found


def _simplified(exprs: list, on: bool) -> list:
    if not on:
        return exprs
    from ..passes.simplify import simplify

    return list(simplify(exprs))


def _write(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


# -- subcommands -----------------------------------------------------------------------------


def cmd_grad(args: argparse.Namespace) -> int:
    from ..transforms.derivatives import grad

    f = _expression(args)
    names = _targets(f, _wrt_names(args.wrt))
    grads = _simplified(list(grad(f, names)), args.simplify)
    lines = [f"d/d{name} = {g}" for name, g in zip(names, grads)]
    _write("\n".join(lines), None)
    return 0


def cmd_source(args: argparse.Namespace) -> int:
    from ..backends.stages import lower, request
    from ..transforms.derivatives import grad

    f = _expression(args)
    names = _targets(f, _wrt_names(args.wrt))
    outs = [f, *grad(f, names)]
    labels = ["value", *(f"d{n}" for n in names)]
    layout = None
    if args.hessian:
        more, more_labels, layout = _hessian_outputs(f, names, args.hessian)
        outs += more
        labels += more_labels
    outs = _simplified(outs, args.simplify)
    inputs = parse_names(args.inputs, "--inputs")
    req = request(outs, inputs, args.name, output_names=labels, backend=args.backend)
    if layout is not None:  # which rows and columns of the flat Hessian are which variable
        flat = (f"Hessian of value w.r.t. {', '.join(names)}, flattened and concatenated "
                "(rows and columns: HESS_LAYOUT)")
        req = req.with_constants(("HESS_LAYOUT", layout)).with_notes(
            *[None] * (len(labels) - 1), flat)
    _write(lower(req).source(), args.output)
    if args.stats:
        from ..printing.stats import summary

        print(summary(outs), file=sys.stderr)
    return 0


def _hessian_outputs(f: Any, names: list[str], how: str) -> tuple[list, list, Any]:
    """The Hessian outputs of ``source --hessian``: the blocks ``hess_a_b`` = d2f/da db for
    ``a`` not after ``b`` in --wrt order (``hess_a`` for one variable; the block of ``b, a``
    is ``hess_a_b`` transposed), or one ``hess`` over the variables concatenated
    (flattened, in --wrt order) with its layout ``((name, start, stop), ...)``."""
    from ..ir.expr import F
    from ..transforms.derivatives import hessian

    if len(names) == 1 and how == "blocks":
        return [hessian(f, names[0])], [f"hess_{names[0]}"], None
    blocks = hessian(f, names)
    if how == "blocks":
        upper = [(i, j) for i in range(len(names)) for j in range(i, len(names))]
        return ([blocks[i][j] for i, j in upper],
                [f"hess_{names[i]}_{names[j]}" for i, j in upper], None)
    sizes = [_size_of(f, n) for n in names]
    rows = [F.concatenate([F.reshape(b, (sizes[i], sizes[j])) for j, b in enumerate(row)],
                          axis=1) for i, row in enumerate(blocks)]
    flat = rows[0] if len(rows) == 1 else F.concatenate(rows, axis=0)
    starts = [sum(sizes[:k]) for k in range(len(sizes) + 1)]
    layout = tuple((n, starts[k], starts[k + 1]) for k, n in enumerate(names))
    return [flat], ["hess"], layout


def _size_of(f: Any, name: str) -> int:
    node = f.graph.nodes[f.graph.variables[name]]
    size = 1
    for d in node.shape:
        size *= d
    return size


def cmd_dot(args: argparse.Namespace) -> int:
    from ..printing import to_dot
    from ..transforms.derivatives import grad

    f = _expression(args)
    exprs = [f]
    if args.wrt is not None:
        exprs += list(grad(f, _wrt_names(args.wrt)))
    _write(to_dot(_simplified(exprs, args.simplify)), args.output)
    return 0


def cmd_html(args: argparse.Namespace) -> int:
    from ..printing import to_html

    values = parse_values(args.at)
    f = _expression(args, values)
    _known_at(f, values)
    page = to_html(f, at=values or None, wrt=_wrt_names(args.wrt))
    _write(page, args.output)
    if args.output is not None:
        from ..base.progress import logger

        logger.info("wrote %s: open it in a browser", args.output)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from ..printing.explain import explain

    values = parse_values(args.at)
    f = _expression(args, values)
    _known_at(f, values)
    wrt = _wrt_names(args.wrt)
    _write(str(explain(f, wrt, at=values or None)), None)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo

    return int(demo() if args.out is None else demo(args.out) or 0)


# -- the parser ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``symgrad`` command."""
    version = sys.modules["symgrad"].__version__  # the package, imported before its cli
    p = argparse.ArgumentParser(
        prog="symgrad", parents=[_report_options(False)],
        description="Symbolic differentiation of NumPy expressions: derivatives as text, "
                    "standalone NumPy source, DOT graphs and backprop tables.",
        epilog="Example: symgrad source '-log_softmax(V @ tanh(W @ x + b) + g)[y]' "
               "--wrt W,b,V,g --shape W=4x3,x=3,b=4,V=2x4,g=2 --dtype y=int64",
    )
    p.add_argument("--version", action="version", version=f"symgrad {version}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, run, help: str, expr: bool = True) -> argparse.ArgumentParser:
        # SUPPRESS: `symgrad -q CMD` and `symgrad CMD -q` both work
        c = sub.add_parser(name, help=help, description=help,
                           parents=[_report_options(argparse.SUPPRESS)])
        c.set_defaults(run=run)
        if expr:
            c.add_argument("expr", metavar="EXPR", help="the expression, e.g. 'x * y + sin(x)'")
            c.add_argument("--shape", action="append", default=[], metavar="NAME=DIMS",
                           help="a variable's shape: W=4x3, x=3, s= (scalar); repeatable or "
                                "comma-separated. Undeclared variables are scalars")
            c.add_argument("--dtype", action="append", default=[], metavar="NAME=DTYPE",
                           help="a variable's dtype, e.g. y=int64 (default float64)")
        return c

    c = command("grad", cmd_grad, "print the derivative of EXPR for each --wrt variable")
    c.add_argument("--wrt", metavar="X,Y", help="variables (default: every float variable)")
    c.add_argument("--simplify", action="store_true", help="simplify the derivatives")

    c = command("source", cmd_source,
                "emit a NumPy-only Python module computing EXPR and its gradients")
    c.add_argument("--wrt", metavar="X,Y", help="variables (default: every float variable)")
    c.add_argument("--hessian", nargs="?", const="blocks", choices=("blocks", "flat"),
                   help="also return the Hessian: the blocks hess_a_b = d2f/da db of the "
                        "--wrt variables, a not after b (the block b, a is hess_a_b "
                        "transposed; hess_a for one variable; the default), or 'flat': one "
                        "matrix hess over the variables flattened and concatenated in --wrt "
                        "order, its layout in the module constant HESS_LAYOUT")
    c.add_argument("--simplify", action="store_true", help="simplify before emitting")
    c.add_argument("--backend", default="numpy", choices=("numpy", "array_api", "jax", "torch"),
                   help="the array library the module is written for (default numpy; see "
                        "to_source's backend)")
    c.add_argument("--name", default="f", help="name of the generated function (default f)")
    c.add_argument("--inputs", metavar="W,x,...",
                   help="the function's parameters in this order (default: the order the "
                        "variables first appear in EXPR)")
    c.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    c.add_argument("--stats", action="store_true",
                   help="print nodes, lines, flops and bytes before/after the passes to stderr")

    c = command("dot", cmd_dot, "print the graph of EXPR (and its gradients) in DOT format")
    c.add_argument("--wrt", metavar="X,Y", help="also include the gradient w.r.t. these")
    c.add_argument("--simplify", action="store_true", help="simplify first")
    c.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    c = command("html", cmd_html,
                "write an interactive HTML page of EXPR's graph and its derivative graph B")
    c.add_argument("--at", action="append", default=[], metavar="X=V,...",
                   help="input values, e.g. x1=2,x2=3 or v=[1,2,3]")
    c.add_argument("--wrt", metavar="X,Y", help="variables (default: every float variable)")
    c.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")

    c = command("explain", cmd_explain,
                "print the forward and backward (adjoint) table of EXPR, course-notes style")
    c.add_argument("--at", action="append", default=[], metavar="X=V,...",
                   help="input values, e.g. x1=2,x2=3 or v=[1,2,3]")
    c.add_argument("--wrt", metavar="X,Y", help="variables (default: every float variable)")

    c = command("demo", cmd_demo, "run the guided tour on the notes' network example",
                expr=False)
    c.add_argument("--out", metavar="DIR", help="directory for the tour's files")
    return p


def _report_options(default: Any) -> argparse.ArgumentParser:
    report = argparse.ArgumentParser(add_help=False)
    group = report.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", default=default,
                       help="no progress report on stderr (only errors)")
    group.add_argument("-v", "--verbose", action="store_true", default=default,
                       help="report every step with its time")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``symgrad`` command; returns the exit status (2 for user mistakes)."""
    parser = build_parser()
    args = parser.parse_args(argv)  # --version and --help end here, before any heavy import
    import logging

    from .. import api  # noqa: F401  (the compiler and its op registry)
    from ..base import progress

    level = logging.WARNING if args.quiet else logging.DEBUG if args.verbose else logging.INFO
    progress.enable(level)
    try:
        return int(args.run(args) or 0)
    except SymgradError as e:
        return _fail(args.command, str(e) or type(e).__name__)
    except RecursionError:
        return _fail(args.command, "the expression is nested too deeply")
    except BrokenPipeError:
        _silence_stdout()
        return _fail(args.command, "the output pipe closed before everything was written "
                                   "(is the command after | installed and running?)")
    except KeyboardInterrupt:
        return 130
    finally:
        progress.disable()


def _fail(command: str, message: str) -> int:
    """Print one paragraph (no blank lines) on stderr; the status of a user mistake."""
    message = re.sub(r"\n\s*\n", "\n", message.strip())
    try:
        print(f"symgrad {command}: error: {message}", file=sys.stderr)
    except OSError:
        pass
    return 2


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that Python's final flush of it
    does not fail again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
