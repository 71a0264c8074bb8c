"""A PEP 517 build backend for the `rung` package, standard library only.

pip builds a package in an isolated environment into which it first
installs the backend named in pyproject.toml; with setuptools that means a
download, which fails on the offline GPU machines Rung is meant for. This
backend has no requirements: it zips python/rung/ into a wheel (PEP 427)
with its METADATA (core metadata 2.1) and RECORD, and does the same for
editable installs (PEP 660) with a .pth file pointing at this folder.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "rung"
TAG = "py3-none-any"


def _version() -> str:
    with open(os.path.join(HERE, NAME, "_version.py"), encoding="utf-8") as f:
        match = re.search(r'__version__\s*=\s*"([^"]+)"', f.read())
    if not match:
        raise RuntimeError("rung/_version.py holds no __version__")
    return match.group(1)


def _metadata(version: str) -> str:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        "Summary: Python client of Rung, the hyperparameter tuning service\n"
        "Requires-Python: >=3.9\n"
        "License: Apache-2.0\n"
        "Provides-Extra: dataframe\n"
        'Requires-Dist: pandas; extra == "dataframe"\n'
    )


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{name},sha256={digest.decode()},{len(data)}\n"


def _write_wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    version = _version()
    dist_info = f"{NAME}-{version}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = _metadata(version).encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: rung _build\n"
        f"Root-Is-Purelib: true\nTag: {TAG}\n"
    ).encode()
    record_name = f"{dist_info}/RECORD"
    record = "".join(_record_line(n, d) for n, d in sorted(files.items()))
    record += f"{record_name},,\n"
    files[record_name] = record.encode()
    wheel_name = f"{NAME}-{version}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return wheel_name


def _package_files() -> dict[str, bytes]:
    files = {}
    for root, dirs, names in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            if n.endswith((".py", ".typed")):
                path = os.path.join(root, n)
                rel = os.path.relpath(path, HERE).replace(os.sep, "/")
                with open(path, "rb") as f:
                    files[rel] = f.read()
    return files


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, {f"_{NAME}_editable.pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = f"{NAME}-{version}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for rel in ["pyproject.toml", "_build.py", "README.md"]:
            if os.path.exists(os.path.join(HERE, rel)):
                tf.add(os.path.join(HERE, rel), f"{base}/{rel}")
        for rel in _package_files():
            tf.add(os.path.join(HERE, rel), f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata(version).encode()
        info.size = len(data)
        import io
        tf.addfile(info, io.BytesIO(data))
    return name
