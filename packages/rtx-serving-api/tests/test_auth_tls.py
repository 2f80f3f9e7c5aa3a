"""Bearer tokens and TLS, over HTTP (httpx) and gRPC (tritonclient), with a self-signed certificate
made here."""
import datetime
import ipaddress
import ssl

import httpx
import numpy as np
import pytest
import tritonclient.grpc as tg
from tritonclient.utils import InferenceServerException

from rtx.serving_api import ServeConfig, create_app
from rtx.serving_api.auth import authorized
from rtx.serving_api.testing import ServerThread


def self_signed(folder):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    return folder / "cert.pem", folder / "key.pem"


def test_authorized_needs_the_scheme_and_an_exact_token():
    tokens = [b"s3cret", b"other"]
    assert authorized("Bearer s3cret", tokens) and authorized(b"bearer other", tokens)
    for bad in (None, "", "Bearer", "Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer  "):
        assert not authorized(bad, tokens), bad


@pytest.fixture(scope="module")
def secure(tmp_path_factory, registry):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = self_signed(folder)
    (folder / "tokens").write_text("# rotated monthly\nold-token\n\nnew-token\n")
    app = create_app(ServeConfig(grpc_port=0, auth_token_file=folder / "tokens", ssl_certfile=cert, ssl_keyfile=key),
                     registry=registry)
    with ServerThread(app) as url:
        yield url, f"127.0.0.1:{app.state.grpc_port}", str(cert)


def test_https_with_bearer_tokens(secure, models, h):
    url, _, cert = secure
    assert url.startswith("https://")
    with httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=cert), timeout=30) as c:
        assert c.get("/v2/health/live").status_code == 200 and c.get("/v2/health/ready").status_code == 200
        denied = [c.get("/v2"), c.get("/v2", headers={"Authorization": "Bearer wrong"}),
                  c.get("/v2", headers={"Authorization": "Basic new-token"}), c.get("/metrics"),
                  c.post("/v2/models/digits/infer", json=h.v2_body("x", h.X))]
        assert {r.status_code for r in denied} == {401}
        assert len({r.text for r in denied}) == 1  # one message, whatever part was wrong
        assert denied[0].headers["www-authenticate"].startswith("Bearer")
        for token in ("old-token", "new-token"):
            r = c.post("/v2/models/digits/infer", json=h.v2_body("x", h.X),
                       headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200
            np.testing.assert_allclose(np.reshape(r.json()["outputs"][0]["data"], (5, 10)),
                                       h.eager(models["1.0.0"], h.X), rtol=1e-5, atol=1e-6)
    with pytest.raises(httpx.HTTPError):  # the certificate is not trusted by default
        httpx.get(url + "/v2/health/live", timeout=10)


def test_grpc_over_tls_with_bearer_tokens(secure, models, h):
    _, address, cert = secure
    c = tg.InferenceServerClient(address, ssl=True, root_certificates=cert)
    assert c.is_server_live() and c.is_server_ready()  # health needs no token
    x = tg.InferInput("x", list(h.X.shape), "FP32")
    x.set_data_from_numpy(h.X)
    for headers in (None, {"authorization": "Bearer wrong"}):
        with pytest.raises(InferenceServerException) as e:
            c.infer("digits", [x], headers=headers)
        assert "UNAUTHENTICATED" in str(e.value.status())
    r = c.infer("digits", [x], headers={"authorization": "Bearer new-token"})
    np.testing.assert_allclose(r.as_numpy("output"), h.eager(models["1.0.0"], h.X), rtol=1e-5, atol=1e-6)
    plain = tg.InferenceServerClient(address)  # no TLS: refused by the handshake
    with pytest.raises(InferenceServerException):
        plain.is_server_live(client_timeout=5)
