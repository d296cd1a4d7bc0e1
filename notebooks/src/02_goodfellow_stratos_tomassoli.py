# %% [markdown]
# # Symbol-to-symbol derivatives, paths and dynamic programming
#
# Worked examples from three references, run in symgrad (the reference extracts are cited
# by file; keep the originals open alongside):
#
# * Goodfellow, Bengio and Courville, *Deep Learning*, §6.5.3–6.5.6 (`003_aa2ae41836239aed.txt`):
#   the chain $z = f(f(f(w)))$ of Fig. 6.9 and its symbolic derivative graph (Fig. 6.10), and
#   the MLP forward and backward passes of Algorithms 6.3 and 6.4;
# * Stratos, *All of Backpropagation in Two Pages* (`002_ac8fe4fbd959ebe4.txt`), Appendix F.2:
#   a layered DAG with $3^6 = 729$ paths that the sum-product recursion handles in 51 steps;
# * Tomassoli, *Calculus and Backpropagation* (`004_249f0978f9dabdf9.txt`), §7–8 and §14:
#   the graph $a \to b_1, b_2 \to c \to d_1, d_2 \to e$ with its 4 paths, and the remark that
#   backpropagation alone does not find $s' = s(1 - s)$ for the sigmoid.

# %%
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np

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


def show(exprs, name):
    """Draw the graph of ``exprs``: forward nodes, and the derivative subgraph B if any
    (adjoint nodes dashed, a dotted arrow from each forward node to its adjoint)."""
    return PNG(sg.draw(exprs, str(FIGURES / f"{name}.png")))


def node_in(graph, e):
    """The node id of Expr ``e`` inside ``graph``. Exprs built from separately created
    variables are joined into one graph as they are combined; an Expr made early may still
    point at its original, smaller graph, and this finds its copy in the joined one."""
    return e.node if e.graph is graph else graph.import_node(e.graph, e.node)


def local_jacobian(graph, j, i, inputs):
    """J^{j->i}: the derivative of node i's local function with respect to its operand node
    j, at the point the forward pass reaches from ``inputs``; scalar nodes only. (As in
    notebook 01.)"""
    node = graph.nodes[i]
    alphas = [sg.var(f"alpha{k}") for k in range(len(node.args))]
    f_i = build(REGISTRY[node.op], alphas, node.attrs)
    operands = sg.evaluate([graph.expr(a) for a in node.args], inputs)
    at = {f"alpha{k}": value for k, value in enumerate(operands)}
    positions = [k for k, a in enumerate(node.args) if a == j]
    return sum(sg.evaluate(sg.grad(f_i, alphas[k]), at) for k in positions)


def forward_values(graph, ids, inputs):
    """node id -> value for the nodes ``ids`` of ``graph``."""
    return dict(zip(ids, sg.evaluate([graph.expr(i) for i in ids], inputs)))


# %% [markdown]
# ## 1. Goodfellow Fig. 6.9 and 6.10: $z = f(f(f(w)))$
#
# Fig. 6.9 applies one function $f$ three times, $x = f(w)$, $y = f(x)$, $z = f(y)$, and
# Eq. 6.50–6.53 give $dz/dw = f'(y) f'(x) f'(w)$. We take $f = \sin$, so that $f' = \cos$
# appears as its own node, as the $f'$ boxes of Fig. 6.10 do.

# %%
w = sg.var("w")
x = sg.sin(w)
y = sg.sin(x)
z = sg.sin(y)
chain = z.graph
dz_dw = sg.grad(z, w)
print(sg.listing([z, dz_dw]))

# %% [markdown]
# Fig. 6.10 (right) is this listing: the derivative subgraph B has **one adjoint node per
# forward node**, computed in exactly the reverse order, and each $f'$ node reads the value
# its forward node already stored (Eq. 6.52's "compute $f(w)$ once" strategy). The
# `graph.adjoint_of` table is Goodfellow's `grad_table` (Algorithm 6.2):

# %%
names = {node_in(chain, e): label for e, label in [(w, "w"), (x, "x"), (y, "y"), (z, "z")]}
at_w = {"w": 0.7}
rows = []
for f_id, label in sorted(names.items(), reverse=True):
    a_id = chain.adjoint_of[f_id]
    rows.append((label, f_id, a_id, str(chain.expr(a_id)), sg.evaluate(chain.expr(a_id), at_w)))
print(f"{'node':<5} {'id':<3} {'adjoint':<8} {'dz/d(node) as built':<40} value at w=0.7")
for label, f_id, a_id, text, value in rows:
    print(f"{label:<5} v{f_id:<2} v{a_id:<7} {text:<40} {value:.6f}")

adjoint_ids = [chain.adjoint_of[i] for i in names]
assert len(set(adjoint_ids)) == len(names) == 4  # one adjoint per forward node, all distinct
seed = chain.adjoint_of[node_in(chain, z)]  # dz/dz = 1, the constant that starts B
assert all(chain.nodes[a].role == "adjoint" for a in adjoint_ids if a != seed)

w0 = 0.7
x0, y0 = np.sin(w0), np.sin(np.sin(w0))
eq_6_52 = np.cos(y0) * np.cos(x0) * np.cos(w0)
print(f"Eq. 6.52, f'(y) f'(x) f'(w) = {eq_6_52:.6f}")
assert np.isclose(rows[-1][-1], eq_6_52, rtol=1e-15)

# %% [markdown]
# The *infix text* of $dz/dw$ repeats $f(w)$, like Eq. 6.53, but that is only how a DAG
# prints as a tree: in the graph each $\sin$ exists once and B points at it. Counting the
# `sin` nodes that the derivative depends on:

# %%
print("dz/dw =", dz_dw)
needed = chain.ancestors([dz_dw.node])
sin_nodes = [i for i in needed if chain.nodes[i].op == "sin"]
print("sin nodes used by dz/dw:", [f"v{i}" for i in sin_nodes])
assert len(sin_nodes) == 2  # x = f(w) and y = f(x), each stored once and reused

# %% tags=["figure"]
show([z, dz_dw], "goodfellow_fig_6_10")

# %% [markdown]
# With $f = \exp$ the reuse goes further: $\exp' = \exp$, so symgrad's backprop rule for
# `exp` returns the forward node itself. $dz/dy$ *is* the node $z$, and B needs only two
# multiplications:

# %%
w2 = sg.var("w")
z2 = sg.exp(sg.exp(sg.exp(w2)))
size = len(z2.graph)
dz2 = sg.grad(z2, w2)
print(sg.listing([z2, dz2]))
y2 = z2.graph.nodes[z2.node].args[0]  # the node y = exp(exp(w))
print(f"adjoint of y is node v{z2.graph.adjoint_of[y2]}, and z is node v{z2.node}")
assert z2.graph.adjoint_of[y2] == z2.node
assert [n.op for n in z2.graph.nodes[size:]] == ["const", "multiply", "multiply"]
e1 = np.exp(0.3)
assert np.isclose(sg.evaluate(dz2, {"w": 0.3}), np.exp(np.exp(e1)) * np.exp(e1) * e1)

# %% [markdown]
# Because B is an ordinary graph, it can be differentiated again (§6.5.5: "higher
# derivatives"); notebook 03 takes this further. Here $d^2z/dw^2$ for the sine chain is
# checked against a central finite difference of $dz/dw$:

# %%
d2z = sg.grad(dz_dw, w)
h = 1e-5
fd = (sg.evaluate(dz_dw, {"w": w0 + h}) - sg.evaluate(dz_dw, {"w": w0 - h})) / (2 * h)
second = sg.evaluate(d2z, at_w)
print(f"d2z/dw2 at w=0.7: symgrad {second:.10f}, finite difference {fd:.10f}")
assert np.isclose(second, fd, rtol=1e-8)

# %% [markdown]
# ## 2. Goodfellow Algorithms 6.3 and 6.4: a fully connected MLP
#
# Algorithm 6.3 runs $a^{(k)} = b^{(k)} + W^{(k)} h^{(k-1)}$, $h^{(k)} = f(a^{(k)})$ for
# $k = 1 \ldots l$ and adds a regulariser to the loss; Algorithm 6.4 walks back through the
# layers by hand. We write 6.3 against symgrad (a loop, exactly as printed, with $f = \tanh$,
# squared-error loss and $\Omega(\theta) = \sum_k \lVert W^{(k)} \rVert^2$), let symgrad
# build B, and compare with a direct NumPy transcription of 6.4.

# %%
sizes = [4, 5, 3, 2]  # input, two hidden layers, output: depth l = 3
depth = len(sizes) - 1
lam = 0.01
Ws = [sg.var(f"W{k}", shape=(sizes[k], sizes[k - 1])) for k in range(1, depth + 1)]
bs = [sg.var(f"b{k}", shape=(sizes[k],)) for k in range(1, depth + 1)]
x_in = sg.var("x", shape=(sizes[0],))
y_target = sg.var("y", shape=(sizes[-1],))

h_k = x_in  # Algorithm 6.3
activations = []
for W_k, b_k in zip(Ws, bs):
    a_k = b_k + W_k @ h_k
    h_k = sg.tanh(a_k)
    activations.append(a_k)
y_hat = h_k
omega = sg.sum(Ws[0] ** 2)
for W_k in Ws[1:]:
    omega = omega + sg.sum(W_k**2)
cost = 0.5 * sg.sum((y_hat - y_target) ** 2) + lam * omega

params = [*Ws, *bs]
size_forward = len(cost.graph)
param_grads = sg.grad(cost, params)
size_B = len(cost.graph) - size_forward
print(f"forward graph: {size_forward} nodes; B added {size_B} nodes")

# %%
rng = np.random.default_rng(63)
values = {f"W{k}": rng.normal(size=(sizes[k], sizes[k - 1])) for k in range(1, depth + 1)}
values |= {f"b{k}": rng.normal(size=sizes[k]) for k in range(1, depth + 1)}
values |= {"x": rng.normal(size=sizes[0]), "y": rng.normal(size=sizes[-1])}


def algorithm_6_4(v):
    """Goodfellow Alg. 6.3 then 6.4 in NumPy; returns (J, grads by name, g on each a(k))."""
    hs, As = [v["x"]], []
    for k in range(1, depth + 1):
        As.append(v[f"b{k}"] + v[f"W{k}"] @ hs[-1])
        hs.append(np.tanh(As[-1]))
    J = 0.5 * np.sum((hs[-1] - v["y"]) ** 2) + lam * sum(
        np.sum(v[f"W{k}"] ** 2) for k in range(1, depth + 1))
    g = hs[-1] - v["y"]  # gradient of the loss on the output y_hat
    grads, g_on_a = {}, {}
    for k in range(depth, 0, -1):
        g = g * (1 - hs[k] ** 2)  # through f = tanh: f'(a) = 1 - tanh(a)^2
        g_on_a[k] = g
        grads[f"b{k}"] = g
        grads[f"W{k}"] = np.outer(g, hs[k - 1]) + lam * 2 * v[f"W{k}"]
        g = v[f"W{k}"].T @ g  # down to h(k-1)
    return J, grads, g_on_a


J_np, grads_np, g_on_a = algorithm_6_4(values)
J_sg, *grads_sg = sg.evaluate([cost, *param_grads], values)
print(f"J: symgrad {J_sg:.12f}, Algorithm 6.3 {J_np:.12f}")
assert np.isclose(J_sg, J_np, rtol=1e-13)
for p, value in zip(params, grads_sg):
    err = np.max(np.abs(value - grads_np[p.name]))
    print(f"dJ/d{p.name:<3} largest difference from Algorithm 6.4: {err:.1e}")
    assert np.allclose(value, grads_np[p.name], rtol=1e-12, atol=1e-14)

# %% [markdown]
# Algorithm 6.4's running variable $g$, after it passes through $f'$, is the gradient on the
# pre-activation $a^{(k)}$. In symgrad that is simply the adjoint node of $a^{(k)}$ in B:

# %%
graph6 = cost.graph
for k, a_k in enumerate(activations, start=1):
    adjoint = graph6.expr(graph6.adjoint_of[node_in(graph6, a_k)])
    value = sg.evaluate(adjoint, values)
    print(f"adjoint of a({k}) = node v{adjoint.node}: {value}")
    assert np.allclose(value, g_on_a[k], rtol=1e-12, atol=1e-14)

# %% [markdown]
# The whole of B for this MLP (each line says which forward node it serves):

# %%
print(sg.listing([cost, *param_grads]))

# %% [markdown]
# ## 3. Stratos, Appendix F.2: 729 paths, 51 steps
#
# Stratos writes the gradient as a sum over all paths of products of edge Jacobians
# (Eq. 17) and then shows the reverse-topological recursion
# $\mu(s) = \sum_{j \in \mathrm{ch}(s)} \mu(j) \ast Q^{s \to j}$ that computes it in one step
# per arc. His example DAG has $3^6 = 729$ paths from the first node to the last and needs
# 51 steps. (The extract lacks the drawing; the layered DAG that matches both numbers is a
# source, six fully connected layers of three nodes each, and a sink:
# $3 + 5 \times 9 + 3 = 51$ arcs.) First the recursion itself, with every $Q = 1$ so that
# $\mu$ counts paths:

# %%
def layered_dag(layers, width=3):
    """Stratos-style DAG: source -> `layers` fully connected layers of `width` -> sink."""
    dag = nx.DiGraph()
    previous = ["source"]
    for layer in range(1, layers + 1):
        current = [(layer, k) for k in range(width)]
        dag.add_edges_from((p, c) for p in previous for c in current)
        previous = current
    dag.add_edges_from((p, "sink") for p in previous)
    return dag


def sum_product(dag, target, Q):
    """Stratos' one-line recursion in reverse topological order; returns (mu, steps)."""
    mu, steps = {target: 1}, 0
    for s in reversed(list(nx.topological_sort(dag))):
        if s == target:
            continue
        mu[s] = 0
        for j in dag.successors(s):
            mu[s] += mu[j] * Q(s, j)
            steps += 1
    return mu, steps


dag = layered_dag(6)
mu, steps = sum_product(dag, "sink", lambda s, j: 1)
print(f"nodes {dag.number_of_nodes()}, arcs {dag.number_of_edges()}")
print(f"paths source -> sink: {mu['source']} (= 3^6 = {3**6}), computed in {steps} steps")
assert mu["source"] == 729 and steps == dag.number_of_edges() == 51

# %% [markdown]
# Now the same DAG as a symgrad expression. A layer node must depend on all three nodes of
# the layer below through one operation, so we use a three-operand product,
# `einsum(",,->", a, b, c)` $= abc$, with the operands rotated so that the three nodes of a
# layer are distinct. The first layer is $\sqrt{x}$, $|x|$, $x^2$ of the source $x$.

# %%
def layered_expression(layers):
    x = sg.var("x")
    layer = [sg.sqrt(x), sg.abs(x), sg.square(x)]
    for _ in range(layers - 1):
        a, b, c = layer
        layer = [sg.einsum(",,->", a, b, c), sg.einsum(",,->", b, c, a),
                 sg.einsum(",,->", c, a, b)]
    return x, sg.einsum(",,->", *layer)


def count_paths(G, source, target):
    """Number of source -> target paths in a DAG, by the same dynamic programme."""
    count = {target: 1}
    for s in reversed(list(nx.topological_sort(G))):
        if s != target:
            count[s] = sum(count.get(j, 0) for j in G.successors(s))
    return count[source]


x_src, out = layered_expression(6)
G = out.graph
fwd = G.ancestors([out.node])
G_fwd = G.nx.subgraph(fwd)
x_id = node_in(G, x_src)
n_paths = count_paths(G_fwd, x_id, out.node)
print(f"symgrad graph: {G_fwd.number_of_nodes()} nodes, {G_fwd.number_of_edges()} edges")
print(f"paths from x to the output: {n_paths}")
assert (G_fwd.number_of_nodes(), G_fwd.number_of_edges(), n_paths) == (20, 51, 729)
assert sum(1 for _ in nx.all_simple_paths(G_fwd, x_id, out.node)) == 729

# %% [markdown]
# Backpropagation through it builds B once, with a number of nodes proportional to the
# number of edges, never to the number of paths. At $x = 1$ every node has the value 1,
# so each path's product is the derivative of its first-layer node
# ($\frac{1}{2}$, $1$ or $2$), and each first-layer node starts $3^5 = 243$ paths:
# $dz/dx = 243 \times 3.5 = 850.5$. Enumerating the 729 paths explicitly (Stratos' Eq. 17,
# Collins' Theorem 1) gives the same number:

# %%
before = len(G)
d_out = sg.grad(out, x_src)
B_size = len(G) - before
point = {"x": 1.0}
gradient = sg.evaluate(d_out, point)

Jedge = {(j, i): local_jacobian(G, j, i, point) for j, i in G_fwd.edges}
by_paths = sum(np.prod([Jedge[e] for e in zip(p, p[1:])])
               for p in nx.all_simple_paths(G_fwd, x_id, out.node))
print(f"B: {B_size} nodes for {G_fwd.number_of_edges()} forward edges and {n_paths} paths")
print(f"dz/dx: backprop {gradient}, sum over 729 paths {by_paths}")
assert gradient == by_paths == 243 * 3.5 == 850.5
assert B_size <= 2 * (G_fwd.number_of_nodes() + G_fwd.number_of_edges())

# %% [markdown]
# Deeper versions of the same DAG: the path count grows as $3^L$, the size of B linearly.

# %%
print(f"{'layers':>6} {'edges':>6} {'paths':>8} {'B nodes':>8} {'dz/dx at 1':>11}")
growth = []
for layers in range(1, 11):
    xs, zs = layered_expression(layers)
    g_ = zs.graph
    ids = g_.ancestors([zs.node])
    edges = g_.nx.subgraph(ids).number_of_edges()
    paths = count_paths(g_.nx.subgraph(ids), node_in(g_, xs), zs.node)
    n0 = len(g_)
    dz = sg.grad(zs, xs)
    growth.append((layers, edges, paths, len(g_) - n0))
    print(f"{layers:>6} {edges:>6} {paths:>8} {len(g_) - n0:>8} {sg.evaluate(dz, point):>11}")
    assert paths == 3**layers and sg.evaluate(dz, point) == 3 ** (layers - 1) * 3.5
steps_B = np.diff([b for *_, b in growth[1:]])
assert len(set(steps_B)) == 1  # B grows by the same number of nodes per layer

# %% [markdown]
# ## 4. Tomassoli §7–8: four paths from $a$ to $e$
#
# Tomassoli's graph is $a \to b_1, b_2 \to c \to d_1, d_2 \to e$; he leaves the functions
# unspecified and evaluates at $a = 3$, where his figure has $c = 4$, $d_1 = -1$, $d_2 = 2$.
# We choose functions with exactly those values: $b_1 = a^2$, $b_2 = a + 2$, $c = b_1 - b_2$,
# $d_1 = 3 - c$, $d_2 = \sqrt{c}$, $e = d_1 d_2$.

# %%
a = sg.var("a")
b1 = a**2
b2 = a + 2
c = b1 - b2
d1 = 3 - c
d2 = sg.sqrt(c)
e = d1 * d2
T = e.graph
label = {node_in(T, v): s for v, s in
         [(a, "a"), (b1, "b1"), (b2, "b2"), (c, "c"), (d1, "d1"), (d2, "d2"), (e, "e")]}
at_a = {"a": 3.0}
vals_t = forward_values(T, list(label), at_a)
print("forward:", ", ".join(f"{label[i]} = {vals_t[i]:g}" for i in label))
assert [vals_t[i] for i in label] == [3.0, 9.0, 5.0, 4.0, -1.0, 2.0, -2.0]

# %% [markdown]
# The four paths and their products of local derivatives (Tomassoli's "sum the paths,
# multiply along each path"):

# %%
T_fwd = T.nx.subgraph(T.ancestors([e.node]))
J_t = {(j, i): local_jacobian(T, j, i, at_a) for j, i in T_fwd.edges}
total = 0.0
for path in nx.all_simple_paths(T_fwd, node_in(T, a), e.node):
    factors = [J_t[edge] for edge in zip(path, path[1:])]
    total += np.prod(factors)
    print(f"path[{', '.join(label[i] for i in path)}] = "
          f"{' * '.join(f'{f:g}' for f in factors)} = {np.prod(factors):g}")
print(f"de/da = sum of the 4 paths = {total}")
paths_t = list(nx.all_simple_paths(T_fwd, node_in(T, a), e.node))
assert len(paths_t) == 4 and total == -11.25

# %% [markdown]
# Factoring at $c$ (Tomassoli's "smarter way"): $de/da = (dc/da)(de/dc)$. Backpropagation
# computes $de/dc$ once, stores it in the adjoint of $c$ (his `table[c]`) and reuses it for
# both $b_1$ and $b_2$:

# %%
size_t = len(T)
de_da = sg.grad(e, a)
de_dc = sg.evaluate(T.expr(T.adjoint_of[node_in(T, c)]), at_a)
dc_da = 2 * 3.0 - 1  # d(a^2 - (a + 2))/da at a = 3
print(f"de/dc = {de_dc}, dc/da = {dc_da}, product = {dc_da * de_dc}")
print(f"backprop: de/da = {sg.evaluate(de_da, at_a)}")
assert de_dc == -2.25 and sg.evaluate(de_da, at_a) == dc_da * de_dc == total
print(sg.explain(e, at=at_a))

# %% tags=["figure"]
show([e, de_da], "tomassoli_graph")

# %% [markdown]
# ## 5. Tomassoli §14: $s'(x) = s(x)(1 - s(x))$
#
# Tomassoli remarks that backpropagation is not optimal: it composes local derivatives
# mechanically and does not discover that the derivative of the sigmoid
# $s(x) = 1/(1 + e^{-x})$ can be written with $s$ itself. Built from primitives with the
# reverse-mode passes off (`cleanup=False`), B is exactly that mechanical composition:

# %%
t = sg.var("t")
s_prim = 1 / (1 + sg.exp(-t))
ds_prim = sg.grad(s_prim, t, cleanup=False)
print(sg.listing([s_prim, ds_prim]))
print("ds/dt =", ds_prim)

# %% [markdown]
# It is also fragile: at $t = -1000$, $e^{-t}$ overflows and the chain rule multiplies
# $0 \cdot \infty$. A rewrite of the derivative graph as an expression in $t$ (what
# `sg.simplify(..., sympy=True)` does) has no reason to produce $s(1 - s)$: the identity is
# a fact about the function $s$ (Tomassoli's point).

# %%
print("mechanical B at t = -1000:", sg.evaluate(ds_prim, {"t": -1000.0}))
simple_sympy = sg.simplify(ds_prim, sympy=True)
print("sg.simplify(sympy=True):  ", simple_sympy)

# %% [markdown]
# So symgrad knows the function instead: its *idioms* pass recognises the usual spellings of
# the logistic function (and of softplus, log-sum-exp, log-softmax and softmax) in the
# forward graph and differentiates them by the op's own rule, which reuses the forward
# output. With the default `grad`, B of the hand-written $1/(1 + e^{-t})$ is
# $s \cdot (1 - s)$ with $s$ the node the user wrote — two operations, finite everywhere —
# while the forward value stays exactly as written:

# %%
ds_idiom = sg.grad(s_prim, t)
print(sg.listing([s_prim, ds_idiom]))
print("ds/dt =", ds_idiom, "  at t = -1000:", sg.evaluate(ds_idiom, {"t": -1000.0}))
assert s_prim.node in s_prim.graph.nodes[ds_idiom.node].args

# %% [markdown]
# The registry's `sigmoid` op carries the identity in its backprop rule, which reuses the
# forward output: $s' = s(1 - s) = s(t)\,s(-t)$, and symgrad uses the second form, because
# in floating point $1 - s$ cancels to 0 beyond $t \approx 37$ while $s(-t)$ keeps every
# digit ($s'(40) \approx 4.2 \cdot 10^{-18}$, not 0). B costs three nodes:

# %%
t_op = sg.var("t")  # a fresh graph, so that the listing shows only this example
s_op = sg.sigmoid(t_op)
n0 = len(s_op.graph)
ds_op = sg.grad(s_op, t_op)
print(sg.listing([s_op, ds_op]))
new_ops = [n.op for n in s_op.graph.nodes[n0:] if n.op != "const"]
reads_forward = s_op.node in s_op.graph.nodes[ds_op.node].args
print("new operations in B:", new_ops, "| B reads the forward output s:", reads_forward)
assert len(new_ops) == 3 and reads_forward
assert np.isclose(sg.evaluate(ds_op, {"t": 40.0}), np.exp(-40.0) / (1 + np.exp(-40.0)) ** 2,
                  rtol=1e-15, atol=0)

# %% [markdown]
# All the forms agree numerically where the mechanical one is finite, and the primitive
# version's B can be rewritten by hand to reuse the forward output in the same way:

# %%
ts = np.linspace(-6.0, 6.0, 25)
s_hand = s_prim * (1 - s_prim)  # Tomassoli's formula, reusing the forward node s
forms = {"B of primitives": ds_prim, "simplify(sympy)": simple_sympy, "idiom": ds_idiom,
         "sigmoid op": ds_op, "s (1 - s) by hand": s_hand}
reference = np.exp(-ts) / (1 + np.exp(-ts)) ** 2
for name, expr in forms.items():
    value = np.array([sg.evaluate(expr, {"t": t0}) for t0 in ts])  # t is a scalar variable
    err = np.max(np.abs(value - reference))
    print(f"{name:<20} largest difference {err:.1e}")
    assert np.allclose(value, reference, rtol=1e-12, atol=1e-15)
