"""The compiled-code cache runs nothing it did not write: a folder others can write is not
used (a warning, then no cache), a planted or truncated entry is discarded and rebuilt,
never loaded, and every entry is written atomically, readable by the user only."""

from __future__ import annotations

import importlib._bootstrap_external as bootstrap
import os
import pickle
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest

import symgrad as sg
from symgrad.backends import disk_cache

pytest.importorskip("numba")

PROGRAM = ("import numpy as np, symgrad as sg\n"
           "x = sg.var('x', (50,))\n"
           "f = sg.sum(sg.exp(x) * sg.sin(x) + x)\n"
           "fn = sg.compile([f, sg.grad(f, x)], backend='numba')\n"
           "print(repr(float(fn(np.ones(50))[0])))\n")
WANT = 50 * (np.exp(1.0) * np.sin(1.0) + 1.0)


class _Payload:
    """A pickle that writes a marker file when it is loaded."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('pwned')",))


def _run(cache, **extra):
    env = {**os.environ, "SYMGRAD_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1", **extra}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-W", "always", "-c", PROGRAM], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert float(out.stdout.splitlines()[-1]) == pytest.approx(WANT, rel=1e-14)
    return out


def _entry_files(cache):
    pycache = cache / "numba" / "__pycache__"
    return sorted(pycache.glob("sg_*.nbi")), sorted(pycache.glob("sg_*.nbc"))


def test_a_planted_or_truncated_entry_is_discarded_and_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    first = _run(cache)
    assert "data saved" in first.stdout
    assert oct(stat.S_IMODE(os.stat(cache / "numba").st_mode)) == "0o700"
    for p in (cache / "numba").glob("sg_*"):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0  # the user's only
    assert "data loaded" in _run(cache).stdout  # verified, then used
    index, _ = _entry_files(cache)
    marker = tmp_path / "pwned"
    # a planted index pickle and a planted byte-code file for the module
    index[0].write_bytes(pickle.dumps(_Payload(marker)))
    module = next((cache / "numba").glob("sg_*.py"))
    planted = compile(f"open({str(marker)!r}, 'w')", str(module), "exec")
    info = os.stat(module)
    pyc = bootstrap._code_to_timestamp_pyc(planted, int(info.st_mtime), info.st_size)
    (cache / "numba" / "__pycache__" / f"{module.stem}.cpython-{sys.version_info[0]}"
     f"{sys.version_info[1]}.pyc").write_bytes(pyc)
    out = _run(cache)
    assert not marker.exists()
    assert "data saved" in out.stdout  # discarded and compiled again
    index, data = _entry_files(cache)
    data[0].write_bytes(data[0].read_bytes()[:10])  # a truncated entry
    index[0].write_bytes(index[0].read_bytes()[:7])
    out = _run(cache)
    assert "data saved" in out.stdout and not marker.exists()
    assert "data loaded" in _run(cache).stdout


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_a_folder_others_can_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    (shared / "numba" / "__pycache__").mkdir(parents=True)
    for p in (shared, shared / "numba", shared / "numba" / "__pycache__"):
        os.chmod(p, 0o777)  # a team folder anyone may write
    marker = tmp_path / "pwned"
    (shared / "numba" / "planted.py").write_text(f"open({str(marker)!r}, 'w')\n")
    out = _run(shared)
    assert "is not used: others can write to it" in out.stderr
    assert not list((shared / "numba").glob("sg_*")) and not marker.exists()
    assert disk_cache.insecure(shared / "numba") is not None
    os.chmod(shared / "numba", 0o700)
    assert "above it" in disk_cache.insecure(shared / "numba")


def test_insecure_and_write_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(tmp_path / "mine"))
    where = disk_cache.folder("kind")
    assert disk_cache.insecure(where) is None
    disk_cache.write(where / "entry", b"data")
    assert (where / "entry").read_bytes() == b"data"
    assert not [p for p in where.iterdir() if p.name.endswith(".tmp")]
    link = tmp_path / "link"
    link.symlink_to(where)
    assert "symbolic link" in disk_cache.insecure(link)
    if hasattr(os, "getuid"):
        open_folder = tmp_path / "open"
        open_folder.mkdir()
        os.chmod(open_folder, 0o777)
        monkeypatch.setenv("SYMGRAD_CACHE_DIR", str(open_folder))
        with pytest.warns(sg.SymgradWarning, match="not used"):
            private = disk_cache.folder("other")
        assert private != open_folder / "other" and disk_cache.insecure(private) is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert disk_cache.folder("other") == private  # warned once, the same folder
