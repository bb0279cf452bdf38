"""The bulk writers' output file (gpu_text.outputs.direct_file): exactly the bytes written, whether
it goes past the page cache, through it, or falls back from one to the other."""
import errno
import os

import numpy as np
import pytest

import gpu_text.outputs.direct_file as direct_file
from gpu_text.outputs.direct_file import BLOCK, DIRECT_VAR, DirectFile


def write_pieces(path, pieces, buffer_bytes=2 * BLOCK) -> DirectFile:
    out = DirectFile(str(path), buffer_bytes=buffer_bytes)
    for piece in pieces:
        assert out.write(piece) == memoryview(piece).nbytes
    assert out.tell() == sum(memoryview(p).nbytes for p in pieces)
    out.close()
    out.close()  # a second close does nothing
    return out


@pytest.mark.parametrize("direct", ["1", "0"])
def test_the_file_holds_exactly_the_bytes_written(tmp_path, monkeypatch, direct):
    monkeypatch.setenv(DIRECT_VAR, direct)
    rng = np.random.default_rng(int(direct))
    for trial in range(30):
        sizes = rng.choice([0, 1, 7, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 20000], int(rng.integers(0, 8)))
        pieces = [rng.integers(0, 256, int(n), dtype=np.uint8).tobytes() for n in sizes]
        pieces.append(np.arange(int(rng.integers(0, 5000)), dtype=np.uint16))  # a typed array: its bytes
        path = tmp_path / f"f{trial}.bin"
        out = write_pieces(path, pieces)
        assert path.read_bytes() == b"".join(memoryview(p).cast("B").tobytes() for p in pieces)
        if direct == "0":
            assert not out.direct


def test_writes_fall_back_to_the_page_cache_when_direct_writes_are_refused(tmp_path, monkeypatch):
    real_write = os.write
    refused = []

    def refusing_write(fd, data):
        if direct_file.os.O_DIRECT and os.get_blocking(fd) and not refused:  # the first write only
            refused.append(fd)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(fd, data)

    monkeypatch.setattr(direct_file.os, "write", refusing_write)
    pieces = [bytes(range(256)) * 100, b"tail"]
    out = write_pieces(tmp_path / "f.bin", pieces, buffer_bytes=BLOCK)
    assert refused and not out.direct
    assert (tmp_path / "f.bin").read_bytes() == b"".join(pieces)


def test_a_bad_buffer_size_is_refused(tmp_path):
    with pytest.raises(ValueError):
        DirectFile(str(tmp_path / "f"), buffer_bytes=BLOCK + 1)


def test_a_job_knows_its_files_digests_without_reading_them_back(tmp_path):
    from gpu_text.jobs.manifest import file_sha256
    from gpu_text.outputs.direct_file import digests_kept, known_sha256

    data = np.arange(100_000, dtype=np.uint16)
    with digests_kept():
        out = DirectFile(str(tmp_path / "a.tmp"))
        out.write(data)
        out.close()
    unhashed = write_pieces(tmp_path / "b.bin", [b"x"])  # outside the block: not hashed
    assert unhashed.digest is None and known_sha256(str(tmp_path / "b.bin")) is None
    os.rename(tmp_path / "a.tmp", tmp_path / "a.bin")  # a job renames its outputs into place
    import hashlib
    expected = hashlib.sha256(data.tobytes()).hexdigest()
    assert known_sha256(str(tmp_path / "a.bin")) == expected == file_sha256(str(tmp_path / "a.bin"))
    with open(tmp_path / "a.bin", "r+b") as changed:  # changed since: read and hashed again
        changed.write(b"zz")
    assert known_sha256(str(tmp_path / "a.bin")) is None
    assert file_sha256(str(tmp_path / "a.bin")) != expected



@pytest.mark.parametrize("direct", ["1", "0"])
def test_a_stream_read_into_the_buffer_is_the_bytes_written(tmp_path, monkeypatch, direct):
    # write_from reads a scratch file into the buffer, across its flushes and after an odd byte;
    # hashed as written, like write's bytes
    import hashlib
    import io

    from gpu_text.outputs.direct_file import digests_kept, known_sha256

    monkeypatch.setenv(DIRECT_VAR, direct)
    scratch = bytes(range(256)) * 40 + b"end"
    with digests_kept():
        out = DirectFile(str(tmp_path / "f.bin"), buffer_bytes=2 * BLOCK)
        out.write(b"x")
        assert out.write_from(io.BytesIO(scratch)) == len(scratch)
        out.write(b"yz")
        assert out.tell() == len(scratch) + 3
        out.close()
    expected = b"x" + scratch + b"yz"
    assert (tmp_path / "f.bin").read_bytes() == expected
    assert known_sha256(str(tmp_path / "f.bin")) == hashlib.sha256(expected).hexdigest()


@pytest.mark.parametrize("direct", ["1", "0"])
def test_bytes_put_into_the_buffers_space_are_the_bytes_written(tmp_path, monkeypatch, direct):
    # space()/commit() mixed with write(), across flushes, with the digest of a job
    import hashlib

    monkeypatch.setenv(DIRECT_VAR, direct)
    rng = np.random.default_rng(3)
    path = tmp_path / "s.bin"
    expected = bytearray()
    with direct_file.digests_kept():
        out = DirectFile(str(path), buffer_bytes=2 * BLOCK)
        for step in range(60):
            if step % 3 == 0:
                piece = rng.integers(0, 256, int(rng.integers(0, 3 * BLOCK)), dtype=np.uint8).tobytes()
                out.write(piece)
                expected += piece
                continue
            room = out.space()
            assert room.size >= 1
            size = int(rng.integers(0, room.size + 1))
            room[:size] = rng.integers(0, 256, size, dtype=np.uint8)
            expected += room[:size].tobytes()
            out.commit(size)
        del room  # no view of the buffer may outlive the file: it closes with it
        with pytest.raises(ValueError, match="free"):
            out.commit(out.space().size + 1)
        assert out.tell() == len(expected)
        out.close()
    assert path.read_bytes() == bytes(expected)
    assert direct_file.known_sha256(str(path)) == hashlib.sha256(expected).hexdigest()
