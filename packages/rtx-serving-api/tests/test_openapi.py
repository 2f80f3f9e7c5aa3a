"""GET /openapi.json: an OpenAPI 3.1 document listing every route the app serves.

No OpenAPI validator is in the lock, so the checks here are the specification's structural rules
that matter for clients: required fields, one declared required parameter per path template
variable, responses on every operation, every $ref resolving."""
import re

from starlette.routing import Route

from rtx.serving_api import create_app

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def test_openapi_document_is_valid_and_lists_every_route(client, registry):
    doc = client.get("/openapi.json").json()
    assert re.fullmatch(r"3\.1\.\d+", doc["openapi"])
    assert doc["info"]["title"] and doc["info"]["version"]
    for path, item in doc["paths"].items():
        assert path.startswith("/")
        variables = re.findall(r"{(\w+)}", path)
        ops = {k: v for k, v in item.items() if k in METHODS}
        assert ops, path
        for method, op in ops.items():
            assert op["responses"], (path, method)
            declared = [p["name"] for p in op.get("parameters", []) if p["in"] == "path"]
            assert sorted(declared) == sorted(variables), (path, method, declared)
            assert all(p["required"] for p in op.get("parameters", []) if p["in"] == "path")
    for ref in _refs(doc):
        assert ref.startswith("#/components/schemas/") and ref.split("/")[-1] in doc["components"]["schemas"], ref

    app = create_app(registry=registry)  # the routes the app really has, methods included
    served = {r.path: {m.lower() for m in r.methods} - {"head"} for r in app.routes if isinstance(r, Route)}
    documented = {p: {m for m in item if m in METHODS} for p, item in doc["paths"].items()}
    assert served == documented


def test_docs_page_lists_the_routes(client):
    r = client.get("/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<code>/v2/models/{name}/infer</code>" in r.text and "/openapi.json" in r.text
