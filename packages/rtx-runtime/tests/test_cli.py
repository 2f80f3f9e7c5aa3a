"""The `rtx` console script, run as a subprocess of this interpreter (so it works in any venv)."""
import json
import os
import subprocess
import sys
import textwrap
from importlib import metadata

import numpy as np
import pytest

MAIN = "from rtx.runtime.cli import main; raise SystemExit(main())"


def rtx(*args, env=None):
    return subprocess.run([sys.executable, "-c", MAIN, *args], capture_output=True, text=True, timeout=120,
                          env=env)


@pytest.fixture(scope="module")
def help_run():
    return rtx("--help")


def test_help_lists_installed_commands_with_their_description(help_run):
    assert help_run.returncode == 0, help_run.stderr
    info_line = next(line for line in help_run.stdout.splitlines() if line.strip().startswith("info "))
    assert "Show the installation" in info_line


def test_help_says_which_package_brings_a_missing_command(help_run):
    if any(ep.name == "hub" for ep in metadata.entry_points(group="rtx.commands")):
        pytest.skip("rtx-hub is installed here")
    hub_line = next(line for line in help_run.stdout.splitlines() if line.strip().startswith("hub "))
    assert "pip install rtx-hub" in hub_line


def test_missing_known_command_says_what_to_install():
    if any(ep.name == "serve" for ep in metadata.entry_points(group="rtx.commands")):
        pytest.skip("rtx-serving-api is installed here")
    r = rtx("serve", "--port", "8000")
    assert r.returncode == 2
    assert "pip install rtx-serving-api" in r.stderr


def test_unknown_command_exits_2_with_a_message():
    r = rtx("no-such-command")
    assert r.returncode == 2
    assert "unknown command 'no-such-command'" in r.stderr
    assert "rtx --help" in r.stderr


def test_info_reports_numpy_and_the_cpu():
    r = rtx("info")
    assert r.returncode == 0, r.stderr
    assert np.__version__ in r.stdout
    assert "cpu" in r.stdout
    assert "rtx-runtime" in r.stdout
    for key in ("python", "cupy", "blas", "devices", "autograd", "kernels"):
        assert key in r.stdout


def test_info_json_is_one_object():
    r = rtx("info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["numpy"] == np.__version__
    assert "cpu" in info["devices"]
    assert info["rtx packages"]["rtx-runtime"] == metadata.version("rtx-runtime")


def test_a_distribution_adds_a_command_through_its_entry_point(tmp_path):
    # A fake installed distribution: a module plus a dist-info with an rtx.commands entry point.
    (tmp_path / "rtx_hello_plugin.py").write_text(textwrap.dedent('''
        def hello(argv):
            """Say hello to each argument.

            Not part of the one-line description."""
            print("hello", *argv)
            return 3
    '''))
    info = tmp_path / "rtx_hello-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rtx-hello\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[rtx.commands]\nhello = rtx_hello_plugin:hello\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}

    r = rtx("hello", "a", "b", env=env)
    assert (r.returncode, r.stdout.strip()) == (3, "hello a b"), r.stderr
    h = rtx("--help", env=env)
    hello_line = next(line for line in h.stdout.splitlines() if line.strip().startswith("hello "))
    assert hello_line.split(None, 1)[1] == "Say hello to each argument."
