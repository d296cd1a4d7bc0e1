"""The folders symgrad caches compiled code in, kept safe: a cache entry is code the next
process runs, so only a folder nobody else can write is used.

* The cache root is ``$SYMGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/symgrad``, else
  ``~/.cache/symgrad``; :func:`folder` makes a subfolder per kind (``numba/``) private
  (mode 0700) when it creates it. A folder is used only if it, and every folder above it,
  is owned by the user (or root) and writable by nobody else (a world-writable folder with
  the sticky bit, such as ``/tmp``, is fine above it). Otherwise — a shared team folder, a
  world-writable temporary folder, a folder another user owns — a
  :class:`~symgrad.errors.SymgradWarning` says so, once, and this process compiles into a
  private temporary folder instead (no cache).
* Every file is written atomically (a temporary file in the same folder, renamed over the
  entry), readable by the user only.
* :class:`Manifest` records the SHA-256 of the files a compiler caches for one entry
  (Numba's index and data files); :meth:`Manifest.verify` deletes an entry's files unless
  they are exactly the recorded ones, so a truncated, stale or planted file is discarded
  and rebuilt, never loaded.

>>> import os, tempfile
>>> root = tempfile.mkdtemp()
>>> os.environ["SYMGRAD_CACHE_DIR"] = root
>>> str(folder("example")) == os.path.join(root, "example")
True
>>> oct(os.stat(folder("example")).st_mode & 0o777)
'0o700'
>>> del os.environ["SYMGRAD_CACHE_DIR"]
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from ..base.errors import SymgradWarning

__all__ = ["Manifest", "folder", "insecure", "root", "write"]

_LOCK = threading.Lock()
_PRIVATE: dict[str, Path] = {}  # kind -> this process's private folder, where the root is unsafe
_WARNED: set[str] = set()


def root() -> Path:
    """The cache root: ``$SYMGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/symgrad``, else
    ``~/.cache/symgrad``."""
    given = os.environ.get("SYMGRAD_CACHE_DIR")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "symgrad"


def folder(kind: str) -> Path:
    """The cache folder for ``kind`` (made, private, if missing), or where the cache root
    is not safe (or cannot be made), a private temporary folder of this process."""
    path = root() / kind
    try:
        _make_private(path)
        reason = insecure(path)
    except OSError as e:
        reason = f"it cannot be made ({e.strerror or e})"
    if reason is None:
        return path
    with _LOCK:
        if str(path) not in _WARNED:
            _WARNED.add(str(path))
            warnings.warn(
                f"symgrad's compiled-code cache {path} is not used: {reason}; code found "
                "there would run in this process, so this process compiles without the "
                "cache. Set SYMGRAD_CACHE_DIR to a folder of your own that others cannot "
                "write (chmod 700)", SymgradWarning, stacklevel=3)
        private = _PRIVATE.get(kind)
        if private is None:
            private = _PRIVATE[kind] = Path(tempfile.mkdtemp(prefix=f"symgrad-{kind}-"))
        return private


def _make_private(path: Path) -> None:
    """``path`` and missing folders above it, made readable and writable by the user only
    (an existing folder is left as it is: :func:`insecure` judges it)."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:  # made by another process meanwhile
            pass


def insecure(path: Path) -> str | None:
    """Why code under ``path`` could have been written by someone else (None: it could
    not): ``path`` must be a folder owned by the user, writable by nobody else, and every
    folder above it owned by the user or root and writable by nobody else unless sticky."""
    if not hasattr(os, "getuid"):  # no POSIX owners (Windows): the user's profile folders
        return None
    uid = os.getuid()
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder"
    if info.st_uid != uid:
        return f"it is owned by another user (uid {info.st_uid})"
    if info.st_mode & 0o022:
        return "others can write to it (its mode is " + oct(info.st_mode & 0o777) + ")"
    for above in Path(os.path.abspath(path)).parents:
        info = os.stat(above)
        if info.st_uid not in (0, uid):
            return f"the folder {above} above it is owned by another user"
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            return f"others can write to the folder {above} above it"
    return None


def write(path: Path, data: bytes) -> None:
    """``data`` as the file ``path``, atomically (a reader sees the old file or the whole
    new one), readable by the user only."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def digest(path: Path) -> str | None:
    """The SHA-256 of a file's bytes (None: unreadable)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class Manifest:
    """The files a compiler caches for one entry: those in ``where`` whose names start
    with ``stem + "."``, with their SHA-256 recorded in ``record`` (a JSON file)."""

    def __init__(self, where: Path, stem: str, record: Path) -> None:
        self.where, self.stem, self.record = where, stem, record

    def files(self) -> list[Path]:
        try:
            return sorted(p for p in self.where.iterdir() if p.name.startswith(self.stem + ".")
                          and not p.name.endswith(".tmp"))
        except OSError:
            return []

    def verify(self) -> bool:
        """Whether the entry's files are exactly the recorded ones; if not, they are
        deleted (the compiler builds them again), and the record with them."""
        try:
            want = json.loads(self.record.read_text())
        except (OSError, ValueError):
            want = None
        found = {p.name: digest(p) for p in self.files()}
        if want == found:
            return True
        for name in found:
            try:
                (self.where / name).unlink()
            except OSError:
                pass
        try:
            self.record.unlink()
        except OSError:
            pass
        return False

    def save(self) -> None:
        """Record the entry's files as they are now."""
        found = {p.name: digest(p) for p in self.files()}
        write(self.record, json.dumps(found, sort_keys=True).encode())
