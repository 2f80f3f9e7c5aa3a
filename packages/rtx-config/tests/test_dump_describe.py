"""to_toml round-trips through load_config (checked by hypothesis, and by tomllib as the parser);
describe lists every key; field_doc stores docs and copies mutable defaults."""
import dataclasses
import enum
import math
import tomllib
from pathlib import Path
from typing import Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtx.config import describe, dump, field_doc, keys, load_config, to_toml


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Optim:
    lr: float = field_doc(1e-3, "learning rate")
    betas: tuple[float, ...] = (0.9, 0.999)


@dataclasses.dataclass
class Train:
    name: str = "run"
    epochs: int = 10
    amp: bool = False
    out: Path = Path("runs")
    resume: Optional[str] = None
    layers: list[int] = field_doc([64, 64], "hidden sizes")
    tags: dict[str, str] = dataclasses.field(default_factory=dict)
    mode: Literal["a", "b"] = "a"
    level: Level = Level.LOW
    optim: Optim = dataclasses.field(default_factory=Optim)


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
floats = st.floats(allow_nan=False, width=64)
configs = st.builds(
    Train, name=text, epochs=st.integers(-2**63, 2**63 - 1), amp=st.booleans(),
    out=st.sampled_from([Path("runs"), Path("/a b/c"), Path("x/ü")]), resume=st.none() | text,
    layers=st.lists(st.integers(0, 10**6), max_size=5), tags=st.dictionaries(text, text, max_size=3),
    mode=st.sampled_from(["a", "b"]), level=st.sampled_from(list(Level)),
    optim=st.builds(Optim, lr=floats, betas=st.lists(floats, max_size=3).map(tuple)))


@settings(max_examples=60, deadline=None)
@given(configs)
def test_to_toml_round_trips(tmp_path_factory, cfg):
    path = tmp_path_factory.mktemp("cfg") / "train.toml"
    dump(cfg, path)
    tomllib.loads(path.read_text())  # valid TOML for the reference parser
    back = load_config(Train, path, env_prefix=None)
    # resume=None is left out of the file, so it comes back as its default, which is None
    assert back == cfg


def test_to_toml_special_floats_and_section():
    cfg = Train(optim=Optim(lr=math.inf, betas=(-math.inf,)))
    out = to_toml(cfg, section="train")
    assert out.startswith("[train]\n") and "[train.optim]" in out and "lr = inf" in out
    assert tomllib.loads(out)["train"]["optim"]["betas"] == [-math.inf]
    with pytest.raises(TypeError, match="expected a dataclass instance"):
        to_toml(Train)


def test_describe_lists_keys_types_defaults_env_and_docs():
    rows = {k["key"]: k for k in keys(Train, env_prefix="RTX_TRAIN_")}
    assert list(rows) == ["name", "epochs", "amp", "out", "resume", "layers", "tags", "mode", "level",
                          "optim.lr", "optim.betas"]
    assert rows["optim.lr"] == {"key": "optim.lr", "type": "float", "default": "0.001",
                                "env": "RTX_TRAIN_OPTIM__LR", "doc": "learning rate"}
    assert rows["resume"]["type"] == "str or None" and rows["out"]["default"] == "'runs'"
    assert rows["level"]["type"] == "one of 1, 2 (Level)"
    table = describe(Train, env_prefix="RTX_TRAIN_")
    assert table.splitlines()[0].split() == ["key", "type", "default", "env", "doc"]
    assert any(line.startswith("layers") and "RTX_TRAIN_LAYERS" in line and "hidden sizes" in line
               for line in table.splitlines())
    assert keys(Train, env_prefix=None)[0]["env"] is None


def test_field_doc_copies_mutable_defaults():
    a, b = Train(), Train()
    a.layers.append(1)
    assert b.layers == [64, 64]
    f = {f.name: f for f in dataclasses.fields(Train)}["layers"]
    assert f.metadata["doc"] == "hidden sizes"
