"""`rtx multimodal train-clip` and `zero-shot`: a short run in the suite (300 steps of 64, ~35 s);
the full run (600 steps of 128: >= 90% zero-shot, R@1 >= 80%) is opt-in with RTX_LONG=1."""
import os

import pytest
from PIL import Image

from rtx.multimodal.cli import multimodal_command
from rtx.multimodal.train import EVAL_TEMPLATES, TRAIN_TEMPLATES, digits_split, train


def test_eval_captions_never_seen_in_training():
    train_caps = {t.format(w=w, d=d) for t in TRAIN_TEMPLATES for d, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])}
    for t in EVAL_TEMPLATES:
        for w in ["zero", "seven"]:
            assert t.format(w) not in train_caps


def test_train_clip_cli_short_run_learns_and_zero_shot_cli(tmp_path, capsys):
    out = tmp_path / "clip"
    assert multimodal_command(["train-clip", "--dataset", "digits", "--out", str(out), "--steps", "300",
                               "--batch-size", "64", "--lr", "1e-3", "--no-progress"]) == 0
    text = capsys.readouterr().out
    acc = float(text.split("zero-shot accuracy ")[1].split("%")[0])
    r1 = float(text.split("image->text R@1 ")[1].split("%")[0])
    assert acc >= 80.0 and r1 >= 70.0, text       # chance is 10%; the full run reaches the issue's 90% / 80%
    for f in ("config.json", "model.safetensors", "vocab.json", "merges.txt", "preprocessor_config.json"):
        assert (out / f).exists()
    (_, _), (te_x, te_y) = digits_split(0)
    files = []
    for i in range(3):
        f = tmp_path / f"d{i}.png"
        Image.fromarray(te_x[i]).save(f)
        files.append(str(f))
    assert multimodal_command(["zero-shot", str(out), "--images", *files]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and all(ln.startswith(str(tmp_path)) for ln in lines)


@pytest.mark.skipif(not os.environ.get("RTX_LONG"), reason="full learning run: RTX_LONG=1")
def test_full_run_reaches_the_issue_targets(tmp_path):
    r = train(out=tmp_path / "clip", max_steps=600, minutes=30, lr=1e-3, progress=False)
    assert r.zero_shot_accuracy >= 0.90 and r.retrieval["image_to_text_R@1"] >= 0.80


SHORT_CAPTIONER_MIN = 25.0   # percent; chance is 10% (measured: 43% at 300 steps, lr 3e-3)


def test_train_captioner_cli_short_run(tmp_path, capsys):
    """300 steps at lr 3e-3 (~30 s): well above chance; the opt-in run below reaches the issue's 90%."""
    from rtx.multimodal.train_captioner import names_digit
    assert names_digit("a handwritten 7", 7) and names_digit("the digit seven", 7)
    assert not names_digit("a seven or a 1", 7) and not names_digit("a photo", 7)
    out = tmp_path / "cap"
    assert multimodal_command(["train-captioner", "--dataset", "digits", "--out", str(out), "--steps", "300",
                               "--lr", "3e-3", "--no-progress"]) == 0
    text = capsys.readouterr().out
    acc = float(text.split("held-out digits (359): ")[1].split("%")[0])
    assert acc >= SHORT_CAPTIONER_MIN, text
    for f in ("config.json", "model.safetensors", "vocab.json"):
        assert (out / f).exists()


@pytest.mark.skipif(not os.environ.get("RTX_LONG"), reason="full learning run: RTX_LONG=1")
def test_captioner_full_run_names_the_digit(tmp_path):
    from rtx.multimodal.train_captioner import train_captioner
    r = train_captioner(out=tmp_path / "cap", max_steps=1500, minutes=30, progress=False)
    assert r.accuracy >= 0.90
