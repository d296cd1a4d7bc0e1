"""The op registry's battery for ``backend="numba"``: many ops' cases in one module.

:func:`straight` puts each case's op in straight-line code (its value an output, all of
them in one loss, and the loss's gradients contracted with random weights), :func:`in_scan`
puts them all in the step of one scan over two steps (each operand a scanned slice, so
the op runs in the step; its gradient is a reverse scan). One module holds many cases, so
Numba compiles a few large functions rather than one per case. :func:`check` compares
the compiled results with ``sg.evaluate``'s; :func:`scan_model` is a set of scans every
compiled target must run (and :func:`close` its comparison).
"""

from __future__ import annotations

import numpy as np

import symgrad as sg
from symgrad.backends.targets.numba.table import why_not
from symgrad.ir.expr import build, projections
from tests.support.registry_cases import registry_cases

FLOATS = ("float64", "float32")


def cases_of(ops, families=((3, 4), (3, 1))) -> list:
    """The registry cases of ``ops`` (every one), built-in ops with operands only."""
    wanted = set(ops)
    return [p.values[0] for p in registry_cases(list(families))
            if p.values[0].op.name in wanted and p.values[0].op.arity != 0
            and p.values[0].op.builtin]


def has_form(case) -> bool:
    """Whether the case's node compiles (its attributes may put it on the short list); a
    result of a call with several results: whether its call does."""
    out, _, _ = case.build()
    nodes = out.graph.nodes
    n = nodes[out.node]
    return why_not(nodes[n.args[0]] if case.result is not None else n, nodes) is None


def first_cases(ops, dtype="float64") -> list:
    """The first case with a compiled form of each op of ``ops`` (sorted by op), in
    ``dtype``: float32 for elementwise ops only."""
    found = {}
    for case in cases_of(ops):
        arrays_ok = dtype == "float64" or case.op.elementwise
        if case.op.name not in found and has_form(case) and arrays_ok:
            found[case.op.name] = case
    return [found[op] for op in sorted(found)]


def _operands(cases, dtype, stack=None):
    """One variable per operand (``stack`` steps of it stacked, for a scan), the values,
    and which variables are differentiated."""
    variables, values, wrt = [], {}, []
    for k, case in enumerate(cases):
        mine = []
        for j, a in enumerate(case.arrays):
            a = np.asarray(a)
            a = a.astype(dtype) if a.dtype.kind == "f" else a
            shape = a.shape if stack is None else (stack, *a.shape)
            v = sg.var(f"c{k}_{j}", shape, a.dtype.name)
            values[v.name] = a if stack is None else np.stack([a] * stack)
            mine.append(v)
            if a.dtype.kind == "f" and case.op.differentiable:
                wrt.append(v)
        variables.append(mine)
    return variables, values, wrt


def _apply(case, args):
    out = build(case.op, list(args), {**case.op.attrs, **case.attrs})
    return out if case.result is None else projections(out)[case.result]


def _weights(rng, shape, dtype):
    return sg.const(rng.uniform(0.5, 1.5, size=shape).astype(dtype))


def _loss(rng, ys, dtype):
    terms = [sg.sum(y * _weights(rng, y.shape, dtype)) for y in ys if y.dtype in FLOATS]
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _with_gradients(rng, outs, loss, wrt, dtype, gradients):
    outs = [*outs, loss]
    if gradients and wrt:
        grads = sg.grad(loss, wrt)
        outs.append(_loss(rng, grads, dtype))
    return outs


def straight(cases, dtype="float64", gradients=True):
    """(outputs, values): each case's value, a loss over them and its gradients."""
    rng = np.random.default_rng(7)
    variables, values, wrt = _operands(cases, dtype)
    ys = [_apply(case, args) for case, args in zip(cases, variables)]
    return _with_gradients(rng, ys, _loss(rng, ys, dtype), wrt, dtype, gradients), values


def in_scan(cases, dtype="float64", gradients=True):
    """(outputs, values): one scan of two steps whose step computes every case on its
    operands' slices, the stacked values, a loss and its gradients."""
    rng = np.random.default_rng(7)
    variables, values, wrt = _operands(cases, dtype, stack=2)
    flat = [v for args in variables for v in args]
    sizes = [len(args) for args in variables]

    def step(c, xt):
        xt, ys, k = list(xt), [], 0
        for case, n in zip(cases, sizes):
            ys.append(_apply(case, xt[k:k + n]))
            k += n
        total = c
        for y in ys:
            if y.dtype in FLOATS:
                total = total + sg.sum(y) * 0.5
        return total, tuple(ys)

    c, ys = sg.scan(step, sg.const(np.zeros((), dtype)), tuple(flat))
    loss = _loss(rng, ys, dtype) + c
    return _with_gradients(rng, list(ys), loss, wrt, dtype, gradients), values


def check(got, ref, dtype, what):
    """Each result equal to its reference: integers exactly, floats to 1e-12 (float64)
    or 4 units in the last place (float32) of the largest magnitude, NaN where NaN."""
    for k, (g, r) in enumerate(zip(got, ref)):
        g, r = np.asarray(g), np.asarray(r)
        label = f"{what}: output {k}"
        assert g.shape == r.shape and g.dtype == r.dtype, (label, g.shape, r.shape, g.dtype)
        if r.dtype.kind in "biu":
            np.testing.assert_array_equal(g, r, err_msg=label)
            continue
        scale = max(1.0, float(np.max(np.abs(r[np.isfinite(r)]), initial=0.0)))
        tol = 1e-12 if dtype == "float64" else 4 * float(np.finfo(np.float32).eps)
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol * scale, err_msg=label,
                                   equal_nan=True)


def close(got, ref, tol=1e-12):
    """``got`` equal to ``ref``: the same shape and dtype, values to ``tol`` (relative, or
    absolute on the scale of the largest magnitude)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    scale = max(1.0, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * scale)


def scan_model():
    """Outputs (values and gradients) of several scans (a scalar chain, an array carry
    with a captured matrix, a pytree carry in reverse, empty and one-step scans, a
    checkpointed scan, a rolled Python loop), their inputs and the inputs' values."""
    rng = np.random.default_rng(7)
    w0, xs0 = rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(5, 3))
    x, W, xs = sg.var("x"), sg.var("W", shape=(3, 3)), sg.var("xs", shape=(5, 3))
    # a scalar chain (the W4 step)
    chain, _ = sg.scan(lambda h, _: (sg.sin(h) * h + sg.cos(h), None), x, length=6)
    # an array carry, xs slices, stacked ys, a captured matrix
    h, ys = sg.scan(lambda h, xt: (sg.tanh(W @ h + xt), sg.sum(h * h)), sg.sin(xs[0]), xs)
    # a pytree carry (a scalar and an array), run in reverse
    (s, v), zs = sg.scan(lambda c, xt: ((c[0] * 0.9 + sg.sum(xt * c[1]), c[1] * x + xt),
                                        c[0] * xt), (x, xs[1]), xs, reverse=True)
    empty, _ = sg.scan(lambda c, _: (sg.exp(c), None), x, length=0)
    one, ys1 = sg.scan(lambda c, xt: (c * xt, c + xt), x * 2.0, xs[:1, 0])
    # checkpointed: a scan over segments, each a scan of its own
    ck, _ = sg.scan(lambda c, xt: (sg.sin(c) + xt * c, None), x, xs[:, 2], checkpoint=2)
    rolled = x
    for _ in range(40):  # a Python loop: rolled into one scan
        rolled = sg.cos(rolled) * 0.5 + rolled * x
    loss = (chain + sg.sum(h) + sg.sum(ys) + s + sg.sum(v * v) + sg.sum(zs) + empty + one
            + sg.sum(ys1) + ck + rolled)
    outs = [chain, h, ys, s, v, zs, empty, one, ys1, ck, rolled, *sg.grad(loss, [x, W, xs])]
    return outs, [x, W, xs], {"x": 0.7, "W": w0, "xs": xs0}
