"""What a solver call's nodes hold besides their operands (:mod:`symgrad.ops.solvers`):
its static part (:class:`Call`: SciPy's function and keywords) and the user's functions
the implicit rules call (:class:`Solver`). Both are hashable, so equal calls are one node.

>>> Call("root", (("method", "hybr"),), (), (3,)).option("method")
'hybr'
>>> literal((1.0, float("inf"), "a"))
"(1.0, float('inf'), 'a')"
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["STIFF", "Call", "Solver", "literal", "stiff"]

STIFF = ("Radau", "BDF", "LSODA")  # solve_ivp's methods that use the Jacobian


@dataclass(frozen=True)
class Call:
    """The static part of one solver call: SciPy's ``function``, its keywords with plain
    values (``options``: numbers, strings, bools, None, tuples of them), the keywords whose
    values are operands after the first (``arrays``), the solution's ``shape``, and how
    derivatives are taken (``sensitivity``: ``"forward"``, ``"adjoint"`` or None, chosen
    by the sizes; integrators only)."""

    function: str
    options: tuple[tuple[str, Any], ...] = ()
    arrays: tuple[str, ...] = ()
    shape: tuple[int, ...] = ()
    sensitivity: str | None = None

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.options).get(name, default)

    def spec(self) -> tuple:
        """What the run-time helper reads: ``(function, options, arrays)``."""
        return (self.function, self.options, self.arrays)

    def replace(self, **changes: Any) -> Call:
        options = dict(self.options)
        options.update(changes)
        return Call(self.function, tuple(sorted(options.items())), self.arrays, self.shape,
                    self.sensitivity)


@dataclass(frozen=True, eq=False)
class Solver:
    """A user's Python function held by a node (``custom_root``'s ``tangent_solve``,
    ``custom_linear_solve``'s ``solve``): equal only to itself."""

    fn: Callable[..., Any]
    name: str

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __repr__(self) -> str:
        return f"<{self.name}>"


def literal(value: Any) -> str:
    """``value`` (numbers, strings, None, tuples) as Python source; non-finite floats
    as ``float('inf')``."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return repr(value)




def stiff(call: Call) -> bool:
    """Whether SciPy's method for the integrator ``call`` uses the right-hand side's
    Jacobian (``odeint`` is LSODA)."""
    return call.function == "odeint" or call.option("method", "RK45") in STIFF
