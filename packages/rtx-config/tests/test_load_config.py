"""load_config: types, priorities, and the message of every error."""
import dataclasses
import enum
from pathlib import Path
from typing import Literal, Optional

import pytest

from rtx.config import ConfigError, field_doc, load_config


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Limits:
    max_body_bytes: int = field_doc(1 << 20, "largest request body")
    timeout_s: float = 30.0


@dataclasses.dataclass
class Server:
    host: str = "127.0.0.1"
    port: int = field_doc(8000, "TCP port")
    debug: bool = False
    root: Optional[Path] = None
    tags: list[str] = field_doc(["a"], "tags")
    shape: tuple[int, ...] = (1, 2)
    mode: Literal["fast", "slow"] = "fast"
    color: Color = Color.RED
    limits: Limits = dataclasses.field(default_factory=Limits)
    weights: dict[str, float] = dataclasses.field(default_factory=dict)


def write(tmp_path, text, name="serve.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_defaults_when_nothing_given():
    assert load_config(Server, env={}) == Server()


def test_toml_file_all_types(tmp_path):
    p = write(tmp_path, """
host = "0.0.0.0"
port = 9000
debug = true
root = "~/models"
tags = ["x", "y"]
shape = [3, 4, 5]
mode = "slow"
color = "blue"
weights = {a = 1, b = 2.5}
[limits]
max_body_bytes = 1024
""")
    cfg = load_config(Server, p, env={})
    assert cfg == Server(host="0.0.0.0", port=9000, debug=True, root=Path("~/models").expanduser(),
                         tags=["x", "y"], shape=(3, 4, 5), mode="slow", color=Color.BLUE,
                         limits=Limits(max_body_bytes=1024, timeout_s=30.0), weights={"a": 1.0, "b": 2.5})
    assert isinstance(cfg.weights["a"], float)  # an int where a float is expected becomes a float


def test_section_and_missing_section(tmp_path):
    p = write(tmp_path, "[tool.rtx.server]\nport = 1234\n[other]\nport = 'not ours'\n")
    assert load_config(Server, p, section="tool.rtx.server", env={}).port == 1234
    assert load_config(Server, p, section="absent", env={}) == Server()


def test_priority_defaults_file_env_overrides(tmp_path):
    p = write(tmp_path, "port = 1\nhost = 'file'\ndebug = true\n[limits]\ntimeout_s = 5\n")
    env = {"RTX_SERVE_PORT": "2", "RTX_SERVE_HOST": "env", "RTX_SERVE_LIMITS__MAX_BODY_BYTES": "77"}
    cfg = load_config(Server, p, env_prefix="RTX_SERVE_", env=env, overrides={"port": 3})
    assert (cfg.port, cfg.host, cfg.debug) == (3, "env", True)
    assert cfg.limits == Limits(max_body_bytes=77, timeout_s=5.0)  # nested tables merge field by field


def test_env_prefix_none_ignores_environment():
    assert load_config(Server, env_prefix=None, env={"RTX_PORT": "5"}).port == 8000
    assert load_config(Server, env={"RTX_PORT": "5"}).port == 5  # the default prefix is RTX_


@pytest.mark.parametrize("text,value", [("1", True), ("0", False), ("true", True), ("False", False),
                                        ("yes", True), ("no", False), ("on", True), ("OFF", False)])
def test_env_bools(text, value):
    assert load_config(Server, env={"RTX_DEBUG": text}).debug is value


def test_env_parsing_of_every_type():
    env = {"RTX_TAGS": "a, b ,c", "RTX_SHAPE": "[7, 8]", "RTX_ROOT": "/srv/m", "RTX_MODE": "SLOW",
           "RTX_COLOR": "BLUE", "RTX_WEIGHTS": '{"x": 1}', "RTX_LIMITS__TIMEOUT_S": "1e-3", "RTX_PORT": " 81 "}
    cfg = load_config(Server, env=env)
    assert cfg.tags == ["a", "b", "c"] and cfg.shape == (7, 8) and cfg.root == Path("/srv/m")
    assert cfg.mode == "slow" and cfg.color is Color.BLUE and cfg.weights == {"x": 1.0}
    assert cfg.limits.timeout_s == 1e-3 and cfg.port == 81
    assert load_config(Server, env={"RTX_ROOT": ""}).root is None
    assert load_config(Server, env={"RTX_TAGS": ""}).tags == []


def test_overrides_dotted_nested_and_strings():
    cfg = load_config(Server, env={}, overrides={"limits.timeout_s": "2.5", "limits": {"max_body_bytes": 9},
                                                  "debug": "true", "root": None})
    assert cfg.limits == Limits(9, 2.5) and cfg.debug is True and cfg.root is None
    limits = Limits(1, 2.0)
    assert load_config(Server, env={}, overrides={"limits": limits}).limits is limits


def test_required_fields_and_nested_required():
    @dataclasses.dataclass
    class Inner:
        path: Path

    @dataclasses.dataclass
    class Job:
        name: str
        inner: Inner
        lr: float = 0.1

    with pytest.raises(ConfigError, match=r"config key 'name' is required \(str\)") as e:
        load_config(Job, env={})
    assert e.value.key == "name"
    with pytest.raises(ConfigError, match=r"config key 'inner.path' is required \(Path\)"):
        load_config(Job, env={}, overrides={"name": "x"})
    job = load_config(Job, env={"RTX_NAME": "j", "RTX_INNER__PATH": "/tmp/x"})
    assert job == Job("j", Inner(Path("/tmp/x")))


# ---- error messages: key path, expected type, value found, source -------------------------------


def test_error_env_names_key_type_value_and_variable():
    with pytest.raises(ConfigError) as e:
        load_config(Server, env_prefix="RTX_SERVE_", env={"RTX_SERVE_LIMITS__MAX_BODY_BYTES": "1MB"})
    assert str(e.value) == ("config key 'limits.max_body_bytes' (from env RTX_SERVE_LIMITS__MAX_BODY_BYTES): "
                            "expected int, found '1MB'")
    assert (e.value.key, e.value.expected, e.value.found) == ("limits.max_body_bytes", "int", "1MB")
    assert e.value.source == "env RTX_SERVE_LIMITS__MAX_BODY_BYTES"
    assert isinstance(e.value, ValueError)


def test_error_file_names_file_and_section(tmp_path):
    p = write(tmp_path, "[server]\nport = '80'\n")
    with pytest.raises(ConfigError) as e:
        load_config(Server, p, section="server", env={})
    assert str(e.value) == f"config key 'port' (from {p} [server]): expected int, found '80' (str)"


@pytest.mark.parametrize("overrides,message", [
    ({"port": 1.5}, "config key 'port' (from overrides): expected int, found 1.5 (float)"),
    ({"port": True}, "config key 'port' (from overrides): expected int, found True (bool)"),
    ({"debug": 1}, "config key 'debug' (from overrides): expected bool, found 1 (int)"),
    ({"host": 5}, "config key 'host' (from overrides): expected str, found 5 (int)"),
    ({"limits.timeout_s": "soon"}, "config key 'limits.timeout_s' (from overrides): expected float, found 'soon'"),
    ({"mode": "medium"}, "config key 'mode' (from overrides): expected one of 'fast', 'slow', found 'medium' (str)"),
    ({"color": "green"}, "config key 'color' (from overrides): expected one of 'red', 'blue' (Color), "
                         "found 'green' (str)"),
    ({"tags": ["a", 2]}, "config key 'tags[1]' (from overrides): expected str, found 2 (int)"),
    ({"tags": "a"}, None),  # a string is parsed like an env var: one item
    ({"shape": 3}, "config key 'shape' (from overrides): expected tuple[int, ...], found 3 (int)"),
    ({"weights": {"a": "x"}}, "config key 'weights.a' (from overrides): expected float, found 'x' (str)"),
    ({"weights": [1]}, "config key 'weights' (from overrides): expected dict[str, float], found [1] (list)"),
    ({"root": 3}, "config key 'root' (from overrides): expected Path or None, found 3 (int)"),
    ({"limits": 3}, "config key 'limits' (from overrides): expected a table (Limits), found 3 (int)"),
])
def test_error_messages_for_each_type(overrides, message):
    if message is None:
        assert load_config(Server, env={}, overrides=overrides).tags == ["a"]
        return
    with pytest.raises(ConfigError) as e:
        load_config(Server, env={}, overrides=overrides)
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize("env,message", [
    ({"RTX_DEBUG": "maybe"}, "config key 'debug' (from env RTX_DEBUG): expected bool, found 'maybe' "
                             "(use 1/0, true/false, yes/no or on/off)"),
    ({"RTX_PORT": "80.5"}, "config key 'port' (from env RTX_PORT): expected int, found '80.5'"),
    ({"RTX_SHAPE": "1, x"}, "config key 'shape[1]' (from env RTX_SHAPE): expected int, found 'x'"),
    ({"RTX_SHAPE": "[1, "}, "config key 'shape' (from env RTX_SHAPE): expected tuple[int, ...], found '[1, ' "
                            "(not valid JSON"),
    ({"RTX_WEIGHTS": "[1]"}, "config key 'weights' (from env RTX_WEIGHTS): expected dict[str, float], "
                             "found '[1]' (the JSON is a list, not a dict)"),
    ({"RTX_WEIGHTS": '{"a": "b"}'}, "config key 'weights.a' (from env RTX_WEIGHTS): expected float, found 'b'"),
])
def test_error_messages_from_env(env, message):
    with pytest.raises(ConfigError) as e:
        load_config(Server, env=env)
    assert str(e.value).startswith(message), str(e.value)


def test_unknown_key_lists_valid_keys_and_suggests(tmp_path):
    p = write(tmp_path, "portt = 80\n")
    with pytest.raises(ConfigError) as e:
        load_config(Server, p, env={})
    assert str(e.value) == (f"unknown config key 'portt' (from {p}); valid keys at the top level: host, port, debug, "
                            "root, tags, shape, mode, color, limits, weights (did you mean 'port'?)")
    with pytest.raises(ConfigError, match=r"unknown config key 'limits.max_bytes' \(from overrides\); valid keys "
                                          r"of 'limits': max_body_bytes, timeout_s"):
        load_config(Server, env={}, overrides={"limits.max_bytes": 1})


def test_unknown_env_vars_are_ignored():
    # Other tools share the prefix (RTX_HOME); only the names of fields are read.
    assert load_config(Server, env={"RTX_HOME": "/x", "RTX_PROT": "1"}) == Server()


def test_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="config file '.*nope.toml' not found"):
        load_config(Server, tmp_path / "nope.toml", env={})
    bad = write(tmp_path, "port = = 1\n", "bad.toml")
    with pytest.raises(ConfigError, match=r"config file '.*bad.toml' is not valid TOML: .*line 1"):
        load_config(Server, bad, env={})
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(Server, tmp_path, env={})
    notable = write(tmp_path, "server = 3\n", "s.toml")
    with pytest.raises(ConfigError, match=r"\[server\] must be a table, found 3"):
        load_config(Server, notable, section="server", env={})
    (tmp_path / "latin1.toml").write_bytes(b"host = '\xe9'\n")
    with pytest.raises(ConfigError, match="not UTF-8|not valid TOML"):
        load_config(Server, tmp_path / "latin1.toml", env={})


def test_post_init_errors_become_config_errors():
    @dataclasses.dataclass
    class Ranged:
        lr: float = 0.1

        def __post_init__(self):
            if not 0 < self.lr < 1:
                raise ValueError(f"lr must be in (0, 1), got {self.lr}")

    with pytest.raises(ConfigError, match=r"invalid configuration Ranged: lr must be in \(0, 1\), got 2.0"):
        load_config(Ranged, env={"RTX_LR": "2"})


@dataclasses.dataclass
class StringAnnotated:
    port: "int" = 1
    limits: "Limits" = dataclasses.field(default_factory=Limits)


def test_string_annotations_are_resolved():
    cfg = load_config(StringAnnotated, env={"RTX_PORT": "2", "RTX_LIMITS__TIMEOUT_S": "3"})
    assert cfg.port == 2 and cfg.limits.timeout_s == 3.0


def test_unresolvable_annotation_is_a_clear_type_error():
    @dataclasses.dataclass
    class Local:
        x: "Missing" = None  # noqa: F821

    with pytest.raises(TypeError, match=r"cannot resolve the annotations of .*Local: name 'Missing' is not defined"):
        load_config(Local, env={})


def test_not_a_dataclass_and_unsupported_type():
    with pytest.raises(TypeError, match="cls must be a dataclass type"):
        load_config(dict)

    @dataclasses.dataclass
    class Odd:
        x: complex = 1j

    with pytest.raises(TypeError, match="field 'x' has an unsupported type"):
        load_config(Odd, env={"RTX_X": "1"})


def test_optional_nested_dataclass_and_list_of_dataclasses(tmp_path):
    @dataclasses.dataclass
    class Route:
        model: str
        weight: float = 1.0

    @dataclasses.dataclass
    class Router:
        routes: list[Route] = dataclasses.field(default_factory=list)
        fallback: Optional[Route] = None

    p = write(tmp_path, "[[routes]]\nmodel = 'a'\n[[routes]]\nmodel = 'b'\nweight = 3\n[fallback]\nmodel = 'c'\n")
    r = load_config(Router, p, env={})
    assert r == Router([Route("a"), Route("b", 3.0)], Route("c"))
    with pytest.raises(ConfigError, match=r"unknown config key 'routes\[0\].mdl'.*valid keys of 'routes\[0\]': "
                                          r"model, weight"):
        load_config(Router, env={}, overrides={"routes": [{"mdl": "a"}]})
    assert load_config(Router, env={"RTX_ROUTES": '[{"model": "z"}]'}).routes == [Route("z")]


# --- regressions found in review ---------------------------------------------------------------

def test_huge_numbers_are_config_errors_not_crashes(tmp_path):
    # float(10**400) raises OverflowError; tomllib raises a bare ValueError past 4300 digits.
    with pytest.raises(ConfigError, match=r"'limits.timeout_s'.*too large for a float"):
        load_config(Server, write(tmp_path, "[limits]\ntimeout_s = " + "9" * 400 + "\n"), env={})
    with pytest.raises(ConfigError, match="cannot be read.*4300"):
        load_config(Server, write(tmp_path, "port = " + "9" * 5000 + "\n", "big.toml"), env={})
    with pytest.raises(ConfigError, match=r"'port' \(from env RTX_PORT\): expected int, .*more digits") as e:
        load_config(Server, env={"RTX_PORT": "9" * 5000})
    assert len(str(e.value)) < 300  # the value is shortened in the message
    assert load_config(Server, env={"RTX_PORT": "9" * 40}).port == int("9" * 40)
    with pytest.raises(ConfigError, match=r"expected int, found 'digits'$"):  # not "more digits than..."
        load_config(Server, env={"RTX_PORT": "digits"})


def test_env_ints_ascii_only_and_signed_prefixes():
    assert load_config(Server, env={"RTX_PORT": "-0x10"}).port == -16
    assert load_config(Server, env={"RTX_PORT": "+0o17"}).port == 15
    for text in ("٣", "１２"):  # Unicode digits that int() would accept
        with pytest.raises(ConfigError, match="expected int"):
            load_config(Server, env={"RTX_PORT": text})
    with pytest.raises(ConfigError, match="expected float"):
        load_config(Server, env={"RTX_LIMITS__TIMEOUT_S": "١.٥"})


def test_env_var_for_a_nested_table_as_json():
    # RTX_LIMITS used to be silently ignored; it is now a JSON table, and single fields win over it.
    cfg = load_config(Server, env={"RTX_LIMITS": '{"timeout_s": 2, "max_body_bytes": 7}',
                                   "RTX_LIMITS__MAX_BODY_BYTES": "9"})
    assert cfg.limits == Limits(max_body_bytes=9, timeout_s=2.0)
    with pytest.raises(ConfigError, match=r"unknown config key 'limits.nope' \(from env RTX_LIMITS\)"):
        load_config(Server, env={"RTX_LIMITS": '{"nope": 1}'})
    with pytest.raises(ConfigError, match=r"'limits' \(from env RTX_LIMITS\).*not valid JSON"):
        load_config(Server, env={"RTX_LIMITS": "timeout_s=2"})


def test_misspelled_section_is_an_error_not_silently_empty(tmp_path):
    p = write(tmp_path, "[sever]\nport = 9000\n[other]\nx = 1\n")
    with pytest.raises(ConfigError, match=r"no \[server\] table \(did you mean \[sever\]\?\)"):
        load_config(Server, p, section="server", env={})
    assert load_config(Server, p, section="unrelated", env={}) == Server()
