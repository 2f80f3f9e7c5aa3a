"""TrainingLogger and the TensorBoard event files it writes.

The event files are read back three ways, none sharing code with the writer: a TFRecord + protobuf
reader written here (with a bit-by-bit CRC-32C), Google's protobuf library with the Event messages
declared from their field numbers, and TensorBoard's own EventFileLoader when TensorBoard is
installed (it is not a dependency of rtx)."""
import csv
import glob
import math
import os
import random
import struct
import sys

import numpy as np
import pytest

import rtx
from rtx.monitoring import TrainingLogger
from rtx.monitoring.tfevents import crc32c, masked_crc32c

# ---- an independent reader ----------------------------------------------------------------------


def crc32c_bitwise(data: bytes) -> int:
    """CRC-32C one bit at a time, straight from the definition (reflected polynomial 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    crc = crc32c_bitwise(data)
    return ((crc >> 15 | crc << 17) + 0xA282EAD8) % 2**32


def read_records(path):
    """The payloads of a TFRecord file, checking both CRCs of every record."""
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == masked(header), "bad length crc"
        payload = data[pos + 12:pos + 12 + length]
        assert len(payload) == length, "truncated record"
        assert struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])[0] == masked(payload), "bad data crc"
        out.append(payload)
        pos += 16 + length
    return out


def parse_proto(buf):
    """{field number: [values]} of a protobuf message (varint, 64-bit, length-delimited, 32-bit)."""
    fields, pos = {}, 0

    def varint():
        nonlocal pos
        shift = result = 0
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result

    while pos < len(buf):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n = varint()
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def read_events(path):
    """[(wall_time, step, file_version or None, {tag: value})] with the reader above."""
    events = []
    for record in read_records(path):
        f = parse_proto(record)
        wall = struct.unpack("<d", f[1][0])[0]
        step = f.get(2, [0])[0]
        version = f[3][0].decode() if 3 in f else None
        scalars = {}
        for summary in f.get(5, []):
            for value in parse_proto(summary).get(1, []):
                v = parse_proto(value)
                scalars[v[1][0].decode()] = struct.unpack("<f", v[2][0])[0]
        events.append((wall, step, version, scalars))
    return events


def event_file(logdir):
    (path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
    return path


def read_csv(logdir):
    with open(os.path.join(logdir, "metrics.csv"), newline="") as f:
        return list(csv.DictReader(f))


# ---- CRC -----------------------------------------------------------------------------------------

def test_crc32c_known_vectors():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    # RFC 3720 (iSCSI), appendix B.4
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C


def test_crc32c_matches_the_bitwise_definition_and_continues():
    rng = random.Random(0)
    for n in (1, 7, 64, 1000):
        data = bytes(rng.randrange(256) for _ in range(n))
        assert crc32c(data) == crc32c_bitwise(data)
        assert crc32c(data[n // 2:], crc32c(data[:n // 2])) == crc32c(data)   # streaming continuation
        assert masked_crc32c(data) == masked(data)


# ---- TensorBoard ---------------------------------------------------------------------------------

def log_some(logdir, **kw):
    steps = [0, 1, 2, 10, 2**40]
    with TrainingLogger(logdir, progress=False, **kw) as logger:
        for s in steps:
            logger.log(s, loss=1 / (s + 1), lr=0.1 * 0.5 ** min(s, 60))
        logger.log(7, {"val/loss": 0.25, "val/acc": math.nan})
    return steps


def test_event_file_decodes_with_an_independent_reader(tmp_path):
    steps = log_some(tmp_path)
    events = read_events(event_file(tmp_path))
    assert events[0][2] == "brain.Event:2" and events[0][3] == {}
    assert [e[1] for e in events[1:]] == steps + [7]
    for (_, _step, version, scalars), s in zip(events[1:], steps):
        assert version is None
        assert scalars == {"loss": np.float32(1 / (s + 1)), "lr": np.float32(0.1 * 0.5 ** min(s, 60))}
    last = events[-1][3]
    assert last["val/loss"] == 0.25 and math.isnan(last["val/acc"])
    walls = [e[0] for e in events]
    assert walls == sorted(walls) and abs(walls[-1] - __import__("time").time()) < 60


def event_class():
    """tensorflow.Event, declared here from its field numbers for Google's protobuf runtime."""
    pb = pytest.importorskip("google.protobuf")
    del pb
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="rtx_test_event.proto", package="rtxtest", syntax="proto3")
    value = fdp.message_type.add(name="Value")
    value.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    value.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL)
    summary = fdp.message_type.add(name="Summary")
    summary.field.add(name="value", number=1, type=F.TYPE_MESSAGE, type_name=".rtxtest.Value", label=F.LABEL_REPEATED)
    event = fdp.message_type.add(name="Event")
    event.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    event.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, type_name=".rtxtest.Summary",
                    label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("rtxtest.Event"))


def test_event_file_decodes_with_googles_protobuf(tmp_path):
    Event = event_class()
    steps = log_some(tmp_path)
    events = []
    for record in read_records(event_file(tmp_path)):
        e = Event()
        e.ParseFromString(record)
        events.append(e)
    assert events[0].file_version == "brain.Event:2"
    assert [e.step for e in events[1:]] == steps + [7]
    assert {v.tag: v.simple_value for v in events[3].summary.value} == {"loss": np.float32(1 / 3),
                                                                        "lr": np.float32(0.025)}
    # and the reverse: what protobuf writes is what we wrote, byte for byte
    again = Event(wall_time=events[3].wall_time, step=2)
    for tag, v in (("loss", 1 / 3), ("lr", 0.025)):
        again.summary.value.add(tag=tag, simple_value=v)
    assert again.SerializeToString() == read_records(event_file(tmp_path))[3]


def test_event_file_loads_in_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    steps = log_some(tmp_path)
    events = list(EventFileLoader(event_file(tmp_path)).Load())
    assert events[0].file_version == "brain.Event:2"
    assert [e.step for e in events[1:]] == steps + [7]
    got = {v.tag: v.simple_value if v.HasField("simple_value") else float(v.tensor.float_val[0])
           for v in events[2].summary.value}
    assert got == {"loss": np.float32(0.5), "lr": np.float32(0.05)}


# ---- CSV -----------------------------------------------------------------------------------------

def test_csv_rows_and_a_growing_header(tmp_path):
    with TrainingLogger(tmp_path, tensorboard=False, progress=False) as logger:
        logger.log(0, loss=2.0)
        logger.log(1, loss=1.5, lr=0.1)                      # a new column: the file is rewritten
        logger.log(2, {"val/loss": 1.25})
        logger.log(3, loss=np.float32(1.0), lr=np.float64(0.05), acc=rtx.tensor(0.75), top1=np.array([0.5]))
    rows = read_csv(tmp_path)
    with open(tmp_path / "metrics.csv", newline="") as f:
        assert next(csv.reader(f)) == ["step", "wall_time", "loss", "lr", "val/loss", "acc", "top1"]
    expect = [{"loss": "2.0"}, {"loss": "1.5", "lr": "0.1"}, {"val/loss": "1.25"},
              {"loss": "1.0", "lr": "0.05", "acc": "0.75", "top1": "0.5"}]
    for i, (row, want) in enumerate(zip(rows, expect)):
        assert row["step"] == str(i) and float(row["wall_time"]) > 1.6e9
        assert {k: v for k, v in row.items() if k not in ("step", "wall_time") and v != ""} == want
    assert os.listdir(tmp_path) == ["metrics.csv"]          # no temporary file left behind


def test_csv_is_flushed_per_row_and_appended_on_resume(tmp_path):
    logger = TrainingLogger(tmp_path, tensorboard=False, progress=False)
    logger.log(0, loss=1.0, lr=0.5)
    assert [r["loss"] for r in read_csv(tmp_path)] == ["1.0"]   # readable before close (a crash keeps it)
    logger.close()
    logger.close()                                              # idempotent
    with pytest.raises(ValueError, match="closed"):
        logger.log(1, loss=0.5)
    with TrainingLogger(tmp_path, tensorboard=False, progress=False) as resumed:
        resumed.log(1, lr=0.25)
        resumed.log(2, loss=0.5, acc=0.9)
    rows = read_csv(tmp_path)
    assert [(r["step"], r["loss"], r["lr"], r["acc"]) for r in rows] == \
        [("0", "1.0", "0.5", ""), ("1", "", "0.25", ""), ("2", "0.5", "", "0.9")]


def test_csv_values_round_trip_exactly(tmp_path):
    rng = np.random.default_rng(0)
    values = [float(v) for v in rng.standard_normal(50) * 10.0 ** rng.integers(-30, 30, 50)]
    values += [math.inf, -math.inf, 0.0, -0.0, 5e-324]
    with TrainingLogger(tmp_path, tensorboard=False, progress=False) as logger:
        for i, v in enumerate(values):
            logger.log(i, x=v)
    assert [float(r["x"]) for r in read_csv(tmp_path)] == values


def test_a_foreign_metrics_csv_is_not_overwritten(tmp_path):
    (tmp_path / "metrics.csv").write_text("epoch,acc\n1,0.5\n")
    with pytest.raises(ValueError, match="not a metrics file of TrainingLogger"):
        TrainingLogger(tmp_path, progress=False)
    assert (tmp_path / "metrics.csv").read_text() == "epoch,acc\n1,0.5\n"


def test_csv_off_and_tensorboard_off(tmp_path):
    with TrainingLogger(tmp_path / "tb", csv=False, progress=False) as logger:
        logger.log(0, loss=1.0)
    assert logger.csv_path is None and os.listdir(tmp_path / "tb") == [os.path.basename(logger.event_path)]


# ---- bad input -----------------------------------------------------------------------------------

@pytest.mark.parametrize("step, scalars, err, match", [
    (-1, {"loss": 1.0}, ValueError, "step must be >= 0, got -1"),
    (1.5, {"loss": 1.0}, TypeError, "step must be an int, got float"),
    (True, {"loss": 1.0}, TypeError, "step must be an int, got bool"),
    (0, {}, ValueError, "no scalars given"),
    (0, {"loss": "low"}, TypeError, "'loss' must be a real number .* got str"),
    (0, {"loss": np.ones(2)}, TypeError, r"'loss' must be a real number .* got ndarray of shape \(2,\)"),
    (0, {"loss": rtx.ones(2, 2)}, TypeError, r"got Tensor of shape \(2, 2\)"),
    (0, {"loss": 1 + 2j}, TypeError, "got complex"),
    (0, {"step": 1.0}, ValueError, "other than step and wall_time"),
    (0, {"": 1.0}, ValueError, "non-empty str"),
])
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, step, scalars, err, match):
    with TrainingLogger(tmp_path, progress=False) as logger:
        with pytest.raises(err, match=match):
            logger.log(step, scalars)
    assert read_csv(tmp_path) == []
    assert len(read_events(event_file(tmp_path))) == 1          # the file-version event only


def test_bad_constructor_arguments(tmp_path):
    with pytest.raises(TypeError, match="logdir must be a str or os.PathLike, got int"):
        TrainingLogger(3)
    with pytest.raises(ValueError, match="total must be None or an int >= 0, got -5"):
        TrainingLogger(tmp_path, total=-5)
    with pytest.raises(ValueError, match="progress must be True, False or None, got 'yes'"):
        TrainingLogger(tmp_path, progress="yes")


# ---- progress ------------------------------------------------------------------------------------

def test_progress_bar_with_tqdm(tmp_path, capsys):
    pytest.importorskip("tqdm")
    with TrainingLogger(tmp_path, total=4) as logger:
        for step in range(4):
            logger.log(step, loss=1.0 / (step + 1))
    err = capsys.readouterr().err
    assert "3/4" in err and "loss=0.25" in err and "step" in err


def test_progress_plain_line_without_tqdm(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)            # `import tqdm` now raises ImportError
    with TrainingLogger(tmp_path, total=100) as logger:
        for step in range(3):
            logger.log(step, loss=1.0 / (step + 1), lr=0.01)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "step 0/100  loss 1  lr 0.01"           # the first at once, then at most once a second
    assert lines[-1] == "step 2/100  loss 0.3333  lr 0.01"     # and the last values at close


def test_progress_none_follows_the_terminal(tmp_path, capsys, monkeypatch):
    with TrainingLogger(tmp_path, progress=None) as logger:   # stderr is captured: not a terminal
        logger.log(0, loss=1.0)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with TrainingLogger(tmp_path / "plain", progress=None) as logger:
        logger.log(0, loss=1.0)
    assert capsys.readouterr().err == ""


# --- regressions found in review ----------------------------------------------------------------

def test_an_int_too_large_for_a_float_is_a_value_error(tmp_path):
    with TrainingLogger(tmp_path, tensorboard=False, progress=False) as logger:
        with pytest.raises(ValueError, match="'big' is too large for a float"):
            logger.log(0, big=10 ** 400)
        logger.log(1, big=10 ** 300)
    rows = list(csv.reader(open(tmp_path / "metrics.csv", newline="")))
    assert [r[0] for r in rows[1:]] == ["1"] and float(rows[1][2]) == 1e300


def test_values_beyond_float32_become_inf_in_tensorboard_and_stay_exact_in_csv(tmp_path):
    # struct.pack("<f", 1e300) raised OverflowError: a diverging loss crashed the logger mid-row.
    with TrainingLogger(tmp_path, progress=False) as logger:
        logger.log(0, loss=1e300, neg=-1e39, ok=3.0e38)
    scalars = read_events(event_file(tmp_path))[1][3]
    assert scalars["loss"] == math.inf and scalars["neg"] == -math.inf and scalars["ok"] == np.float32(3.0e38)
    row = next(csv.DictReader(open(tmp_path / "metrics.csv", newline="")))
    assert float(row["loss"]) == 1e300 and float(row["neg"]) == -1e39


def test_a_name_that_is_not_valid_unicode_is_refused(tmp_path):
    with TrainingLogger(tmp_path, progress=False) as logger:
        with pytest.raises(ValueError, match="not valid Unicode"):
            logger.log(0, {"loss\ud800": 1.0})
        logger.log(1, loss=1.0)
    assert len(read_events(event_file(tmp_path))) == 2  # the version event and step 1 only
