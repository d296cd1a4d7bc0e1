"""The teaching notebooks run, cell by cell, and show the numbers the reference notes print.

Each ``notebooks/*.ipynb`` is loaded as JSON and its code cells are executed in order in one
namespace, as Jupyter would (with ``notebooks/build.py``'s cell runner). The cells assert
their own key values; here we also check what they print (Collins' u3 = 5, u4 = 15,
P = 1, 3, 8, 3; Stratos' 729 paths in 51 steps; Tomassoli's four paths...), that the stored
notebooks show those numbers, and that each ``.ipynb`` holds the code of its source file
in ``notebooks/src``. Figure cells need matplotlib; without it they are skipped, and the
test of the figures says so.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

# the Dask notebook fits 10^7 rows when built; 20,000 rows here keep the tests fast
os.environ.setdefault("SYMGRAD_NOTEBOOK_ROWS", "20000")
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _load_builder():
    spec = importlib.util.spec_from_file_location("notebook_build", NOTEBOOKS / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


build = _load_builder()
HAVE_MATPLOTLIB = build.have_matplotlib()

# Lines (or parts of lines) each notebook must print: the reference notes' numbers.
EXPECTED = {
    "01_collins_examples": [
        "z = 8.0, h = 64.0, dh/dx = 192.0",  # slides: chain rule example
        "n = 4, l = 2",  # Example 1
        "E = [(1, 3), (2, 3), (2, 4), (3, 4)]",
        "sg.evaluate: u3 = 5.0, u4 = 15.0",  # Example 2
        "J1->3 = 1.0", "J2->3 = 1.0", "J2->4 = 5.0", "J3->4 = 3.0",  # Example 3
        "P4 = 1.0", "P3 = 3.0", "P2 = 8.0", "P1 = 3.0",  # Example 4
        "dh4/du2 = u1 + 2*u2    P2 = u1 + 2*u2",
        "path (2, 3)(3, 4): 3.0 x 1.0 = 3.0", "path (2, 4): 5.0 = 5.0",  # Example 5
        "sum over paths = 8.0;  backpropagation gave P2 = 8.0",
        "P2       P3 J(2->3) + P4 J(2->4)  3*1 + 1*5    8",  # the explain table
        "DifferentiationError",  # §1.4.4: no gradient for the integer label
    ],
    "02_goodfellow_stratos_tomassoli": [
        "Eq. 6.52, f'(y) f'(x) f'(w) = 0.504532",
        "paths source -> sink: 729 (= 3^6 = 729), computed in 51 steps",
        "symgrad graph: 20 nodes, 51 edges",
        "paths from x to the output: 729",
        "dz/dx: backprop 850.5, sum over 729 paths 850.5",
        "forward: a = 3, b1 = 9, b2 = 5, c = 4, d1 = -1, d2 = 2, e = -2",
        "de/da = sum of the 4 paths = -11.25",
        "de/dc = -2.25, dc/da = 5.0, product = -11.25",
        "new operations in B: ['negative', 'sigmoid', 'multiply'] | B reads the forward output s: "
        "True",
    ],
    "03_higher_order_and_codegen": [
        "d^4/dy^4 exp(2y) at 0 = 16.0",
        "x = [1. 1. 1. 1. 1.]",
        "compiled and interpreted values agree",
        "check_grads passed: Rosenbrock and the network, orders 1 and 2",
        "GradientCheckError",
    ],
    "04_dask_scale": [
        "the chunk function is length-polymorphic: True",
        "dask gradient == single-process loop over the chunks: True",
        "L-BFGS-B and Newton-CG agree: True",
    ],
}


def _notebook(stem: str) -> dict:
    return json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))


def _printed(outputs: list[dict]) -> str:
    text = []
    for o in outputs:
        if o["output_type"] == "stream":
            text.append("".join(o["text"]))
        elif "text/plain" in o.get("data", {}):
            text.append("".join(o["data"]["text/plain"]))
    return "\n".join(text)


@functools.cache
def _execute(stem: str) -> tuple[dict, list[tuple[list[str], list[dict]]]]:
    """Run the .ipynb's code cells in order; (namespace, [(tags, outputs) per code cell])."""
    if stem == "04_dask_scale":
        pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    namespace: dict = {"__name__": "__main__"}
    cells = []
    # the cells set NumPy's print options (as a notebook may); they stay inside this run
    with np.printoptions():
        for k, (source, tags) in enumerate(build.code_cells(_notebook(stem))):
            if build.FIGURE_TAG in tags and not HAVE_MATPLOTLIB:
                cells.append((tags, []))
                continue
            cells.append((tags, build.run_cell(source, namespace, f"<{stem} code cell {k}>")))
    return namespace, cells


def test_every_notebook_is_listed():
    stems = sorted(p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb"))
    assert stems == sorted(EXPECTED) == sorted(p.stem for p in build.sources())


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_notebook_prints_the_numbers_of_the_notes(stem):
    _, cells = _execute(stem)
    printed = "\n".join(_printed(outputs) for _, outputs in cells)
    missing = [line for line in EXPECTED[stem] if line not in printed]
    assert not missing, f"{stem} no longer prints: {missing}"


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_running_a_notebook_leaves_numpys_print_options_as_they_were(stem):
    """A cell's ``np.set_printoptions(precision=4, suppress=True)`` holds for the notebook's
    own cells: after the run NumPy prints with its defaults again (other tests compare
    printed arrays, and may run after this one in the same process)."""
    _execute(stem)
    options = np.get_printoptions()
    assert (options["precision"], options["suppress"]) == (8, False)


def test_collins_values():
    ns, _ = _execute("01_collins_examples")
    assert (ns["u3_value"], ns["u4_value"]) == (5.0, 15.0)
    assert ns["P_values"] == {4: 1.0, 3: 3.0, 2: 8.0, 1: 3.0}
    assert ns["J"] == {(1, 3): 1.0, (2, 3): 1.0, (2, 4): 5.0, (3, 4): 3.0}
    for name, value in ns["by_hand"].items():
        np.testing.assert_allclose(ns["symgrad_values"][name], value, rtol=1e-12, atol=1e-14)


def test_paths_values():
    ns, _ = _execute("02_goodfellow_stratos_tomassoli")
    assert (ns["mu"]["source"], ns["steps"]) == (729, 51)
    assert ns["n_paths"] == 729 and ns["gradient"] == ns["by_paths"] == 850.5
    assert ns["total"] == -11.25 and len(ns["paths_t"]) == 4


def test_higher_order_values():
    ns, _ = _execute("03_higher_order_and_codegen")
    np.testing.assert_allclose(ns["xk"], np.ones(5), atol=1e-12)
    np.testing.assert_allclose(ns["H"], ns["H_sympy"], rtol=1e-13, atol=1e-12)


def test_dask_scale_values():
    pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    ns, _ = _execute("04_dask_scale")
    assert ns["ROWS"] == int(os.environ["SYMGRAD_NOTEBOOK_ROWS"]) and ns["same"]
    np.testing.assert_allclose(ns["newton"].x, ns["lbfgs"].x, atol=1e-4)
    # the fit recovers the weights the labels were drawn with (20,000 rows: to about 0.1)
    np.testing.assert_allclose(ns["w_fit"], ns["w_true"], atol=0.15)


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed: the figure "
                    "cells (sg.draw) cannot run; pip install 'symgrad[plot]'")
@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_figure_cells_show_a_png(stem):
    _, cells = _execute(stem)
    figures = [outputs for tags, outputs in cells if build.FIGURE_TAG in tags]
    assert figures, f"{stem} has no figure cell"
    for outputs in figures:
        assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_stored_notebook_shows_the_numbers(stem):
    notebook = _notebook(stem)
    printed = "\n".join(_printed(c["outputs"]) for c in notebook["cells"]
                        if c["cell_type"] == "code")
    missing = [line for line in EXPECTED[stem] if line not in printed]
    assert not missing, f"{stem}.ipynb lacks {missing}: run python notebooks/build.py"
    assert notebook["nbformat"] == 4 and notebook["nbformat_minor"] >= 4


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_stored_notebook_holds_the_source_code(stem):
    cells = build.read_cells(NOTEBOOKS / "src" / f"{stem}.py")
    from_source = [(c.source, c.tags) for c in cells if c.kind == "code"]
    assert build.code_cells(_notebook(stem)) == from_source, (
        f"{stem}.ipynb differs from notebooks/src/{stem}.py: run python notebooks/build.py")
