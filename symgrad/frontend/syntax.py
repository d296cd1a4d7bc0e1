"""Text -> syntax tree: the tokens of Python's tokenizer read by an operator-precedence
parser of its own (explicit stacks, no recursion, linear in the length of the text).

Only the grammar :func:`symgrad.frontend.parse.parse` accepts is read: arithmetic,
comparisons, calls, names, numeric and string literals, subscripts, attributes, list and
tuple literals and ``lambda`` (plain-name parameters, one expression); anything else raises
:class:`~symgrad.errors.ParseError` with a caret under its column. The tree's nodes are
small classes of our own with character offsets into the text; what they mean is
:mod:`symgrad.frontend.parse`'s walk.
"""

from __future__ import annotations

import io
import keyword
import operator
import re
import tokenize
import unicodedata
from collections.abc import Callable
from typing import Any

from ..base.describe import describe
from ..base.errors import LimitError, ParseError
from ..ir.limits import limits

BINOPS: dict[str, Callable] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "**": operator.pow, "@": operator.matmul,
}


CMPOPS: dict[str, Callable] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}


UNARY_OPS: dict[str, Callable] = {"-": operator.neg, "+": operator.pos}


# binding power: comparisons < + - < * / @ < unary - + < ** (right-associative)
_PREC = {**dict.fromkeys(CMPOPS, 1), "+": 4, "-": 4, "*": 5, "/": 5, "@": 5, "**": 7}


_UNARY_PREC = 6


_REFUSED_OPS = {
    "//": "operator '//' (floor division) is not supported; write floor(a / b) or a / b",
    "%": "operator '%' (modulo) is not supported",
    "<<": "operator '<<' (shift) is not supported", ">>": "operator '>>' (shift) is not supported",
    "|": "operator '|' (bitwise or) is not supported; use where() and comparisons",
    "&": "operator '&' (bitwise and) is not supported; use where() and comparisons",
    "^": "operator '^' (bitwise xor) is not supported; for a power write x ** 2",
    "~": "operator '~' is not supported",
    ":=": "assignment expressions (:=) are not supported",
    "=": "'=' (assignment) is not supported here; compare with ==",
}


_KEYWORDS = {
    "if": "conditional expressions are not supported; use where(cond, a, b)",
    "and": "'and'/'or' are not supported; use where() and comparisons",
    "or": "'and'/'or' are not supported; use where() and comparisons",
    "not": "operator 'not' is not supported",
    "in": "operator 'in' is not supported", "is": "operator 'is' is not supported",
    "await": "await is not supported", "yield": "yield is not supported",
}


_STARRED = "starred arguments are not supported"


_CLOSERS = {"(": ")", "[": "]"}


class ParseLimitError(ParseError, LimitError):
    """Text over one of the ``sg.limits.parse_*`` limits (both a ParseError and a
    LimitError)."""


# Small nodes of our own: ``start``/``end`` are character offsets into the text, and
# ``plan`` is what the checking pass of the walk leaves for the building pass.
class SyntaxNode:
    __slots__ = ("start", "end", "plan")
    kind = ""


def _kind(name: str, *fields: str, base: type = SyntaxNode) -> type:
    return type(name, (base,), {"__slots__": fields, "kind": name})


Name = _kind("Name", "id")


Constant = _kind("Constant", "value")


UnaryOp = _kind("UnaryOp", "op", "operand")


BinOp = _kind("BinOp", "left", "op", "right", "op_at")  # op_at: the operator's offset


Compare = _kind("Compare", base=BinOp)


Attribute = _kind("Attribute", "value", "attr", "attr_at")


Call = _kind("Call", "func", "args", "keywords")


Keyword = _kind("Keyword", "arg", "value")


Subscript = _kind("Subscript", "value", "items", "is_tuple", "bracket_at")


Slice = _kind("Slice", "lower", "upper", "step")


List = _kind("List", "elts")


Tuple = _kind("Tuple", base=List)


Lambda = _kind("Lambda", "params", "body")  # params: [(name, offset)]


def _node(cls: type, start: int, end: int, **fields: Any) -> Any:
    n = cls()
    n.start, n.end, n.plan = start, end, None
    for k, v in fields.items():
        setattr(n, k, v)
    return n


def _scan(text: str, shown: str) -> None:
    """Bracket depth and unary-operator runs, counted before the tokenizer sees the text."""
    max_depth, max_run = limits.parse_depth, limits.parse_unary_run
    depth = run = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
            if depth > max_depth:
                raise ParseLimitError(f"brackets nested deeper than {max_depth} "
                                      "(sg.limits.parse_depth)", shown, i)
        elif ch in ")]}":
            depth -= 1
        if ch in "+-~":
            run += 1
            if run > max_run:
                raise ParseLimitError(f"more than {max_run} operators in a row "
                                      "(sg.limits.parse_unary_run)", shown, i)
        elif not ch.isspace():
            run = 0


_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+


_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT}


class _Frame:
    """One bracket being parsed (or the whole text): its operand and operator stacks and
    the items finished so far (call arguments, list elements, index entries)."""

    __slots__ = ("kind", "open_at", "head", "vals", "ops", "items", "comma", "keyword",
                 "slice")

    def __init__(self, kind: str, open_at: int, head: Any = None) -> None:
        self.kind, self.open_at, self.head = kind, open_at, head
        self.vals: list = []
        self.ops: list[tuple[str, int, int, bool]] = []  # symbol, precedence, at, unary
        self.items: list = []
        self.comma = False
        self.keyword: tuple[str, int] | None = None
        self.slice: list | None = None

    def empty(self) -> bool:
        return not self.vals and not self.ops and self.keyword is None and self.slice is None


class Reader:
    """The text, checked for its size and shown as one printable line for carets, read
    into a syntax tree (:meth:`read`); errors point at a column."""

    def __init__(self, text: Any) -> None:
        if not isinstance(text, str):
            raise ParseError(f"parse() needs a string, got {describe(text)}")
        text = str.__str__(text)
        if len(text) > limits.parse_chars:
            raise ParseLimitError(f"input is {len(text)} characters long (limit "
                                  f"{limits.parse_chars}: sg.limits.parse_chars)")
        self.text = text
        # one printable line with the same offsets, for the caret display
        self.shown = text if text.isprintable() else "".join(
            c if c.isprintable() else " " for c in text)

    def read(self, lead: int) -> SyntaxNode:
        """The syntax tree of the text, whose first ``lead`` characters are blank."""
        _scan(self.text, self.shown)
        return self._parse(self._tokens(lead))

    def fail(self, message: str, node: SyntaxNode | None = None, offset: int | None = None):
        if offset is None and node is not None:
            offset = node.start
        raise ParseError(message, self.shown, offset)

    def where(self, node: SyntaxNode) -> int:
        """The column to blame for a node: its operator for binary ops, else its start."""
        if isinstance(node, BinOp):
            return node.op_at
        if isinstance(node, Subscript):
            return node.bracket_at
        return node.start

    # phase 0: tokens ----------------------------------------------------------------

    def _tokens(self, lead: int) -> list[tuple[str, str, int, int]]:
        """``(kind, text, start, end)`` with character offsets; kinds ``name number string
        op newline end``. Comments and line breaks inside brackets are dropped."""
        text = self.text
        starts = [lead] + [lead + m.end() for m in re.finditer("\n", text[lead:])]
        out: list[tuple[str, str, int, int]] = []

        def at(pos: tuple[int, int]) -> int:
            row, col = pos
            return min(starts[min(max(row, 1), len(starts)) - 1] + col, len(text))

        last = len(starts)

        names = {tokenize.NAME: "name", tokenize.NUMBER: "number", tokenize.STRING: "string",
                 tokenize.OP: "op", tokenize.NEWLINE: "newline", tokenize.ENDMARKER: "end"}
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text[lead:]).readline):
                kind = tok.type
                if kind in _SKIP:
                    continue
                (r0, c0), (r1, c1) = tok.start, tok.end
                if 0 < r0 <= last and 0 < r1 <= last:  # the usual case, inline
                    start, end = starts[r0 - 1] + c0, starts[r1 - 1] + c1
                else:
                    start, end = at(tok.start), at(tok.end)
                if kind == _FSTRING_START:
                    self.fail("f-strings are not supported", offset=start)
                if kind == tokenize.ERRORTOKEN:
                    if tok.string.isspace():
                        continue
                    if tok.string in "'\"":
                        self.fail("this string is never closed", offset=start)
                    self.fail(f"invalid character {tok.string!r}", offset=start)
                if kind not in names:
                    self.fail("invalid syntax", offset=start)
                out.append((names[kind], tok.string, start, end))
        except tokenize.TokenError as e:
            where = at(e.args[1]) if len(e.args) > 1 else len(text)
            if "string" in str(e.args[0]):
                self.fail("this string is never closed", offset=min(where, len(text) - 1))
            out.append(("end", "", len(text.rstrip()), len(text)))  # an unclosed bracket
        except SyntaxError as e:  # Python 3.12+: the C tokenizer
            col = None if e.lineno is None else at((e.lineno, max((e.offset or 1) - 1, 0)))
            self.fail(f"invalid syntax: {e.msg}", offset=col)
        # a line break outside brackets ends the text: only the end may follow it
        while out and out[-1][0] in ("newline", "end"):
            out.pop()
        for kind, _, start, _ in out:
            if kind == "newline":
                self.fail("the expression continues on a new line: put it in parentheses "
                          "or write it on one line", offset=start)
        end = len(text.rstrip())
        out.append(("end", "", end, end))
        return out

    # phase 1: tokens -> tree, iteratively -------------------------------------------

    def _parse(self, tokens: list[tuple[str, str, int, int]]) -> SyntaxNode:
        frames = [_Frame("top", 0)]
        operand = True  # expecting an operand (prefix position), else an operator
        k = 0
        while True:
            kind, s, start, end = tokens[k]
            frame = frames[-1]
            k += 1
            if kind == "end":
                break
            if operand:
                k, operand = self._prefix(frames, frame, tokens, k, kind, s, start, end)
            else:
                k, operand = self._infix(frames, frame, tokens, k, kind, s, start, end)
        if not operand:
            self._close_lambdas(frames)
        brackets = [f for f in frames[1:] if f.kind != "lambda"]
        if brackets:
            f = brackets[-1]
            self.fail(f"invalid syntax: '{self.text[f.open_at]}' was never closed",
                      offset=f.open_at)
        if operand and frames[-1].kind == "lambda" and frames[-1].empty():
            self.fail("a lambda needs a body: one expression after ':'",
                      offset=tokens[-1][2])
        if operand:
            top = frames[0]
            if len(frames) == 1 and top.empty() and not top.items:
                self.fail("empty expression", offset=tokens[-1][2])
            self.fail("the expression ends too early (an operand is missing)",
                      offset=tokens[-1][2])
        top = frames[0]
        self._finish_item(top)
        if top.comma:
            first = top.items[0]
            return _node(Tuple, first.start, top.items[-1].end, elts=top.items)
        return top.items[0]

    def _prefix(self, frames, frame, tokens, k, kind, s, start, end) -> tuple[int, bool]:
        """A token where an operand must start; returns the next index and the state."""
        if kind == "name":
            if s in ("True", "False", "None"):
                value = {"True": True, "False": False, "None": None}[s]
                frame.vals.append(_node(Constant, start, end, value=value))
                return k, False
            if s == "lambda":
                return self._lambda(frames, tokens, k, start), True
            if keyword.iskeyword(s):
                self.fail(_KEYWORDS.get(s, f"invalid syntax: '{s}' cannot start an operand"),
                          offset=start)
            if (frame.kind == "call" and frame.empty() and tokens[k][0] == "op"
                    and tokens[k][1] == "="):
                frame.keyword = (unicodedata.normalize("NFKC", s), start)
                return k + 1, True
            frame.vals.append(_node(Name, start, end, id=unicodedata.normalize("NFKC", s)))
            return k, False
        if kind == "number":
            frame.vals.append(_node(Constant, start, end, value=self._literal(s, start)))
            return k, False
        if kind == "string":
            frame.vals.append(_node(Constant, start, end, value=self._string(s, start)))
            return k, False
        if kind == "newline":
            self.fail("invalid syntax", offset=start)
        # an operator token
        if s in UNARY_OPS:
            frame.ops.append((s, _UNARY_PREC, start, True))
            return k, True
        if s in _CLOSERS:
            frames.append(_Frame("paren" if s == "(" else "list", start))
            return k, True
        if s == "...":
            frame.vals.append(_node(Constant, start, end, value=...))
            return k, False
        if s == ":" and frame.kind == "index" and not frame.vals and not frame.ops:
            self._slice_part(frame, None, start)
            return k, True
        if s in (")", "]", ",") and not frame.vals and not frame.ops and frame.keyword is None:
            if s == "," and frame.slice is None:
                self.fail("an operand is missing before ','", offset=start)
            return self._separator(frames, frame, s, start, end, k)
        if s == ",":
            self.fail("an operand is missing before ','", offset=start)
        if s in (")", "]"):
            self.fail(f"an operand is missing before '{s}'", offset=start)
        if s == "*":
            self.fail(_STARRED, offset=start)
        if s == "**" and frame.kind == "call" and frame.empty():
            self.fail("**keyword arguments are not supported", offset=start)
        if s == "{":
            self.fail(self._braces(tokens, k), offset=start)
        self.fail(_REFUSED_OPS.get(s, f"invalid syntax: '{s}' cannot start an operand"),
                  offset=start)

    def _lambda(self, frames: list[_Frame], tokens: list, k: int, at: int) -> int:
        """``lambda a, b:`` read up to its ':' (plain names only); the body is read in a
        frame of its own, closed by the ',' or bracket that ends it. Returns the next index."""
        if len(frames) >= limits.parse_depth:
            raise ParseLimitError(f"brackets and lambdas nested deeper than "
                                  f"{limits.parse_depth} (sg.limits.parse_depth)", self.shown, at)
        params: list[tuple[str, int]] = []
        seen: set[str] = set()
        expect_comma = False
        while True:
            kind, s, start, _ = tokens[k]
            k += 1
            if kind == "op" and s == ":":
                break
            if kind == "name" and not keyword.iskeyword(s) and not expect_comma:
                name = unicodedata.normalize("NFKC", s)
                if name in seen:
                    self.fail(f"duplicate parameter '{name}' in a lambda", offset=start)
                params.append((name, start))
                seen.add(name)
                expect_comma = True
                continue
            if kind == "op" and s == "," and expect_comma:
                expect_comma = False
                continue
            self.fail(self._lambda_refusal(kind, s), offset=start)
        frame = _Frame("lambda", at, params)
        frames.append(frame)
        return k

    @staticmethod
    def _lambda_refusal(kind: str, s: str) -> str:
        if s == "=":
            return "lambda parameters with default values are not supported"
        if s in ("*", "**"):
            return f"{s}-parameters in a lambda are not supported; name each parameter"
        if s == "/":
            return "'/' in lambda parameters is not supported"
        if kind == "end":
            return "a lambda needs ':' and a body, e.g. lambda c, x: (c * x, c)"
        if s == "(":
            return "lambda parameters must be plain names (no tuple unpacking)"
        if kind == "name" and keyword.iskeyword(s):
            return f"'{s}' is a keyword, not a parameter name"
        return "invalid syntax: lambda parameters are names separated by ',' then ':'"

    def _close_lambdas(self, frames: list[_Frame]) -> None:
        """End the lambdas whose body the current token closes: each becomes an operand
        of the frame around it."""
        while frames[-1].kind == "lambda":
            frame = frames.pop()
            body = self._reduce(frame)
            if body is None:
                self.fail("a lambda needs a body: one expression after ':'",
                          offset=frame.open_at)
            frames[-1].vals.append(_node(Lambda, frame.open_at, body.end, params=frame.head,
                                         body=body))

    def _infix(self, frames, frame, tokens, k, kind, s, start, end) -> tuple[int, bool]:
        """A token after a complete operand: an operator, a trailer or a separator."""
        if kind == "name":
            if s == "not" and tokens[k][1] == "in":
                self.fail("operator 'not in' is not supported", offset=start)
            if s == "for":
                what = "comprehensions" if frame.kind == "list" else "generator expressions"
                self.fail(f"{what} are not supported", offset=start)
            self.fail(_KEYWORDS.get(s, f"invalid syntax: '{s}' after an operand (an "
                                       "operator is missing?)"), offset=start)
        if kind != "op":
            self.fail("invalid syntax: an operator is missing before this", offset=start)
        if s in _PREC:
            self._push_binary(frame, s, start)
            return k, True
        if s == "(":
            frames.append(_Frame("call", start, frame.vals.pop()))
            return k, True
        if s == "[":
            frames.append(_Frame("index", start, frame.vals.pop()))
            return k, True
        if s == ".":
            kind2, attr, at2, end2 = tokens[k]
            if kind2 != "name":
                self.fail("invalid syntax: a name must follow '.'", offset=start)
            value = frame.vals.pop()
            frame.vals.append(_node(Attribute, value.start, end2, value=value,
                                    attr=unicodedata.normalize("NFKC", attr), attr_at=at2))
            return k + 1, False
        if s == ":" and frame.kind == "index":
            self._slice_part(frame, self._reduce(frame), start)
            return k, True
        if s in (")", "]", ","):
            return self._separator(frames, frame, s, start, end, k)
        self.fail(_REFUSED_OPS.get(s, f"invalid syntax: '{s}' is not supported here"),
                  offset=start)

    def _push_binary(self, frame: _Frame, s: str, at: int) -> None:
        prec = _PREC[s]
        ops = frame.ops
        if prec == 1 and any(op[1] == 1 for op in ops):
            self.fail("chained comparisons are not supported; compare two things at a time",
                      offset=at)
        while ops and (ops[-1][1] > prec or (ops[-1][1] == prec and s != "**")):
            self._apply(frame)
        ops.append((s, prec, at, False))

    def _apply(self, frame: _Frame) -> None:
        s, _, at, unary = frame.ops.pop()
        vals = frame.vals
        if unary:
            x = vals.pop()
            vals.append(_node(UnaryOp, at, x.end, op=s, operand=x))
            return
        b, a = vals.pop(), vals.pop()
        cls = Compare if s in CMPOPS else BinOp
        vals.append(_node(cls, a.start, b.end, left=a, op=s, right=b, op_at=at))

    def _reduce(self, frame: _Frame) -> SyntaxNode | None:
        """The finished operand of the current item (None if the item is empty)."""
        while frame.ops:
            self._apply(frame)
        return frame.vals.pop() if frame.vals else None

    def _slice_part(self, frame: _Frame, value: SyntaxNode | None, colon: int) -> None:
        if frame.slice is None:
            frame.slice = [value]
        elif len(frame.slice) < 2:
            frame.slice.append(value)
        else:
            self.fail("invalid syntax: a slice has at most two ':'", offset=colon)

    def _finish_item(self, frame: _Frame) -> None:
        value = self._reduce(frame)
        if frame.slice is not None:
            parts = [*frame.slice, value, None, None][:3]
            found = [p for p in parts if p is not None]
            start = found[0].start if found else frame.open_at
            value = _node(Slice, start, found[-1].end if found else start,
                          lower=parts[0], upper=parts[1], step=parts[2])
            frame.slice = None
        if frame.keyword is not None:
            name, at = frame.keyword
            frame.keyword = None
            if value is None:
                self.fail(f"keyword '{name}' needs a value", offset=at)
            value = _node(Keyword, at, value.end, arg=name, value=value)
        elif frame.kind == "call" and any(isinstance(i, Keyword) for i in frame.items):
            self.fail("a positional argument cannot follow keyword arguments",
                      offset=value.start if value is not None else frame.open_at)
        if value is not None:
            frame.items.append(value)

    def _separator(self, frames, frame, s, start, end, k) -> tuple[int, bool]:
        """``,`` or a closing bracket, after an operand (or after nothing: ``f()``,
        ``[1, 2,]``, ``x[1:]``)."""
        if frame.kind == "lambda":
            self._close_lambdas(frames)
            frame = frames[-1]
        if frame.kind == "top" and s != ",":
            self.fail(f"invalid syntax: unmatched '{s}'", offset=start)
        self._finish_item(frame)
        if s == ",":
            frame.comma = True
            return k, True
        want = _CLOSERS["(" if frame.kind in ("paren", "call") else "["]
        if s != want:
            opener = self.text[frame.open_at]
            self.fail(f"invalid syntax: closing '{s}' does not match opening '{opener}'",
                      offset=start)
        frames.pop()
        frames[-1].vals.append(self._close(frame, end))
        return k, False

    def _close(self, frame: _Frame, end: int) -> SyntaxNode:
        items, at = frame.items, frame.open_at
        if frame.kind == "paren":
            if len(items) == 1 and not frame.comma:
                return items[0]
            return _node(Tuple, at, end, elts=items)
        if frame.kind == "list":
            return _node(List, at, end, elts=items)
        head = frame.head
        if frame.kind == "call":
            args = [i for i in items if not isinstance(i, Keyword)]
            kws = [i for i in items if isinstance(i, Keyword)]
            return _node(Call, head.start, end, func=head, args=args, keywords=kws)
        if not items:
            self.fail("invalid syntax: an index is missing inside []", offset=at)
        return _node(Subscript, head.start, end, value=head, items=items,
                     is_tuple=frame.comma, bracket_at=at)

    def _braces(self, tokens: list, k: int) -> str:
        depth = 0
        for _, s, _, _ in tokens[k:]:
            if s in ("(", "[", "{"):
                depth += 1
            elif s in (")", "]", "}"):
                if depth == 0:
                    break
                depth -= 1
            elif s == ":" and depth == 0:
                return "dict literals are not supported"
        return "set literals are not supported"

    # literals

    def _literal(self, s: str, at: int) -> int | float:
        """A NUMBER token's value, read without evaluating anything."""
        digits = s.replace("_", "")
        if digits[-1] in "jJ":
            self.fail("complex literals are not supported here", offset=at)
        if digits[:2].lower() in ("0x", "0o", "0b") or not any(c in digits for c in ".eE"):
            if len(digits) > 40:
                self.fail("integer literal is too large (limit 2**63 - 1)", offset=at)
            try:
                return int(digits, 0)
            except ValueError:
                self.fail(f"invalid number {s!r}", offset=at)
        try:
            return float(digits)
        except ValueError:
            self.fail(f"invalid number {s!r}", offset=at)

    def _string(self, s: str, at: int) -> str:
        """A STRING token's text: plain or raw strings only, without escapes."""
        prefix = s[: len(s) - len(s.lstrip("rRbBuUfF"))].lower()
        if "f" in prefix:
            self.fail("f-strings are not supported", offset=at)
        if "b" in prefix:
            self.fail("bytes literals are not supported", offset=at)
        body = s[len(prefix):]
        quote = 3 if body[:3] in ('"""', "'''") else 1
        body = body[quote:-quote]
        if "\\" in body and "r" not in prefix:
            self.fail("escape sequences are not supported in strings", offset=at)
        if len(body) > limits.parse_string_chars:
            raise ParseLimitError(f"string longer than {limits.parse_string_chars} "
                                  "characters (sg.limits.parse_string_chars)", self.shown, at)
        return body
