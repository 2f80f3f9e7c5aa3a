"""The bundled corpus, `rtx nlg train` (a short run: the loss falls, the checkpoint reloads
to the same logits) and `rtx nlg sample` (streams text, deterministic under a seed)."""
import math

import numpy as np
import pytest

import rtx
from rtx.nlg import load_corpus
from rtx.nlg.cli import nlg_command
from rtx.nlg.corpus import split_corpus
from rtx.nlg.train import TrainConfig, load_checkpoint, train


def test_corpus_is_shipped_small_and_split():
    text = load_corpus()
    assert 50_000 < len(text.encode("utf-8")) <= 300_000
    assert "Shall I compare thee to a summer's day?" in text and "Four score and seven years ago" in text
    train_text, val_text = split_corpus(text)
    assert 0.05 < len(val_text) / len(text) < 0.2
    paras = set(train_text.split("\n\n"))
    assert not any(p in paras for p in val_text.split("\n\n") if p.strip())
    with pytest.raises(ValueError, match="every must be"):
        split_corpus(text, every=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("nlg") / "gpt.rtx"
    cfg = TrainConfig(max_steps=40, target_val_loss=None, vocab_size=300, block_size=32, batch_size=8, n_embd=32,
                      n_layer=1, n_head=2, eval_interval=20, warmup_steps=5, lr=1e-2)
    r = train(cfg, out=str(out), progress=False, log=lambda *a: None)
    return r, out


def test_training_lowers_the_validation_loss(trained):
    r, out = trained
    assert r.steps == 40 and len(r.history) == 2
    # a uniform guess over 300 tokens costs ln(300) = 5.7 nats; 40 steps must do clearly better
    assert r.history[-1][2] < math.log(300) - 0.7
    assert r.best_val_loss == min(h[2] for h in r.history)
    assert out.exists()


def test_checkpoint_reloads_to_the_same_model(trained):
    r, out = trained
    model, tok, ckpt = load_checkpoint(out)
    assert ckpt["val_loss"] == pytest.approx(r.best_val_loss)
    assert len(tok) == 300 and tok.eos_token == "<|endoftext|>"
    ids = rtx.tensor([tok.encode("Shall I compare thee")])
    with rtx.no_grad():
        a = model(ids).logits.numpy()
        b = load_checkpoint(out)[0](ids).logits.numpy()
    np.testing.assert_array_equal(b, a)
    with pytest.raises(ValueError, match="not an rtx nlg checkpoint"):
        bad = out.parent / "bad.rtx"
        rtx.save({"x": rtx.zeros(1)}, str(bad))
        load_checkpoint(bad)


def test_sample_command_streams_and_is_seeded(trained, capsys):
    _, out = trained
    args = ["sample", "--checkpoint", str(out), "--prompt", "To be", "--max-new-tokens", "12", "--seed", "3"]
    assert nlg_command(args) == 0
    first = capsys.readouterr().out
    assert first.startswith("To be") and len(first) > len("To be\n")
    assert nlg_command(args) == 0
    assert capsys.readouterr().out == first
    assert nlg_command(args[:-1] + ["4"]) == 0
    assert capsys.readouterr().out != first
    assert nlg_command(args + ["--temperature", "0", "--num-beams", "2"]) == 0
    assert capsys.readouterr().out.startswith("To be")
    with pytest.raises(SystemExit):
        nlg_command(["sample", "--checkpoint", str(out.parent / "missing.rtx")])
    # past the 32-token context, sampling goes on from the last half of the text
    assert nlg_command(["sample", "--checkpoint", str(out), "--prompt", "To be", "--max-new-tokens", "80"]) == 0
    assert len(capsys.readouterr().out) > 80
    with pytest.raises(SystemExit):
        nlg_command(["sample", "--checkpoint", str(out), "--prompt", ""])
    with pytest.raises(SystemExit):
        nlg_command(["sample", "--checkpoint", str(out), "--num-beams", "2", "--max-new-tokens", "40"])


def test_train_command(tmp_path, capsys, monkeypatch):
    import rtx.nlg.train as T
    small = dict(vocab_size=280, block_size=16, batch_size=4, n_embd=16, n_layer=1, n_head=2)
    orig = T.TrainConfig
    monkeypatch.setattr(T, "TrainConfig", lambda **kw: orig(**{**kw, **small}))
    out = tmp_path / "ck.rtx"
    status = nlg_command(["train", "--steps", "4", "--eval-interval", "2", "--out", str(out), "--no-progress",
                          "--target-loss", "0"])
    text = capsys.readouterr().out
    assert status == 0 and out.exists()
    assert "step     2" in text and "val loss" in text and "checkpoint" in text
    # a target that 2 steps cannot reach: exit status 1, said plainly
    status = nlg_command(["train", "--steps", "2", "--eval-interval", "2", "--out", str(out), "--no-progress",
                          "--target-loss", "0.5"])
    assert status == 1 and "NOT reached" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        nlg_command(["train", "--steps", "0"])
