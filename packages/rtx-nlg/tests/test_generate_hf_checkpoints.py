"""rtx.nlg's generate over checkpoints written by Hugging Face transformers 4.x and 5.x
(rtx-transformers' fixtures: GPT-2, Llama 3 with llama3 RoPE, Llama with linear RoPE and MQA,
Mistral's sliding window, Qwen2's biases and per-layer window): greedy decoding of a left-padded
batch gives the ids transformers' generate() gave (max_new_tokens=10, min_new_tokens=10)."""
import json
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.transformers as T
from rtx.nlg.generation import generate

FIXTURES = Path(__file__).resolve().parents[2] / "rtx-transformers" / "tests" / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("hf*/*") if p.is_dir() and (p / "expected.npz").exists()
               and "gen_ids" in np.load(p / "expected.npz"))


def test_fixtures_are_found():
    assert len(CASES) >= 10, FIXTURES


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_greedy_generate_matches_transformers(path):
    exp = np.load(path / "expected.npz")
    arch = json.loads((path / "config.json").read_text())["architectures"][0]
    model = getattr(T, arch).from_pretrained(path)
    out = generate(model, rtx.tensor(exp["pad_ids"]), attention_mask=rtx.tensor(exp["pad_mask"]),
                   max_new_tokens=10, min_new_tokens=10, do_sample=False, pad_token_id=0)
    assert out.tolist() == exp["gen_ids"].tolist()
