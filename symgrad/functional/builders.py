"""What each function transform builds from the traced function: its gradient, Jacobian,
Hessian, JVP or VJP, in the structure of its arguments and results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.errors import DifferentiationError
from ..base.tree_util import tree_flatten, tree_unflatten
from ..ir.expr import Expr, F
from ..ir.shapes import fmt, is_float
from ..transforms import derivatives
from .checks import as_output, check_scalar, fun_name, split_aux, wrt_variables
from .traced import Make


def call_make(fun: Callable, args: tuple, static: dict) -> Any:
    return fun(*args, **static)


def grad_make(argnums: Any, has_aux: bool, with_value: bool, cleanup: bool,
              holomorphic: bool = False) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        value, aux = split_aux(fun, fun(*args, **static), has_aux)
        value = check_scalar(fun, value, "grad")
        wrt, tree = wrt_variables(fun, args, argnums)
        grads = (derivatives.grad(value, wrt, cleanup=cleanup, holomorphic=holomorphic)
                 if wrt else [])
        g = tree_unflatten(tree, list(grads))
        if with_value:
            return ((value, aux), g) if has_aux else (value, g)
        return (g, aux) if has_aux else g

    return make


def jac_make(argnums: Any, has_aux: bool, mode: str, holomorphic: bool = False,
             sparse: bool = False) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        out, aux = split_aux(fun, fun(*args, **static), has_aux)
        wrt, tree = wrt_variables(fun, args, argnums)
        leaves, out_def = tree_flatten(out)
        if sparse and len(wrt) != 1:
            raise DifferentiationError(
                f"jacobian of {fun_name(fun)}(sparse=True) takes one array argument "
                f"({len(wrt)} differentiated here): concatenate them into one vector")
        blocks = []
        for leaf in leaves:
            e = as_output(fun, leaf, wrt)
            if sparse:  # a scipy.sparse matrix (outputs x inputs, flattened) per output
                blocks.append(tree_unflatten(tree, [derivatives.jacobian(
                    e, wrt[0], mode=mode, sparse=True, holomorphic=holomorphic)]))
                continue
            jac = (derivatives.jacobian(e, wrt, mode=mode, holomorphic=holomorphic)
                   if wrt else ())
            blocks.append(tree_unflatten(tree, list(jac)))
        jac = tree_unflatten(out_def, blocks)
        return (jac, aux) if has_aux else jac

    return make


def hessian_make(argnums: Any, has_aux: bool, sparse: bool = False,
                 method: str | None = None) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        value, aux = split_aux(fun, fun(*args, **static), has_aux)
        wrt, tree = wrt_variables(fun, args, argnums)
        if isinstance(value, Expr) and value.shape and is_float(value.dtype):
            if sparse:
                raise DifferentiationError(
                    f"hessian of {fun_name(fun)}(sparse=True): the function returns shape "
                    f"{fmt(value.shape)}; a sparse Hessian is of a scalar function (sum the "
                    "outputs, or use sg.jacobian(..., sparse=True) on its gradient)")
            # a vector-valued function: jacfwd(jacrev(fun)), out.shape + a.shape + b.shape
            firsts = derivatives.jacobian(value, wrt, mode="reverse") if wrt else ()
            rows = [derivatives.jacobian(j, wrt, mode="forward") for j in firsts]
        elif sparse:
            value = check_scalar(fun, value, "hessian")
            if len(wrt) != 1:
                raise DifferentiationError(
                    f"hessian of {fun_name(fun)}(sparse=True) takes one array argument "
                    f"({len(wrt)} differentiated here): concatenate them into one vector")
            h = tree_unflatten(tree, [derivatives.hessian(value, wrt[0], sparse=True,
                                                          method=method)])
            return (h, aux) if has_aux else h
        else:
            value = check_scalar(fun, value, "hessian")
            rows = derivatives.hessian(value, wrt, sparse=False) if wrt else ()
        h = tree_unflatten(tree, [tree_unflatten(tree, list(r)) for r in rows])
        return (h, aux) if has_aux else h

    return make


def jvp_make(has_aux: bool) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        primals, tangents = args
        out, aux = split_aux(fun, fun(*primals, **static), has_aux)
        p_leaves, p_def = tree_flatten(primals)
        t_leaves, t_def = tree_flatten(tangents)
        if p_def != t_def:
            raise DifferentiationError(f"jvp of {fun_name(fun)}: primals and tangents "
                                       f"differ in structure ({p_def!r} and {t_def!r})")
        pairs = [(p, t) for p, t in zip(p_leaves, t_leaves) if is_float(p.dtype)]
        leaves, out_def = tree_flatten(out)
        outs = [as_output(fun, e, p_leaves) for e in leaves]
        if pairs and outs:
            tan = derivatives.jvp(outs, [p for p, _ in pairs], [t for _, t in pairs])
        else:
            tan = [F.zeros(e.shape, dtype=e.dtype) for e in outs]
        result = (out, tree_unflatten(out_def, list(tan)))
        return result + (aux,) if has_aux else result

    return make


def vjp_make(has_aux: bool) -> Make:
    def make(fun: Callable, args: tuple, static: dict) -> Any:
        primals, cotangent = args
        out, _ = split_aux(fun, fun(*primals, **static), has_aux)
        leaves, out_def = tree_flatten(out)
        c_leaves, c_def = tree_flatten(cotangent)
        if c_def != out_def:
            raise DifferentiationError(f"vjp of {fun_name(fun)}: the cotangent's structure "
                                       f"{c_def!r} is not the output's {out_def!r}")
        p_leaves, p_def = tree_flatten(tuple(primals))
        wrt = [p for p in p_leaves if is_float(p.dtype)]
        total = [None] * len(wrt)
        for leaf, ct in zip(leaves, c_leaves):
            e = as_output(fun, leaf, p_leaves)
            if ct.shape != e.shape:
                raise DifferentiationError(f"vjp of {fun_name(fun)}: a cotangent has shape "
                                           f"{fmt(ct.shape)}, its output {fmt(e.shape)}")
            if not wrt:
                break
            parts = derivatives.vjp(e, wrt, ct)
            total = [p if t is None else t + p for t, p in zip(total, parts)]
        it = iter(total)
        grads = [(next(it) if is_float(p.dtype) else None) for p in p_leaves]
        grads = [F.zeros(p.shape, dtype=p.dtype) if g is None else g
                 for g, p in zip(grads, p_leaves)]
        return tuple(tree_unflatten(p_def, grads))

    return make
