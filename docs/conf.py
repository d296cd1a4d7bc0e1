"""Sphinx configuration of symgrad's documentation site (``make docs``).

The pages are MyST markdown; the notebooks of ``notebooks/`` are rendered with the outputs they
store (never executed here); the API reference is autodoc over the live public lists
(``docs/_ext/symgrad_docs.py``); the benchmark tables come from ``benchmarks/measured/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent / "_ext")]

import symgrad  # noqa: E402  (after the path: the checkout's symgrad, not an installed one)

project = "symgrad"
author = "the symgrad authors"
copyright = "the symgrad authors, MIT licence"
release = version = symgrad.__version__

extensions = [
    "myst_nb",  # markdown pages (MyST) and the notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",  # numpydoc-style sections in the docstrings
    "sphinx.ext.mathjax",
    "symgrad_docs",  # the reference directives and the benchmark tables
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]

# notebooks are shown with the outputs they store: building the site runs no cell
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"undoc-members": False}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
add_module_names = False

html_theme = "furo"
html_title = f"symgrad {release}"
html_static_path = []

# the reference's ~600 entries stay out of the table of contents (each page's sidebar would
# copy them all); the sections of the reference pages are its navigation
toc_object_entries = False
