# %% [markdown]
# # Higher-order derivatives, Hessians and generated code
#
# Goodfellow et al. (*Deep Learning* §6.5.5, reference extract `003_aa2ae41836239aed.txt`)
# point out the main advantage of symbol-to-symbol differentiation: the derivative is
# described in the same language as the original expression, so it can be differentiated
# again. This notebook takes that literally:
#
# 1. $d^n f / dx^n$ for $n = 1 \ldots 4$ by repeated reverse passes (`sg.derivative`), next
#    to `sympy.diff`: values and sizes;
# 2. the Hessian of the Rosenbrock function (`sg.hessian`), checked against sympy, and
#    Newton's method run on compiled value, gradient and Hessian;
# 3. Hessian-vector products without the Hessian (`sg.hvp`);
# 4. the gradient as standalone NumPy source (`sg.to_source`, `sg.compile`);
# 5. checking derivatives against finite differences (`sg.check_grads`).

# %%
import inspect
import tempfile
from pathlib import Path

import numpy as np
import sympy

import symgrad as sg

np.set_printoptions(precision=4, suppress=True)
_figure_dir = tempfile.TemporaryDirectory(prefix="symgrad-notebook-")  # removed at exit
FIGURES = Path(_figure_dir.name)


class PNG:
    """An image file that Jupyter shows inline (through ``_repr_png_``)."""

    def __init__(self, path):
        self.data = Path(path).read_bytes()

    def _repr_png_(self):
        return self.data

    def __repr__(self):
        return "<PNG image>"


def show(exprs, name):
    """Draw the graph of ``exprs``: forward nodes, and the derivative subgraph B if any
    (adjoint nodes dashed, a dotted arrow from each forward node to its adjoint)."""
    return PNG(sg.draw(exprs, str(FIGURES / f"{name}.png")))

# %% [markdown]
# ## 1. $d^n f/dx^n$ by differentiating the derivative graph
#
# `sg.derivative(f, x, n)` runs the reverse-mode transform on $f$, then on the resulting
# derivative graph, $n$ times. Each pass appends a subgraph at most a constant factor larger
# than the graph it differentiates, so sizes grow geometrically with $n$; sympy's expression
# trees grow too. Sizes compared: symgrad counts the nodes of its DAG (each shared
# subexpression once, forward nodes included), before and after `sg.simplify`; for sympy we
# give the tree size, `count_ops`, and the operation count after common-subexpression
# elimination (`sympy.cse`), which is the fair DAG-to-DAG comparison.

# %%
x = sg.var("x")
f = sg.exp(sg.sin(x)) / (1 + x**2)
X = sympy.Symbol("x")
F = sympy.exp(sympy.sin(X)) / (1 + X**2)
x0 = 0.7


def dag_size(e):
    return len(e.graph.ancestors([e.node]))


def cse_ops(expr):
    replacements, reduced = sympy.cse(expr)
    return sum(sympy.count_ops(r) for _, r in replacements) + sympy.count_ops(reduced[0])


print(f"{'n':>2} {'symgrad':>8} {'simplified':>10} {'sympy tree':>10} {'count_ops':>9} "
      f"{'after cse':>9}   {'symgrad value':>20} {'sympy value':>20}")
orders = {}
for n in range(1, 5):
    d_n = sg.derivative(f, x, n)
    D_n = sympy.diff(F, X, n)
    ours = sg.evaluate(d_n, {"x": x0})
    theirs = float(D_n.subs(X, x0))
    tree = sum(1 for _ in sympy.preorder_traversal(D_n))
    orders[n] = d_n
    print(f"{n:>2} {dag_size(d_n):>8} {dag_size(sg.simplify(d_n)):>10} {tree:>10} "
          f"{sympy.count_ops(D_n):>9} {cse_ops(D_n):>9}   {ours:>20.15f} {theirs:>20.15f}")
    assert np.isclose(ours, theirs, rtol=1e-12), (n, ours, theirs)

# %% [markdown]
# The values agree; so do the expressions. `sg.to_sympy` translates symgrad's derivative
# graphs into sympy (the graph is a DAG, sympy shares equal subtrees too), where sympy can
# check that the difference simplifies to zero, and `sg.latex` typesets them:

# %%
X_real = sympy.Symbol("x", real=True)
for n in (1, 2):
    difference = sg.to_sympy(orders[n]) - sympy.diff(F.subs(X, X_real), X_real, n)
    print(f"order {n}: symgrad - sympy.diff simplifies to {sympy.simplify(difference)}")
    assert sympy.simplify(difference) == 0
print(sg.latex(orders[1]))

# %% [markdown]
# For one scalar input, repeated reverse mode is not the most economical road to high-order
# derivatives (sympy's collection of terms, or Taylor-mode differentiation, can do better:
# compare the columns). Reverse mode's strength is elsewhere: the gradient of one output
# with respect to *many* inputs costs a constant multiple of evaluating the output, however
# many inputs there are.
#
# The first derivative as text, and as the listing of its graph (forward nodes, then B).
# It is rebuilt on a fresh variable: the table above appended all four orders to one graph.

# %%
x1 = sg.var("x")
d1 = sg.derivative(sg.exp(sg.sin(x1)) / (1 + x1**2), x1, 1)
print("f'(x) =", d1)
print(sg.listing(d1))
assert sg.evaluate(d1, {"x": x0}) == sg.evaluate(orders[1], {"x": x0})

# %% [markdown]
# The second pass in pictures, on a smaller function: $f(x) = x \sin x$,
# $f''(x) = 2\cos x - x \sin x$. The second derivative graph is built from the first one
# (its nodes, forward or adjoint, are operands like any other), so the drawing holds the
# forward graph, B, and the derivative graph of B.

# %%
x2 = sg.var("x")
f2 = x2 * sg.sin(x2)
d2 = sg.derivative(f2, x2, 2)
print("f''(x) =", d2)
print(sg.listing([f2, d2]))
exact = 2 * np.cos(x0) - x0 * np.sin(x0)
assert np.isclose(sg.evaluate(d2, {"x": x0}), exact, rtol=1e-14)

# %% tags=["figure"]
show([f2, d2], "second_derivative_graph")

# %% [markdown]
# A known closed form makes the check exact: every derivative of $e^{2x}$ is a power of 2
# times $e^{2x}$, and the backprop rule of `exp` reuses its output, so the graphs stay small.

# %%
y = sg.var("y")
g = sg.exp(2 * y)
for n in range(1, 5):
    d_n = sg.derivative(g, y, n)
    value = sg.evaluate(d_n, {"y": 0.0})
    print(f"d^{n}/dy^{n} exp(2y) at 0 = {value}   ({dag_size(d_n)} nodes)")
    assert value == 2.0**n

# %% [markdown]
# ## 2. The Hessian of the Rosenbrock function
#
# $f(x) = \sum_{i} 100\,(x_{i+1} - x_i^2)^2 + (1 - x_i)^2$, written with NumPy-style slices.
# `sg.hessian` is the Jacobian of the gradient graph, computed in one vectorised reverse
# pass (the seed is an identity matrix, carried as a leading batch axis).

# %%
n_dim = 5
xv = sg.var("x", shape=(n_dim,))
rosen = sg.sum(100 * (xv[1:] - xv[:-1] ** 2) ** 2 + (1 - xv[:-1]) ** 2)
rosen_grad = sg.grad(rosen, xv)
rosen_hess = sg.hessian(rosen, xv)
start = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
H = sg.evaluate(rosen_hess, {"x": start})
print(H)

# %% [markdown]
# The reference: sympy's symbolic Hessian of the same sum, with one symbol per component.

# %%
xs = sympy.symbols(f"x0:{n_dim}")
R = sum(100 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1 - xs[i]) ** 2 for i in range(n_dim - 1))
H_sympy = np.array(sympy.hessian(R, xs).subs(dict(zip(xs, start))), dtype=float)
print("largest difference from sympy:", np.max(np.abs(H - H_sympy)))
assert np.allclose(H, H_sympy, rtol=1e-13, atol=1e-12)
assert np.allclose(H, H.T)  # symmetric, as a Hessian must be

# %% [markdown]
# With value, gradient and Hessian compiled into one NumPy function, plain Newton steps
# $x \leftarrow x - H^{-1}\nabla f$ reach the minimum $x^* = (1, \ldots, 1)$:

# %%
newton = sg.compile([rosen, rosen_grad, rosen_hess], inputs=[xv], name="rosen_newton")
xk = start.copy()
value, gradient, hessian = newton(xk)
steps = 0
while np.linalg.norm(gradient) > 1e-10 and steps < 50:
    xk = xk - np.linalg.solve(hessian, gradient)
    value, gradient, hessian = newton(xk)
    steps += 1
print(f"converged after {steps} Newton steps: f = {value:.3e}, x = {xk}")
assert np.allclose(xk, np.ones(n_dim), atol=1e-12) and value < 1e-20

# %% [markdown]
# ## 3. Hessian-vector products
#
# `sg.hvp(f, x, v)` differentiates $\langle \nabla f(x), v \rangle$ once more: reverse over
# reverse, never forming the $n \times n$ matrix. For a large $n$ that is the difference
# between $O(n)$ and $O(n^2)$ memory; here it is checked against $Hv$.

# %%
rng = np.random.default_rng(7)
v = rng.normal(size=n_dim)
hv = sg.hvp(rosen, xv, "v")
hv_value = sg.evaluate(hv, {"x": start, "v": v})
print("Hv via hvp:", hv_value)
print("H @ v     :", H @ v)
assert np.allclose(hv_value, H @ v, rtol=1e-13, atol=1e-12)

# %% [markdown]
# ## 4. The gradient as NumPy source
#
# `sg.to_source` writes a module that imports only NumPy: one line per node, the forward
# values computed once and reused by the backward lines, each backward line commented with
# the forward line it serves.

# %%
source = sg.to_source([rosen, rosen_grad], inputs=[xv], name="rosen_and_grad")
print(source)

# %% [markdown]
# The source is ordinary Python: executing it gives a function that agrees with symgrad's
# interpreter. `sg.compile` does the same and keeps the text (`fn.source`) where `inspect`
# and tracebacks can find it.

# %%
module = {}
exec(compile(source, "<rosen_and_grad>", "exec"), module)
value_src, grad_src = module["rosen_and_grad"](start)
value_ref, grad_ref = sg.evaluate([rosen, rosen_grad], {"x": start})
print(f"f = {value_src}, grad = {grad_src}")
assert np.isclose(value_src, value_ref, rtol=1e-15) and np.allclose(grad_src, grad_ref)

fn = sg.compile([rosen, rosen_grad], inputs=[xv], name="rosen_and_grad")
assert fn.source == source
assert inspect.getsource(fn).startswith("def rosen_and_grad")  # inspect finds the text
print(inspect.getsource(fn).splitlines()[0])

# %% [markdown]
# The same for the loss of Collins' single-hidden-layer network (notebook 01), returning
# the loss and its gradients with respect to the four parameters:

# %%
shapes = {"W": (4, 3), "x": (3,), "b": (4,), "V": (3, 4), "g": (3,)}
loss = sg.parse("-log_softmax(V @ tanh(W @ x + b) + g)[y]", shapes=shapes,
                dtypes={"y": "int64"})
loss_grads = sg.grad(loss, ["W", "b", "V", "g"])
net_fn = sg.compile([loss, *loss_grads], inputs=["W", "x", "b", "V", "g", "y"],
                    name="network_loss_and_grads")
print(net_fn.source)

rng = np.random.default_rng(11)
point = {"W": rng.normal(size=(4, 3)), "x": rng.normal(size=3), "b": rng.normal(size=4),
         "V": rng.normal(size=(3, 4)), "g": rng.normal(size=3), "y": 2}
compiled = net_fn(*point.values())
interpreted = sg.evaluate([loss, *loss_grads], point)
for a, b in zip(compiled, interpreted):
    assert np.allclose(a, b, rtol=1e-14, atol=1e-16)
print("compiled and interpreted values agree; loss =", compiled[0])

# %% [markdown]
# ## 5. Checking derivatives: `sg.check_grads`
#
# `check_grads` compares symbolic directional derivatives with central finite differences
# along random directions, and with `order=2` also checks the derivative of the derivative
# graph. It returns nothing when all agree:

# %%
sg.check_grads(rosen, xv, at={"x": start}, order=2)
sg.check_grads(loss, ["W", "b", "V", "g"], at=point, order=2)
print("check_grads passed: Rosenbrock and the network, orders 1 and 2")

# %% [markdown]
# It raises `GradientCheckError` when they disagree, for instance at a point where the
# function has no derivative at all (a case Collins' notes discuss in §1.4.4): at $r = 0$,
# `relu` has a kink, symgrad's rule gives the one-sided value 0, and the central difference
# sees the average of the two slopes.

# %%
r = sg.var("r")
try:
    sg.check_grads(sg.relu(r), r, at={"r": 0.0}, order=1)
except sg.SymgradError as error:
    print(f"{type(error).__name__}: {error}")
else:
    raise AssertionError("check_grads must reject the kink of relu at 0")
sg.check_grads(sg.relu(r), r, at={"r": 0.5}, order=2)  # away from the kink all is well
