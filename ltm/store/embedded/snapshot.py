"""The ``index.faiss`` / ``context.faiss`` files: the one module that knows their two on-disk layouts.

Both are written atomically (:mod:`ltm.store.embedded.atomic`: temp file, fsync, rename) and both carry the seqs they
cover (``last_seq``, ``last_tseq``) and their ghosts in a JSON header, so the store replays only what
happened after the snapshot. A missing, truncated, foreign or corrupt file reads as None (the store then
rebuilds from SQLite without re-embedding).

**Flat** (``kind == "flat"``): ``LTMFLAT16\n``, ``<u32 header length>``, the JSON header (with a CRC32 of the
payload), then the ids (``<i8``) and the vectors as float16, the precision SQLite stores them in (and a large
flat index holds them in: :func:`flat_index`), so nothing is lost. It is read into RAM (a flat namespace holds at
most ``hnsw_threshold`` vectors).

**HNSW**: FAISS's own serialisation first (``IndexHNSWSQ``: the vectors as 8-bit codes, a quarter of the
float32 ``IndexHNSWFlat`` that older snapshots hold; both read), then the JSON header, then a
fixed-size footer ``<u64 header length><u32 header crc32><magic>``. Putting FAISS's bytes at offset 0 lets
:func:`read` hand the file to ``faiss.read_index`` directly, memory-mapped (``IO_FLAG_MMAP_IFC``) when it is
large: opening a 1M-message namespace then costs page-table work instead of reading, copying and deserialising
~0.7 GB.
:func:`write` streams ``faiss.write_index`` to a temp file (no in-RAM copy of the payload), then appends the
header. Integrity is checked in two parts, so a big snapshot opens fast without trusting damaged bytes:

- *meta*: everything but the vectors' codes (FAISS headers, the HNSW graph, the id map). A corrupt
  graph could crash FAISS, so this part is always CRC-checked before the index is used;
- *bulk*: the codes themselves (~60% of the file with 8-bit codes, ~85% with floats). A flipped bit there
  can only change a score, so when it is large it is checked by a background thread, which marks the
  snapshot damaged on a mismatch (the store then rebuilds from SQLite, as for any damaged snapshot).
"""

from __future__ import annotations

import json
import os
import struct
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import faiss
import numpy as np

from ltm.store.embedded.atomic import atomic_write, replacing
from ltm.store.records import decode

__all__ = ["HALF_FROM", "INLINE_VERIFY_MAX", "Loaded", "flat_index", "read", "write"]

_MAGIC = b"LTMFAISS2\n"  # the HNSW footer's
_FLAT_MAGIC = b"LTMFLAT16\n"  # the flat header's
_FOOTER = struct.Struct(f"<QI{len(_MAGIC)}s")
_faiss: Any = faiss  # its bundled stubs miss PyCallbackIOReader
_CHUNK = 16 << 20
INLINE_VERIFY_MAX = 64 << 20  # payloads up to this size are read into RAM and fully checked before use


class Loaded:
    """A snapshot just read: its header, the FAISS index, and how its bulk check is going.

    ``mapped`` indexes are read-only views of the file (FAISS aborts on any write to them): call
    :meth:`owned` for a writable in-RAM copy, read from the same file even if it was replaced since.
    """

    def __init__(self, header: dict[str, Any], index: Any, source: IO[bytes] | None) -> None:
        self.header, self.index, self._source = header, index, source
        self.damaged = False  # set by the background check when the bulk CRC fails
        self._checker: threading.Thread | None = None

    @property
    def mapped(self) -> bool:
        return self._source is not None

    def owned(self) -> Any:
        """A writable in-RAM copy of the index (the index itself when it is not mapped)."""
        if self._source is None:
            return self.index
        source = self._source
        source.seek(0)
        index = faiss.read_index(_faiss.PyCallbackIOReader(source.read))
        return index

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the background bulk check; True when it is done (or there was none)."""
        if self._checker is not None:
            self._checker.join(timeout)
            return not self._checker.is_alive()
        return True


def write(path: Path, index: Any, header: dict[str, Any]) -> None:
    """Replace ``path`` atomically with ``index`` (an ``IndexIDMap2``) and ``header`` (JSON-able, with
    ``kind``): the flat layout for a flat index, FAISS's own bytes for HNSW."""
    if header.get("kind") == "flat":
        _write_flat(path, index, header)
        return
    with replacing(path) as tmp:
        faiss.write_index(index, str(tmp))
        payload_len = tmp.stat().st_size
        with open(tmp, "r+b") as handle:
            bulk = _bulk_range(handle, payload_len, int(index.ntotal), _code_size(index))
            meta_crc = _crc(handle, [(0, bulk[0]), (bulk[1], payload_len)])
            bulk_crc = _crc(handle, [bulk])
            data = json.dumps(
                header | {"payload_len": payload_len, "bulk": list(bulk), "meta_crc": meta_crc, "bulk_crc": bulk_crc}
            ).encode()
            handle.seek(payload_len)
            handle.write(data + _FOOTER.pack(len(data), zlib.crc32(data), _MAGIC))


def read(path: Path, inline_max: int = INLINE_VERIFY_MAX) -> Loaded | None:
    """The snapshot at ``path`` in either layout, or None when missing or damaged (see the module docstring).

    An HNSW payload above ``inline_max`` bytes is memory-mapped and its vectors are checked in the background
    (:attr:`Loaded.damaged`)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - kept open by a mapped Loaded
    except FileNotFoundError:
        return None
    if handle.read(len(_FLAT_MAGIC)) == _FLAT_MAGIC:
        with handle:
            return _read_flat(handle.read())
    keep = False
    try:
        header = _header(handle)
        if header is None:
            return None
        payload_len, bulk = int(header["payload_len"]), (int(header["bulk"][0]), int(header["bulk"][1]))
        if _crc(handle, [(0, bulk[0]), (bulk[1], payload_len)]) != header["meta_crc"]:
            return None
        large = payload_len > inline_max
        if not large and _crc(handle, [bulk]) != header["bulk_crc"]:
            return None
        mmap = getattr(faiss, "IO_FLAG_MMAP_IFC", None)  # faiss >= 1.8; 1.7 (MetaGPT's pin) reads it whole
        index = faiss.read_index(str(path), mmap) if large and mmap is not None else faiss.read_index(str(path))
        loaded = Loaded(header, index, handle if large else None)
        keep = large
        if large:
            loaded._checker = _check_later(bulk, int(header["bulk_crc"]), loaded)
        return loaded
    except (ValueError, KeyError, TypeError, IndexError, struct.error, RuntimeError, OSError):
        return None
    finally:
        if not keep:
            handle.close()


HALF_FROM = 4096  # a flat index of this many vectors or more holds float16 copies (flat_index)


def flat_index(dim: int, vectors: int = 0) -> Any:
    """The exact index of a flat namespace (and of a graph's fresh segment) that is to hold ``vectors`` vectors:
    float32 (``IndexFlatIP``) below :data:`HALF_FROM`, float16 copies (``IndexScalarQuantizer``, ``QT_fp16``: the
    precision SQLite and this file keep them in) from it. A query's scan of the copies reads half the bytes, which
    is what it costs once the vectors are out of the CPU's cache, as they are after the model has embedded the
    query: a search's dense candidates at 10,000 vectors take 0.27 against 0.43 ms (docs/SEARCH_SPEED.md); the
    index takes half the RAM. Below the line the scan is a few microseconds either way, and scaling the copies'
    products into exact cosines (:class:`~ltm.store.embedded.vectors.VectorIndex`) would cost more than it saves."""
    if vectors >= HALF_FROM:
        return faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    return faiss.IndexFlatIP(dim)


def _write_flat(path: Path, index: Any, header: dict[str, Any]) -> None:
    ids = faiss.vector_to_array(index.id_map).astype("<i8")
    vectors = index.index.reconstruct_n(0, int(index.ntotal)).astype("<f2")
    payload = ids.tobytes() + vectors.tobytes()
    meta = json.dumps({**header, "payload_len": len(payload), "crc32": zlib.crc32(payload)}).encode()
    atomic_write(path, _FLAT_MAGIC + struct.pack("<I", len(meta)) + meta + payload)


def _read_flat(data: bytes) -> Loaded | None:
    """A flat snapshot (what follows the magic): whole-payload CRC, float16 vectors, read into RAM."""
    try:
        (size,) = struct.unpack_from("<I", data, 0)
        header: dict[str, Any] = json.loads(data[4 : 4 + size])
        payload = data[4 + size :]
        if len(payload) != header["payload_len"] or zlib.crc32(payload) != header["crc32"] or header["kind"] != "flat":
            return None
        dim = int(header["dim"])
        n, rest = divmod(len(payload), 8 + 2 * dim)
        if rest or dim < 1:
            return None
        ids = np.frombuffer(payload, dtype="<i8", count=n)
        vectors = np.frombuffer(payload, dtype="<f2", offset=8 * n).reshape(n, dim)
        index = faiss.IndexIDMap2(flat_index(dim, n))
        if n >= HALF_FROM:  # float16 in, float16 held: the same values as before saving
            index.add_with_ids(vectors.astype(np.float32), ids.astype(np.int64))
        elif n:  # decode(f16(decode(x))) == decode(x) (checked on 20k vectors): the same values as before saving
            index.add_with_ids(decode(vectors), ids.astype(np.int64))
    except (ValueError, KeyError, TypeError, struct.error, RuntimeError):
        return None
    return Loaded(header, index, None)


def _header(handle: IO[bytes]) -> dict[str, Any] | None:
    size = os.fstat(handle.fileno()).st_size
    if size < _FOOTER.size:
        return None
    handle.seek(size - _FOOTER.size)
    length, crc, magic = _FOOTER.unpack(handle.read(_FOOTER.size))
    if magic != _MAGIC or length > size - _FOOTER.size:
        return None
    handle.seek(size - _FOOTER.size - length)
    data = handle.read(length)
    if zlib.crc32(data) != crc:
        return None
    header: dict[str, Any] = json.loads(data)
    if int(header["payload_len"]) + length + _FOOTER.size != size:
        return None
    return header


def _code_size(index: Any) -> int:
    """Bytes per stored vector in an ``IndexIDMap2`` over HNSW: 4 * dim for float vectors (``IndexHNSWFlat``,
    older snapshots), dim for 8-bit codes (``IndexHNSWSQ``)."""
    inner = faiss.downcast_index(index.index)
    storage = getattr(inner, "storage", None)
    return int(storage.sa_code_size()) if storage is not None else 4 * int(index.d)


def _bulk_range(handle: IO[bytes], payload_len: int, ntotal: int, code_size: int) -> tuple[int, int]:
    """Where the vectors' codes lie in an ``IndexIDMap2`` over a flat or HNSW index: FAISS writes the storage
    index's codes (a u64 count, then the bytes) right before the id map (a u64 count, then int64s), which ends
    the file. The codes' count is of floats for float vectors, of bytes for 8-bit codes. Checked against those
    length prefixes; (0, 0) when they do not match."""
    end = payload_len - 8 - 8 * ntotal
    start = end - code_size * ntotal
    if ntotal == 0 or start < 8:
        return 0, 0
    handle.seek(start - 8)
    (codes_len,) = struct.unpack("<Q", handle.read(8))
    handle.seek(end)
    (ids_len,) = struct.unpack("<Q", handle.read(8))
    nbytes = code_size * ntotal
    return (start, end) if codes_len in (nbytes, nbytes // 4) and ids_len == ntotal else (0, 0)


def _crc(handle: IO[bytes], ranges: list[tuple[int, int]], stop: Callable[[], bool] | None = None) -> int:
    """CRC32 of the byte ranges, read positionally (``preadv``: no shared file offset, so a background check
    and :meth:`Loaded.owned` can use one handle). -1 when ``stop()`` turned true midway."""
    crc = 0
    view = memoryview(bytearray(_CHUNK))
    fd = handle.fileno()
    for start, end in ranges:
        at = start
        while at < end:
            if stop is not None and stop():
                return -1
            got = os.preadv(fd, [view[: min(_CHUNK, end - at)]], at)
            if not got:
                raise ValueError("snapshot shorter than its header says")
            crc = zlib.crc32(view[:got], crc)
            at += got
    return crc


def _check_later(bulk: tuple[int, int], expected: int, loaded: Loaded) -> threading.Thread:
    """Check the bulk CRC on the loaded file (the very inode that is mapped) in a daemon thread."""
    source = loaded._source
    assert source is not None

    def run() -> None:
        def stopped() -> bool:  # closed: the result no longer matters
            return loaded._source is None

        try:
            if _crc(source, [bulk], stop=stopped) not in (expected, -1):
                loaded.damaged = True
        except (OSError, ValueError):
            loaded.damaged = not stopped()

    thread = threading.Thread(target=run, name="ltm-snapshot-check", daemon=True)
    thread.start()
    return thread
