"""Real, tiny distributions: wheels pip can install, sdists with PKG-INFO.

`govern demo` publishes its package with them, and the index tests theirs (tests/wheels.py).

Everything is deterministic (fixed timestamps and permissions), so the same call writes the
same bytes and the same sha256 every time.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.tags import parse_tag
from packaging.utils import canonicalize_name
from packaging.version import Version

_ZIP_TIME = (2024, 1, 1, 0, 0, 0)
_TAR_TIME = 1704067200  # 2024-01-01T00:00:00Z


def dist_name(name: str) -> str:
    """The name as it is spelled in wheel and sdist filenames (PEP 427/625: ``a_b``)."""
    return canonicalize_name(name).replace("-", "_")


def metadata(
    name: str, version: str, requires_python: str | None = None, requires: Sequence[str] = ()
) -> str:
    """A core-metadata document (METADATA / PKG-INFO); ``requires``: its Requires-Dist."""
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python is not None:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    return "\n".join(lines) + "\n\n"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def build_wheel(
    directory: Path,
    name: str,
    version: str,
    *,
    tag: str = "py3-none-any",
    files: Mapping[str, str] | None = None,
    requires_python: str | None = None,
    requires: Sequence[str] = (),
) -> Path:
    """Write ``{dist}-{version}-{tag}.whl`` into directory and return its path
    (``requires``: what it depends on, its Requires-Dist).

    ``files`` maps paths inside the wheel to their text (default: a package named after
    the project whose ``__init__`` holds ``__version__``). METADATA, WHEEL and RECORD (with
    sha256 hashes) are written as the wheel spec asks, so pip installs the result.
    """
    dist = dist_name(name)
    version = str(Version(version))
    tags = sorted(parse_tag(tag), key=str)
    purelib = all(t.abi == "none" and t.platform == "any" for t in tags)
    info = f"{dist}-{version}.dist-info"
    contents: dict[str, bytes] = {
        path: text.encode()
        for path, text in (files or {f"{dist}/__init__.py": f'__version__ = "{version}"\n'}).items()
    }
    contents[f"{info}/METADATA"] = metadata(name, version, requires_python, requires).encode()
    wheel_lines = [
        "Wheel-Version: 1.0",
        "Generator: govern",
        f"Root-Is-Purelib: {'true' if purelib else 'false'}",
        *(f"Tag: {t}" for t in tags),
    ]
    contents[f"{info}/WHEEL"] = ("\n".join(wheel_lines) + "\n").encode()
    record = [f"{path},{_record_hash(data)},{len(data)}" for path, data in contents.items()]
    record.append(f"{info}/RECORD,,")
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()

    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in contents.items():
            entry = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
            # A script (``*.data/scripts/``) is executable, as the wheel's installer keeps it.
            mode = 0o100755 if ".data/scripts/" in path else 0o100644  # regular files
            entry.external_attr = mode << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    return target


def build_sdist(
    directory: Path,
    name: str,
    version: str,
    *,
    requires_python: str | None = None,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write a minimal ``{dist}-{version}.tar.gz`` (a PKG-INFO, optional files) and return it."""
    dist = dist_name(name)
    version = str(Version(version))
    root = f"{dist}-{version}"
    contents = {"PKG-INFO": metadata(name, version, requires_python), **(files or {})}
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{root}.tar.gz"
    with (
        target.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as compressed,
        tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for path, text in contents.items():
            data = text.encode()
            entry = tarfile.TarInfo(f"{root}/{path}")
            entry.size = len(data)
            entry.mtime = _TAR_TIME
            entry.mode = 0o644
            archive.addfile(entry, io.BytesIO(data))
    return target


def sha256(path: Path) -> str:
    """The hex sha256 of a file (what an index publishes for it)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
