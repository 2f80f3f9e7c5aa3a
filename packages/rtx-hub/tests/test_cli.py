"""`rtx hub ...`: exit codes 0/1/2, messages on stderr without tracebacks, table and JSON output."""
import json
import subprocess
import sys

import pytest

from rtx.hub import Registry
from rtx.hub.cli import hub_command


def run(capsys, *argv):
    try:
        code = hub_command(list(argv))
    except SystemExit as e:  # argparse's way out (usage errors, --help)
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_register_list_show_promote_rm(capsys, tmp_path, onnx_file):
    reg = str(tmp_path / "reg")
    code, out, err = run(capsys, "register", "digits", str(onnx_file), "--version", "1.0.0", "--registry", reg,
                         "--metadata", "accuracy=0.98", "author=ann", "-m", "tags=[1,2]", "--card", "Reads digits.")
    assert code == 0, err
    assert out.startswith("registered digits:1.0.0 (onnx, ") and "stage staging" in out
    mv = Registry(reg).get("digits")
    assert mv.metadata == {"accuracy": 0.98, "author": "ann", "tags": [1, 2]} and "Reads digits." in mv.card
    assert run(capsys, "register", "digits", str(onnx_file), "-v", "1.1.0", "--registry", reg,
               "--stage", "production")[0] == 0

    code, out, _ = run(capsys, "list", "--registry", reg)
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["NAME", "VERSION", "STAGE", "FORMAT", "SIZE", "CREATED"]
    assert [line.split()[:4] for line in lines[1:]] == [["digits", "1.0.0", "staging", "onnx"],
                                                       ["digits", "1.1.0", "production", "onnx"]]
    code, out, _ = run(capsys, "list", "--registry", reg, "--json", "--stage", "production")
    rows = json.loads(out)
    assert [(r["name"], r["version"], r["stage"]) for r in rows] == [("digits", "1.1.0", "production")]
    assert rows[0]["sha256"] == Registry(reg).get("digits", "1.1.0").sha256

    code, out, _ = run(capsys, "show", "digits", "--registry", reg)  # the production version
    assert code == 0 and "version:           1.1.0" in out and "# digits 1.1.0" in out
    code, out, _ = run(capsys, "show", "digits:1.0.0", "--registry", reg, "--json")
    shown = json.loads(out)
    assert shown["version"] == "1.0.0" and "Reads digits." in shown["card"]

    code, out, _ = run(capsys, "promote", "digits", "1.0.0", "production", "--archive-existing", "--registry", reg)
    assert code == 0 and out.strip() == "digits:1.0.0 is now in stage production"
    assert Registry(reg).get("digits", "1.1.0").stage == "archived"
    code, out, _ = run(capsys, "verify", "--registry", reg)
    assert code == 0 and out.count("ok  digits:") == 2
    code, out, _ = run(capsys, "rm", "digits", "1.1.0", "--registry", reg)
    assert code == 0 and out.startswith("removed digits:1.1.0")
    assert [m.version for m in Registry(reg).list()] == ["1.0.0"]


@pytest.mark.parametrize("argv,fragment", [
    (["show", "nope"], "rtx hub show: error: no model 'nope' in the registry"),
    (["register", "../x", "{onnx}", "--version", "1.0.0"], "rtx hub register: error: invalid model name '../x'"),
    (["register", "m", "{onnx}", "--version", "1.0"], "expected a semantic version MAJOR.MINOR.PATCH"),
    (["register", "m", "{missing}", "--version", "1.0.0"], "does not exist"),
    (["promote", "m", "1.0.0", "production"], "rtx hub promote: error: no model 'm'"),
    (["rm", "m", "1.0.0"], "rtx hub rm: error: no model 'm'"),
    (["register", "m", "{onnx}", "--version", "1.0.0", "--signature", "{missing}"], "cannot read the signature file"),
])
def test_registry_errors_exit_1_without_traceback(capsys, tmp_path, onnx_file, argv, fragment):
    argv = [a.format(onnx=onnx_file, missing=tmp_path / "missing.onnx") for a in argv]
    code, out, err = run(capsys, *argv, "--registry", str(tmp_path / "reg"))
    assert code == 1 and fragment in err and "Traceback" not in err and out == ""


def test_tampered_artifact_verify_exits_1(capsys, tmp_path, onnx_file):
    reg = str(tmp_path / "reg")
    run(capsys, "register", "m", str(onnx_file), "--version", "1.0.0", "--registry", reg)
    artifact = Registry(reg).get("m").artifact
    artifact.write_bytes(artifact.read_bytes()[:-1])
    code, _, err = run(capsys, "verify", "m:1.0.0", "--registry", reg)
    assert code == 1 and "does not match its registered checksum" in err and str(artifact) in err


@pytest.mark.parametrize("argv,fragment", [
    ([], "a command is required"),
    (["register", "m"], "the following arguments are required"),
    (["register", "m", "f.onnx"], "the following arguments are required: --version"),
    (["promote", "m", "1.0.0", "prod"], "invalid choice: 'prod'"),
    (["register", "m", "f.onnx", "-v", "1.0.0", "--metadata", "novalue"], "expected KEY=VALUE, got 'novalue'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors_exit_2(capsys, argv, fragment):
    code, _, err = run(capsys, *argv)
    assert code == 2 and fragment in err


def test_registry_from_environment(capsys, tmp_path, onnx_file, monkeypatch):
    monkeypatch.setenv("RTX_HUB_REGISTRY", str(tmp_path / "envreg"))
    assert run(capsys, "register", "m", str(onnx_file), "--version", "1.0.0")[0] == 0
    assert [m.name for m in Registry(tmp_path / "envreg").list()] == ["m"]
    monkeypatch.delenv("RTX_HUB_REGISTRY")
    monkeypatch.setenv("RTX_HOME", str(tmp_path / "home"))
    assert run(capsys, "register", "n", str(onnx_file), "--version", "1.0.0")[0] == 0
    assert [m.name for m in Registry(tmp_path / "home" / "registry").list()] == ["n"]
    code, out, _ = run(capsys, "list")
    assert code == 0 and "n  " in out


def test_through_the_rtx_command(tmp_path, onnx_file):
    """The entry point is installed: `rtx hub` runs as a separate process."""
    def rtx(*argv):
        return subprocess.run([sys.executable, "-m", "rtx.runtime.cli", "hub", *argv, "--registry",
                               str(tmp_path / "reg")], capture_output=True, text=True, timeout=120)

    r = rtx("register", "m", str(onnx_file), "--version", "0.1.0")
    assert r.returncode == 0, r.stderr
    r = rtx("show", "m:9.0.0")
    assert r.returncode == 1 and "model 'm' has no version '9.0.0'; versions: 0.1.0 (staging)" in r.stderr
    assert "Traceback" not in r.stderr
