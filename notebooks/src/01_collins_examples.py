# %% [markdown]
# # Collins' worked examples in symgrad
#
# This notebook runs every worked example of Michael Collins' course notes
# *Computational Graphs, and Backpropagation* (Columbia, NLP course; reference extract
# `000_156f3c8ac0ef6f8c.txt`) and of the slides for the same lecture (`001_967f7472b0ceee8d.txt`)
# in symgrad, and shows each step: the graph, the forward values, the local Jacobians, the
# backpropagation table and the derivative graph that symgrad appends.
#
# The notes are cited, not reproduced: keep them open next to this notebook. Section and
# example numbers below are the notes' own.
#
# | part | notes | what runs here |
# |---|---|---|
# | 0 | slides, "The Chain Rule" | $h(x) = f(g(x))$ with $f(z)=z^2$, $g(x)=x^3$ at $x=2$ |
# | 1 | §1.2.2, Example 1 | the 6-tuple graph $n=4$, $l=2$, $E=\{(1,3),(2,3),(2,4),(3,4)\}$ |
# | 2 | §1.2.3, Example 2 | the forward algorithm at $u_1=2$, $u_2=3$ |
# | 3 | §1.4.1, Example 3 | the local Jacobians $J^{j\to i}$ |
# | 4 | §1.4.2, Example 4 | backpropagation: $P^4, P^3, P^2, P^1$ |
# | 5 | §1.4.3, Example 5 | Theorem 1: the derivative as a sum over directed paths |
# | 6 | §1.2.5, Fig. 1.4 | the single-hidden-layer network and its gradients |
# | 7 | §1.4.4 | an input with no Jacobian (the integer label) |

# %%
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import sympy

import symgrad as sg
from symgrad.ir.expr import build
from symgrad.ops import REGISTRY

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


class Math:
    """LaTeX that Jupyter typesets (through ``_repr_latex_``), e.g. ``Math(sg.latex(f))``."""

    def __init__(self, latex):
        self.latex = latex

    def _repr_latex_(self):
        return f"$$ {self.latex} $$"

    def __repr__(self):
        return self.latex


def show(exprs, name):
    """Draw the graph of ``exprs``: forward nodes, and the derivative subgraph B if any
    (adjoint nodes dashed, a dotted arrow from each forward node to its adjoint)."""
    return PNG(sg.draw(exprs, str(FIGURES / f"{name}.png")))


# %% [markdown]
# ## 0. Warm-up: the chain rule (slides)
#
# The slides compose $g(x) = x^3$ and $f(z) = z^2$ and evaluate at $x = 2$: $z = 8$,
# $g'(2) = 12$, $f'(8) = 16$, so $h'(2) = 12 \times 16 = 192$. In symgrad the composition is
# a graph of two nodes, and `sg.grad` appends the graph of $h'$ to it.

# %%
x = sg.var("x")
z = x**3
h = z**2
dh = sg.grad(h, x)
z_value, h_value, dh_value = sg.evaluate([z, h, dh], {"x": 2.0})
print(f"z = {z_value}, h = {h_value}, dh/dx = {dh_value}")
print("dh/dx as an expression:", dh)
assert (z_value, h_value, dh_value) == (8.0, 64.0, 192.0)

# %% [markdown]
# The same derivative typeset by `sg.latex` (sympy's printer for elementwise expressions):

# %%
Math(r"\frac{dh}{dx} = " + sg.latex(dh))

# %% [markdown]
# ## 1. Example 1: a computational graph as a 6-tuple
#
# Collins defines a computational graph as $\langle n, l, E, u^1\ldots u^n, d^1\ldots d^n,
# f^{l+1}\ldots f^n\rangle$ (Definition 1): $n$ vertices, the first $l$ of them leaves,
# edges $(j, i)$ with $j < i$, one variable per vertex, its dimension, and a local function
# per non-leaf vertex. Example 1 has $n = 4$, $l = 2$, scalars everywhere, $f^3 = u^1 + u^2$
# and $f^4 = u^2 \times u^3$.
#
# In symgrad the leaves are variables and every Python operation adds one node. Node ids are
# given in creation order, so they are a topological order: exactly the numbering condition
# $j < i$ of the notes.

# %%
u1, u2 = sg.var("u1"), sg.var("u2")
u3 = u1 + u2  # f3(u1, u2)
u4 = u2 * u3  # f4(u2, u3)
graph = u4.graph
print(sg.listing(u4))

# %% [markdown]
# The listing names nodes by id (`v2`, `v3`); variables appear by name. Reading the 6-tuple
# off the networkx DAG `graph.nx` (edges point from an operand to its user):

# %%
# u1 and u2 began as two one-node graphs; u1 + u2 joined them into one graph, in which a
# variable is found by name. Collins' vertex number of each node id:
number = {graph.variables["u1"]: 1, graph.variables["u2"]: 2, u3.node: 3, u4.node: 4}
forward = graph.ancestors([u4.node])
n_vertices = len(forward)
n_leaves = sum(graph.nodes[i].op == "var" for i in forward)
E = sorted((number[j], number[i]) for j, i in graph.nx.subgraph(forward).edges)
d = [graph.nodes[i].shape for i in forward]
print(f"n = {n_vertices}, l = {n_leaves}")
print(f"E = {E}")
print(f"shapes d1..d4 = {d}   (() is a scalar: d = 1)")
print(f"f3 = {u3.op}, f4 = {u4.op}")
assert (n_vertices, n_leaves) == (4, 2)
assert E == [(1, 3), (2, 3), (2, 4), (3, 4)]

# %% tags=["figure"]
show(u4, "example1_graph")

# %% [markdown]
# ## 2. Example 2: the forward algorithm
#
# The forward algorithm (Fig. 1.3 of the notes) visits the non-leaf vertices in order and
# applies each local function to the values of its parents. Here it is, written out over
# symgrad's node list with the NumPy implementation every op carries in the registry, and
# then the same through `sg.evaluate`, symgrad's interpreter:

# %%
leaves = {"u1": 2.0, "u2": 3.0}
u = {}
for node in graph.nodes:  # ascending ids: a topological order
    if node.op == "var":
        u[node.id] = leaves[node.name]
    else:
        u[node.id] = REGISTRY[node.op].impl(*(u[a] for a in node.args), **node.attrs)
for i in forward:
    print(f"u{number[i]} = {u[i]}")

u3_value, u4_value = sg.evaluate([u3, u4], leaves)
print(f"sg.evaluate: u3 = {u3_value}, u4 = {u4_value}")
assert (u[u3.node], u[u4.node]) == (u3_value, u4_value) == (5.0, 15.0)

# %% [markdown]
# ## 3. Example 3: local Jacobians
#
# The local Jacobian $J^{j\to i}(\alpha^i) = \partial f^i(\alpha^i) / \partial u^j$ differentiates
# the *local* function of vertex $i$ alone, holding its other inputs fixed. To compute it
# with symgrad we rebuild vertex $i$'s operation on fresh variables $\alpha_0, \alpha_1,
# \ldots$ (one per operand), differentiate with respect to the operand(s) that are $u^j$, and
# evaluate at the forward values. This helper works for any node of any graph; scalar
# nodes give a number, like the notes' $1 \times 1$ Jacobians.

# %%
def local_jacobian(graph, j, i, inputs):
    """J^{j->i}: the derivative of node i's local function with respect to its operand node
    j, at the point the forward pass reaches from ``inputs``. Scalars only, as in the
    examples."""
    node = graph.nodes[i]
    alphas = [sg.var(f"alpha{k}") for k in range(len(node.args))]
    f_i = build(REGISTRY[node.op], alphas, node.attrs)
    operands = sg.evaluate([graph.expr(a) for a in node.args], inputs)  # the values alpha^i
    at = {f"alpha{k}": value for k, value in enumerate(operands)}
    positions = [k for k, a in enumerate(node.args) if a == j]  # x*x uses x twice
    return sum(sg.evaluate(sg.grad(f_i, alphas[k]), at) for k in positions)


J = {}
for j, i in graph.nx.subgraph(forward).edges:
    J[number[j], number[i]] = local_jacobian(graph, j, i, leaves)
for (j, i), value in sorted(J.items()):
    print(f"J{j}->{i} = {value}")
assert J == {(1, 3): 1.0, (2, 3): 1.0, (2, 4): 5.0, (3, 4): 3.0}

# %% [markdown]
# As in the notes, $J^{2\to 4} = u^3 = 5$ and $J^{3\to 4} = u^2 = 3$: the local Jacobian of
# a product with respect to one factor is the other factor.
#
# ## 4. Example 4: backpropagation, and the derivative graph B
#
# Collins' backward pass (Fig. 1.5) sets $P^n = I$ and, for $j = n-1, \ldots, 1$, sums
# $P^i J^{j\to i}$ over the children $i$ of $j$. symgrad runs the same loop, but on
# *symbols*: instead of numbers it appends one new node per forward vertex, the adjoint node
# that computes $P^j$ (this is the subgraph B of Goodfellow et al., §6.5.5–6.5.6; see
# notebook 02). `graph.adjoint_of[forward id]` is the id of that node, the `grad_table` of
# Goodfellow's Algorithm 6.2.

# %%
size_before = len(graph)
du1, du2 = sg.grad(u4, [u1, u2])
P = {number[f]: graph.expr(graph.adjoint_of[f]) for f in forward}
P_values = dict(zip(P, sg.evaluate([P[j] for j in P], leaves)))
for j in (4, 3, 2, 1):
    print(f"P{j} = {P_values[j]:<4}  node v{P[j].node}: {P[j]}")
assert [P_values[j] for j in (4, 3, 2, 1)] == [1.0, 3.0, 8.0, 3.0]
assert sg.evaluate([du1, du2], leaves) == [P_values[1], P_values[2]] == [3.0, 8.0]

# %% [markdown]
# The adjoints are expressions, not numbers: $P^3 = u_2$, $P^2 = u_3 + u_2$ (which is
# $u_1 + 2u_2$) and $P^1 = u_2$. Two of them *are* the forward node `u2`: symgrad builds each
# distinct expression once (hash-consing) and folds multiplication by the constant 1, so
# $P^3 = P^4 \times J^{3\to 4} = 1 \times u_2$ is just `u2`. Besides the seed $P^4 = 1$,
# one new operation (`v5 = add`) was all the gradient needed.
#
# The notes check the result against the global function $h^4 = u_1 u_2 + (u_2)^2$; sympy
# agrees with the adjoint expressions symbolically:

# %%
s1, s2 = sympy.symbols("u1 u2")
h4 = s1 * s2 + s2**2
adjoint_text = {j: sympy.sympify(str(P[j]), locals={"u1": s1, "u2": s2}) for j in (1, 2)}
print("dh4/du1 =", sympy.diff(h4, s1), "   P1 =", adjoint_text[1])
print("dh4/du2 =", sympy.diff(h4, s2), "   P2 =", adjoint_text[2])
assert sympy.simplify(sympy.diff(h4, s1) - adjoint_text[1]) == 0
assert sympy.simplify(sympy.diff(h4, s2) - adjoint_text[2]) == 0

# %% [markdown]
# The whole graph now holds the forward nodes and B. The listing marks each line of B with
# the forward node it is the adjoint of:

# %%
print(sg.listing([u4, du1, du2]))
added = [node.op for node in graph.nodes[size_before:]]
print("nodes added by the transform:", added)
assert added == ["const", "add"]

# %% tags=["figure"]
show([u4, du1, du2], "example4_derivative_graph")

# %% [markdown]
# `sg.explain` prints the same computation as the notes lay it out: the forward pass, then
# each $P^j$ as a sum over the consumers of $u^j$ with the local Jacobian values.

# %%
table = sg.explain(u4, at=leaves)
print(table)
adjoint_rows = {row["label"]: row["value"] for row in table.section("adjoint")}
assert [float(adjoint_rows[f"P{j}"]) for j in (4, 3, 2, 1)] == [1.0, 3.0, 8.0, 3.0]

# %% [markdown]
# ## 5. Example 5: derivatives as sums over paths
#
# Theorem 1 of the notes: $\partial u^i / \partial u^j$ is the sum, over every directed path
# from $j$ to $i$, of the product of the local Jacobians along the path (last edge first).
# Example 5 applies it to $\partial u^4/\partial u^2$: two paths, $(2,3)(3,4)$ and $(2,4)$,
# giving $3 \times 1 + 5 = 8$. networkx enumerates the paths of symgrad's graph:

# %%
total = 0.0
for path in nx.all_simple_paths(graph.nx.subgraph(forward), graph.variables["u2"], u4.node):
    edges = [(number[a], number[b]) for a, b in zip(path, path[1:])]
    factors = [J[e] for e in reversed(edges)]
    product = float(np.prod(factors))
    total += product
    print(f"path {''.join(map(str, edges))}: {' x '.join(map(str, factors))} = {product}")
print(f"sum over paths = {total};  backpropagation gave P2 = {P_values[2]}")
assert total == P_values[2] == 8.0

# %% [markdown]
# Backpropagation (Theorem 2) computes the same sum without enumerating paths: it is the
# dynamic programme that shares the common suffixes. Notebook 02 shows a graph where that
# makes the difference between 729 paths and 51 steps.
#
# ## 6. The single-hidden-layer network (§1.2.5, Fig. 1.4)
#
# The network of the notes maps an input $x \in \mathbb{R}^d$ and a label $y$ to the loss
# $o = -q_y$ through $z = Wx + b$, $h = g(z)$, $l = Vh + \gamma$, $q = \text{LOG-SOFTMAX}(l)$.
# With $g = \tanh$ it is one line of symgrad text. (In the text `g` names the bias vector
# $\gamma$; labels count from 0 here, from 1 in the notes.)

# %%
d_in, m, K = 3, 4, 3  # input size d, hidden units m, labels K
shapes = {"W": (m, d_in), "x": (d_in,), "b": (m,), "V": (K, m), "g": (K,)}
o = sg.parse("-log_softmax(V @ tanh(W @ x + b) + g)[y]", shapes=shapes, dtypes={"y": "int64"})
net = o.graph
print(sg.listing(o))

# %% [markdown]
# Collins' version of this graph (Fig. 1.4) has $n = 11$ vertices and $l = 6$ leaves. symgrad
# has the same six leaves, but its primitives are finer: $Wx$ and $+\,b$ are two nodes (one
# in the notes), and so are the pick $q_y$ and the negation. The leaves and the edge
# structure are checked here:

# %%
leaf_names = sorted(n.name for n in net.nodes if n.op == "var")
inner = [i for i in net.ancestors([o.node]) if net.nodes[i].op not in ("var", "const")]
print("leaves:", leaf_names, f"(l = {len(leaf_names)})")
print("non-leaf nodes:", [net.nodes[i].op for i in inner])
assert leaf_names == ["V", "W", "b", "g", "x", "y"]
assert [net.nodes[i].op for i in inner] == [
    "matmul", "add", "tanh", "matmul", "add", "log_softmax", "index", "negative"]

# %% [markdown]
# Values at a fixed random point, and the gradients with respect to the parameters
# $W, b, V, \gamma$ (and the input $x$):

# %%
rng = np.random.default_rng(2024)
at = {
    "W": rng.normal(size=(m, d_in)), "x": rng.normal(size=d_in), "b": rng.normal(size=m),
    "V": rng.normal(size=(K, m)), "g": rng.normal(size=K), "y": 1,
}
grads = dict(zip(["W", "b", "V", "g", "x"], sg.grad(o, ["W", "b", "V", "g", "x"])))
loss = sg.evaluate(o, at)
symgrad_values = dict(zip(grads, sg.evaluate(list(grads.values()), at)))
print(f"o = {loss:.6f}")
for name, value in symgrad_values.items():
    print(f"d o / d {name} =\n{value}")

# %% [markdown]
# The hand derivation, using the slides' log-softmax Jacobian ($[\![k = k']\!] -
# \text{softmax}_{k'}(l)$) and the chain rule through each vertex of Fig. 1.4:
#
# * $\partial o/\partial l = \text{softmax}(l) - e_y$, and $\partial o/\partial \gamma$ is the same;
# * $\partial o/\partial V = (\partial o/\partial l)\, h^\top$ and $\partial o/\partial h = V^\top
#   (\partial o/\partial l)$;
# * $\partial o/\partial z = (1 - h^2) \odot \partial o/\partial h$ ($\tanh' = 1 - \tanh^2$), which
#   is also $\partial o/\partial b$;
# * $\partial o/\partial W = (\partial o/\partial z)\, x^\top$ and $\partial o/\partial x = W^\top
#   (\partial o/\partial z)$.
#
# In NumPy, independently of symgrad:

# %%
W, x_in, b, V, gamma, y = (at[k] for k in ("W", "x", "b", "V", "g", "y"))
z_np = W @ x_in + b
h_np = np.tanh(z_np)
l_np = V @ h_np + gamma
p = np.exp(l_np - l_np.max()) / np.exp(l_np - l_np.max()).sum()
o_np = -(l_np[y] - np.log(np.exp(l_np).sum()))
dl = p - np.eye(K)[y]
dh_np = V.T @ dl
dz = (1 - h_np**2) * dh_np
by_hand = {"W": np.outer(dz, x_in), "b": dz, "V": np.outer(dl, h_np), "g": dl, "x": W.T @ dz}

print(f"o: symgrad {loss:.12f}, by hand {o_np:.12f}")
for name in by_hand:
    err = np.max(np.abs(symgrad_values[name] - by_hand[name]))
    print(f"d o / d {name}: largest difference from the hand formula {err:.1e}")
    assert np.allclose(symgrad_values[name], by_hand[name], rtol=1e-12, atol=1e-14)
assert np.isclose(loss, o_np, rtol=1e-13)

# %% [markdown]
# The slides' log-softmax Jacobian itself, from `sg.jacobian` (one reverse pass with an
# identity seed) against the formula:

# %%
lv = sg.var("l", shape=(K,))
jac = sg.evaluate(sg.jacobian(sg.log_softmax(lv), lv), {"l": l_np})
formula = np.eye(K) - p[None, :]
print(jac)
assert np.allclose(jac, formula, rtol=1e-12, atol=1e-15)

# %% [markdown]
# The derivative graph B that produced those gradients, appended to the forward graph. Note
# the backprop of `tanh` reusing the forward output (`1 - h*h`), and of `log_softmax`
# reusing `exp` of its output (the softmax) instead of recomputing it:

# %%
print(sg.listing([o, *grads.values()]))

# %% [markdown]
# `sg.latex` writes the network in matrix notation (sympy's printer where it is
# elementwise):

# %%
Math("o = " + sg.latex(o))

# %% tags=["figure"]
show([o, *grads.values()], "network_derivative_graph")

# %% [markdown]
# The backprop table for the network, in the notes' numbering style (vertices $u_i$ in a
# topological order, $P_i = \partial u_n / \partial u_i$). Vector and matrix adjoints show
# their values; the local-terms column is filled where the consumer is a scalar.

# %%
net_table = sg.explain(o, wrt=["W", "b", "V", "g"], at=at)
print(net_table)
rows = {row["of"]: row["value"] for row in net_table.section("adjoint")}
named = {row["definition"]: row["label"] for row in net_table.section("forward")}
for name in ("W", "b", "V", "g"):
    assert np.allclose(rows[named[name]], by_hand[name], rtol=1e-12, atol=1e-14)

# %% [markdown]
# ## 7. §1.4.4: an input with no Jacobian
#
# The label $y$ is an integer: $o$ has no derivative with respect to it, and the notes
# exclude such leaves from Theorem 1. symgrad keeps integer inputs out of B and says so if
# asked:

# %%
try:
    sg.grad(o, "y")
except sg.DifferentiationError as error:
    print(f"{type(error).__name__}: {error}")
else:
    raise AssertionError("the gradient with respect to an integer label must be refused")
