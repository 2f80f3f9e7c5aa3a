"""rtx.runtime.dtypes' table of other libraries' dtype names, checked against those libraries:
safetensors' header codes (written by the safetensors library itself) and onnx's TensorProto."""
import json
import struct

import numpy as np
import pytest

from rtx.runtime import dtypes as D


def test_safetensors_codes_are_what_the_library_writes():
    st = pytest.importorskip("safetensors.numpy")
    for name, code in D.SAFETENSORS_NAMES.items():
        blob = st.save({"x": np.zeros(2, D.from_name(name).np)})
        n = struct.unpack("<Q", blob[:8])[0]
        assert json.loads(blob[8:8 + n])["x"]["dtype"] == code, name


def test_onnx_numbers_and_type_names_are_onnx_s():
    onnx = pytest.importorskip("onnx")
    for name, number in D.ONNX_TYPES.items():
        assert onnx.helper.np_dtype_to_tensor_dtype(D.from_name(name).np) == number, name
        # onnxruntime prints TensorProto's name in lower case, but FLOAT/DOUBLE as C's float/double
        want = {"FLOAT": "float", "DOUBLE": "double"}.get(onnx.TensorProto.DataType.Name(number),
                                                         onnx.TensorProto.DataType.Name(number).lower())
        assert D.ONNX_TYPE_NAMES[name] == want, name


def test_torch_names_cover_every_tensor_dtype_and_alias():
    for d in D.ALL:
        assert D.torch_name(d)[0].isupper()
        assert D.from_torch_name(d.name) is d
    assert D.from_torch_name("long") is D.int64 and D.from_torch_name("cdouble") is D.complex128
    assert D.from_torch_name("qint8") is None and D.from_torch_name("Tensor") is None
    assert D.torch_name(D.int8) == "Char" and D.STORAGE_NAMES["int8"] == "CharStorage"
    # every storage name is the torch type name of that dtype with Tensor -> Storage
    assert all(s == D.TORCH_NAMES[n] + "Storage" for n, s in D.STORAGE_NAMES.items())


def test_kserve_names_follow_the_v2_protocol():
    assert D.KSERVE_NAMES["float32"] == "FP32" and D.KSERVE_NAMES["bfloat16"] == "BF16"
    assert set(D.KSERVE_NAMES.values()) == {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                           "INT32", "INT64", "FP16", "FP32", "FP64", "BF16"}
