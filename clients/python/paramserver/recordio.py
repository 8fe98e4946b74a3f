"""RecordIO reader, byte-compatible with the Java recordio module (docs/design.md §7): chunks of a
20-byte header (five little-endian uint32: magic 0x01020304, CRC-32 of the stored payload,
compressor 0 none / 1 Snappy framing format / 2 gzip, stored payload size, record count) and a
payload of (uint32 LE length, bytes) records."""

from __future__ import annotations

import gzip
import importlib
import io
import os
import struct
import zlib
from typing import IO, Any, Iterator, List, Optional, Tuple

from . import s3

MAGIC = 0x01020304
HEADER = struct.Struct("<5I")
MAX_RECORD_BYTES = 32 << 20
_snappy: Any
try:  # python-snappy (Debian's python3-snappy) when present; else the decompressor below
    _snappy = importlib.import_module("snappy")
except ImportError:
    _snappy = None


class CorruptRecordError(ValueError):
    """A RecordIO file that is not what it should be; the message names the file and offset."""

    def __init__(self, path: str, offset: int, what: str) -> None:
        super().__init__("%s at offset %d: %s" % (path, offset, what))
        self.path, self.offset = path, offset


def _read(path: str, offset: int, n: int) -> bytes:
    """Bytes [offset, offset + n) of a local file or an s3:// object (a ranged read); fewer at its end."""
    if s3.is_s3(path):
        return s3.read_range(path, offset, n)
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def _size(path: str) -> int:
    return s3.size(path) if s3.is_s3(path) else os.path.getsize(path)


def _header(head: bytes, path: str, offset: int, eof_ok: bool = False) -> Optional[Tuple[int, int, int, int]]:
    if not head and eof_ok:
        return None
    if len(head) < HEADER.size:
        raise CorruptRecordError(path, offset, "truncated chunk header (%d bytes)" % len(head))
    magic, crc, comp, size, count = HEADER.unpack(head)
    assert isinstance(magic, int)
    if magic != MAGIC:
        raise CorruptRecordError(path, offset, "bad magic 0x%08x (expected 0x%08x)" % (magic, MAGIC))
    return crc, comp, size, count


def read_chunk(path: str, offset: int, length: Optional[int] = None) -> List[bytes]:
    """The records (bytes) of the chunk whose header is at `offset` of `path` (a local file or an
    s3:// object: docs/how-to/python.md); `length` (header included, as the master's Chunk.length) is
    checked when given, and the chunk is then read in one request."""
    blob = _read(path, offset, length if length is not None and length >= HEADER.size else HEADER.size)
    header = _header(blob[:HEADER.size], path, offset)
    assert header is not None
    crc, comp, size, count = header
    if length is not None and length != HEADER.size + size:
        raise CorruptRecordError(path, offset, "chunk is %d bytes, the task says %d" % (HEADER.size + size, length))
    stored = blob[HEADER.size:] if length is not None else _read(path, offset + HEADER.size, size)
    if len(stored) < size:
        raise CorruptRecordError(path, offset, "truncated payload (%d of %d bytes)" % (len(stored), size))
    if zlib.crc32(stored) != crc:
        raise CorruptRecordError(path, offset, "CRC-32 mismatch (stored 0x%08x, computed 0x%08x)" % (crc, zlib.crc32(stored)))
    try:
        if comp == 0:
            data = stored
        elif comp == 1:
            data = snappy_framed_decompress(stored)
        elif comp == 2:
            data = gzip.decompress(stored)
        else:
            raise ValueError("unknown compressor %d (expected 0 none, 1 snappy or 2 gzip)" % comp)
    except (ValueError, IndexError, OSError, EOFError, zlib.error) as e:
        raise CorruptRecordError(path, offset, "payload: %s" % e) from e
    records: List[bytes] = []
    i, mv = 0, memoryview(data)
    for _ in range(count):
        if i + 4 > len(data):
            raise CorruptRecordError(path, offset, "payload ends inside record %d of %d" % (len(records), count))
        (n,) = struct.unpack_from("<I", data, i)
        if n > MAX_RECORD_BYTES or i + 4 + n > len(data):
            raise CorruptRecordError(path, offset, "record %d of %d overruns the payload" % (len(records), count))
        records.append(bytes(mv[i + 4:i + 4 + n]))
        i += 4 + n
    if i != len(data):
        raise CorruptRecordError(path, offset, "%d bytes after the last of %d records" % (len(data) - i, count))
    return records


def chunks(path: str) -> List[Tuple[int, int, int]]:
    """(offset, length, records) of every chunk of `path`, walking the headers."""
    out: List[Tuple[int, int, int]] = []
    offset = 0
    if s3.is_s3(path):  # a ranged read per header
        end = _size(path)
        while offset < end:
            h = _header(_read(path, offset, HEADER.size), path, offset)
            assert h is not None
            out.append((offset, HEADER.size + h[2], h[3]))
            offset += HEADER.size + h[2]
        return out
    with open(path, "rb") as f:
        while True:
            f.seek(offset)
            h = _header(f.read(HEADER.size), path, offset, eof_ok=True)
            if h is None:
                return out
            _, _, size, count = h
            out.append((offset, HEADER.size + size, count))
            offset += HEADER.size + size


def read_records(path: str) -> Iterator[bytes]:
    """Every record of a RecordIO file, in order."""
    for offset, length, _ in chunks(path):
        yield from read_chunk(path, offset, length)


def snappy_framed_decompress(data: bytes) -> bytes:
    """Snappy framing format (stream identifier "sNaPpY", chunks 0x00 compressed / 0x01
    uncompressed, 0x80-0xfe skippable). The per-chunk masked CRC-32C is not checked here: the
    RecordIO header's CRC-32 already covers the stored bytes."""
    out, i = bytearray(), 0
    while i < len(data):
        kind, n = data[i], int.from_bytes(data[i + 1:i + 4], "little")
        body = data[i + 4:i + 4 + n]
        if len(body) < n:
            raise ValueError("truncated snappy frame")
        if kind == 0xFF:
            if body != b"sNaPpY":
                raise ValueError("bad snappy stream identifier")
        elif kind == 0x00:
            out += _snappy.uncompress(body[4:]) if _snappy else snappy_uncompress(body[4:])
        elif kind == 0x01:
            out += body[4:]
        elif kind < 0x80:
            raise ValueError("reserved snappy frame type 0x%02x" % kind)
        i += 4 + n
    return bytes(out)


def snappy_uncompress(src: bytes) -> bytes:
    """Raw Snappy block decompression (pure Python)."""
    want, i, shift = 0, 0, 0
    while True:  # preamble: uncompressed length, varint
        b = src[i]
        i += 1
        want |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    out = bytearray()
    while i < len(src):
        tag = src[i]
        i += 1
        kind = tag & 3
        if kind == 0:  # literal
            n = tag >> 2
            if n >= 60:
                k = n - 59
                n = int.from_bytes(src[i:i + k], "little")
                i += k
            out += src[i:i + n + 1]
            i += n + 1
            continue
        if kind == 1:
            length, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | src[i]
            i += 1
        else:
            k = 2 if kind == 2 else 4
            length, offset = (tag >> 2) + 1, int.from_bytes(src[i:i + k], "little")
            i += k
        start = len(out) - offset
        if offset <= 0 or start < 0:
            raise ValueError("snappy copy offset %d out of range" % offset)
        if offset >= length:
            out += out[start:start + length]
        else:  # overlapping copy: the last `offset` bytes repeat
            out += (out[start:] * (length // offset + 1))[:length]
    if len(out) != want:
        raise ValueError("snappy block decompressed to %d bytes, expected %d" % (len(out), want))
    return bytes(out)



NONE, GZIP = 0, 2  # compressors the writer offers (Snappy is read, not written: no pure-Python encoder)


class Writer:
    """Writes a RecordIO file the Java reader and the master read: chunks of `records_per_chunk`
    records, each compressed with NONE or GZIP, the header's CRC-32 over the stored payload.

        with recordio.Writer("train-00000.recordio") as w:
            for example in examples:
                w.write(example.SerializeToString())

    An s3://bucket/key path is written in memory and uploaded by close() (one PUT, up to 5 GB)."""

    def __init__(self, path: str, compressor: int = NONE, records_per_chunk: int = 1000) -> None:
        if compressor not in (NONE, GZIP):
            raise ValueError("compressor must be recordio.NONE or recordio.GZIP, got %r" % compressor)
        if records_per_chunk <= 0:
            raise ValueError("records_per_chunk must be positive, got %d" % records_per_chunk)
        self.path, self.compressor, self.records_per_chunk = path, compressor, records_per_chunk
        self.records = self.chunks = 0
        self._pending: List[bytes] = []
        self._file: Optional[IO[bytes]] = io.BytesIO() if s3.is_s3(path) else open(path, "wb")

    def write(self, record: bytes) -> None:
        if self._file is None:
            raise ValueError("%s: write() after close()" % self.path)
        if len(record) > MAX_RECORD_BYTES:
            raise ValueError("%s: a record of %d bytes is over the %d-byte limit" % (self.path, len(record), MAX_RECORD_BYTES))
        self._pending.append(bytes(record))
        if len(self._pending) >= self.records_per_chunk:
            self._flush()

    def _flush(self) -> None:
        if not self._pending or self._file is None:
            return
        payload = b"".join(struct.pack("<I", len(r)) + r for r in self._pending)
        stored = gzip.compress(payload) if self.compressor == GZIP else payload
        self._file.write(HEADER.pack(MAGIC, zlib.crc32(stored), self.compressor, len(stored), len(self._pending)))
        self._file.write(stored)
        self.records += len(self._pending)
        self.chunks += 1
        self._pending = []

    def close(self) -> None:
        if self._file is not None:
            self._flush()
            if isinstance(self._file, io.BytesIO):
                s3.put_object(self.path, self._file.getvalue())
            self._file.close()
            self._file = None

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
