"""A registry entry whose checkpoint names os:system (issue 24): the server loads through rtx.hub
without trust_remote_code, so nothing runs; the version is reported as failed to load and the
other models keep serving."""
import json
import os

import numpy as np

import rtx
import rtx.nn as nn
from rtx.hub import Registry
from rtx.hub.fsutil import sha256_file
from rtx.serving_api import create_app
from rtx.serving_api.testing import ServerThread


def test_a_checkpoint_naming_os_system_fails_to_load_and_others_serve(tmp_path, monkeypatch, h):
    import httpx
    calls = []
    monkeypatch.setattr(os, "system", lambda *a, **k: calls.append(a) or 0)
    marker = tmp_path / "pwned"

    reg = Registry(tmp_path / "registry")
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    good = nn.Linear(4, 3)
    reg.register(good, "good", "1.0.0", module_args=(4, 3), example_inputs=x[:1], stage="production")
    # The attacker: a real version, then its checkpoint rewritten to name os:system, and model.json's
    # checksum updated to match (anyone who can write to the registry can do both).
    mv = reg.register(nn.Linear(4, 3), "evil", "1.0.0", module_args=(4, 3), example_inputs=x[:1],
                      stage="production")
    rtx.save({"format": "rtx-module/1", "class": "os:system", "args": [f"touch {marker}"], "kwargs": {},
              "model": {}}, mv.artifact)
    info = json.loads((mv.path / "model.json").read_text())
    info.update(sha256=sha256_file(mv.artifact), size=mv.artifact.stat().st_size)
    (mv.path / "model.json").write_text(json.dumps(info))
    assert reg.get("evil").verify()  # the checksum passes: the class allow-list is what stops it

    with ServerThread(create_app(registry=reg)) as url, httpx.Client(base_url=url, timeout=30) as client:
        index = {(e["name"], e["version"]): e for e in client.post("/v2/repository/index").json()}
        assert index[("good", "1.0.0")]["state"] == "READY"
        failed = index[("evil", "1.0.0")]
        assert failed["state"] == "UNAVAILABLE"
        assert failed["reason"].startswith("UntrustedClassError: evil:1.0.0: the checkpoint names the class "
                                           "'os:system'") and "trust_remote_code=True" in failed["reason"]
        r = client.post("/v2/models/evil/infer", json=h.v2_body("input", x))
        assert r.status_code == 404 and "UntrustedClassError" in r.json()["error"]

        r = client.post("/v2/models/good/infer", json=h.v2_body("input", x))
        assert r.status_code == 200, r.text
        got = np.array(r.json()["outputs"][0]["data"]).reshape(2, 3)
        np.testing.assert_allclose(got, h.eager(good, x), rtol=1e-5, atol=1e-6)
    assert calls == [] and not marker.exists()
