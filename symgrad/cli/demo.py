"""``make demo`` / ``symgrad demo``: the tour on the single-hidden-layer network of the notes.

Collins' notes, Fig. 1.4: ``z = W x + b, h = tanh(z), l = V h + gamma, q = log_softmax(l),
o = -q[y]``. The demo parses that expression, prints its graph and value, appends the
derivative subgraph, checks the gradients against finite differences, emits standalone
NumPy source, writes it to a file, and times the emitted function against the interpreter.
"""

from __future__ import annotations

import importlib.util
import sys
import timeit
from pathlib import Path

import numpy as np

import symgrad as sg

from ..base.errors import SymgradError

NETWORK = "-log_softmax(V @ tanh(W @ x + b) + g)[y]"
SHAPES = {"W": (4, 3), "x": (3,), "b": (4,), "V": (2, 4), "g": (2,)}
DTYPES = {"y": "int64"}
WRT = ["W", "b", "V", "g"]
INPUTS = ["W", "x", "b", "V", "g", "y"]
WRT_POSITIONS = [INPUTS.index(w) for w in WRT]


def example_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    """Fixed random inputs for the network (the same every run)."""
    rng = np.random.default_rng(seed)
    values: dict[str, np.ndarray] = {k: rng.normal(size=s) for k, s in SHAPES.items()}
    values["y"] = np.int64(1)
    return values


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def main(out_dir: str = "demo_out") -> int:
    """Run the tour; returns 0 when every check passes."""
    _output_dir(out_dir)  # before printing anything: a bad --out is one clear error
    at = example_inputs()
    f = sg.parse(NETWORK, shapes=SHAPES, dtypes=DTYPES)
    _section("1. the expression and its forward graph")
    print(f"o = {f}\n")
    print(sg.listing([f]))
    print(f"\nvalue at fixed random inputs: o = {sg.evaluate(f, at):.6f}")

    _section("2. the derivative subgraph B (reverse mode)")
    forward = len(f.graph)
    grads = sg.grad(f, WRT)
    print(f"forward nodes: {forward}; nodes after appending B: {len(f.graph)} "
          f"(B has {len(f.graph) - forward})")
    for name, dx in zip(WRT, grads):
        print(f"d{name} = {np.array2string(np.asarray(sg.evaluate(dx, at)), precision=4)}")
    sg.check_grads(f, WRT, at=at, order=2)
    print("check_grads(order=2): gradients and second derivatives match finite differences")

    _section("3. standalone NumPy source for the value and the gradients")
    source = sg.to_source([f, *grads], inputs=INPUTS, name="network_value_and_grad",
                          output_names=["loss"] + [f"d{w}" for w in WRT])
    print(source)
    path = _output_dir(out_dir) / "network_grad.py"
    try:
        path.write_text(source)
    except OSError as e:
        raise SymgradError(f"cannot write {path}: {e.strerror or e}") from None
    print(f"(written to {path})")

    _section("4. the emitted function: checked and timed")
    fn = _load(path, "network_value_and_grad")
    args = [at[k] for k in INPUTS]
    emitted = fn(*args)
    interpreted = sg.evaluate([f, *grads], at)
    ok = all(np.allclose(a, b, rtol=1e-12, atol=1e-14) for a, b in zip(emitted, interpreted))
    print(f"emitted == evaluate: {ok}")
    err = _fd_error(fn, args, emitted)
    print(f"emitted gradient vs central differences: max relative error {err:.1e}")
    ok = ok and err < 1e-6
    t_src = min(timeit.repeat(lambda: fn(*args), number=200, repeat=5)) / 200
    t_eval = min(timeit.repeat(lambda: sg.evaluate([f, *grads], at), number=50, repeat=5)) / 50
    print(f"emitted source: {t_src * 1e6:8.1f} us per call")
    print(f"sg.evaluate:    {t_eval * 1e6:8.1f} us per call ({t_eval / t_src:.1f}x slower)")
    return 0 if ok else 1


def _output_dir(out_dir: str) -> Path:
    path = Path(out_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SymgradError(f"cannot write the tour's files into {out_dir!r}: "
                           f"{e.strerror or e}; choose another directory with --out") from None
    return path


def _fd_error(fn, args: list, outputs: tuple, h: float = 1e-6) -> float:
    """Largest relative error of each emitted gradient along a random direction."""
    rng = np.random.default_rng(1)
    worst = 0.0
    for i, grad in zip(WRT_POSITIONS, outputs[1:]):
        v = rng.normal(size=np.shape(args[i]))
        plus, minus = list(args), list(args)
        plus[i], minus[i] = args[i] + h * v, args[i] - h * v
        numeric = (fn(*plus)[0] - fn(*minus)[0]) / (2 * h)
        exact = float(np.sum(grad * v))
        worst = max(worst, abs(numeric - exact) / max(1.0, abs(exact)))
    return worst


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


if __name__ == "__main__":
    sys.exit(main())
