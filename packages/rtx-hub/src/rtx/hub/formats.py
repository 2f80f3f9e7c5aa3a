"""Recognising an artifact file: an ONNX model or an rtx checkpoint, checked before it is registered.

An rtx checkpoint is what rtx.load reads: rtx.save's safetensors file (tensors plus a JSON
structure in the header), a plain safetensors file, or a PyTorch zip checkpoint. Only headers are
read here, never the tensors: registering a large checkpoint costs one copy and one hash."""
from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

from rtx.hub.errors import RegistryError

SUFFIX = {"onnx": ".onnx", "rtx": ".rtx"}


def detect(path: Path) -> str:
    """'onnx' or 'rtx' for a file we can register; RegistryError naming the file otherwise."""
    if not path.exists():
        raise RegistryError(f"model file {str(path)!r} does not exist")
    if not path.is_file():
        raise RegistryError(f"model file {str(path)!r} is not a regular file")
    if path.suffix.lower() == ".onnx":
        return "onnx"
    if _safetensors_header(path) is not None or _torch_zip(path):
        return "rtx"
    if _looks_like_onnx(path):
        return "onnx"
    raise RegistryError(f"{str(path)!r} is neither an ONNX model nor an rtx checkpoint (a file written by "
                        "rtx.save, a safetensors file or a PyTorch zip checkpoint)")


def read_onnx(path: Path):
    """The onnx.ModelProto of a single-file ONNX model, checked by onnx.checker."""
    import onnx

    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except Exception as e:  # protobuf raises DecodeError, RuntimeError, ... on garbage
        raise RegistryError(f"{str(path)!r} is not a valid ONNX model: {type(e).__name__}: {e}") from None
    external = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external:
        raise RegistryError(f"{str(path)!r} keeps {len(external)} tensor(s) in external data files "
                            f"({', '.join(external[:3])}{', ...' if len(external) > 3 else ''}); the registry "
                            "stores single-file models: save it with onnx.save(model, path, "
                            "save_as_external_data=False)")
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise RegistryError(f"{str(path)!r} is not a valid ONNX model: {e}") from None
    return model


def checkpoint_format(path: Path) -> str | None:
    """The top-level "format" string of an rtx.save checkpoint (e.g. "rtx-nlg-gpt/1"), read from
    the header alone; None when the file has none."""
    header = _safetensors_header(path)
    if not header:
        return None
    try:
        structure = json.loads(header.get("__metadata__", {}).get("rtx", "null"))["structure"]
        if structure.get("T") in ("dict", "odict"):
            for k, v in structure["v"]:
                if k == "format" and isinstance(v, str):
                    return v
    except (ValueError, TypeError, KeyError, AttributeError):
        pass
    return None


def _safetensors_header(path: Path) -> dict | None:
    """The JSON header of a well-formed safetensors file (its tensors' offsets fit the file), or None."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            return None
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, 100 << 20):
            return None
        try:
            header = json.loads(f.read(n))
        except ValueError:
            return None
    if not isinstance(header, dict):
        return None
    end = 0
    for k, v in header.items():
        if k == "__metadata__":
            continue
        offsets = v.get("data_offsets") if isinstance(v, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2):
            return None
        end = max(end, offsets[1])
    return header if end == size - 8 - n else None


def _torch_zip(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("/data.pkl") or n == "data.pkl" for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _looks_like_onnx(path: Path) -> bool:
    try:
        read_onnx(path)
        return True
    except RegistryError:
        return False
