"""JAX's function transforms on Python functions: ``grad``, ``value_and_grad``, ``jacrev``
(``jacobian``), ``jacfwd``, ``hessian``, ``jvp``, ``vjp``, ``hvp``, ``linearize``, ``vmap``
and ``jit``, with JAX's names, signatures and meanings; every one of them also keeps its
symbolic form on expressions (``sg.grad(expr, wrt)``), chosen by whether the first argument
is a symgrad expression or a Python function.

What is traced once and what is read at every call:

* ``fun`` is *traced* (called once on symgrad variables) per argument structure, shapes and
  dtypes, static keyword values, and state of what it reads (below); the derivative is built
  symbol to symbol, emitted as NumPy source and compiled (:func:`symgrad.compile`). Later
  calls run the compiled code: nothing of ``fun`` runs again.
* Arrays ``fun`` reads besides its arguments (globals, closed-over variables, defaults,
  attributes of ``self`` and of the objects it reaches, ``functools.partial`` arguments)
  are inputs of the compiled code, found again and read at every call: a new minibatch
  assigned to a global, or ``model.W`` rebound, is used at the next call. Numbers, lists
  and dicts of numbers and other objects it reads there are part of the cache key: a
  change traces again (see :mod:`symgrad.frontend.capture`).
* Random numbers drawn while tracing are frozen (a warning says so).

Arguments are pytrees of arrays (:mod:`symgrad.tree_util`); gradients have their structure.
Called with symgrad expressions (inside another transform's trace), a transform builds
expressions instead of compiling, so transforms nest: ``sg.grad(sg.grad(f))``,
``sg.jacfwd(sg.jacrev(f))``. ``fun`` builds its result with Python operators and NumPy's
own functions (``np.exp(x)`` on a traced argument builds graph), ``symgrad.numpy`` or
``sg.*``; Python control flow on values (``if x > 0``) cannot be traced: use ``np.where``.

>>> import numpy as np, symgrad as sg
>>> def loss(w, x):
...     return sg.sum(sg.tanh(x @ w) ** 2)
>>> dloss = sg.grad(loss)                      # d loss / d w  (argnums=0)
>>> w, x = np.array([0.5, -0.25]), np.array([[1.0, 2.0], [3.0, 4.0]])
>>> [round(float(v), 6) for v in dloss(w, x)]
[2.180586, 2.907448]
>>> value, (dw, dx) = sg.value_and_grad(loss, argnums=(0, 1))(w, x)
>>> round(float(value), 6), dx.shape
(0.213552, (2, 2))
>>> float(sg.grad(sg.grad(sg.grad(lambda t: t ** 4)))(2.0))
48.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..base.errors import DifferentiationError
from ..ir.values import exact_choice
from ..transforms import derivatives
from .builders import (
    call_make,
    grad_make,
    hessian_make,
    jac_make,
    jvp_make,
    vjp_make,
)
from .checks import check_function, checked_argnums, fun_name, is_expr, one_argnums, tuple_args
from .traced import Transformed, cached
from .vmap import vmap

__all__ = ["Transformed", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jit",
           "jvp", "linearize", "value_and_grad", "vjp", "vmap"]


def grad(f: Any, wrt: Any = None, *, cleanup: bool = True, argnums: Any = None,
         has_aux: bool = False, shapes: Any = None, dtypes: Any = None,
         backend: str = "numpy", holomorphic: bool = False) -> Any:
    """The gradient: of an expression (symbolic) or of a Python function (JAX's ``grad``).

    ``grad(f, wrt)`` with an Expr ``f``: the gradient Exprs, appended to ``f``'s graph (see
    :func:`symgrad.transforms.derivatives.grad`; ``cleanup=False`` keeps B as the rules
    write it).

    ``grad(fun, argnums=0)`` with a Python function: a function of arrays (pytrees of
    arrays) returning the gradient with respect to argument ``argnums``, of its structure
    (a tuple of argument numbers gives a tuple of gradients). The second positional
    argument is ``argnums`` here, as in JAX (``sg.grad(fun, 1)``). ``has_aux``: ``fun``
    returns ``(value, aux)``; the result is then ``(gradient, aux)``. ``shapes``/``dtypes``:
    trace now (per argument, or by parameter name). ``backend``: as in :func:`sg.compile`.
    ``holomorphic``: as JAX's (a complex ``f`` of complex variables; see
    :mod:`symgrad.ops.complex` for the conventions).

    >>> import symgrad as sg
    >>> x = sg.var("x")
    >>> sg.grad(sg.sin(x) * x, x)                     # symbolic
    <Expr sin(x) + x * cos(x) : float64[]>
    >>> float(sg.grad(lambda x: sg.sin(x) * x)(0.5))  # a function of arrays
    0.9182168195493894
    """
    if is_expr(f):
        if wrt is None:
            raise DifferentiationError("grad(f, wrt) needs the variables to differentiate "
                                       "with respect to, e.g. sg.grad(f, x) or sg.grad(f, "
                                       "['x', 'y'])")
        if argnums is not None or has_aux or shapes is not None or dtypes is not None:
            raise DifferentiationError("argnums, has_aux, shapes and dtypes are for grad of "
                                       "a Python function; for an expression pass wrt")
        return derivatives.grad(f, wrt, cleanup=cleanup, holomorphic=holomorphic)
    argnums = one_argnums("grad", f, wrt, argnums)
    return _shared(f, ("grad", argnums, has_aux, cleanup, backend, holomorphic), shapes, dtypes,
                   lambda: Transformed(f, grad_make(argnums, has_aux, False, cleanup,
                                                    holomorphic), "grad",
                                       backend=backend, shapes=shapes, dtypes=dtypes,
                                       argnums=argnums))


def value_and_grad(f: Any, argnums: Any = 0, *, has_aux: bool = False, shapes: Any = None,
                   dtypes: Any = None, cleanup: bool = True, backend: str = "numpy",
                   holomorphic: bool = False) -> Any:
    """Like :func:`grad`, but the function returns ``(value, gradient)`` (with ``has_aux``:
    ``((value, aux), gradient)``), from one compiled function sharing the forward pass.

    With an Expr ``f`` and ``argnums`` naming the variables: ``(f, sg.grad(f, wrt))``.

    >>> import numpy as np, symgrad as sg
    >>> vg = sg.value_and_grad(lambda w: sg.sum(w ** 3), shapes=[(2,)])
    >>> value, grad = vg(np.array([1.0, 2.0]))
    >>> float(value), grad
    (9.0, array([ 3., 12.]))
    >>> [line for line in vg.source.splitlines() if line.startswith("def ")]
    ['def value_and_grad_lambda(w):']
    """
    if is_expr(f):
        return f, derivatives.grad(f, argnums, cleanup=cleanup, holomorphic=holomorphic)
    check_function("value_and_grad", f, "sg.value_and_grad(expr, wrt)")
    argnums = checked_argnums(argnums)
    return _shared(f, ("value_and_grad", argnums, has_aux, cleanup, backend, holomorphic),
                   shapes, dtypes,
                   lambda: Transformed(f, grad_make(argnums, has_aux, True, cleanup,
                                                    holomorphic),
                                       "value_and_grad", backend=backend, shapes=shapes,
                                       dtypes=dtypes, argnums=argnums))


def jacrev(fun: Callable, argnums: Any = 0, *, has_aux: bool = False,
           backend: str = "numpy", holomorphic: bool = False) -> Transformed:
    """JAX's ``jacrev``: the Jacobian of ``fun`` by reverse mode, shape ``out.shape +
    arg.shape`` per output leaf and argument leaf (pytrees nest: output structure outside,
    argument structure inside).

    >>> import numpy as np, symgrad as sg
    >>> sg.jacrev(lambda x: x ** 2)(np.array([1.0, 3.0]))
    array([[2., 0.],
           [0., 6.]])
    """
    check_function("jacrev", fun, "sg.jacobian(expr, wrt, mode='reverse')")
    argnums = checked_argnums(argnums)
    return cached(fun, ("jacrev", argnums, has_aux, backend, holomorphic),
                  lambda: Transformed(fun, jac_make(argnums, has_aux, "reverse", holomorphic),
                                      "jacrev",
                                      backend=backend, argnums=argnums))


def jacfwd(f: Any, wrt: Any = None, *, argnums: Any = None, has_aux: bool = False,
           cleanup: bool = True, backend: str = "numpy", holomorphic: bool = False) -> Any:
    """JAX's ``jacfwd`` on a function (the Jacobian by forward mode); on an expression,
    :func:`symgrad.transforms.derivatives.jacfwd` (``sg.jacfwd(expr, wrt)``).

    >>> import numpy as np, symgrad as sg
    >>> sg.jacfwd(lambda x: np.stack([x[0] * x[1], x[1]]))(np.array([2.0, 3.0]))
    array([[3., 2.],
           [0., 1.]])
    """
    if is_expr(f):
        return derivatives.jacfwd(f, wrt, cleanup=cleanup, holomorphic=holomorphic)
    argnums = one_argnums("jacfwd", f, wrt, argnums)
    return cached(f, ("jacfwd", argnums, has_aux, backend, holomorphic),
                  lambda: Transformed(f, jac_make(argnums, has_aux, "forward", holomorphic),
                                      "jacfwd",
                                      backend=backend, argnums=argnums))


def jacobian(f: Any, wrt: Any = None, *, mode: str | None = None, cleanup: bool = True,
             sparse: bool = False, argnums: Any = None, has_aux: bool = False,
             backend: str = "numpy", holomorphic: bool = False) -> Any:
    """The Jacobian: of an expression (``sg.jacobian(f, wrt, mode=..., sparse=...)``, see
    :func:`symgrad.transforms.derivatives.jacobian`; a list of expressions gives a tuple),
    or of a Python function (JAX's ``jacobian``, i.e. :func:`jacrev`; ``mode="forward"``
    is :func:`jacfwd`; ``sparse=True``, one array argument: a ``scipy.sparse`` matrix per
    output, outputs by inputs flattened).

    >>> import numpy as np, symgrad as sg
    >>> x = sg.var("x", shape=(2,))
    >>> [J.shape for J in sg.jacobian([x * 2.0, sg.sum(x)], x)]
    [(2, 2), (2,)]
    >>> sg.jacobian(lambda v: v[::-1] * 2.0)(np.ones(2))
    array([[0., 2.],
           [2., 0.]])
    """
    if isinstance(f, (list, tuple)) and f and all(is_expr(e) for e in f):
        return tuple(jacobian(e, wrt, mode=mode, cleanup=cleanup, sparse=sparse,
                              holomorphic=holomorphic) for e in f)
    if is_expr(f):
        return derivatives.jacobian(f, wrt, mode=mode, cleanup=cleanup, sparse=sparse,
                                    holomorphic=holomorphic)
    argnums = one_argnums("jacobian", f, wrt, argnums)
    how = "forward" if mode == "forward" else "reverse"
    sparse = exact_choice(sparse, "jacobian: sparse", (True, False), DifferentiationError)
    return cached(f, ("jacobian", argnums, has_aux, how, backend, holomorphic, sparse),
                  lambda: Transformed(f, jac_make(argnums, has_aux, how, holomorphic, sparse),
                                      "jacobian",
                                      backend=backend, argnums=argnums))


def hessian(f: Any, wrt: Any = None, *, sparse: bool | None = None, method: str | None = None,
            argnums: Any = None, has_aux: bool = False, backend: str = "numpy") -> Any:
    """The Hessian: of an expression (``sg.hessian(f, wrt)``, see
    :func:`symgrad.transforms.derivatives.hessian`) or of a Python function of arrays
    (JAX's ``hessian(fun, argnums=0)``: ``jacfwd(jacrev(fun))``; nested blocks for pytrees).
    ``sparse=True`` (a scalar function of one array argument): a ``scipy.sparse`` matrix
    from a coloured pass (``method=`` the colouring), ready for SciPy's ``hess=``.

    >>> import numpy as np, symgrad as sg
    >>> def rosen(x):
    ...     return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    >>> sg.hessian(rosen)(np.array([1.0, 1.0]))
    array([[ 802., -400.],
           [-400.,  200.]])
    >>> sg.hessian(rosen, sparse=True)(np.ones(50)).nnz
    148
    """
    if is_expr(f):
        return derivatives.hessian(f, wrt, sparse=sparse, method=method)
    argnums = one_argnums("hessian", f, wrt, argnums)
    sparse = exact_choice(sparse, "hessian: sparse", (None, True, False), DifferentiationError)
    method = exact_choice(method, "hessian: method", (None, "star", "distance2"),
                          DifferentiationError)
    if method is not None and not sparse:
        raise DifferentiationError(f"hessian(method={method!r}) chooses the colouring of a "
                                   "sparse Hessian: pass sparse=True as well")
    return cached(f, ("hessian", argnums, has_aux, backend, bool(sparse), method),
                  lambda: Transformed(f, hessian_make(argnums, has_aux, bool(sparse), method),
                                      "hessian", backend=backend, argnums=argnums))


def jit(fun: Callable, *, backend: str = "numpy", shapes: Any = None,
        dtypes: Any = None) -> Transformed:
    """``fun`` traced once per argument shapes and compiled (JAX's ``jit``): the same
    values, computed by emitted NumPy source; arguments and results may be pytrees.

    >>> import numpy as np, symgrad as sg
    >>> f = sg.jit(lambda p: {"y": p["a"] * 2.0 + p["b"]})
    >>> f({"a": np.ones(2), "b": 1.0})
    {'y': array([3., 3.])}
    """
    check_function("jit", fun, "sg.compile(expr)")
    return _shared(fun, ("jit", backend), shapes, dtypes,
                   lambda: Transformed(fun, call_make, "jit", backend=backend, shapes=shapes,
                                       dtypes=dtypes))


def jvp(f: Any, primals: Any, tangents: Any, *, cleanup: bool = True,
        has_aux: bool = False) -> Any:
    """JAX's ``jvp(fun, primals, tangents) -> (primals_out, tangents_out)``: ``primals``
    and ``tangents`` are tuples (or lists) of arguments of the same structure. On an
    expression: ``sg.jvp(f, wrt, tangents)`` (see
    :func:`symgrad.transforms.derivatives.jvp`).

    >>> import numpy as np, symgrad as sg
    >>> y, t = sg.jvp(lambda x: np.sin(x) * x, (np.array([0.0, 1.0]),), (np.ones(2),))
    >>> [round(float(v), 6) for v in t]
    [0.0, 1.381773]
    """
    if is_expr(f) or (isinstance(f, (list, tuple)) and f and all(map(is_expr, f))):
        return derivatives.jvp(f, primals, tangents, cleanup=cleanup)
    check_function("jvp", f, "sg.jvp(expr, wrt, tangents)")
    primals, tangents = tuple_args("jvp", primals, "primals"), \
        tuple_args("jvp", tangents, "tangents")
    t = cached(f, f"jvp{has_aux}", lambda: Transformed(f, jvp_make(has_aux), "jvp"))
    return t(primals, tangents)


def vjp(f: Any, *primals: Any, has_aux: bool = False, cleanup: bool = True) -> Any:
    """JAX's ``vjp(fun, *primals) -> (primals_out, vjp_fun)`` (with ``has_aux``: ``(out,
    vjp_fun, aux)``): ``vjp_fun(cotangent)`` is the tuple of cotangents of the primals.
    On an expression: ``sg.vjp(f, wrt, g)`` (see :func:`symgrad.transforms.derivatives.vjp`).

    >>> import numpy as np, symgrad as sg
    >>> y, pullback = sg.vjp(lambda x: x * x, np.array([1.0, 2.0]))
    >>> pullback(np.array([1.0, 1.0]))
    (array([2., 4.]),)
    """
    if is_expr(f):
        if len(primals) != 2:
            raise DifferentiationError("vjp(f, wrt, g) on an expression takes wrt and the "
                                       "cotangent g")
        return derivatives.vjp(f, primals[0], primals[1], cleanup=cleanup)
    check_function("vjp", f, "sg.vjp(expr, wrt, g)")
    value = cached(f, f"call{has_aux}", lambda: Transformed(f, call_make, "jit"))
    pull = cached(f, f"vjp{has_aux}", lambda: Transformed(f, vjp_make(has_aux), "vjp"))
    out = value(*primals)
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise DifferentiationError(f"vjp of {fun_name(f)}: with has_aux=True the "
                                       "function must return a pair (value, aux)")
        out, aux = out

    def vjp_fun(cotangent: Any) -> tuple:
        return pull(primals, cotangent)

    return (out, vjp_fun, aux) if has_aux else (out, vjp_fun)


def hvp(f: Any, primals: Any, tangents: Any) -> Any:
    """The Hessian-vector product of a scalar function, as JAX's documentation builds it:
    ``jvp(grad(fun), primals, tangents)[1]`` (forward over reverse, H never built). On an
    expression: ``sg.hvp(f, wrt, v)`` (see :func:`symgrad.transforms.derivatives.hvp`).

    >>> import numpy as np, symgrad as sg
    >>> sg.hvp(lambda x: x[0] ** 2 * x[1], (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    array([4., 2.])
    """
    if is_expr(f):
        return derivatives.hvp(f, primals, tangents)
    check_function("hvp", f, "sg.hvp(expr, wrt, v)")
    g = cached(f, "grad", lambda: grad(f))
    return jvp(g, primals, tangents)[1]


def _shared(fun: Callable, what: tuple, shapes: Any, dtypes: Any,
            build: Callable[[], Transformed]) -> Transformed:
    """The transform kept for ``fun`` (see :func:`~.traced.cached`); one traced at once
    (``shapes=``/``dtypes=`` given) is the caller's own."""
    if shapes is not None or dtypes is not None:
        return build()
    return cached(fun, what, build)


def linearize(f: Any, *args: Any) -> Any:
    """JAX's ``linearize(fun, *primals) -> (primals_out, f_jvp)``, ``f_jvp(*tangents)`` the
    Jacobian-vector product at the primals. On an expression: ``sg.linearize(f, wrt, at)``
    (see :func:`symgrad.backends.linearized.linearize`: only the tangent lines run per call).

    >>> import numpy as np, symgrad as sg
    >>> y, f_jvp = sg.linearize(lambda x: np.sin(x) * x, np.array([0.0, 1.0]))
    >>> [round(float(v), 6) for v in f_jvp(np.ones(2))]
    [0.0, 1.381773]
    """
    from ..backends.linearized import linearize as linearize_expr

    if is_expr(f):
        return linearize_expr(f, *args)
    check_function("linearize", f, "sg.linearize(expr, wrt, at)")
    out = cached(f, "callFalse", lambda: Transformed(f, call_make, "jit"))(*args)

    def f_jvp(*tangents: Any) -> Any:
        return jvp(f, args, tangents)[1]

    return out, f_jvp
