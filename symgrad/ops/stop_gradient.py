"""``stop_gradient``: the value of its operand, with no derivative (JAX's
``lax.stop_gradient``): reverse mode passes nothing back through it, forward mode nothing
forward. The backends emit the operand itself.

>>> import symgrad as sg
>>> x = sg.var("x")
>>> sg.evaluate(sg.grad(x * sg.stop_gradient(x), x), {"x": 3.0})
3.0
"""

from .elementwise import unary

stop_gradient = unary(
    "stop_gradient", lambda x: x, None, keep_dtype=True, differentiable=False,
    doc="stop_gradient(x): x, treated as a constant by every derivative", complex=True)
