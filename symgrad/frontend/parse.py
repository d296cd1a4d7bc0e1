"""Text -> graph: a safe parser over Python's :mod:`ast` with an allowlist of node types.

User text is never evaluated: ``ast.parse(text, mode="eval")`` gives a tree, and an
iterative walk (explicit stack, no recursion) accepts only arithmetic, comparisons, calls of
registered ops by name, names, numeric literals, subscripts, ``.T`` and list literals; every
other node raises :class:`~symgrad.errors.ParseError` with a caret under its column. Limits
on input length, bracket depth, unary-operator runs, node count and literal size are checked
before any work.

The walk builds the graph with the same calls the Python API makes (Expr operators and
:mod:`symgrad.frontend.functions`) in Python's left-to-right evaluation order, so
``parse("x * sin(y)")`` and ``x * sg.sin(y)`` give the same graph. Arithmetic on literals
alone follows Python, as in the API (``2 * 3 * x`` multiplies ``x`` by the constant ``6``),
under size guards. Names ``pi``, ``e``, ``inf`` and ``nan`` are constants unless declared
in ``shapes`` or ``dtypes``; other names become variables (float64 scalars unless declared).
Variables declared but not used in the text are not created.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ParseError, SymgradError
from ..ir.expr import Expr, const, var
from ..ir.op import SignatureError
from ..ir.values import as_constant, check_dtype, check_name, check_shape
from .functions import Callee, callee

MAX_CHARS = 100_000
MAX_DEPTH = 100  # nested brackets
MAX_UNARY_RUN = 100  # consecutive unary operators, e.g. "- - - x"
MAX_NODES = 50_000  # ast nodes
MAX_ARRAY_ELEMENTS = 10_000  # numbers in one list literal
INT_LIMIT = 2**63 - 1  # integer literals and folded integer constants (int64)
MAX_STRING = 200  # characters in a string argument (einsum's spec)

CONSTANT_NAMES = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

_BINOPS: dict[type, tuple[str, Callable]] = {
    ast.Add: ("+", operator.add), ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul), ast.Div: ("/", operator.truediv),
    ast.Pow: ("**", operator.pow), ast.MatMult: ("@", operator.matmul),
}
_CMPOPS: dict[type, tuple[str, Callable]] = {
    ast.Lt: ("<", operator.lt), ast.LtE: ("<=", operator.le), ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge), ast.Eq: ("==", operator.eq), ast.NotEq: ("!=", operator.ne),
}
_UNARY: dict[type, Callable] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_EINSUM_SPEC = re.compile(r"[A-Za-z0-9_.,\->\s]*")

_UNSUPPORTED = {
    "Attribute": "attribute access is not supported (only .T)",
    "Lambda": "lambda is not supported",
    "IfExp": "conditional expressions are not supported; use where(cond, a, b)",
    "BoolOp": "'and'/'or' are not supported; use where() and comparisons",
    "ListComp": "comprehensions are not supported",
    "SetComp": "comprehensions are not supported",
    "DictComp": "comprehensions are not supported",
    "GeneratorExp": "generator expressions are not supported",
    "JoinedStr": "f-strings are not supported",
    "NamedExpr": "assignment expressions (:=) are not supported",
    "Starred": "starred arguments are not supported",
    "Dict": "dict literals are not supported",
    "Set": "set literals are not supported",
    "Tuple": "tuples are only allowed as indices, static arguments or op lists",
    "Await": "await is not supported",
    "Yield": "yield is not supported",
    "YieldFrom": "yield is not supported",
    "Slice": "slices are only allowed inside []",
}

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
        (``exp``, ``sum(x, axis=0)``, ``einsum("ij,j->i", A, x)``, ``x[1:]``, ``A.T``).
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
            raise ParseError(f"{what} must be a mapping from variable names, got {table!r:.80}")
        for raw, value in table.items():
            name = unicodedata.normalize("NFKC", raw) if isinstance(raw, str) else raw
            check_name(name)
            entry = out.setdefault(name, [(), "float64"])
            if what == "shapes":
                entry[0] = check_shape(value, f"variable '{name}'")
            else:
                entry[1] = check_dtype(value, f"variable '{name}'")
    return {k: (v[0], v[1]) for k, v in out.items()}


def _scan(text: str) -> None:
    """Bracket depth and unary-operator runs, counted before ``ast.parse`` sees the text."""
    depth = run = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ParseError(f"brackets nested deeper than {MAX_DEPTH}", text, i)
        elif ch in ")]}":
            depth -= 1
        if ch in "+-~":
            run += 1
            if run > MAX_UNARY_RUN:
                raise ParseError(f"more than {MAX_UNARY_RUN} operators in a row", text, i)
        elif not ch.isspace():
            run = 0


class _Positions:
    """Maps ast (lineno, byte column) to a character offset into the original text."""

    def __init__(self, text: str, lead: int) -> None:
        self.lines = re.split(r"\r\n|\r|\n", text[lead:])
        self.starts = [lead]
        for line, sep in zip(self.lines, re.findall(r"\r\n|\r|\n", text[lead:])):
            self.starts.append(self.starts[-1] + len(line) + len(sep))

    def offset(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        if not line.isascii():
            col = len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))
        return self.starts[min(max(lineno, 1), len(self.starts)) - 1] + col


# -- the parser ---------------------------------------------------------------------------


class _Parser:
    def __init__(self, text, shapes, dtypes) -> None:
        if not isinstance(text, str):
            raise ParseError(f"parse() needs a string, got {type(text).__name__}")
        if len(text) > MAX_CHARS:
            raise ParseError(f"input is {len(text)} characters long (limit {MAX_CHARS})")
        self.text = text
        # one printable line with the same offsets, for the caret display
        self.shown = text if text.isprintable() else "".join(
            c if c.isprintable() else " " for c in text)
        self.declared = _declarations(shapes, dtypes)
        self.names: dict[str, Expr] = {}
        self.plans: dict[int, Any] = {}

    # errors

    def fail(self, message: str, node: ast.AST | None = None, offset: int | None = None):
        if offset is None and node is not None and hasattr(node, "lineno"):
            offset = self.pos.offset(node.lineno, node.col_offset)
        raise ParseError(message, self.shown, offset)

    def where(self, node: ast.AST) -> int:
        """The column to blame for a node: its operator for binary ops, else its start."""
        start = self.pos.offset(node.lineno, node.col_offset)
        pair = _operator_span(node)
        if pair is None:
            return start
        (left, right), symbol = pair
        a = self.pos.offset(left.end_lineno, left.end_col_offset)
        b = self.pos.offset(right.lineno, right.col_offset)
        found = self.text.find(symbol, a, b)
        return found if found >= 0 else start

    def rethrow(self, err: Exception, node: ast.AST):
        col = self.where(node)
        if isinstance(err, ParseError):
            if err.source is not None:
                raise err
            raise ParseError(err.msg_text, self.shown, col) from None
        if isinstance(err, SymgradError) and not isinstance(err, SignatureError):
            rendered = str(ParseError(str(err), self.shown, col))
            try:
                new = type(err)(rendered)
            except Exception:  # an error class with another constructor
                new = None
            if isinstance(new, SymgradError) and str(new) == rendered:
                raise new from None
        raise ParseError(str(err), self.shown, col) from None

    # driver

    def run(self) -> Expr:
        text = self.text
        lead = len(text) - len(text.lstrip())
        self.pos = _Positions(text, lead)
        if lead == len(text):
            raise ParseError("empty expression", self.shown, len(text))
        _scan(text)
        tree = self._ast(text, lead)
        count = 0
        for _ in ast.walk(tree):
            count += 1
            if count > MAX_NODES:
                raise ParseError(f"expression has more than {MAX_NODES} syntax nodes")
        value = self._walk(tree)
        if isinstance(value, Expr):
            return value
        if isinstance(value, tuple):  # a function with several results (eigh, svd, ...)
            raise ParseError(f"the expression has {len(value)} results (as NumPy's function "
                             "returns them); pick one, e.g. eigh(A)[1]", self.shown, lead)
        return const(value)

    def _ast(self, text: str, lead: int) -> ast.Expression:
        try:
            return ast.parse(text[lead:], mode="eval")
        except SyntaxError as e:
            off = None
            if e.lineno is not None and e.offset is not None:
                line0 = self.pos.starts[min(max(e.lineno, 1), len(self.pos.starts)) - 1]
                off = min(line0 + max(e.offset - 1, 0), len(text))
            if off in (None, 0) and _completes(text[lead:]):
                # CPython points at column 0 when the text stops mid-expression
                raise ParseError("the expression ends too early (an operand is missing)",
                                 self.shown, len(text.rstrip())) from None
            raise ParseError(f"invalid syntax: {e.msg}", self.shown, off) from None
        except (RecursionError, MemoryError):
            raise ParseError(
                "expression is nested too deeply for Python's parser (a chain such as "
                "a + b + c + ... of more than about 2000 terms counts as deep; use sum())"
            ) from None
        except ValueError as e:
            raise ParseError(f"invalid text: {e}") from None

    def _walk(self, root: ast.Expression) -> Value:
        """Post-order, left to right, with an explicit stack."""
        stack: list[tuple[ast.AST, bool]] = [(root.body, False)]
        values: list[Value] = []
        while stack:
            node, ready = stack.pop()
            if not ready:
                children = self._children(node)
                stack.append((node, True))
                stack.extend((c, False) for c in reversed(children))
                continue
            n = self._count(node)
            args = values[len(values) - n:]
            del values[len(values) - n:]
            try:
                values.append(self._combine(node, args))
            except SymgradError as err:
                self.rethrow(err, node)
            except (TypeError, ValueError, ArithmeticError, IndexError, KeyError) as err:
                self.fail(f"cannot build this: {err}", offset=self.where(node))
        return values[0]

    # phase 1: check the node, list the sub-expressions to evaluate

    def _children(self, node: ast.AST) -> list[ast.AST]:
        kind = type(node).__name__
        handler = getattr(self, f"_check_{kind}", None)
        if handler is None:
            reason = _UNSUPPORTED.get(kind, f"{kind} syntax is not supported")
            self.fail(reason, node)
        return handler(node)

    def _count(self, node: ast.AST) -> int:
        plan = self.plans.get(id(node))
        return plan[0] if isinstance(plan, tuple) else 0

    def _plan(self, node: ast.AST, children: list, *extra) -> list:
        self.plans[id(node)] = (len(children), *extra)
        return children

    def _check_BinOp(self, node: ast.BinOp) -> list:
        if type(node.op) not in _BINOPS:
            self.fail(f"operator {type(node.op).__name__} is not supported", node,
                      self.where(node))
        return self._plan(node, [node.left, node.right])

    def _check_UnaryOp(self, node: ast.UnaryOp) -> list:
        if type(node.op) not in _UNARY:
            what = "'not'" if isinstance(node.op, ast.Not) else "'~'"
            self.fail(f"operator {what} is not supported", node)
        return self._plan(node, [node.operand])

    def _check_Compare(self, node: ast.Compare) -> list:
        if len(node.ops) > 1:
            a, b = node.comparators[0], node.comparators[1]
            symbol = _CMPOPS.get(type(node.ops[1]), ("",))[0]
            start = self.pos.offset(a.end_lineno, a.end_col_offset)
            found = self.text.find(symbol, start, self.pos.offset(b.lineno, b.col_offset))
            self.fail("chained comparisons are not supported; compare two things at a time",
                      b, found if symbol and found >= 0 else None)
        if type(node.ops[0]) not in _CMPOPS:
            self.fail(f"operator {type(node.ops[0]).__name__} is not supported", node)
        return self._plan(node, [node.left, node.comparators[0]])

    def _check_Name(self, node: ast.Name) -> list:
        return self._plan(node, [])

    def _check_Constant(self, node: ast.Constant) -> list:
        self._number(node)
        return self._plan(node, [])

    def _check_List(self, node: ast.List) -> list:
        return self._plan(node, [], self._array(node))

    def _check_Attribute(self, node: ast.Attribute) -> list:
        if node.attr != "T":
            self.fail(_UNSUPPORTED["Attribute"], node, self._attr_offset(node))
        return self._plan(node, [node.value])

    def _check_Subscript(self, node: ast.Subscript) -> list:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        spec, exprs = [], []
        for item in items:
            if isinstance(item, ast.Slice):
                spec.append(("slice", tuple(self._bound(b) for b in
                                            (item.lower, item.upper, item.step))))
            elif isinstance(item, ast.Constant) and (item.value is None or item.value is ...):
                spec.append(("const", item.value))
            else:
                spec.append(("expr", item))
                exprs.append(item)
        return self._plan(node, [node.value, *exprs], spec, isinstance(node.slice, ast.Tuple))

    def _check_Call(self, node: ast.Call) -> list:
        func = node.func
        if not isinstance(func, ast.Name):
            self.fail("only functions called by name are supported (e.g. exp(x))", func)
        op = self._op(func)
        args = list(node.args)
        plan: list[tuple] = []
        children: list[ast.AST] = []
        statics: set[str] = set()
        for arg in args:
            if isinstance(arg, ast.Starred):
                self.fail(_UNSUPPORTED["Starred"], arg)
        for p in op.signature.params:
            if not args:
                break
            if p.kind == "operands":
                plan.extend(("expr",) for _ in args)
                children.extend(args)
                args = []
            elif p.kind == "list":
                seq = args.pop(0)
                if not isinstance(seq, (ast.List, ast.Tuple)):
                    self.fail(f"{op.name}() takes a list of arrays here, e.g. [a, b]", seq)
                for elt in seq.elts:
                    if isinstance(elt, ast.Starred):
                        self.fail(_UNSUPPORTED["Starred"], elt)
                plan.append(("list", len(seq.elts)))
                children.extend(seq.elts)
            elif p.kind == "static":
                plan.append(("static", self._static(args.pop(0), op, p.name)))
                statics.add(p.name)
            else:  # an operand, optional or not
                plan.append(("expr",))
                children.append(args.pop(0))
        if args:
            self.fail(f"{func.id}() takes {op.signature.describe()}; got extra arguments", args[0])
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                self.fail("**keyword arguments are not supported", kw)
            if kw.arg not in op.attrs or kw.arg in statics:
                ok = ", ".join(k for k in op.attrs if k not in statics) or "no keywords"
                self.fail(f"{func.id}() got an unexpected keyword '{kw.arg}' (takes {ok})", kw)
            kwargs[kw.arg] = self._static(kw.value, op, kw.arg)
        return self._plan(node, children, op, plan, kwargs)

    def _op(self, func: ast.Name) -> Callee:
        found = callee(func.id)
        if found is None:
            self.fail(f"unknown function '{func.id}'", func)
        return found

    # literals

    def _number(self, node: ast.AST, what: str = "expected a number literal here") -> Any:
        """The value of a numeric literal node (checked), or a ParseError saying ``what``."""
        if isinstance(node, ast.Constant):
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
            kind = {str: "strings", type(None): "None", type(...): "'...'"}.get(
                type(v), f"{type(v).__name__} literals")
            self.fail(f"{kind} {'is' if kind[0] in 'N' + chr(39) else 'are'} not supported here",
                      node)
        if isinstance(node, ast.Name) and node.id in CONSTANT_NAMES:
            if node.id not in self.declared:
                return CONSTANT_NAMES[node.id]
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            inner = node.operand
            if isinstance(inner, (ast.Constant, ast.Name)):
                v = self._number(inner, what)
                if not isinstance(v, bool):
                    return _UNARY[type(node.op)](v)
        self.fail(what, node)

    def _static(self, node: ast.AST, op, param: str) -> Any:
        """A static argument: int, float, bool, None, a tuple/list of ints, or a spec string."""
        if isinstance(node, ast.Constant) and node.value is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if not _string_param(op, param):
                self.fail(f"{op.name}() does not take a string for '{param}'", node)
            s = node.value
            if len(s) > MAX_STRING or not _EINSUM_SPEC.fullmatch(s):
                self.fail("a string argument may only contain letters, digits, '_', ',', "
                          "'->' and '...'", node)
            return s
        what = f"{op.name}() needs a literal for '{param}' (a number, None or a tuple of ints)"
        if isinstance(node, (ast.Tuple, ast.List)):
            if len(node.elts) > 64:
                self.fail("too many entries in a static argument", node)
            items = [self._number(e, what) for e in node.elts]
            for e, v in zip(node.elts, items):
                if isinstance(v, bool) or not isinstance(v, int):
                    self.fail("expected an int here", e)
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if _string_param(op, param):
            what = f'{op.name}() needs a literal string for \'{param}\', e.g. "ij,j->i"'
        return self._number(node, what)

    def _bound(self, node: ast.AST | None) -> int | None:
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return None
        v = self._number(node, "slice bounds must be int literals")
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail("slice bounds must be int literals", node)
        return v

    def _array(self, root: ast.List) -> list:
        """A nested list of number literals, as Python lists (iterative, size-limited)."""
        out: list = []
        stack: list[tuple[ast.AST, list]] = [(root, out)]
        count = 0
        while stack:
            node, target = stack.pop()
            if isinstance(node, ast.List):
                sub: list = []
                target.append(sub)
                stack.extend((e, sub) for e in reversed(node.elts))
                continue
            count += 1
            if count > MAX_ARRAY_ELEMENTS:
                self.fail(f"array literal has more than {MAX_ARRAY_ELEMENTS} numbers", root)
            target.append(self._number(node, "array literals may only hold numbers"))
        try:
            as_constant(out[0])
        except (ValueError, SymgradError):
            self.fail("array literal is not rectangular (or mixes numbers and lists)", root)
        return out[0]

    def _attr_offset(self, node: ast.Attribute) -> int:
        end = self.pos.offset(node.end_lineno, node.end_col_offset)
        return max(end - len(node.attr), 0)

    # phase 2: build

    def _combine(self, node: ast.AST, args: list) -> Value:
        return getattr(self, f"_build_{type(node).__name__}")(node, args)

    def _build_Name(self, node: ast.Name, args) -> Value:
        name = node.id
        if name in CONSTANT_NAMES and name not in self.declared:
            return CONSTANT_NAMES[name]
        found = self.names.get(name)
        if found is None:
            if name.startswith("__"):
                self.fail(f"'{name}' is not allowed as a variable name", node)
            shape, dtype = self.declared.get(name, ((), "float64"))
            found = self.names[name] = var(name, shape, dtype)
        return found

    def _build_Constant(self, node: ast.Constant, args) -> Value:
        return self._number(node)

    def _build_List(self, node: ast.List, args) -> Value:
        return self.plans[id(node)][1]

    def _build_Attribute(self, node: ast.Attribute, args) -> Value:
        return _expr(args[0], node, self).T

    def _build_UnaryOp(self, node: ast.UnaryOp, args) -> Value:
        (a,) = args
        if isinstance(a, list):
            a = const(a)
        return _UNARY[type(node.op)](a)

    def _build_BinOp(self, node: ast.BinOp, args) -> Value:
        symbol, fn = _BINOPS[type(node.op)]
        a, b = args
        if not isinstance(a, Expr) and not isinstance(b, Expr):
            if isinstance(a, list) or isinstance(b, list):
                a, b = _as_expr(a), _as_expr(b)
            else:
                return _fold_numbers(symbol, fn, a, b)
        return fn(a, b)

    def _build_Compare(self, node: ast.Compare, args) -> Value:
        a, b = args
        if isinstance(a, list) or isinstance(b, list):
            a, b = _as_expr(a), _as_expr(b)
        return _CMPOPS[type(node.ops[0])][1](a, b)

    def _build_Subscript(self, node: ast.Subscript, args) -> Value:
        _, spec, is_tuple = self.plans[id(node)]
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

    def _index(self, v: Value, node: ast.AST) -> Any:
        if isinstance(v, Expr):
            if v.dtype not in ("int64", "int32"):
                hint = f"; declare it, e.g. dtypes={{'{v.name}': 'int64'}}" if v.name else ""
                self.fail(f"an index must be an integer expression, got {v.dtype}{hint}", node)
            return v
        if isinstance(v, list):
            return v  # an integer-array literal: getitem checks it
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail("an index must be an int, a slice, None, ... or an integer expression",
                      node)
        return v

    def _build_Call(self, node: ast.Call, args) -> Value:
        _, op, plan, kwargs = self.plans[id(node)]
        values = iter(args)
        call_args: list = []
        for step in plan:
            if step[0] == "expr":
                call_args.append(next(values))
            elif step[0] == "list":
                call_args.append([next(values) for _ in range(step[1])])
            else:
                call_args.append(step[1])
        return op.fn(*call_args, **kwargs)


# -- helpers ------------------------------------------------------------------------------


def _operator_span(node: ast.AST):
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return (node.left, node.right), _BINOPS[type(node.op)][0]
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMPOPS:
        return (node.left, node.comparators[0]), _CMPOPS[type(node.ops[0])][0]
    if isinstance(node, ast.Subscript):
        return (node.value, node.slice), "["
    return None


def _string_param(op: Callee, param: str) -> bool:
    """Whether static parameter ``param`` of ``op`` takes a string (einsum's subscripts)."""
    return op.signature.takes_string(param)


def _as_expr(v: Value) -> Value:
    return const(v) if isinstance(v, list) else v


def _expr(v: Value, node: ast.AST, parser: _Parser) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, list):
        return const(v)
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


__all__ = ["parse", "ParseError", "CONSTANT_NAMES"]


def _completes(text: str) -> bool:
    """Whether ``text`` followed by one more operand would parse (it stops mid-expression)."""
    try:
        ast.parse(text + " _", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
