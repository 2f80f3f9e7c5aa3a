"""The ai.onnx.ml domain (classic ML pipelines): LabelEncoder, Binarizer, ArrayFeatureExtractor,
TreeEnsemble, Scaler, Normalizer."""
from __future__ import annotations

import numpy as np

from rtx.onnx._ops import arr, const, ints, op

ML = "ai.onnx.ml"


@op("LabelEncoder", domain=ML)
def label_encoder(inputs, attrs, opset):
    x = arr(inputs[0])
    keys = next((attrs[k] for k in ("keys_tensor", "keys_strings", "keys_int64s", "keys_floats") if k in attrs), [])
    vkey = next((k for k in ("values_tensor", "values_strings", "values_int64s", "values_floats") if k in attrs), None)
    values = attrs.get(vkey, [])
    if vkey == "values_tensor":
        default = attrs.get("default_tensor")
        dtype = values.dtype
        default = np.asarray(default).reshape(-1)[0] if default is not None else \
            ("_Unused" if dtype.kind == "O" else (-1 if dtype.kind in "iu" else -0.0))
    elif vkey == "values_strings":
        dtype, default = np.dtype(object), attrs.get("default_string", "_Unused")
    elif vkey == "values_int64s":
        dtype, default = np.dtype(np.int64), attrs.get("default_int64", -1)
    else:
        dtype, default = np.dtype(np.float32), attrs.get("default_float", -0.0)
    table = dict(zip(np.asarray(keys).tolist(), np.asarray(values).tolist()))
    out = np.array([table.get(v, default) for v in x.reshape(-1).tolist()], dtype=dtype)
    return const(out.reshape(x.shape))


@op("Binarizer", domain=ML)
def binarizer(inputs, attrs, opset):
    x = arr(inputs[0])
    return const((x > attrs.get("threshold", 0.0)).astype(x.dtype))


@op("ArrayFeatureExtractor", domain=ML)
def array_feature_extractor(inputs, attrs, opset):
    x, idx = arr(inputs[0]), ints(inputs[1])
    out = x[..., idx]
    return const(out.reshape((1, len(idx)) if x.ndim == 1 else x.shape[:-1] + (len(idx),)))


@op("Scaler", domain=ML)
def scaler(inputs, attrs, opset):
    x = arr(inputs[0]).astype(np.float32)
    return const(((x - np.float32(attrs.get("offset", [0.0])) * 1) * np.float32(attrs.get("scale", [1.0])))
                 .astype(np.float32))


@op("Normalizer", domain=ML)
def normalizer(inputs, attrs, opset):
    x = arr(inputs[0]).astype(np.float32)
    norm = attrs.get("norm", "MAX")
    if norm == "MAX":
        d = np.max(x, axis=-1, keepdims=True)
    elif norm == "L1":
        d = np.sum(np.abs(x), axis=-1, keepdims=True)
    else:
        d = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return const((x / np.where(d == 0, 1, d)).astype(np.float32))


_MODES = {0: np.less_equal, 1: np.less, 2: np.greater_equal, 3: np.greater, 4: np.equal, 5: np.not_equal}


@op("TreeEnsemble", domain=ML)
def tree_ensemble(inputs, attrs, opset):
    x = arr(inputs[0])
    modes = np.asarray(attrs["nodes_modes"]).reshape(-1).astype(int)
    splits = np.asarray(attrs["nodes_splits"]).reshape(-1)
    feats = attrs["nodes_featureids"]
    t_ids, f_ids = attrs["nodes_truenodeids"], attrs["nodes_falsenodeids"]
    t_leaf, f_leaf = attrs["nodes_trueleafs"], attrs["nodes_falseleafs"]
    miss = attrs.get("nodes_missing_value_tracks_true") or [0] * len(modes)
    leaf_t, leaf_w = attrs["leaf_targetids"], np.asarray(attrs["leaf_weights"]).reshape(-1)
    members = np.asarray(attrs.get("membership_values", np.zeros(0))).reshape(-1).tolist()
    sets, it = {}, iter(members)
    for i, m in enumerate(modes):  # each MEMBER node takes the next NaN-terminated run of values
        if m == 6:
            s = set()
            for v in it:
                if np.isnan(v):
                    break
                s.add(v)
            sets[i] = s
    n_targets = attrs.get("n_targets", 1)
    agg = attrs.get("aggregate_function", 1)
    roots = attrs["tree_roots"]
    out = np.zeros((x.shape[0], n_targets), np.float64)
    if agg == 2:
        out[:] = np.inf
    elif agg == 3:
        out[:] = -np.inf
    for r in range(x.shape[0]):
        for root in roots:
            node, is_leaf = root, (t_leaf[root] and f_leaf[root] and t_ids[root] == f_ids[root])
            while not is_leaf:
                v = x[r, feats[node]]
                if modes[node] == 6:
                    go = v in sets[node]
                else:
                    go = bool(_MODES[modes[node]](v, splits[node]))
                go = go or (bool(miss[node]) and np.isnan(v))
                node, is_leaf = (t_ids[node], t_leaf[node]) if go else (f_ids[node], f_leaf[node])
            t, w = leaf_t[node], leaf_w[node]
            if agg == 0:
                out[r, t] += w / len(roots)
            elif agg == 1:
                out[r, t] += w
            elif agg == 2:
                out[r, t] = min(out[r, t], w)
            else:
                out[r, t] = max(out[r, t], w)
    post = attrs.get("post_transform", 0)
    if post == 1:
        e = np.exp(out - out.max(1, keepdims=True))
        out = e / e.sum(1, keepdims=True)
    elif post == 2:
        out = 1 / (1 + np.exp(-out))
    elif post not in (0,):
        raise NotImplementedError(f"TreeEnsemble: post_transform={post} is not supported")
    return const(out.astype(x.dtype))
