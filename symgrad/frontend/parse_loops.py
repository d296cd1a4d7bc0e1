"""Loops in expression text: ``scan(lambda c, x: ..., init, xs)`` and
``fori_loop(lo, hi, lambda i, c: ..., init)``, as Python writes them.

The parser (:mod:`.parse`) reads a ``lambda`` only as the step of a loop. It becomes a
Python function that :func:`symgrad.scan` traces as it traces any step: the function walks
the lambda's body with its parameters bound to the traced values. Names follow Python's
lexical scoping: a parameter shadows the same name outside (and the constants ``pi``,
``e``...); any other name is the variable of the whole text, so ``W`` inside a step is the
``W`` outside it, captured by the loop as the API's closures are. Tuples (several carries,
``(new carry, y)``) and ``None`` (no ``xs``, no per-step result) are values only in a loop's
arguments and step results. Nothing is evaluated: the body is the same syntax tree walked
by the same checks, and nested loops nest lambdas (the depth counts toward
``sg.limits.parse_depth``).

>>> import symgrad as sg
>>> text = "scan(lambda c, x: (c * x, c), 1.0, xs)"  # (final carry, stacked carries)
>>> p, ys = (sg.parse(f"{text}[{k}]", shapes={"xs": (3,)}) for k in (0, 1))
>>> sg.evaluate([p, ys], {"xs": [2.0, 3.0, 4.0]})
[24.0, array([1., 2., 6.])]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .loops import fori_loop, scan
from .syntax import Call, Constant, Lambda, List, Name, SyntaxNode, Tuple

# name -> (parameters in order, the static ones, the one that is the step, its arity)
LOOPS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str, tuple[str, ...]]] = {
    "scan": (("f", "init", "xs", "length", "reverse", "checkpoint"),
             ("length", "reverse", "checkpoint"), "f", ("carry", "x")),
    "fori_loop": (("lower", "upper", "body_fun", "init_val"), ("lower", "upper"), "body_fun",
                  ("i", "val")),
}

_EXAMPLE = {"scan": "scan(lambda c, x: (c * x, c), 1.0, xs)",
            "fori_loop": "fori_loop(0, 10, lambda i, c: c * x + i, 1.0)"}

_LAMBDA_HINT = {"scan": "for scan(f, ...) write scan(lambda c, x: f(c, x), ...)",
                "fori_loop": "for fori_loop(lo, hi, f, ...) write lambda i, c: f(i, c)"}

_FUNCTIONS: dict[str, Callable] = {"scan": scan, "fori_loop": fori_loop}

_NOT_HERE = ("a lambda is only read as the step of a loop: scan(lambda c, x: (new_c, y), init, "
             "xs) or fori_loop(lo, hi, lambda i, c: new_c, init)")


class LoopText:
    """The parser's part for loops (a mixin of :class:`symgrad.frontend.parse._Parser`):
    the checks and builds of ``scan``/``fori_loop`` calls, lambdas, tuples and ``None``."""

    def _init_loops(self) -> None:
        self.scopes: list[dict[str, Any]] = []  # the parameters of the lambdas being traced
        self.loose: set[int] = set()  # ids of nodes where a tuple or None may stand

    def _bound_name(self, name: str) -> tuple[bool, Any]:
        """``(True, value)`` for a parameter of an enclosing lambda (the innermost wins)."""
        for scope in reversed(self.scopes):
            if name in scope:
                return True, scope[name]
        return False, None

    # checks

    def _check_Lambda(self, node: Lambda) -> list:
        self.fail(_NOT_HERE, node)

    def _check_Tuple(self, node: Tuple) -> list:
        if id(node) not in self.loose:
            self.fail("tuples are only allowed as indices, static arguments or op lists, and "
                      "as a loop's carries and step results", node)
        self.loose.update(id(e) for e in node.elts)
        return self._plan(node, list(node.elts))

    def _loose_list(self, node: List) -> None:
        if id(node) in self.loose and not isinstance(node, Tuple):
            self.fail("a list here is ambiguous: write a tuple (a, b) for several carries or "
                      "results, or array([...]) for one array", node)

    def _check_loop(self, node: Any, name: str) -> list:
        """``scan(...)``/``fori_loop(...)``: the step must be a lambda of two parameters;
        the static arguments are literals; the others are walked (tuples and None allowed)."""
        params, statics, step, arity = LOOPS[name]
        given: dict[str, SyntaxNode] = {}
        if len(node.args) > len(params):
            self.fail(f"{name}() takes at most {len(params)} arguments "
                      f"({', '.join(params)}); got {len(node.args)}", node.args[len(params)])
        for p, a in zip(params, node.args):
            given[p] = a
        for kw in node.keywords:
            if kw.arg not in params:
                self.fail(f"{name}() got an unexpected keyword '{kw.arg}' (takes "
                          f"{', '.join(params)})", kw)
            if kw.arg in given:
                self.fail(f"{name}() got multiple values for '{kw.arg}'", kw)
            given[kw.arg] = kw.value
        fn = given.get(step)
        if fn is not None and not isinstance(fn, Lambda):
            self.fail(f"{name}() takes its {'step' if name == 'scan' else 'body'} as a lambda "
                      f"written in the text, e.g. {_EXAMPLE[name]}; a function cannot be "
                      f"passed by name ({_LAMBDA_HINT[name]})", fn)
        required = params[:2] if name == "scan" else params
        missing = [p for p in required if p not in given]
        if missing:
            self.fail(f"{name}() is missing '{missing[0]}'; e.g. {_EXAMPLE[name]}", node)
        if len(fn.params) != len(arity):
            self.fail(f"{name}()'s lambda takes {len(arity)} parameters ({', '.join(arity)}), "
                      f"got {len(fn.params)}", fn)
        static = {p: self._loop_static(given[p], name, p) for p in statics if p in given}
        children = [given[p] for p in params if p in given and p != step and p not in statics]
        self.loose.update(id(c) for c in children)
        slots = [p for p in params if p in given and p != step and p not in statics]
        return self._plan(node, children, "loop", name, fn, static, slots)

    def _loop_static(self, node: SyntaxNode, name: str, param: str) -> Any:
        if isinstance(node, Constant) and node.value is None and param != "reverse":
            return None
        want = "True or False" if param == "reverse" else "an int literal"
        value = self._number(node, f"{name}() needs {want} for '{param}'")
        if (param == "reverse") != isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{name}() needs {want} for '{param}'", node)
        return value

    # builds

    def _build_Tuple(self, node: Tuple, args: list) -> tuple:
        return tuple(args)

    def _loop_call(self, node: Any, args: list) -> Any:
        """The loop of ``node`` (planned by :meth:`_check_loop`) on its walked arguments."""
        _, _, name, fn, static, slots = node.plan
        kwargs = dict(zip(slots, args))
        kwargs.update(static)
        kwargs[LOOPS[name][2]] = self._step(fn, name)
        return _FUNCTIONS[name](**kwargs)

    def _step(self, fn: Lambda, name: str) -> Callable:
        """The Python function of a lambda: its body walked with the parameters bound, in
        the scopes around the lambda where it is written."""
        names = [p for p, _ in fn.params]
        closure = list(self.scopes)

        def step(*values: Any) -> Any:
            outer = self.scopes
            self.scopes = [*closure, dict(zip(names, values))]
            self.loose.add(id(fn.body))
            try:
                return self._walk(fn.body)
            finally:
                self.scopes = outer

        step.__name__ = step.__qualname__ = f"<lambda in {name}()>"
        return step


def results_hint(root: SyntaxNode) -> str:
    """How to pick one of the results of a text whose value is a tuple."""
    if isinstance(root, Call) and isinstance(root.func, Name) and root.func.id == "scan":
        return ("scan returns the final carry and the stacked per-step results); pick one, "
                "e.g. scan(...)[0]")
    return "as NumPy's function returns them); pick one, e.g. eigh(A)[1]"


__all__ = ["LOOPS", "LoopText", "results_hint"]
