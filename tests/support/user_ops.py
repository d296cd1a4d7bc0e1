"""Two ops defined through :mod:`symgrad.extend`, as a user would: an elementwise one with a
scalar form, and one with an attribute and a helper function. conftest imports this module
first, so the registry-driven tests cover them like the built-in ops."""

from __future__ import annotations

import numpy as np

import symgrad as sg
from symgrad.extend import defop, norm_axis

softsign = defop(
    "softsign", impl=lambda x: x / (1 + np.abs(x)),
    backprop=lambda n, g: (g / (1 + sg.abs(n.args[0])) ** 2,),
    numpy="{0} / (1 + np.abs({0}))", math="{0} / (1 + abs({0}))",
    sympy=lambda sp, x: x / (1 + sp.Abs(x)), doc="x / (1 + |x|)",
)


def _sg_l2_normalize(x, axis):
    return x / np.sqrt(np.sum(x * x, axis=axis, keepdims=True))


def _l2_normalize_rule(n, g):
    y, axis = n.out, n.attrs["axis"]
    norm = sg.sqrt(sg.sum(n.args[0] ** 2, axis=axis, keepdims=True))
    return ((g - y * sg.sum(g * y, axis=axis, keepdims=True)) / norm,)


l2_normalize = defop(
    "l2_normalize", impl=_sg_l2_normalize, backprop=_l2_normalize_rule, shape="same",
    params=("x", "=axis"), attrs={"axis": -1},
    prepare=lambda s, d, a: {"axis": norm_axis("l2_normalize", a["axis"], len(s[0]))},
    numpy="_sg_l2_normalize({0}, {axis!r})", helpers=(_sg_l2_normalize,), domain=None,
    examples=lambda rng: [([rng.standard_normal((3, 4)) + 2.0], {"axis": -1}),
                          ([rng.standard_normal((2, 3)) - 2.0], {"axis": 0})],
)
