"""The reference index file: a zip of numpy arrays and JSON metadata, read without pickle.

``meta.json`` (orjson) holds the format, the package version, the settings the features were
built with, the references' URLs and the skip counts; the arrays are ``.npy`` members read with
``allow_pickle=False``; the references' features are one member of concatenated zlib-compressed
JSON records (``references.bin``, indexed by ``offsets.npy``) and the nearest-neighbour graphs
are faiss's own serialisation (``ann-<stage>.faiss``). Every member but ``meta.json`` is stored
uncompressed, so the file is memory-mapped and a record is decoded only when a query compares it.
"""

from __future__ import annotations

import io
import mmap
import struct
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray

from websim_crawler.core.io import atomic_write_bytes
from websim_crawler.errors import InputFormatError

META = "meta.json"
# A meta.json larger than this is refused before it is read (URLs of a million references fit).
MAX_META_BYTES = 512_000_000
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_MAGIC = 0x04034B50


@dataclass
class IndexFile:
    """An opened index file: its metadata and its members as views of the mapped file."""

    path: str
    meta: dict[str, Any]
    members: dict[str, memoryview]
    _mapping: mmap.mmap | None = None

    def array(self, name: str) -> NDArray[Any]:
        """Return a ``.npy`` member as an array (copied out of the file; no pickle)."""
        view = self.member(name)
        try:
            return np.lib.format.read_array(io.BytesIO(view), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise InputFormatError(f"{self.path}: {name} is not a numpy array: {exc}") from exc

    def member(self, name: str) -> memoryview:
        """Return the bytes of a member; ``InputFormatError`` when the file has none."""
        view = self.members.get(name)
        if view is None:
            raise InputFormatError(f"{self.path} has no {name}: not a websim index (rebuild it)")
        return view


def write_index_file(
    path: str | Path, meta: Mapping[str, Any], members: Mapping[str, bytes | NDArray[Any]]
) -> None:
    """Write the index atomically: ``meta.json`` deflated, every other member stored."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(META, orjson.dumps(meta), compress_type=zipfile.ZIP_DEFLATED)
        for name, data in members.items():
            if isinstance(data, np.ndarray) and name.endswith(".npy"):
                array_bytes = io.BytesIO()
                np.lib.format.write_array(array_bytes, data, allow_pickle=False)
                data = array_bytes.getvalue()
            archive.writestr(name, bytes(data), compress_type=zipfile.ZIP_STORED)
    atomic_write_bytes(path, buffer.getvalue())


def open_index_file(path: str | Path) -> IndexFile:
    """Open an index file; ``InputFormatError`` (one line) when it is not one or is damaged."""
    name = str(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise InputFormatError(f"cannot read the index {name}: {exc.strerror or exc}") from exc
    with handle:
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError) as exc:
            raise InputFormatError(f"{name} is not a websim index (not a zip file)") from exc
        with archive:
            try:
                info = archive.getinfo(META)
            except KeyError as exc:
                raise InputFormatError(f"{name} is not a websim index (no {META})") from exc
            if info.file_size > MAX_META_BYTES:
                raise InputFormatError(f"{name}: {META} is over {MAX_META_BYTES:,} bytes")
            try:
                meta = orjson.loads(archive.read(META))
            except (orjson.JSONDecodeError, zipfile.BadZipFile, OSError, EOFError) as exc:
                raise InputFormatError(f"{name}: {META} is not readable JSON: {exc}") from exc
            if not isinstance(meta, dict):
                raise InputFormatError(f"{name}: {META} is not a JSON object")
            stored = [
                item
                for item in archive.infolist()
                if item.filename != META and item.compress_type == zipfile.ZIP_STORED
            ]
        size = handle.seek(0, io.SEEK_END)
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    members: dict[str, memoryview] = {}
    if mapping is not None:
        whole = memoryview(mapping)
        for item in stored:
            start = _data_start(whole, item, name)
            members[item.filename] = whole[start : start + item.file_size]
    return IndexFile(name, meta, members, mapping)


def _data_start(whole: memoryview, item: zipfile.ZipInfo, name: str) -> int:
    """Return where a stored member's bytes begin (after its local header), checked in bounds."""
    offset = item.header_offset
    if offset + _LOCAL_HEADER.size > len(whole):
        raise InputFormatError(f"{name}: member {item.filename} lies outside the file")
    fields = _LOCAL_HEADER.unpack_from(whole, offset)
    if fields[0] != _LOCAL_MAGIC:
        raise InputFormatError(f"{name}: member {item.filename} has no local header")
    start = offset + _LOCAL_HEADER.size + fields[9] + fields[10]
    if start + item.file_size > len(whole):
        raise InputFormatError(f"{name}: member {item.filename} is cut short")
    return start
