"""`rtx federated simulate`: the headline run (100 non-IID clients, FedAvg, >= 95%), the plot, bad
flags, and the MPI transport under `rtx launch -n 2`, which must give the in-process result."""
import json

import pytest


def test_simulate_reaches_95_percent_on_non_iid_digits(rtx_cli, tmp_path):
    png, js = tmp_path / "acc.png", tmp_path / "h.json"
    rc, out, seconds = rtx_cli("federated", "simulate", "--clients", "100", "--strategy", "fedavg", "--quiet",
                               "--plot", png, "--json", js, timeout=300)
    assert rc == 0, out
    rounds = json.loads(js.read_text())["rounds"]
    assert len(rounds) == 100 and all(len(r["clients"]) == 20 for r in rounds)
    assert rounds[-1]["accuracy"] >= 0.95, out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert "first >= 95% at round" in out


def test_simulate_bad_flags(rtx_cli):
    rc, out, _ = rtx_cli("federated", "simulate", "--strategy", "fedsgd", timeout=60)
    assert rc == 2 and "invalid choice: 'fedsgd'" in out
    rc, out, _ = rtx_cli("federated", "simulate", "--rounds", "0", timeout=60)
    assert rc == 2 and "--rounds must be >= 1, got 0" in out
    rc, out, _ = rtx_cli("federated", "simulate", "--dropout", "0.2", "--rounds", "1", timeout=60)
    assert rc != 0 and "dropout is simulated only with secure_aggregation=True" in out


@pytest.mark.parametrize("extra", [["--secure-agg", "--dropout", "0.25"], ["--dp", "--strategy", "fedprox"]])
def test_mpi_transport_gives_the_in_process_result(rtx_cli, tmp_path, extra):
    args = ["simulate", "--clients", "12", "--rounds", "3", "--fraction", "0.5", "--hidden", "32",
            "--local-epochs", "1", "--seed", "2", *extra]
    rc, out, _ = rtx_cli("federated", *args, "--json", tmp_path / "local.json", timeout=120)
    assert rc == 0, out
    rc, out, _ = rtx_cli("launch", "-n", "2", "--timeout", "60", "-m", "rtx.federated", *args,
                         "--transport", "mpi", "--json", tmp_path / "mpi.json", timeout=180)
    assert rc == 0, out
    local = json.loads((tmp_path / "local.json").read_text())["rounds"]
    mpi_run = json.loads((tmp_path / "mpi.json").read_text())
    assert mpi_run["world_size"] == 2
    mpi = mpi_run["rounds"]
    for a, b in zip(local, mpi, strict=True):
        assert (a["clients"], a["dropped"]) == (b["clients"], b["dropped"])
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["accuracy"] == pytest.approx(b["accuracy"], abs=1 / 360)
        assert (a["epsilon"] is None) == (b["epsilon"] is None)
        if a["epsilon"] is not None:
            assert a["epsilon"] == pytest.approx(b["epsilon"])
    if "--secure-agg" in extra:
        assert any(r["dropped"] for r in mpi)
