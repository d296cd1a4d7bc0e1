"""Standard-only helpers of the array API backends: the ops the standard lacks.

Each helper takes the namespace ``xp`` first and uses only functions of the Python array
API standard (and its ``linalg`` extension) on it, plus ``math`` on Python numbers. The
emitter copies the text of the helpers a module calls to its top (once each), so the
emitted module depends on nothing but ``array_api_compat``. A few helpers take a faster
route where the namespace offers one (``einsum``, ``add.at``, JAX's ``.at``, PyTorch's
``index_add``): the same numbers, fewer temporaries; the standard route is what
``array-api-strict`` runs in the conformance tests.

Nothing here writes into an array it did not create, and every array a helper creates is
made on the device of the arrays it was given (``_sg_xp_device``): on a GPU, or PyTorch's
``meta`` device, the results stay where the inputs are.

>>> import array_api_strict as xp
>>> float(_sg_xp_logsumexp(xp, xp.asarray([0.0, 0.0]), None, False))
0.6931471805599453
"""

from __future__ import annotations

import math


def _sg_xp_device(*arrays):
    """The device of the first of ``arrays`` that has one; ``None`` (the namespace's default)
    for none: Python numbers, Dask arrays, and JAX's tracers under ``jax.jit`` (whose
    computation has a device of its own)."""
    for x in arrays:
        dev = getattr(x, "device", None)
        if dev is not None and not callable(dev):
            return dev
    return None


def _sg_xp_const(xp, spec, device, _held={}):  # noqa: B006 - NumPy's arrays, built once
    """The module constant ``spec`` (Python data) as an array of namespace ``xp`` on
    ``device``. On NumPy it is built once and kept read-only; elsewhere it is built on each
    call (under ``jax.jit``: once, at tracing)."""
    key = (id(spec), getattr(xp, "__name__", ""))
    out = _held.get(key)
    if out is None:
        data, shape, dtype = spec
        if isinstance(data, bytes):  # a large constant: its bytes, base64 (little-endian)
            import base64
            import sys

            raw = memoryview(base64.b64decode(data))
            fmt = {"float64": "d", "float32": "f", "int64": "q", "int32": "i", "bool": "?"}
            if sys.byteorder != "little":
                raise RuntimeError("symgrad's large constants are little-endian bytes")
            data = raw.cast(fmt[dtype]).tolist()
        out = xp.reshape(xp.asarray(data, dtype=getattr(xp, dtype), device=device), shape)
        flags = getattr(out, "flags", None)
        if key[1].endswith("numpy") and flags is not None and len(_held) < 256:
            flags.writeable = False
            _held[key] = out
    return out


def _sg_xp_index(xp, x, key):
    """``x[key]`` with NumPy's rules (integer arrays mixed with slices, ``None``)."""
    if any(isinstance(k, slice) and (k.step or 1) < 0 for k in key):
        key = list(key)
        axis = 0
        for j, k in enumerate(key):  # a reversed slice as a take (PyTorch has none)
            if isinstance(k, slice) and (k.step or 1) < 0:
                picks = list(range(x.shape[axis]))[k]
                x = xp.take(x, xp.asarray(picks, dtype=xp.int64, device=_sg_xp_device(x)),
                            axis=axis)
                key[j] = slice(None)
            axis += k is not None
        key = tuple(key)
    if not any(hasattr(k, "shape") for k in key):
        return x[key]
    used = [k for k in key if k is not None]
    full = tuple(key) + (slice(None),) * (x.ndim - len(used))
    used += [slice(None)] * (x.ndim - len(used))
    y = x[tuple(k if isinstance(k, slice) else slice(None) for k in used)]
    adv = [a for a, k in enumerate(used) if not isinstance(k, slice)]
    rest = [a for a, k in enumerate(used) if isinstance(k, slice)]
    sizes = [y.shape[a] for a in adv]
    y = xp.permute_dims(y, tuple(adv + rest))
    y = xp.reshape(y, (math.prod(sizes),) + tuple(y.shape[len(adv):]))
    dev = _sg_xp_device(*[used[a] for a in adv], x)
    idx = xp.broadcast_arrays(*[xp.asarray(used[a], device=dev) for a in adv])
    flat = None
    for i, n in zip(idx, sizes):
        i = xp.where(i < 0, i + n, i)
        flat = i if flat is None else flat * n + i
    lead = tuple(idx[0].shape)
    y = xp.take(y, xp.reshape(flat, (-1,)), axis=0)
    y = xp.reshape(y, lead + tuple(y.shape[1:]))
    where = [p for p, k in enumerate(full) if k is not None and not isinstance(k, slice)]
    together = where[-1] - where[0] == len(where) - 1  # else NumPy puts them first
    nb = len(lead)
    if together:
        before = sum(1 for k in full[:where[0]] if isinstance(k, slice))
        order = [*range(nb, nb + before), *range(nb), *range(nb + before, y.ndim)]
        y = xp.permute_dims(y, tuple(order))
    dims = iter(y.shape)
    shape = [] if together else [next(dims) for _ in range(nb)]
    placed = False
    for k in full:
        if k is None:
            shape.append(1)
        elif isinstance(k, slice):
            shape.append(next(dims))
        elif together and not placed:
            shape += [next(dims) for _ in range(nb)]
            placed = True
    return xp.reshape(y, tuple(shape))


def _sg_xp_add_at(xp, z, pos, g):
    """``z`` (a fresh ``(m, n)`` array) plus ``g`` ``(m, k)`` added at columns ``pos``."""
    if hasattr(z, "at"):  # JAX: a functional update
        return z.at[:, pos].add(g)
    if hasattr(z, "index_add"):  # PyTorch: out of place
        return z.index_add(1, pos, g)
    add_at = getattr(getattr(xp, "add", None), "at", None)
    if add_at is not None:  # a NumPy-like ufunc; z is our own array
        add_at(z, (slice(None), pos), g)
        return z
    n = z.shape[1]
    cols = xp.arange(n, dtype=pos.dtype, device=_sg_xp_device(pos, z))
    hot = xp.reshape(pos, (-1, 1)) == xp.reshape(cols, (1, -1))
    return z + g @ xp.astype(hot, g.dtype)


def _sg_xp_scatter(xp, shape, batch, parts):
    """A zero array of ``g.shape[:batch] + shape`` with each ``(g, key)`` of ``parts``
    added at ``key`` (duplicate positions accumulate); functional."""
    n = math.prod(shape)
    dev = _sg_xp_device(*[g for g, _ in parts])
    cells = xp.reshape(xp.arange(n, device=dev), shape)
    lead = tuple(parts[0][0].shape[:batch])
    m = math.prod(lead)
    z = xp.zeros((m, n), dtype=xp.result_type(*[g for g, _ in parts]), device=dev)
    for g, key in parts:
        pos = xp.reshape(_sg_xp_index(xp, cells, key), (-1,))
        z = _sg_xp_add_at(xp, z, pos, xp.reshape(g, (m, pos.shape[0])))
    return xp.reshape(z, lead + tuple(shape))


def _sg_xp_logsumexp(xp, x, axis, keepdims):
    if math.prod(x.shape) == 0:  # the max of nothing has no value: shift by nothing
        m = xp.zeros_like(xp.sum(x, axis=axis, keepdims=True))
    else:
        m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))  # an all -inf slice: shift by nothing
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    if keepdims:
        return out
    return xp.squeeze(out, axis=tuple(range(x.ndim)) if axis is None else axis)


def _sg_xp_softmax(xp, x, axis):
    if math.prod(x.shape) == 0:
        return x
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _sg_xp_log_softmax(xp, x, axis):
    if math.prod(x.shape) == 0:
        return x
    s = x - xp.max(x, axis=axis, keepdims=True)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


def _sg_xp_einsum(xp, spec, *ops):
    """``einsum`` (explicit ``->``, letters only) by broadcasting products and sums."""
    fn = getattr(xp, "einsum", None)
    if fn is not None:
        return fn(spec, *ops)
    terms, out = spec.split("->")
    letters = list(dict.fromkeys(terms.replace(",", "")))
    total = None
    for term, x in zip(terms.split(","), ops):
        term = list(term)
        for c in list(dict.fromkeys(term)):
            while term.count(c) > 1:  # a repeated index: its diagonal
                p, q = [k for k, d in enumerate(term) if d == c][:2]
                keep = [k for k in range(len(term)) if k not in (p, q)]
                x = xp.permute_dims(x, tuple(keep + [p, q]))
                eye = xp.eye(x.shape[-1], dtype=x.dtype, device=_sg_xp_device(x))
                x = xp.sum(x * eye, axis=-1)
                term = [term[k] for k in keep] + [c]
        mine = sorted(range(len(term)), key=lambda k: letters.index(term[k]))
        x = xp.permute_dims(x, tuple(mine))
        have = {term[k]: x.shape[j] for j, k in enumerate(mine)}
        x = xp.reshape(x, tuple(have.get(c, 1) for c in letters))
        total = x if total is None else total * x
    gone = tuple(k for k, c in enumerate(letters) if c not in out)
    if gone:
        total = xp.sum(total, axis=gone)
    left = [c for c in letters if c in out]
    return xp.permute_dims(total, tuple(left.index(c) for c in out))


def _sg_xp_dot(xp, a, b):
    """``numpy.dot``: a product for 0-d operands, else a contraction of the last axis of
    ``a`` with the second-to-last (only) axis of ``b``."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return xp.tensordot(a, b, axes=([a.ndim - 1], [max(b.ndim - 2, 0)]))


def _sg_xp_outer(xp, a, b):
    return xp.reshape(a, tuple(a.shape) + (1,) * b.ndim) * b


def _sg_xp_expand_dims(xp, x, axis):
    n = x.ndim + len(axis)
    new = {a % n for a in axis}
    dims = iter(x.shape)
    return xp.reshape(x, tuple(1 if k in new else next(dims) for k in range(n)))


def _sg_xp_take(xp, x, i, axis):
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), 0
    axis %= x.ndim
    n = x.shape[axis]
    i = xp.asarray(i, device=_sg_xp_device(i, x))
    flat = xp.reshape(xp.where(i < 0, i + n, i), (-1,))
    y = xp.take(x, flat, axis=axis)
    return xp.reshape(y, tuple(x.shape[:axis]) + tuple(i.shape) + tuple(x.shape[axis + 1:]))


def _sg_xp_cbrt(xp, x):
    return xp.sign(x) * xp.abs(x) ** (1.0 / 3.0)


def _sg_xp_logaddexp2(xp, a, b):
    m = xp.maximum(a, b)
    d = -xp.abs(a - b)
    out = m + xp.log1p(2.0 ** d) / math.log(2.0)
    return xp.where(a == b, a + 1.0, out)  # NumPy's rule: equal (and infinite) arguments


def _sg_xp_fmod(xp, a, b):
    """C's ``fmod`` (the sign of ``a``), exact: the remainder of positive numbers agrees."""
    return xp.copysign(xp.remainder(xp.abs(a), xp.abs(b)), a * xp.ones_like(b))


def _sg_xp_round(xp, x, decimals):
    if decimals == 0:
        return xp.round(x)
    if decimals > 0:
        f = 10.0 ** decimals
        return xp.round(x * f) / f
    f = 10.0 ** -decimals
    return xp.round(x / f) * f


def _sg_xp_partition(xp, x, kth, axis):
    """A partition of ``x`` around ``kth``: NumPy's own order for NumPy arrays, sorted
    elsewhere (NumPy leaves the order within each side unspecified)."""
    return _sg_xp_take_along(xp, x, _sg_xp_argpartition(xp, x, kth, axis), axis)


def _sg_xp_argpartition(xp, x, kth, axis):
    if type(x).__module__ == "numpy":
        import numpy

        return numpy.argpartition(x, kth, axis=-1 if axis is None else axis)
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), -1
    return xp.argsort(x, axis=axis, stable=True)


def _sg_xp_take_along(xp, x, idx, axis):
    if axis is None:
        x, axis = xp.reshape(x, (-1,)), -1
    return xp.take_along_axis(x, idx, axis=axis)


def _sg_xp_band(xp, x, lo, hi, diagonal):
    n, m = x.shape[-2:]
    dev = _sg_xp_device(x)
    offset = (xp.reshape(xp.arange(m, device=dev), (1, m))
              - xp.reshape(xp.arange(n, device=dev), (n, 1)))
    keep = xp.ones((n, m), dtype=xp.bool, device=dev)
    if lo is not None:
        keep = keep & (offset >= lo)
    if hi is not None:
        keep = keep & (offset <= hi)
    out = xp.where(keep, x, xp.zeros_like(x))
    if diagonal != 1.0 and (lo is None or lo <= 0) and (hi is None or hi >= 0):
        out = xp.where(offset == 0, out * diagonal, out)
    return out


def _sg_xp_sym(xp, x, uplo):
    """The symmetric (Hermitian) matrix ``eigh`` and ``cholesky`` read from the ``uplo``
    triangle of ``x`` (a complex diagonal: its real part, as LAPACK reads it)."""
    t, rest = (xp.triu(x), xp.triu(x, k=1)) if uplo == "U" else (xp.tril(x), xp.tril(x, k=-1))
    if xp.isdtype(x.dtype, "complex floating"):
        diagonal = xp.real(t) - xp.real(rest)
        return (rest + xp.conj(xp.matrix_transpose(rest))
                + xp.astype(diagonal, x.dtype))
    return t + xp.matrix_transpose(rest)


def _sg_xp_solve(xp, a, b):
    """``numpy.linalg.solve``: a 1-D ``b`` is a vector; otherwise the stacks of ``a`` and
    ``b`` broadcast against each other (CuPy's solve does not broadcast them itself)."""
    if b.ndim == 1:
        return xp.linalg.solve(a, b)
    sa, sb = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    batch = tuple(max(i, j) for i, j in zip(sa, sb))
    if sa != batch:
        a = xp.broadcast_to(a, batch + tuple(a.shape[-2:]))
    if sb != batch:
        b = xp.broadcast_to(b, batch + tuple(b.shape[-2:]))
    return xp.linalg.solve(a, b)


def _sg_xp_lstsq(xp, a, b, rcond):
    """``numpy.linalg.lstsq``: ``(x, residuals, rank, s)`` through the SVD of ``a``."""
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    if rcond is None:
        rcond = max(a.shape) * xp.finfo(s.dtype).eps
    cut = rcond * s[0] if s.shape[0] else 0.0
    big = s > cut
    inv = xp.where(big, 1.0 / xp.where(big, s, xp.ones_like(s)), xp.zeros_like(s))
    vec = b.ndim == 1
    bb = xp.reshape(b, (-1, 1)) if vec else b
    complex_ = xp.isdtype(a.dtype, "complex floating") or xp.isdtype(b.dtype, "complex floating")
    if complex_:
        def adjoint(m):
            return xp.conj(xp.matrix_transpose(m))
    else:
        adjoint = xp.matrix_transpose
    x = adjoint(vh) @ (xp.reshape(inv, (-1, 1)) * (adjoint(u) @ bb))
    rank = xp.astype(xp.sum(xp.astype(big, xp.int32)), xp.int32)  # NumPy's dtype
    r = bb - a @ x
    res = xp.sum(xp.real(r * xp.conj(r)) if complex_ else r * r, axis=0)
    return (xp.reshape(x, (-1,)) if vec else x), res, rank, s


def _sg_xp_trace(xp, x, offset, axis1, axis2):
    n = x.ndim
    a1, a2 = axis1 % n, axis2 % n
    keep = [k for k in range(n) if k not in (a1, a2)]
    x = xp.permute_dims(x, tuple(keep + [a1, a2]))
    out = xp.linalg.trace(x, offset=offset)
    if xp.isdtype(out.dtype, ("bool", "signed integer", "unsigned integer")):
        out = xp.astype(out, xp.int64)
    return out


def _sg_xp_norm(xp, x, ord, axis, keepdims):
    """``numpy.linalg.norm`` from ``vector_norm`` and ``matrix_norm``."""
    if axis is None:
        if ord is None or x.ndim == 1:
            y = xp.linalg.vector_norm(x, ord=2 if ord is None else ord)
            return xp.reshape(y, (1,) * x.ndim) if keepdims else y
        axis = (0, 1)
    if isinstance(axis, int):
        axis = (axis,)
    if len(axis) == 1:
        return xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims,
                                     ord=2 if ord is None else ord)
    a1, a2 = axis[0] % x.ndim, axis[1] % x.ndim
    keep = [k for k in range(x.ndim) if k not in (a1, a2)]
    y = xp.linalg.matrix_norm(xp.permute_dims(x, tuple(keep + [a1, a2])),
                              ord="fro" if ord is None else ord)
    if not keepdims:
        return y
    dims = iter(y.shape)
    return xp.reshape(y, tuple(1 if k in (a1, a2) else next(dims) for k in range(x.ndim)))


def _sg_xp_matrix_rank(xp, x, tol, rtol):
    if x.ndim < 2:
        return xp.astype(xp.any(x != 0), xp.int64)
    s = xp.linalg.svdvals(x)
    if tol is None:
        if rtol is None:
            rtol = max(x.shape[-2:]) * xp.finfo(s.dtype).eps
        cut = xp.max(s, axis=-1, keepdims=True) * rtol
    else:
        cut = xp.reshape(xp.asarray(tol, dtype=s.dtype, device=_sg_xp_device(tol, s)),
                         tuple(s.shape[:-1]) + (1,)) \
            if hasattr(tol, "shape") else tol
    return xp.astype(xp.sum(xp.astype(s > cut, xp.int64), axis=-1), xp.int64)


def _sg_xp_special(xp, name, *args):
    """SciPy's special function ``name`` on arrays of namespace ``xp``. The standard has no
    special functions: JAX's ``jax.scipy.special``, PyTorch's ``torch.special`` and CuPy's
    ``cupyx.scipy.special`` are used where ``xp`` is theirs and has ``name``; otherwise SciPy
    runs on host copies of the arrays and the result goes back to their device (for JAX,
    whose arrays may be tracers, through ``jax.pure_callback``)."""
    space = getattr(xp, "__name__", "")
    own = None
    if space.startswith("jax"):
        import jax.scipy.special as own
    elif "torch" in space:
        import torch

        own = torch.special
        name = {"k0": "modified_bessel_k0", "k1": "modified_bessel_k1",
                "k0e": "scaled_modified_bessel_k0",
                "k1e": "scaled_modified_bessel_k1"}.get(name, name)
    elif "cupy" in space:
        import cupyx.scipy.special as own

        # CuPy's kernels take arrays only (polygamma's order included)
        args = tuple(a if hasattr(a, "shape") else xp.asarray(a, device=_sg_xp_device(*args))
                     for a in args)
    fn = getattr(own, name, None) if own is not None else None
    if fn is not None:
        return fn(*args)
    import scipy.special

    if space.startswith("jax"):  # traced under jax.jit: SciPy's through a host callback
        return _sg_xp_callback(xp, getattr(scipy.special, name), *args)
    return _sg_xp_host(xp, getattr(scipy.special, name), *args)


def _sg_xp_callback(xp, fn, *args):
    """``fn`` (a SciPy ufunc) on JAX arrays, traced or not: ``jax.pure_callback`` runs it
    on host copies; the result has the arguments' broadcast shape and float dtype."""
    import jax
    import numpy as np

    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    dtype = xp.result_type(*args, 1.0)

    def host(*arrays):
        return np.asarray(fn(*arrays), dtype=dtype)

    return jax.pure_callback(host, jax.ShapeDtypeStruct(shape, dtype), *args,
                             vmap_method="broadcast_all")


def _sg_xp_stdtr(xp, df, t):
    """Student's t CDF (SciPy's ``stdtr``). JAX has none but has ``betainc``: the CDF of
    ``-|t|`` is ``betainc(df/2, 1/2, df/(df+t^2)) / 2`` in the tails and ``1/2 -
    betainc(1/2, df/2, t^2/(df+t^2)) / 2`` near 0 (each argument away from 1, where it
    would lose digits); elsewhere :func:`_sg_xp_special` (SciPy's on host copies)."""
    if not getattr(xp, "__name__", "").startswith("jax"):
        return _sg_xp_special(xp, "stdtr", df, t)
    import jax.scipy.special as jss

    t2 = t * t
    tail = 0.5 * jss.betainc(0.5 * df, 0.5, df / (df + t2))
    near = 0.5 - 0.5 * jss.betainc(0.5, 0.5 * df, t2 / (df + t2))
    low = xp.where(df < 3.0 * t2, tail, near)
    return xp.where(t < 0, low, 1.0 - low)


def _sg_xp_host(xp, fn, *args):
    """``fn`` (NumPy or SciPy) on host copies of ``args``; its arrays come back as ``xp``
    arrays on the device of ``args`` (a GPU's or a second device's arrays cannot be read by
    NumPy in place)."""
    import numpy as np

    dev = _sg_xp_device(*args)

    def host(a):
        if not hasattr(a, "shape") or isinstance(a, np.ndarray):
            return a
        kind = type(a).__module__
        if kind.startswith("cupy"):
            return a.get()
        if kind.startswith("torch"):
            return a.detach().cpu().numpy()
        info = getattr(xp, "__array_namespace_info__", None)
        if dev is not None and info is not None and hasattr(a, "to_device"):
            a = a.to_device(info().default_device())
        return np.asarray(a)

    out = fn(*(host(a) for a in args))
    if isinstance(out, tuple):
        return tuple(xp.asarray(o, device=dev) for o in out)
    return xp.asarray(out, device=dev)


def _sg_xp_expm(xp, a):
    """The matrix exponential of the matrices of ``a`` (the standard has none): PyTorch's
    ``matrix_exp`` or JAX's ``expm`` where ``xp`` is theirs, else SciPy's on a NumPy copy."""
    space = getattr(xp, "__name__", "")
    if space.startswith("jax"):
        import jax.scipy.linalg

        return jax.scipy.linalg.expm(a)
    if "torch" in space:
        import torch

        return torch.linalg.matrix_exp(a)
    import scipy.linalg

    return _sg_xp_host(xp, scipy.linalg.expm, a)


def _sg_xp_sqrtm(xp, a):
    """The principal square roots of the matrices of ``a``, complex: JAX's ``sqrtm`` where
    ``xp`` is JAX's (CPU only), else SciPy's on a NumPy copy (PyTorch has none)."""
    if getattr(xp, "__name__", "").startswith("jax"):
        import jax.scipy.linalg

        return jax.scipy.linalg.sqrtm(a)
    import numpy as np
    import scipy.linalg

    def root(m):
        return np.asarray(scipy.linalg.sqrtm(m), dtype=np.result_type(m.dtype, np.complex64))

    return _sg_xp_host(xp, root, a)


def _sg_xp_lu(xp, a, index):
    """``scipy.linalg.lu_factor``'s packed factors (``index`` 0), 0-based pivots (1) or the
    row order ``perm`` with ``a[perm] = L U`` (2). JAX's ``lax.linalg.lu`` and PyTorch's
    ``lu_factor`` where ``xp`` is theirs (the same LAPACK factorization), else SciPy's on a
    NumPy copy (the standard has no LU)."""
    space = getattr(xp, "__name__", "")
    if space.startswith("jax"):
        import jax.lax.linalg

        out = jax.lax.linalg.lu(a)[index]
        return out if index == 0 else xp.astype(out, xp.int64)
    if "torch" in space:
        import torch

        lu, piv = torch.linalg.lu_factor(a)
        if index == 0:
            return lu
        piv = piv.to(torch.int64) - 1
        if index == 1:
            return piv
        order = list(range(piv.shape[-1]))
        for i, p in enumerate(piv.tolist()):
            order[i], order[p] = order[p], order[i]
        return torch.asarray(order, dtype=torch.int64, device=a.device)
    import numpy as np
    import scipy.linalg

    def factor(m):
        lu, piv = scipy.linalg.lu_factor(m)
        order = list(range(piv.shape[-1]))
        for i, p in enumerate(piv.tolist()):
            order[i], order[p] = order[p], order[i]
        return lu, piv.astype(np.int64), np.asarray(order, dtype=np.int64)

    return _sg_xp_host(xp, factor, a)[index]


def _sg_xp_convolution(xp, a, b, modes):
    """``a`` convolved with ``b``, ``modes.split(",")[d]`` (``full`` or ``valid``) along axis ``d``
    (symgrad's ``convolution`` op). JAX's ``jax.scipy.signal.convolve`` where ``xp`` is
    JAX's and one operand is at least as long as the other along every axis (JAX's
    condition); otherwise, standard-only, the full convolution as a sum of shifted copies of the
    larger operand (zero-padded once) scaled by each entry of the smaller, then sliced."""
    import itertools

    if a.ndim == 0:
        return a * b
    modes = modes.split(",")
    nested = (all(n >= m for n, m in zip(a.shape, b.shape))
              or all(n <= m for n, m in zip(a.shape, b.shape)))
    if nested and getattr(xp, "__name__", "").startswith("jax"):
        import jax.scipy.signal

        full = jax.scipy.signal.convolve(a, b, mode="full", method="direct")
    else:
        if math.prod(b.shape) > math.prod(a.shape):
            a, b = b, a
        dev = _sg_xp_device(a, b)
        padded = a
        for d, m in enumerate(b.shape):
            if m > 1:
                shape = tuple(m - 1 if k == d else s for k, s in enumerate(padded.shape))
                z = xp.zeros(shape, dtype=a.dtype, device=dev)
                padded = xp.concat([z, padded, z], axis=d)
        full = None
        for idx in itertools.product(*(range(m) for m in b.shape)):
            key = tuple(slice(m - 1 - i, m - 1 - i + n + m - 1)
                        for i, n, m in zip(idx, a.shape, b.shape))
            term = padded[key] * b[idx]
            full = term if full is None else full + term
    key = tuple(slice(None) if mode == "full" else slice(min(n, m) - 1, max(n, m))
                for mode, n, m in zip(modes, a.shape, b.shape))
    return full[key]

