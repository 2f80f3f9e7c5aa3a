"""The OpenAPI 3.1 document of the server's routes (GET /openapi.json), written by hand."""
from __future__ import annotations

_ERROR = {"description": "A client error: what was wrong, what was expected and what was found",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _errors(*codes):
    return {str(c): _ERROR for c in codes}


def _params(*names):
    return [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]


def _json(ref):
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


_NPY_BODY = {"application/x-npy": {"schema": {"type": "string", "contentMediaType": "application/x-npy"}}}


def _infer_op(names):
    return {"post": {
        "summary": "KServe v2 inference (a single-input model also takes an application/x-npy body)",
        "parameters": _params(*names),
        "requestBody": {"required": True, "content": {**_json("InferRequest")["content"], **_NPY_BODY}},
        "responses": {"200": {"description": "Outputs", "content": {**_json("InferResponse")["content"],
                                                                     **_NPY_BODY}},
                      **_errors(400, 404, 405, 413, 415, 503, 504)}}}


def _predict_op(names):
    return {"post": {
        "summary": "TF-Serving / KServe v1 :predict, or :generate for text generators (verb: predict | generate)",
        "parameters": _params(*names, "verb"),
        "requestBody": {"required": True, "content": {
            "application/json": {"schema": {"oneOf": [{"$ref": "#/components/schemas/PredictRequest"},
                                                      {"$ref": "#/components/schemas/GenerateRequest"}]}},
            **_NPY_BODY}},
        "responses": {"200": {"description": "predictions, generated text, or a text/event-stream of pieces",
                              "content": {"application/json": {"schema": {"oneOf": [
                                  {"$ref": "#/components/schemas/PredictResponse"},
                                  {"$ref": "#/components/schemas/GenerateResponse"}]}},
                                  "text/event-stream": {"schema": {"type": "string"}}, **_NPY_BODY}},
                      **_errors(400, 404, 405, 413, 415, 503, 504)}}}


def _get(summary, names=(), schema="Object", extra=(404,)):
    return {"get": {"summary": summary, "parameters": _params(*names),
                    "responses": {"200": {"description": summary, **_json(schema)}, **_errors(*extra)}}}


_TENSOR = {"type": "object", "required": ["name", "shape", "datatype", "data"], "properties": {
    "name": {"type": "string"},
    "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    "datatype": {"type": "string", "enum": ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                                            "INT32", "INT64", "FP16", "FP32", "FP64"]},
    "data": {"type": "array", "description": "row-major values, flat or nested"}}}

SCHEMAS = {
    "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
    "Object": {"type": "object"},
    "Tensor": _TENSOR,
    "InferRequest": {"type": "object", "required": ["inputs"], "properties": {
        "id": {"type": "string"}, "parameters": {"type": "object"},
        "inputs": {"type": "array", "items": {"$ref": "#/components/schemas/Tensor"}},
        "outputs": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
    "InferResponse": {"type": "object", "properties": {
        "model_name": {"type": "string"}, "model_version": {"type": "string"}, "id": {"type": "string"},
        "outputs": {"type": "array", "items": {"$ref": "#/components/schemas/Tensor"}}}},
    "PredictRequest": {"type": "object", "properties": {
        "instances": {"type": "array"}, "inputs": {}, "signature_name": {"type": "string"}}},
    "PredictResponse": {"type": "object", "properties": {"predictions": {"type": "array"}, "outputs": {}}},
    "GenerateRequest": {"type": "object", "required": ["prompt"], "properties": {
        "prompt": {"type": "string"}, "stream": {"type": "boolean", "default": False},
        "max_new_tokens": {"type": "integer", "minimum": 1}, "temperature": {"type": "number", "minimum": 0},
        "top_k": {"type": "integer", "minimum": 0}, "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "seed": {"type": "integer", "minimum": 0},
        "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}}},
    "GenerateResponse": {"type": "object", "properties": {
        "model_name": {"type": "string"}, "model_version": {"type": "string"}, "text": {"type": "string"}}},
}


def openapi_document() -> dict:
    from rtx.serving_api import __version__
    return {
        "openapi": "3.1.0",
        "info": {"title": "rtx model server", "version": __version__,
                 "description": "KServe v2 (Open Inference Protocol) and TF-Serving / KServe v1 routes. "
                                "Every error is JSON {\"error\": \"...\"}. Send the header x-client-id to "
                                "keep the same A/B version across requests."},
        "paths": {
            "/v2/health/live": _get("Liveness", schema="Object", extra=()),
            "/v2/health/ready": _get("Readiness (503 until the models are loaded)", extra=(503,)),
            "/v2": _get("Server metadata", extra=()),
            "/v2/repository/index": {"post": {"summary": "Loaded model versions and those that failed to load",
                                              "responses": {"200": {"description": "index", "content": {
                                                  "application/json": {"schema": {"type": "array"}}}}}},
                                     "get": {"summary": "Same as POST", "responses": {"200": {
                                         "description": "index",
                                         "content": {"application/json": {"schema": {"type": "array"}}}}}}},
            "/v2/models/{name}": _get("Model metadata (default version)", ("name",)),
            "/v2/models/{name}/ready": _get("Model readiness", ("name",)),
            "/v2/models/{name}/versions/{version}": _get("Model metadata", ("name", "version")),
            "/v2/models/{name}/versions/{version}/ready": _get("Model version readiness", ("name", "version")),
            "/v2/models/{name}/stats": _get("Inference and batching statistics of every version", ("name",)),
            "/v2/models/{name}/versions/{version}/stats": _get("Inference and batching statistics",
                                                              ("name", "version")),
            "/v2/models/{name}/infer": _infer_op(("name",)),
            "/v2/models/{name}/versions/{version}/infer": _infer_op(("name", "version")),
            "/v1/models/{name}:{verb}": _predict_op(("name",)),
            "/v1/models/{name}/versions/{version}:{verb}": _predict_op(("name", "version")),
            "/v1/models/{name}": _get("TF-Serving model status", ("name",)),
            "/v1/models/{name}/versions/{version}": _get("TF-Serving model version status", ("name", "version")),
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {"200": {
                "description": "text exposition format", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": _get("This document", extra=()),
            "/docs": {"get": {"summary": "This document as an HTML page (no JavaScript, no external assets)",
                              "responses": {"200": {"description": "HTML", "content": {
                                  "text/html": {"schema": {"type": "string"}}}}}}},
        },
        "components": {"schemas": SCHEMAS},
    }


def docs_html(doc: dict) -> str:
    """A plain HTML page listing the routes of an OpenAPI document (method, path, summary)."""
    from html import escape
    rows = "".join(f"<tr><td>{escape(m.upper())}</td><td><code>{escape(p)}</code></td>"
                   f"<td>{escape(op.get('summary', ''))}</td></tr>"
                   for p, item in doc["paths"].items() for m, op in item.items())
    info = doc["info"]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(info['title'])}</title></head>"
            f"<body><h1>{escape(info['title'])} {escape(info['version'])}</h1><p>{escape(info['description'])}</p>"
            f"<p>Machine-readable: <a href='/openapi.json'>/openapi.json</a> (OpenAPI {escape(doc['openapi'])})</p>"
            f"<table border='1' cellpadding='4'><tr><th>method</th><th>path</th><th>what</th></tr>{rows}"
            "</table></body></html>")
