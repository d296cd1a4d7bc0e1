"""Text -> graph: an operator-precedence parser of its own over Python's tokenizer
(:mod:`.syntax` reads the text into a tree; this module checks the tree and builds it).

User text is never evaluated. :mod:`tokenize` splits it into tokens, and an iterative
operator-precedence parser (explicit stacks, no recursion, linear in the length of the
text, so a sum of 10^5 terms is fine) accepts only arithmetic, comparisons, calls of
registered ops by name (a dotted name such as ``linalg.solve`` only when it is registered
as an op name or alias: never attribute access in general), names, numeric literals,
subscripts, ``.T``, list literals and loops: ``scan``/``fori_loop`` with a ``lambda`` step,
as Python writes them (:mod:`.parse_loops`). Everything else raises
:class:`~symgrad.errors.ParseError` with a caret under its column, and a hint where one
helps (``sni(x)``: did you mean sin? ``x ^ 2``: use ``**``). The limits
(``sg.limits.parse_*``: length, bracket depth, unary-operator runs, array-literal and
string sizes) are checked before any work.

The walk builds the graph with the same calls the Python API makes (Expr operators and
:mod:`symgrad.frontend.functions`) in Python's left-to-right evaluation order, so
``parse("x * sin(y)")`` and ``x * sg.sin(y)`` give the same graph. Arithmetic on literals
alone follows Python, as in the API (``2 * 3 * x`` multiplies ``x`` by the constant ``6``),
under size guards. Names ``pi``, ``e``, ``inf`` and ``nan`` are constants unless declared
in ``shapes`` or ``dtypes``; other names become variables (float64 scalars unless declared).
Variables declared but not used in the text are not created.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from ..base.describe import describe
from ..base.errors import ParseError, SymgradError
from ..ir.expr import Expr, const, var
from ..ir.limits import DEFAULTS, limits
from ..ir.op import ALIASES, FUNCTIONS, REGISTRY, SignatureError, public_op
from ..ir.shapes import INTS
from ..ir.values import as_constant, check_dtype, check_name, check_shape
from .functions import Callee, callee
from .parse_loops import LOOPS, LoopText, results_hint
from .syntax import (
    BINOPS,
    CMPOPS,
    UNARY_OPS,
    Attribute,
    BinOp,
    Call,
    Compare,
    Constant,
    List,
    Name,
    ParseLimitError,
    Reader,
    Slice,
    Subscript,
    SyntaxNode,
    Tuple,
    UnaryOp,
)

MAX_CHARS = DEFAULTS["parse_chars"][0]  # the defaults; sg.limits holds the live values
MAX_DEPTH = DEFAULTS["parse_depth"][0]
MAX_UNARY_RUN = DEFAULTS["parse_unary_run"][0]
MAX_ARRAY_ELEMENTS = DEFAULTS["parse_array_elements"][0]
MAX_STRING = DEFAULTS["parse_string_chars"][0]
INT_LIMIT = 2**63 - 1  # integer literals and folded integer constants (int64)

CONSTANT_NAMES = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

_EINSUM_SPEC = re.compile(r"[A-Za-z0-9_.,\->\s]*")
_TUPLE = "tuples are only allowed as indices, static arguments or op lists"


Value = Any  # an Expr, a Python number, or a nested list of numbers (an array literal)


def parse(
    text: str,
    shapes: Mapping[str, Any] | None = None,
    dtypes: Mapping[str, str] | None = None,
) -> Expr:
    """Parse expression text into an :class:`~symgrad.ir.graph.Expr`, safely.

    Parameters
    ----------
    text : str
        A Python-syntax expression over variables, numbers and symgrad ops called by name
        (``exp``, ``sum(x, axis=0)``, ``einsum("ij,j->i", A, x)``, ``x[1:]``, ``A.T``), and
        loops (``scan(lambda c, x: (c * x, c), 1.0, xs)[0]``, ``fori_loop(0, 3, lambda i, c:
        c * x, 1.0)``).
    shapes : mapping, optional
        Variable name -> shape. Undeclared names are scalars.
    dtypes : mapping, optional
        Variable name -> dtype name (``"int64"`` for index variables). Default float64.

    Returns
    -------
    Expr
        The expression; the same graph the Python API builds for the same expression.

    Raises
    ------
    ParseError
        Text outside the grammar or over a limit, with a caret under the offending column.
    ShapeError
        Operands that do not fit; the message shows where in the text.

    Examples
    --------
    >>> import symgrad as sg
    >>> f = sg.parse("W @ x + b", shapes={"W": (2, 3), "x": (3,), "b": (2,)})
    >>> f.shape
    (2,)
    >>> str(sg.parse("-log_softmax(z)[y]", shapes={"z": (3,)}, dtypes={"y": "int64"}))
    '-log_softmax(z)[y]'
    >>> sg.parse("sni(x)")
    Traceback (most recent call last):
    ...
    symgrad.errors.ParseError: unknown function 'sni'; did you mean sin?
        sni(x)
        ^
    """
    return _Parser(text, shapes, dtypes).run()


# -- pre-checks ---------------------------------------------------------------------------


def _declarations(shapes, dtypes) -> dict[str, tuple[tuple[int, ...], str]]:
    """Validated ``name -> (shape, dtype)`` for every declared variable."""
    out: dict[str, list] = {}
    for table, what in ((shapes, "shapes"), (dtypes, "dtypes")):
        if table is None:
            continue
        if not isinstance(table, Mapping):
            raise ParseError(f"{what} must be a mapping from variable names, got "
                             f"{describe(table)}")
        items = dict.items(table) if isinstance(table, dict) else table.items()
        for raw, value in items:
            name = unicodedata.normalize("NFKC", str.__str__(raw)) \
                if isinstance(raw, str) else raw
            name = check_name(name)
            entry = out.setdefault(name, [(), "float64"])
            if what == "shapes":
                entry[0] = check_shape(value, f"variable '{name}'")
            else:
                entry[1] = check_dtype(value, f"variable '{name}'")
    return {k: (v[0], v[1]) for k, v in out.items()}


# -- the walk -----------------------------------------------------------------------------


class _Parser(LoopText, Reader):
    """The tree of the text walked twice: checked, then built into the graph."""

    def __init__(self, text, shapes, dtypes) -> None:
        super().__init__(text)
        self.declared = _declarations(shapes, dtypes)
        self.names: dict[str, Expr] = {}
        self._init_loops()

    # errors

    def rethrow(self, err: Exception, node: SyntaxNode):
        col = self.where(node)
        if isinstance(err, ParseError):
            if err.source is not None:
                raise err
            raise ParseError(err.msg_text, self.shown, col) from None
        if getattr(err, "_sg_located", False):  # from a loop's step: it has its caret
            raise err
        if isinstance(err, SymgradError) and not isinstance(err, SignatureError):
            rendered = str(ParseError(str(err), self.shown, col))
            try:
                new = type(err)(rendered)
            except Exception:  # an error class with another constructor
                new = None
            if isinstance(new, SymgradError) and str(new) == rendered:
                new._sg_located = True
                raise new from None
        raise ParseError(str(err), self.shown, col) from None

    # driver

    def run(self) -> Expr:
        text = self.text
        lead = len(text) - len(text.lstrip())
        if lead == len(text):
            raise ParseError("empty expression", self.shown, len(text))
        root = self.read(lead)
        try:
            value = self._walk(root)
        except RecursionError:  # loops nested in lambdas trace recursively
            raise ParseLimitError("loops are nested too deeply to trace (Python's recursion "
                                  "limit was reached): nest fewer lambdas (sg.limits."
                                  "parse_depth bounds the nesting)", self.shown, lead) from None
        if isinstance(value, Expr):
            return value
        if isinstance(value, tuple):  # several results (eigh, svd, a scan, a tuple carry)
            raise ParseError(f"the expression has {len(value)} results ("
                             f"{results_hint(root)}", self.shown, lead)
        if value is None:  # a scan's per-step results, where the step returned None
            raise ParseError("the expression is None (a loop step that returns no per-step "
                             "result stacks nothing)", self.shown, lead)
        return const(value)

    # phase 2: check and build, post-order with an explicit stack ---------------------

    def _walk(self, root: SyntaxNode) -> Value:
        """Post-order, left to right, with an explicit stack."""
        stack: list[tuple[SyntaxNode, bool]] = [(root, False)]
        values: list[Value] = []
        while stack:
            node, ready = stack.pop()
            if not ready:
                children = self._children(node)
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(children))
                continue
            n = node.plan[0]
            args = values[len(values) - n:]
            del values[len(values) - n:]
            try:
                values.append(self._combine(node, args))
            except SymgradError as err:
                self.rethrow(err, node)
            except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as err:
                self.fail(f"cannot build this: {err}", offset=self.where(node))
        return values[0]

    def _children(self, node: SyntaxNode) -> list[SyntaxNode]:
        handler = getattr(self, f"_check_{node.kind}", None)
        if handler is None:
            self.fail(_TUPLE if node.kind == "Tuple" else "invalid syntax", node)
        return handler(node)

    def _plan(self, node: SyntaxNode, children: list, *extra) -> list:
        node.plan = (len(children), *extra)
        return children

    def _check_BinOp(self, node: BinOp) -> list:
        return self._plan(node, [node.left, node.right])

    _check_Compare = _check_BinOp

    def _check_UnaryOp(self, node: UnaryOp) -> list:
        return self._plan(node, [node.operand])

    def _check_Name(self, node: Name) -> list:
        return self._plan(node, [])

    def _check_Constant(self, node: Constant) -> list:
        if node.value is not None or id(node) not in self.loose:
            self._number(node)
        return self._plan(node, [])

    def _check_List(self, node: List) -> list:
        self._loose_list(node)
        return self._plan(node, [], self._array(node))

    def _check_Attribute(self, node: Attribute) -> list:
        if node.attr != "T":
            self.fail("attribute access is not supported (only .T)", offset=node.attr_at)
        return self._plan(node, [node.value])

    def _check_Subscript(self, node: Subscript) -> list:
        spec, exprs = [], []
        for item in node.items:
            if isinstance(item, Slice):
                spec.append(("slice", tuple(self._bound(b) for b in
                                            (item.lower, item.upper, item.step))))
            elif isinstance(item, Constant) and (item.value is None or item.value is ...):
                spec.append(("const", item.value))
            else:
                spec.append(("expr", item))
                exprs.append(item)
        return self._plan(node, [node.value, *exprs], spec, node.is_tuple)

    def _check_Call(self, node: Call) -> list:
        name = _dotted(node.func)
        if name is None:
            self.fail("only functions called by name are supported (e.g. exp(x))", node.func)
        if name in LOOPS and callee(name) is None:
            return self._check_loop(node, name)
        if self._bound_name(name)[0]:  # Python's scoping: the parameter, which is a value
            self.fail(f"'{name}' here is a parameter of the enclosing lambda, which shadows "
                      f"the function {name}() as in Python: a value cannot be called; rename "
                      "the parameter", node.func)
        op = self._op(name, node.func)
        args = list(node.args)
        plan: list[tuple] = []
        children: list[SyntaxNode] = []
        statics: set[str] = set()
        for p in op.signature.params:
            if not args:
                break
            if p.kind == "operands":
                plan.extend(("expr",) for _ in args)
                children.extend(args)
                args = []
            elif p.kind == "list":
                seq = args.pop(0)
                if not isinstance(seq, List):  # a list or a tuple
                    self.fail(f"{op.name}() takes a list of arrays here, e.g. [a, b]", seq)
                plan.append(("list", len(seq.elts)))
                children.extend(seq.elts)
            elif p.kind == "static":
                plan.append(("static", self._static_argument(args.pop(0), op, p.name,
                                                             not statics)))
                statics.add(p.name)
            else:  # an operand, optional or not
                plan.append(("expr",))
                children.append(args.pop(0))
        if args:
            self.fail(f"{name}() takes {op.signature.describe()}; got extra arguments", args[0])
        kwargs = {}
        for kw in node.keywords:
            if kw.arg not in op.attrs or kw.arg in statics:
                allowed = [k for k in op.attrs if k not in statics]
                ok = ", ".join(allowed) or "no keywords"
                self.fail(f"{name}() got an unexpected keyword '{kw.arg}' (takes {ok})"
                          f"{_did_you_mean(kw.arg, allowed)}", kw)
            kwargs[kw.arg] = self._static(kw.value, op, kw.arg)
        hint = _elementwise_hint(op) if any(s[0] == "static" for s in plan) else ""
        return self._plan(node, children, op, plan, kwargs, hint)

    def _op(self, name: str, func: SyntaxNode) -> Callee:
        found = callee(name)
        if found is None:
            known = [*FUNCTIONS, *(n for n in (*REGISTRY, *ALIASES) if public_op(n))]
            self.fail(f"unknown function '{name}'{_did_you_mean_function(name, known)}", func)
        return found

    def _static_argument(self, node: SyntaxNode, op: Callee, param: str, first: bool) -> Any:
        """A static argument written positionally; ``max(x, y)`` (a second operand where
        the axis goes) gets a hint to the elementwise function."""
        try:
            return self._static(node, op, param)
        except ParseError as err:
            hint = _elementwise_hint(op) if first else ""
            if not hint or err.source is not None and err.col != node.start:
                raise
            self.fail(err.msg_text + hint, node)

    # literals

    def _number(self, node: SyntaxNode, what: str = "expected a number literal here") -> Any:
        """The value of a numeric literal node (checked), or a ParseError saying ``what``."""
        if isinstance(node, Constant):
            v = node.value
            if isinstance(v, bool):
                return v
            if isinstance(v, int):
                if abs(v) > INT_LIMIT:
                    self.fail("integer literal is too large (limit 2**63 - 1)", node)
                return v
            if isinstance(v, float):
                if math.isinf(v):
                    self.fail("float literal overflows; write inf for infinity", node)
                return v
            kind = {str: "strings are", type(None): "None is", type(...): "'...' is"}[type(v)]
            self.fail(f"{kind} not supported here", node)
        if isinstance(node, Name) and node.id in CONSTANT_NAMES:
            if node.id not in self.declared:
                return CONSTANT_NAMES[node.id]
        if isinstance(node, UnaryOp):
            inner = node.operand
            if isinstance(inner, (Constant, Name)):
                v = self._number(inner, what)
                if not isinstance(v, bool):
                    return UNARY_OPS[node.op](v)
        self.fail(what, node)

    def _static(self, node: SyntaxNode, op: Callee, param: str) -> Any:
        """A static argument: int, float, bool, None, a tuple/list of ints, or a spec string."""
        if isinstance(node, Constant) and node.value is None:
            return None
        if isinstance(node, Constant) and isinstance(node.value, str):
            if not _string_param(op, param):
                self.fail(f"{op.name}() does not take a string for '{param}'", node)
            s = node.value
            if not _EINSUM_SPEC.fullmatch(s):
                self.fail("an einsum spec may only contain letters, ',', '->', '...'", node)
            return s
        what = f"{op.name}() needs a literal for '{param}' (a number, None or a tuple of ints)"
        if isinstance(node, List):
            if len(node.elts) > 64:
                self.fail("too many entries in a static argument", node)
            items = [self._number(e, what) for e in node.elts]
            for e, v in zip(node.elts, items):
                if isinstance(v, bool) or not isinstance(v, int):
                    self.fail("expected an int here", e)
            return tuple(items) if isinstance(node, Tuple) else items
        if _string_param(op, param):
            what = f'{op.name}() needs a literal string for \'{param}\', e.g. "ij,j->i"'
        return self._number(node, what)

    def _bound(self, node: SyntaxNode | None) -> int | None:
        if node is None or (isinstance(node, Constant) and node.value is None):
            return None
        v = self._number(node, "slice bounds must be int literals")
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail("slice bounds must be int literals", node)
        return v

    def _array(self, root: List) -> list:
        """A nested list of number literals, as Python lists (iterative, size-limited)."""
        if isinstance(root, Tuple):
            self.fail(_TUPLE, root)
        limit = limits.parse_array_elements
        out: list = []
        stack: list[tuple[SyntaxNode, list]] = [(root, out)]
        count = 0
        while stack:
            node, target = stack.pop()
            if isinstance(node, List) and not isinstance(node, Tuple):
                sub: list = []
                target.append(sub)
                stack.extend((e, sub) for e in reversed(node.elts))
                continue
            count += 1
            if count > limit:
                raise ParseLimitError(f"array literal has more than {limit} numbers "
                                      "(sg.limits.parse_array_elements)", self.shown, root.start)
            target.append(self._number(node, "array literals may only hold numbers"))
        try:
            as_constant(out[0])
        except (ValueError, SymgradError):
            self.fail("array literal is not rectangular (or mixes numbers and lists)", root)
        return out[0]

    # building

    def _combine(self, node: SyntaxNode, args: list) -> Value:
        return getattr(self, f"_build_{node.kind}")(node, args)

    def _build_Name(self, node: Name, args) -> Value:
        name = node.id
        bound, value = self._bound_name(name)
        if bound:
            return value
        if name in CONSTANT_NAMES and name not in self.declared:
            return CONSTANT_NAMES[name]
        found = self.names.get(name)
        if found is None:
            if name.startswith("__"):
                self.fail(f"'{name}' is not allowed as a variable name", node)
            shape, dtype = self.declared.get(name, ((), "float64"))
            found = self.names[name] = var(name, shape, dtype)
        return found

    def _build_Constant(self, node: Constant, args) -> Value:
        return None if node.value is None else self._number(node)

    def _build_List(self, node: List, args) -> Value:
        return node.plan[1]

    def _build_Attribute(self, node: Attribute, args) -> Value:
        return _expr(args[0], node, self).T

    def _build_UnaryOp(self, node: UnaryOp, args) -> Value:
        (a,) = args
        if isinstance(a, list):
            a = const(a)
        return UNARY_OPS[node.op](a)

    def _build_BinOp(self, node: BinOp, args) -> Value:
        symbol = node.op
        a, b = args
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            if isinstance(a, list) or isinstance(b, list):
                a, b = _as_expr(a), _as_expr(b)
            else:
                return _fold_numbers(symbol, BINOPS[symbol], a, b)
        return BINOPS[symbol](a, b)

    def _build_Compare(self, node: Compare, args) -> Value:
        a, b = args
        if isinstance(a, list) or isinstance(b, list):
            a, b = _as_expr(a), _as_expr(b)
        return CMPOPS[node.op](a, b)

    def _build_Subscript(self, node: Subscript, args) -> Value:
        _, spec, is_tuple = node.plan
        if isinstance(args[0], tuple):  # one result of eigh(A), svd(A), ...: NumPy's [k]
            k = args[1] if len(args) == 2 and not is_tuple else None
            if isinstance(k, bool) or not isinstance(k, int) or not -len(args[0]) <= k < len(
                    args[0]):
                self.fail(f"pick one of the {len(args[0])} results with an int, e.g. [0]", node)
            return args[0][k]
        value = _expr(args[0], node, self)
        exprs = iter(zip(args[1:], (s[1] for s in spec if s[0] == "expr")))
        key = []
        for kind, item in spec:
            if kind == "slice":
                key.append(slice(*item))
            elif kind == "const":
                key.append(item)
            else:
                v, where = next(exprs)
                key.append(self._index(v, where))
        return value[tuple(key) if is_tuple else key[0]]

    def _index(self, v: Value, node: SyntaxNode) -> Any:
        if isinstance(v, Expr):
            if v.dtype not in INTS:
                hint = f"; declare it, e.g. dtypes={{'{v.name}': 'int64'}}" if v.name else ""
                self.fail(f"an index must be an integer expression, got {v.dtype}{hint}", node)
            return v
        if isinstance(v, list):
            return v  # an integer-array literal: getitem checks it
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail("an index must be an int, a slice, None, ... or an integer expression",
                      node)
        return v

    def _build_Call(self, node: Call, args) -> Value:
        if node.plan[1] == "loop":
            return self._loop_call(node, args)
        _, op, plan, kwargs, hint = node.plan
        values = iter(args)
        call_args: list = []
        for step in plan:
            if step[0] == "expr":
                call_args.append(next(values))
            elif step[0] == "list":
                call_args.append([next(values) for _ in range(step[1])])
            else:
                call_args.append(step[1])
        if not hint:
            return op.fn(*call_args, **kwargs)
        try:
            return op.fn(*call_args, **kwargs)
        except SymgradError as err:  # min(x, 0) of a scalar x: axis 0 is out of range
            raise _with_hint(err, hint) from None


# -- helpers ------------------------------------------------------------------------------


def _dotted(node: SyntaxNode) -> str | None:
    """``name`` or ``a.b.c`` for a callee written as a (dotted) name, else None."""
    parts = []
    while isinstance(node, Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


# Functions whose second positional argument is an axis, and the elementwise function meant
# by who writes them with two arrays (as in Python's max(a, b)).
_ELEMENTWISE = {"max": "maximum", "min": "minimum", "amax": "maximum", "amin": "minimum",
                "nanmax": "fmax", "nanmin": "fmin"}
# Names of functions in other languages and libraries, spelt too differently for difflib.
OTHER_NAMES = {"ln": "log", "lg": "log10", "lb": "log2", "atan2": "arctan2",
               "logistic": "sigmoid", "expit": "sigmoid", "sgn": "sign", "signum": "sign",
               "log_sum_exp": "logsumexp", "logsoftmax": "log_softmax", "mm": "matmul",
               "arctg": "arctan", "tg": "tan"}
_MODULES = ("np.", "numpy.", "jnp.", "jax.numpy.", "math.", "torch.", "scipy.special.", "sp.")


def _elementwise_hint(op: Callee) -> str:
    """``"; for the elementwise maximum of two arrays write maximum(a, b)"`` or ``""``."""
    meant = _ELEMENTWISE.get(op.name.rsplit(".", 1)[-1])
    if meant is None:
        return ""
    what = "maximum" if "max" in meant else "minimum"
    return (f"; {op.name}(a, axis) reduces a along an axis: for the elementwise {what} of "
            f"two arrays write {meant}(a, b)")


def _with_hint(err: SymgradError, hint: str) -> SymgradError:
    """``err`` of the same class with ``hint`` added to its message (when it can be)."""
    text = (err.msg_text if isinstance(err, ParseError) else str(err)) + hint
    try:
        new = type(err)(text)
    except Exception:  # an error class with another constructor
        return ParseError(text)
    return new if str(new) == text else ParseError(text)


def _did_you_mean_function(name: str, candidates: list[str]) -> str:
    """The hint for an unknown function name: the name without a module prefix
    (``np.max``), in lower case (``Exp``), the symgrad name of another library's
    function (``ln``: log, ``expit``: sigmoid) or the closest spelling (``sni``: sin)."""
    known = set(candidates)
    bare = name
    for prefix in _MODULES:
        if name.startswith(prefix):
            bare = name[len(prefix):]
            break
    for guess in (bare, bare.lower(), OTHER_NAMES.get(bare.lower())):
        if guess is not None and guess != name and guess in known:
            return f"; did you mean {guess}?"
    return _did_you_mean(name, candidates)


def _did_you_mean(name: str, candidates: list[str]) -> str:
    """``"; did you mean sin?"`` for the closest candidate, or ``""``."""
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if not found and "." in name:
        found = difflib.get_close_matches(name.rsplit(".", 1)[1], candidates, n=1, cutoff=0.6)
    return f"; did you mean {found[0]}?" if found else ""


def _string_param(op: Callee, param: str) -> bool:
    """Whether static parameter ``param`` of ``op`` takes a string (einsum's subscripts)."""
    return op.signature.takes_string(param)


def _as_expr(v: Value) -> Value:
    return const(v) if isinstance(v, list) else v


def _expr(v: Value, node: SyntaxNode, parser: _Parser) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, list):
        return const(v)
    if v is None:
        parser.fail("None cannot be indexed or transposed", node)
    parser.fail("a number cannot be indexed or transposed", node)


def _fold_numbers(symbol: str, fn: Callable, a: Any, b: Any) -> Any:
    """Python arithmetic on two number literals (what the API does), with size guards."""
    if symbol == "@":
        raise ParseError("@ needs array operands, not numbers")
    ints = all(isinstance(v, int) for v in (a, b))
    if symbol == "**" and ints and b > 0 and abs(a) > 1 and b * abs(a).bit_length() > 64:
        raise ParseError("constant power is too large (integer overflow)")
    try:
        r = fn(a, b)
    except ZeroDivisionError:
        raise ParseError("division by zero in a constant") from None
    except OverflowError:
        raise ParseError("constant overflows float64") from None
    if isinstance(r, complex):
        raise ParseError("constant power gives a complex number")
    if isinstance(r, int) and not isinstance(r, bool) and abs(r) > INT_LIMIT:
        raise ParseError("integer constant is too large (limit 2**63 - 1)")
    return r


__all__ = ["parse", "ParseError", "ParseLimitError", "CONSTANT_NAMES"]
