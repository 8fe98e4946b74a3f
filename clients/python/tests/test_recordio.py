import os
import shutil
import struct

import pytest

from conftest import HERE
from paramserver import recordio
from paramserver.client import pb  # noqa: F401
from paramserver.v1 import example_pb2

FIX = os.path.join(HERE, "fixtures")


def examples(name):
    return [example_pb2.Example.FromString(r) for r in recordio.read_records(os.path.join(FIX, name))]


def test_java_written_files_decode_alike_with_every_compressor():
    none, snappy, gz = (examples("dense-%s.recordio" % c) for c in ("none", "snappy", "gzip"))
    assert none == snappy == gz and len(none) == 12
    assert all(len(e.dense) == 4 and 0 <= e.label < 3 for e in none)
    assert recordio.chunks(os.path.join(FIX, "dense-none.recordio"))[2][2] == 2


def test_sparse_snappy_file_with_copies_decodes():
    ex = examples("sparse-snappy.recordio")
    assert len(ex) == 12 and all(len(e.sparse_ids) == 6 for e in ex)


def test_read_chunk_by_offset_and_length_as_the_master_hands_them_out():
    path = os.path.join(FIX, "dense-snappy.recordio")
    offset, length, count = recordio.chunks(path)[1]
    assert len(recordio.read_chunk(path, offset, length)) == count == 5
    with pytest.raises(recordio.CorruptRecordError, match="the task says"):
        recordio.read_chunk(path, offset, length + 1)


def test_crc_error_names_file_and_offset(tmp_path):
    path = str(tmp_path / "bad.recordio")
    shutil.copy(os.path.join(FIX, "dense-gzip.recordio"), path)
    offset = recordio.chunks(path)[1][0]
    with open(path, "r+b") as f:
        f.seek(offset + 25)
        b = f.read(1)
        f.seek(offset + 25)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(recordio.CorruptRecordError) as e:
        list(recordio.read_records(path))
    assert e.value.path == path and e.value.offset == offset
    assert "%s at offset %d: CRC-32 mismatch" % (path, offset) in str(e.value)


def test_bad_magic_names_file_and_offset(tmp_path):
    path = str(tmp_path / "x.recordio")
    with open(path, "wb") as f:
        f.write(b"not a recordio file at all")
    with pytest.raises(recordio.CorruptRecordError, match="x.recordio at offset 0: bad magic"):
        recordio.read_chunk(path, 0)


def test_snappy_block_copies_including_overlapping_and_4_byte_offsets():
    # "abcd" literal, copy-1 len 8 off 4 (overlapping), copy-2 len 3 off 12, copy-4 len 2 off 1
    block = bytes([17, 3 << 2]) + b"abcd" + bytes([1 | (4 << 2), 4]) + bytes([2 | (2 << 2), 12, 0]) \
        + bytes([3 | (1 << 2), 1, 0, 0, 0])
    assert recordio.snappy_uncompress(block) == b"abcd" + b"abcdabcd" + b"abc" + b"cc"


def test_snappy_framed_rejects_a_wrong_stream_identifier():
    with pytest.raises(ValueError, match="identifier"):
        recordio.snappy_framed_decompress(b"\xff\x06\x00\x00sNaPpX")
    assert recordio.snappy_framed_decompress(b"\xff\x06\x00\x00sNaPpY" + b"\x01\x07\x00\x00" + b"\0\0\0\0abc") == b"abc"


def test_header_is_five_little_endian_uint32():
    with open(os.path.join(FIX, "dense-none.recordio"), "rb") as f:
        magic, _, comp, size, count = struct.unpack("<5I", f.read(20))
    assert (magic, comp, count) == (0x01020304, 0, 5)


@pytest.mark.parametrize("compressor", [recordio.NONE, recordio.GZIP])
def test_the_writer_makes_files_the_reader_walks_chunk_by_chunk(tmp_path, compressor):
    path = str(tmp_path / "w.recordio")
    records = [example_pb2.Example(sparse_ids=[i, i + 1], label=i % 2).SerializeToString() for i in range(25)]
    with recordio.Writer(path, compressor, records_per_chunk=10) as w:
        for r in records:
            w.write(r)
    assert (w.records, w.chunks) == (25, 3)
    assert [n for _, _, n in recordio.chunks(path)] == [10, 10, 5]
    assert list(recordio.read_records(path)) == records
    with open(path, "rb") as f:
        assert recordio.HEADER.unpack(f.read(20))[2] == compressor
    with pytest.raises(ValueError, match="compressor must be"):
        recordio.Writer(str(tmp_path / "x"), 1)
