"""load_text_generator: dispatch on the checkpoint's "format" through the rtx.text_generators entry
points (replaced here by fakes, so this package's tests need no model package)."""
import pytest

import rtx
from rtx.streaming import TextGenerator, generators, load_text_generator


class Echo:
    def __init__(self, path, checkpoint, **options):
        self.path, self.checkpoint, self.options = path, checkpoint, options

    def stream_text(self, prompt, **params):
        yield from prompt.split()


class FakeEntryPoint:
    def __init__(self, name, loader):
        self.name, self.value, self._loader = name, f"fake:{name}", loader

    def load(self):
        return self._loader


@pytest.fixture
def installed(monkeypatch):
    eps = [FakeEntryPoint("echo/1", Echo), FakeEntryPoint("broken/1", lambda path, checkpoint: 42)]
    monkeypatch.setattr(generators, "entry_points", lambda group: eps if group == "rtx.text_generators" else [])


def test_dispatches_on_the_format_field(installed, tmp_path):
    path = tmp_path / "m.rtx"
    rtx.save({"format": "echo/1", "weights": rtx.arange(3)}, path)
    gen = load_text_generator(path, device="cpu")
    assert isinstance(gen, Echo) and isinstance(gen, TextGenerator)
    assert gen.path == path and gen.options == {"device": "cpu"}
    assert gen.checkpoint["weights"].tolist() == [0, 1, 2]      # loaded once, handed over
    assert list(gen.stream_text("a b c")) == ["a", "b", "c"]


def test_unknown_or_missing_format_names_the_installed_ones(installed, tmp_path):
    path = tmp_path / "m.rtx"
    rtx.save({"format": "gpt-99/1"}, path)
    with pytest.raises(ValueError, match=r"no loader for checkpoint format 'gpt-99/1'.*installed formats: "
                                         r"broken/1, echo/1"):
        load_text_generator(path)
    rtx.save({"weights": rtx.zeros(1)}, path)
    with pytest.raises(ValueError, match=r"has no \"format\" field .* installed formats: broken/1, echo/1"):
        load_text_generator(path)
    rtx.save([rtx.zeros(1)], path)
    with pytest.raises(ValueError, match="holds a list"):
        load_text_generator(path)


def test_a_loader_must_return_a_text_generator(installed, tmp_path):
    path = tmp_path / "m.rtx"
    rtx.save({"format": "broken/1"}, path)
    with pytest.raises(TypeError, match="fake:broken/1 for 'broken/1' returned int, which has no stream_text"):
        load_text_generator(path)


def test_bad_paths(installed, tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint file at"):
        load_text_generator(tmp_path / "missing.rtx")
    with pytest.raises(TypeError, match="path must be a str or os.PathLike, got int"):
        load_text_generator(3)


def test_formats_lists_the_installed_loaders(installed):
    # (was: an all() over the real entry points, which passed on an empty dict)
    assert generators.text_generator_formats() == {"echo/1": "fake:echo/1", "broken/1": "fake:broken/1"}


def test_formats_include_rtx_nlg_when_it_is_installed():
    pytest.importorskip("rtx.nlg.serving")  # a model package above this one: only when the workspace has it
    assert generators.text_generator_formats().get("rtx-nlg-gpt/1") == "rtx.nlg.serving:load_gpt_checkpoint"


def test_collect_text_returns_the_text_and_the_finish_reason():
    from rtx.streaming import collect_text

    def gen(reason):
        yield "a"
        yield "bc"
        return reason

    assert collect_text(gen("length")) == ("abc", "length")
    assert collect_text(gen(None)) == ("abc", "stop")
    assert collect_text(["x", "y"]) == ("xy", "stop")
    with pytest.raises(ValueError, match="finish_reason 'eos'"):
        collect_text(gen("eos"))
    with pytest.raises(TypeError, match="yielded int"):
        collect_text([1])
