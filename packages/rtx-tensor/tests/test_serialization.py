"""rtx.save / rtx.load: round trips of tensors and nested state dicts (paths and file objects,
shared tensors, map_location, every dtype), plain safetensors files, PyTorch checkpoints
written here without PyTorch (stub globals under a fake `torch` module that exists only while
pickling), and the refusals: forbidden globals never run, corrupt files give clear errors."""
import contextlib
import io
import os
import pickle
import struct
import sys
import types
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import rtx
from rtx.testing import assert_close

rng = np.random.default_rng(2)


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    rtx.save(obj, buf)
    buf.seek(0)
    return rtx.load(buf, **load_kwargs)


# ---- rtx's own format ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [rtx.float32, rtx.float64, rtx.float16, rtx.bfloat16, rtx.int64, rtx.int32,
                                   rtx.int16, rtx.int8, rtx.uint8, rtx.bool, rtx.complex64, rtx.complex128],
                         ids=str)
def test_dtypes_round_trip(dtype):
    a = rng.standard_normal((3, 4)) * 10
    if dtype.is_complex:
        a = a + 1j * rng.standard_normal((3, 4))
    t = rtx.tensor(a.astype(dtype.np) if dtype != rtx.bfloat16 else a, dtype=dtype)
    back = roundtrip(t)
    assert back.dtype == dtype and back.shape == t.shape
    assert np.array_equal(back.numpy(), t.numpy())


def test_shapes_and_layouts():
    t = rtx.tensor(rng.standard_normal((3, 4)))
    obj = {"scalar": rtx.tensor(1.5), "empty": rtx.zeros(0, 3), "transposed": t.mT, "slice": t[:, 1::2]}
    back = roundtrip(obj)
    assert back["scalar"].shape == () and back["scalar"].item() == 1.5
    assert back["empty"].shape == (0, 3)
    assert_close(back["transposed"], t.numpy().T)
    assert_close(back["slice"], t.numpy()[:, 1::2])
    assert back["transposed"].is_contiguous()


def test_path_and_file_object(tmp_path):
    sd = {"w": rtx.randn(2, 3), "b": rtx.zeros(3)}
    path = tmp_path / "model.rtx"
    rtx.save(sd, path)
    rtx.save(sd, str(tmp_path / "m2.rtx"))
    with open(tmp_path / "m3.rtx", "wb") as fh:
        rtx.save(sd, fh)
    for p in (path, str(tmp_path / "m2.rtx")):
        back = rtx.load(p)
        assert list(back) == ["w", "b"]
        assert_close(back["w"], sd["w"])
    with open(tmp_path / "m3.rtx", "rb") as fh:
        assert_close(rtx.load(fh)["b"], np.zeros(3))


def test_model_and_optimizer_state_dicts():
    w, b = rtx.randn(4, 3), rtx.randn(4)
    model = OrderedDict([("fc.weight", w), ("fc.bias", b), ("bn.num_batches_tracked", rtx.tensor(7))])
    optim = {"state": {0: {"step": rtx.tensor(3.0), "exp_avg": rtx.zeros(4, 3), "exp_avg_sq": rtx.ones(4, 3)},
                       1: {"step": rtx.tensor(3.0), "exp_avg": rtx.zeros(4), "exp_avg_sq": rtx.ones(4)}},
             "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0,
                               "amsgrad": False, "maximize": False, "foreach": None, "params": [0, 1],
                               "name": "all", "lr_inf": float("inf"), "nan": float("nan")}]}
    back = roundtrip({"model": model, "optimizer": optim, "epoch": 5, "loss": 0.25, "note": None})
    assert type(back["model"]) is OrderedDict and list(back["model"]) == list(model)
    assert back["model"]["bn.num_batches_tracked"].dtype == rtx.int64
    assert_close(back["model"]["fc.weight"], w)
    assert set(back["optimizer"]["state"]) == {0, 1}  # int keys stay ints
    g = back["optimizer"]["param_groups"][0]
    assert g["betas"] == (0.9, 0.999) and type(g["betas"]) is tuple
    assert g["params"] == [0, 1] and g["foreach"] is None and g["amsgrad"] is False and g["weight_decay"] == 0
    assert g["lr_inf"] == float("inf") and g["nan"] != g["nan"]
    assert back["epoch"] == 5 and back["loss"] == 0.25 and back["note"] is None


def test_other_plain_values():
    obj = {"size": rtx.Size([2, 3]), "dtype": rtx.bfloat16, "device": rtx.device("cpu"), "c": 1 + 2j,
           "bytes": b"\x00\xff", (1, "a"): "tuple key", 3.5: "float key", None: "none key", "np": np.float32(2.5)}
    back = roundtrip(obj)
    assert type(back["size"]) is rtx.Size and back["size"] == (2, 3)
    assert back["dtype"] is rtx.bfloat16 and back["device"] == rtx.device("cpu")
    assert back["c"] == 1 + 2j and back["bytes"] == b"\x00\xff"
    assert back[(1, "a")] == "tuple key" and back[3.5] == "float key" and back[None] == "none key"
    assert back["np"] == 2.5


def test_shared_tensor_is_stored_once_and_comes_back_shared():
    w = rtx.randn(3, 3)
    buf = io.BytesIO()
    rtx.save({"encoder.embed": w, "decoder.embed": w, "list": [w]}, buf)
    from safetensors import safe_open
    path = io.BytesIO(buf.getvalue())
    back = rtx.load(path)
    assert back["encoder.embed"] is back["decoder.embed"] is back["list"][0]
    n_tensors = len(_safetensors_header(buf.getvalue())) - 1
    assert n_tensors == 1
    del safe_open


def _safetensors_header(data):
    import json
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n])


def test_file_is_plain_safetensors_with_readable_keys(tmp_path):
    from safetensors.numpy import load_file
    path = tmp_path / "sd.safetensors"
    sd = {"layer": {"weight": rtx.randn(2, 2)}, "steps": [rtx.ones(2)]}
    rtx.save(sd, path)
    arrays = load_file(str(path))  # any safetensors reader: no rtx, no pickle
    assert set(arrays) == {"layer.weight", "steps.0"}
    assert_close(arrays["layer.weight"], sd["layer"]["weight"])


def test_requires_grad_is_kept():
    p = rtx.randn(2, requires_grad=True)
    back = roundtrip({"p": p, "d": p.detach()})
    assert back["p"].requires_grad and back["p"].is_leaf
    assert not back["d"].requires_grad


def test_map_location_forms():
    sd = {"w": rtx.randn(2)}
    assert roundtrip(sd, map_location="cpu")["w"].device == rtx.device("cpu")
    assert roundtrip(sd, map_location=rtx.device("cpu"))["w"].device == rtx.device("cpu")
    assert roundtrip(sd, map_location={"cuda:0": "cpu"})["w"].device == rtx.device("cpu")
    seen = []

    def fn(t, location):
        seen.append(location)
        return t * 2

    back = roundtrip(sd, map_location=fn)
    assert seen == ["cpu"]
    assert_close(back["w"], sd["w"] * 2)
    assert_close(roundtrip(sd, map_location=lambda t, loc: None)["w"], sd["w"])


@pytest.mark.skipif(rtx.cuda.is_available(), reason="checks the CPU-only error")
def test_map_location_cuda_without_gpu():
    with pytest.raises(RuntimeError, match="CUDA device but rtx.cuda.is_available\\(\\) is False.*map_location"):
        roundtrip({"w": rtx.ones(2)}, map_location="cuda")


def test_loaded_tensors_are_writable_and_independent():
    t = rtx.ones(3)
    back = roundtrip({"a": t, "b": rtx.zeros(3)})
    back["a"].add_(1)
    assert back["a"].tolist() == [2.0, 2.0, 2.0] and t.tolist() == [1.0, 1.0, 1.0]


def test_safetensors_format_refuses_what_json_cannot_hold():
    # the default format pickles these instead (PyTorch's zip, see test_save_load_objects.py)
    def strict(obj):
        rtx.save(obj, io.BytesIO(), format="safetensors")
    with pytest.raises(TypeError, match="cannot save an object of type .*Widget.*format='safetensors'"):
        strict({"m": type("Widget", (), {})()})
    with pytest.raises(TypeError, match="dict keys must be"):
        strict({rtx.ones(1): 1})
    loop = []
    loop.append(loop)
    with pytest.raises(TypeError, match="reference cycle"):
        strict(loop)


def test_header_length_that_starts_like_a_pickle():
    # the header length is little-endian: a low byte of 0x80 is also a pickle's first byte
    for k in range(1, 64):
        buf = io.BytesIO()
        rtx.save({"k" * k: rtx.ones(2)}, buf)
        if buf.getvalue()[0] == 0x80:
            break
    buf.seek(0)
    assert buf.getvalue()[0] == 0x80
    assert list(rtx.load(buf)) == ["k" * k]


def test_plain_safetensors_file_loads_as_dict(tmp_path):
    import ml_dtypes
    from safetensors.numpy import save_file
    path = tmp_path / "hf.safetensors"
    a = rng.standard_normal((2, 3)).astype(np.float32)
    save_file({"a": a, "b16": a.astype(ml_dtypes.bfloat16)}, str(path))
    back = rtx.load(path)
    assert set(back) == {"a", "b16"}
    assert_close(back["a"], a)
    assert back["b16"].dtype == rtx.bfloat16


def test_pickle_of_a_tensor():
    t = rtx.randn(2, 3, requires_grad=True)
    back = pickle.loads(pickle.dumps(t))
    assert_close(back, t.detach())
    assert back.requires_grad


# ---- PyTorch checkpoints, written here without PyTorch ------------------------------------------

STORAGE_OF = {np.dtype(np.float32): "FloatStorage", np.dtype(np.float64): "DoubleStorage",
              np.dtype(np.int64): "LongStorage", np.dtype(np.int32): "IntStorage", np.dtype(np.bool_): "BoolStorage",
              np.dtype(np.uint8): "ByteStorage", np.dtype(np.float16): "HalfStorage"}


@contextlib.contextmanager
def fake_torch():
    """Just enough of a `torch` module for pickle to write its globals; removed afterwards, so
    loading proves rtx needs no torch."""
    names = ["torch", "torch._utils", "torch._tensor", "torch.nn", "torch.nn.parameter"]
    saved = {n: sys.modules.get(n) for n in names}
    mods = {n: types.ModuleType(n) for n in names}

    def fn(mod, name):
        def f(*a):
            return None
        f.__module__, f.__name__, f.__qualname__ = mod, name, name
        setattr(mods[mod], name, f)
        return f

    ns = types.SimpleNamespace(torch=mods["torch"])
    ns.rebuild_v2 = fn("torch._utils", "_rebuild_tensor_v2")
    ns.rebuild_v3 = fn("torch._utils", "_rebuild_tensor_v3")
    ns.rebuild_param = fn("torch._utils", "_rebuild_parameter")
    ns.from_type = fn("torch._tensor", "_rebuild_from_type_v2")
    for name in list(STORAGE_OF.values()) + ["BFloat16Storage", "UntypedStorage"]:
        setattr(mods["torch"], name, type(name, (), {"__module__": "torch"}))
    ns.tensor_cls = type("Tensor", (), {"__module__": "torch"})
    mods["torch"].Tensor = ns.tensor_cls

    class DType:
        def __init__(self, name):
            self.name = name

        def __reduce__(self):
            return self.name
    for dname in ("uint16", "float32"):
        d = DType(dname)
        d.__module__ = "torch"
        setattr(mods["torch"], dname, d)
    sys.modules.update(mods)
    try:
        yield ns
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


class Storage:
    def __init__(self, key, data, storage_name=None, location="cpu"):
        self.key, self.data, self.location = key, data, location
        self.name = storage_name or STORAGE_OF[data.dtype]


class FakeTensor:
    def __init__(self, ns, storage, offset, size, stride, requires_grad=False, v3_dtype=None):
        self.ns, self.storage, self.args = ns, storage, (offset, tuple(size), tuple(stride), requires_grad)
        self.v3_dtype = v3_dtype

    def __reduce_ex__(self, proto):
        offset, size, stride, rg = self.args
        if self.v3_dtype is not None:
            return (self.ns.rebuild_v3, (self.storage, offset, size, stride, rg, OrderedDict(),
                                         getattr(self.ns.torch, self.v3_dtype)))
        return (self.ns.rebuild_v2, (self.storage, offset, size, stride, rg, OrderedDict()))


class FakeParameter:
    def __init__(self, ns, tensor, requires_grad=True):
        self.ns, self.tensor, self.requires_grad = ns, tensor, requires_grad

    def __reduce_ex__(self, proto):
        return (self.ns.rebuild_param, (self.tensor, self.requires_grad, OrderedDict()))


def numel_of(st):
    return st.data.nbytes if st.name == "UntypedStorage" else st.data.size


class ZipPickler(pickle.Pickler):
    def __init__(self, file, ns, protocol):
        super().__init__(file, protocol=protocol)
        self.ns = ns

    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", getattr(self.ns.torch, obj.name), obj.key, obj.location, numel_of(obj))
        return None


class LegacyPickler(ZipPickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", getattr(self.ns.torch, obj.name), obj.key, obj.location, numel_of(obj), None)
        return None


def write_zip(make_obj, storages, prefix="archive", protocol=2, byteorder="little"):
    """PyTorch's zip layout: <prefix>/data.pkl, <prefix>/data/<key>, byteorder, version."""
    with fake_torch() as ns:
        pkl = io.BytesIO()
        ZipPickler(pkl, ns, protocol).dump(make_obj(ns))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", pkl.getvalue())
        z.writestr(f"{prefix}/byteorder", byteorder)
        for st in storages:
            data = st.data.astype(st.data.dtype.newbyteorder(">")) if byteorder == "big" else st.data
            z.writestr(f"{prefix}/data/{st.key}", data.tobytes())
        z.writestr(f"{prefix}/version", "3\n")
        z.writestr(f"{prefix}/.data/version", "3\n")
    out.seek(0)
    return out


def write_legacy(make_obj, storages):
    """PyTorch's pre-1.6 stream: magic, protocol, sys_info, the object, storage keys, raw data."""
    with fake_torch() as ns:
        f = io.BytesIO()
        pickle.dump(0x1950A86A20F9469CFC6C, f, protocol=2)
        pickle.dump(1001, f, protocol=2)
        pickle.dump({"protocol_version": 1001, "little_endian": True,
                     "type_sizes": {"short": 2, "int": 4, "long": 4}}, f, protocol=2)
        LegacyPickler(f, ns, 2).dump(make_obj(ns))
    pickle.dump([st.key for st in storages], f, protocol=2)
    for st in storages:
        f.write(struct.pack("<q", st.data.size))
        f.write(st.data.tobytes())
    f.seek(0)
    return f


def torch_state(ns, storages):
    """An OrderedDict state_dict like model.state_dict() plus a nested dict of extras."""
    w, b, steps, grid, shared = storages
    sd = OrderedDict([
        ("fc.weight", FakeParameter(ns, FakeTensor(ns, w, 0, (2, 3), (3, 1)), requires_grad=True)),
        ("fc.bias", FakeTensor(ns, b, 0, (3,), (1,))),
        ("steps", FakeTensor(ns, steps, 0, (), ())),
        ("grid_T", FakeTensor(ns, grid, 0, (3, 2), (1, 3))),            # non-contiguous (stride)
        ("grid_row1", FakeTensor(ns, grid, 3, (3,), (1,))),             # storage offset
        ("nested", {"a": FakeTensor(ns, shared, 0, (2,), (1,)), "b": FakeTensor(ns, shared, 2, (2,), (1,)),
                    "mask": [FakeTensor(ns, storages[4], 1, (2,), (2,))], "meta": ("x", 1, 2.5, None, True)}),
    ])
    sd._metadata = {"": {"version": 1}, "fc": {"version": 1}}  # as Module.state_dict(): pickled with BUILD
    return sd


def torch_storages():
    return [Storage("0", np.arange(6, dtype=np.float32) / 4), Storage("1", np.array([1.5, -2, 3], np.float64)),
            Storage("2", np.array([42], np.int64)), Storage("3", np.arange(6, dtype=np.float32)),
            Storage("4", np.array([10, 20, 30, 40], np.int64))]


def check_torch_state(sd):
    assert type(sd) is OrderedDict
    assert list(sd) == ["fc.weight", "fc.bias", "steps", "grid_T", "grid_row1", "nested"]
    w = sd["fc.weight"]
    assert type(w) is rtx.Tensor and w.requires_grad and w.is_leaf and w.dtype == rtx.float32
    assert_close(w, (np.arange(6, dtype=np.float32) / 4).reshape(2, 3))
    assert sd["fc.bias"].dtype == rtx.float64 and sd["fc.bias"].tolist() == [1.5, -2.0, 3.0]
    assert not sd["fc.bias"].requires_grad
    assert sd["steps"].shape == () and sd["steps"].item() == 42 and sd["steps"].dtype == rtx.int64
    assert sd["grid_T"].tolist() == np.arange(6.0).reshape(2, 3).T.tolist()
    assert sd["grid_row1"].tolist() == [3.0, 4.0, 5.0]
    n = sd["nested"]
    assert n["a"].tolist() == [10, 20] and n["b"].tolist() == [30, 40]
    assert n["mask"][0].tolist() == [20, 40]
    assert n["meta"] == ("x", 1, 2.5, None, True)
    assert sd._metadata["fc"] == {"version": 1}


@pytest.mark.parametrize("protocol", [2, 4])
def test_torch_zip_checkpoint(protocol):
    st = torch_storages()
    buf = write_zip(lambda ns: torch_state(ns, st), st, protocol=protocol)
    assert "torch" not in sys.modules or not hasattr(sys.modules["torch"], "_rebuild_tensor_v2")
    check_torch_state(rtx.load(buf))


def test_torch_zip_from_a_path_with_another_archive_prefix(tmp_path):
    st = torch_storages()
    path = tmp_path / "model.pt"
    path.write_bytes(write_zip(lambda ns: torch_state(ns, st), st, prefix="model").getvalue())
    check_torch_state(rtx.load(path, map_location="cpu"))


def test_torch_legacy_checkpoint():
    st = torch_storages()
    check_torch_state(rtx.load(write_legacy(lambda ns: torch_state(ns, st), st)))


def test_torch_bfloat16_half_bool_and_big_endian():
    bf = np.array([1.0, -2.5, 3.0], np.float32)
    bf_bits = (bf.view(np.uint32) >> 16).astype(np.uint16)  # bfloat16 is the top half of float32
    st = [Storage("bf", bf_bits, "BFloat16Storage"), Storage("h", np.array([0.5, 2], np.float16)),
          Storage("m", np.array([True, False, True]))]

    def make(ns):
        return {"bf": FakeTensor(ns, st[0], 0, (3,), (1,)), "h": FakeTensor(ns, st[1], 0, (2,), (1,)),
                "m": FakeTensor(ns, st[2], 0, (3,), (1,))}
    for order in ("little", "big"):
        sd = rtx.load(write_zip(make, st, byteorder=order))
        assert sd["bf"].dtype == rtx.bfloat16 and sd["bf"].float().tolist() == [1.0, -2.5, 3.0]
        assert sd["h"].dtype == rtx.float16 and sd["h"].tolist() == [0.5, 2.0]
        assert sd["m"].dtype == rtx.bool and sd["m"].tolist() == [True, False, True]


def test_torch_shared_tensor_object_stays_shared():
    st = [Storage("0", np.arange(4, dtype=np.float32))]

    def make(ns):
        t = FakeTensor(ns, st[0], 0, (4,), (1,))
        return {"enc": t, "dec": t}
    sd = rtx.load(write_zip(make, st))
    assert sd["enc"] is sd["dec"]


def test_torch_untyped_storage_with_rebuild_v3():
    st = [Storage("0", np.array([1, 2, 65535], np.uint16), "UntypedStorage")]
    sd = rtx.load(write_zip(lambda ns: {"u": FakeTensor(ns, st[0], 0, (3,), (1,), v3_dtype="uint16")}, st))
    assert sd["u"].dtype == rtx.uint16 and sd["u"].tolist() == [1, 2, 65535]


def test_torch_top_level_tensor_and_map_location():
    st = [Storage("0", np.ones(2, np.float32), location="cuda:0")]
    buf = write_zip(lambda ns: FakeTensor(ns, st[0], 0, (2,), (1,)), st)
    t = rtx.load(buf, map_location="cpu")
    assert t.tolist() == [1.0, 1.0] and t.device == rtx.device("cpu")
    buf.seek(0)
    seen = []
    assert rtx.load(buf, map_location=lambda t, loc: seen.append(loc) or t).device == rtx.device("cpu")
    assert seen == ["cuda:0"]
    buf.seek(0)
    if not rtx.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA device"):
            rtx.load(buf)


# ---- refusals and corrupt files ---------------------------------------------------------------------


def evil_pickle(marker):
    # GLOBAL os.system, then call it: what a malicious checkpoint does
    cmd = f"touch {marker}".encode()
    return b"\x80\x02cos\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"q\x01\x85q\x02Rq\x03."


def test_malicious_zip_checkpoint_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", evil_pickle(marker))
        z.writestr("archive/byteorder", "little")
    buf.seek(0)
    with pytest.raises(rtx.serialization.UnpicklingError,
                       match="(?s)Weights only load failed.*arbitrary code execution.*GLOBAL os.system whose module "
                             "os is blocked"):
        rtx.load(buf)
    assert not marker.exists()
    assert issubclass(rtx.serialization.UnpicklingError, pickle.UnpicklingError)


def test_malicious_raw_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    path.write_bytes(evil_pickle(marker))
    with pytest.raises(pickle.UnpicklingError, match="os.system"):
        rtx.load(path)
    assert not marker.exists()


@pytest.mark.parametrize("target", ["builtins\neval", "subprocess\nPopen", "torch.nn.modules.linear\nLinear",
                                    "numpy.core.multiarray\n_reconstruct", "rtx._tensor.serialization\nload"])
def test_other_globals_are_refused(target):
    data = b"\x80\x02c" + target.encode() + b"\nq\x00."
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", data)
    buf.seek(0)
    shown = target.replace("\n", ".").replace("builtins.", "")  # PyTorch's message drops "builtins."
    with pytest.raises(rtx.serialization.UnpicklingError, match=f"GLOBAL {shown} was not an allowed global"):
        rtx.load(buf)


def test_plain_pickle_that_is_not_a_checkpoint():
    buf = io.BytesIO(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(RuntimeError, match="not a PyTorch checkpoint"):
        rtx.load(buf)


def test_weights_only_false_trusts_importable_globals():
    data = b"\x80\x02cbuiltins\nabs\nq\x00J\xf9\xff\xff\xff\x85q\x01Rq\x02."  # abs(-7)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", data)
    buf.seek(0)
    assert rtx.load(buf, weights_only=False) == 7


@pytest.mark.parametrize("blob, match", [
    (b"", "is empty"),
    (b"hello world, not a checkpoint", "not an rtx \\(safetensors\\) file or a PyTorch checkpoint"),
    (b"PK\x03\x04garbage-garbage-garbage", "truncated or corrupt"),
    (struct.pack("<Q", 500) + b'{"a": 1}', "truncated safetensors"),
    (b"\x80\x02}q\x00(X", "truncated or corrupt"),
])
def test_corrupt_files_give_clear_errors(blob, match):
    with pytest.raises(RuntimeError, match=match):
        rtx.load(io.BytesIO(blob))


def test_truncated_rtx_file_and_zip():
    buf = io.BytesIO()
    rtx.save({"w": rtx.randn(10, 10)}, buf)
    data = buf.getvalue()
    with pytest.raises(RuntimeError, match="truncated or corrupt"):
        rtx.load(io.BytesIO(data[:-100]))
    st = torch_storages()
    z = write_zip(lambda ns: torch_state(ns, st), st).getvalue()
    with pytest.raises(RuntimeError, match="truncated or corrupt"):
        rtx.load(io.BytesIO(z[: len(z) // 2]))
    leg = write_legacy(lambda ns: torch_state(ns, st), st).getvalue()
    with pytest.raises(RuntimeError, match="truncated"):
        rtx.load(io.BytesIO(leg[:-7]))


def test_corrupt_strides_are_caught():
    st = [Storage("0", np.arange(4, dtype=np.float32))]
    buf = write_zip(lambda ns: {"x": FakeTensor(ns, st[0], 2, (4,), (1,))}, st)
    with pytest.raises(RuntimeError, match="reaches past its storage"):
        rtx.load(buf)


def test_bad_arguments():
    with pytest.raises(TypeError, match="binary file object"):
        rtx.save({}, 42)
    with pytest.raises(TypeError, match="text mode"):
        rtx.load(io.StringIO("abc"))
    with pytest.raises(FileNotFoundError):
        rtx.load(os.path.join("no", "such", "file.pt"))
