"""TensorBoard event files, written without TensorFlow, TensorBoard or protobuf.

An event file is a sequence of TFRecords, each framing one serialized `tensorflow.Event` protobuf:

    uint64 length (little endian) | uint32 masked_crc32c(length bytes) | data | uint32 masked_crc32c(data)

The first event holds `file_version = "brain.Event:2"`; each later one a wall time, a step and a
Summary of scalar values. Only the few protobuf fields needed are encoded, by hand:

    Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
    Summary { repeated Value value = 1; }
    Value   { string tag = 1; float simple_value = 2; }
"""
from __future__ import annotations

import math
import os
import socket
import struct
import threading
import time
from itertools import count

__all__ = ["crc32c", "masked_crc32c", "EventFileWriter", "encode_scalar_event", "encode_file_version_event",
           "frame_record"]

# ---- CRC-32C (Castagnoli), as TFRecord uses: reflected polynomial 0x82F63B78, init and xor-out ~0 ----


def _make_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """The CRC-32C of `data` (continuing from `crc`, the CRC of what came before)."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: rotated right by 15 bits plus a constant, so that a CRC stored inside
    the data it covers does not make the CRC of the whole trivial."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_record(data: bytes) -> bytes:
    """One TFRecord around `data`."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


# ---- the protobuf wire format, for the fields above ----------------------------------------------

def _varint(n: int) -> bytes:
    n &= 0xFFFFFFFFFFFFFFFF  # int64: a negative value is its 64-bit two's complement (10 bytes)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes_field(number: int, payload: bytes) -> bytes:  # wire type 2: length-delimited
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _event_head(wall_time: float, step: int) -> bytes:
    head = _varint(1 << 3 | 1) + struct.pack("<d", wall_time)  # wire type 1: 64-bit
    if step:  # proto3 leaves a default (0) field out
        head += _varint(2 << 3 | 0) + _varint(step)
    return head


def encode_file_version_event(wall_time: float) -> bytes:
    return _event_head(wall_time, 0) + _bytes_field(3, b"brain.Event:2")


def encode_scalar_event(wall_time: float, step: int, scalars: dict[str, float]) -> bytes:
    """An Event whose Summary holds one simple_value per tag (stored as float32, as TensorBoard does)."""
    values = b"".join(
        _bytes_field(1, _bytes_field(1, tag.encode()) + _varint(2 << 3 | 5) + _float32(value))
        for tag, value in scalars.items())
    return _event_head(wall_time, step) + _bytes_field(5, values)


def _float32(value: float) -> bytes:
    # struct refuses |x| > 3.4e38 with OverflowError; a diverging loss (1e300) must still be logged,
    # as the float32 cast every TensorBoard writer makes gives it: +-inf.
    try:
        return struct.pack("<f", value)
    except OverflowError:
        return struct.pack("<f", math.copysign(math.inf, value))


# ---- the file ------------------------------------------------------------------------------------

_file_ids = count()


class EventFileWriter:
    """Appends scalar events to a new `events.out.tfevents.<time>.<host>.<pid>.<n>` file in `logdir`
    (the name PyTorch's SummaryWriter uses; TensorBoard reads every such file of a directory)."""

    def __init__(self, logdir, filename_suffix: str = ""):
        os.makedirs(logdir, exist_ok=True)
        now = time.time()
        name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}.{next(_file_ids)}"
        self.path = os.path.join(os.fspath(logdir), name + filename_suffix)
        self._lock = threading.Lock()
        self._file = open(self.path, "wb")
        self._write(encode_file_version_event(now))
        self.flush()

    def add_scalars(self, step: int, scalars: dict[str, float], wall_time: float | None = None) -> None:
        self._write(encode_scalar_event(time.time() if wall_time is None else wall_time, step, scalars))

    def _write(self, event: bytes) -> None:
        with self._lock:
            if self._file is None:
                raise ValueError(f"EventFileWriter: {self.path} is closed")
            self._file.write(frame_record(event))

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
