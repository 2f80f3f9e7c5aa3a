"""The text shipped with rtx-nlg for `rtx nlg train` (see data/README.md for its origin and licence)."""
from __future__ import annotations

from importlib import resources

__all__ = ["load_corpus", "split_corpus"]


def load_corpus() -> str:
    """The bundled public-domain corpus (English verse and prose, 97 KB) as one str."""
    return resources.files("rtx.nlg").joinpath("data", "corpus.txt").read_text(encoding="utf-8")


def split_corpus(text: str, every: int = 10) -> tuple[str, str]:
    """(train, validation): every `every`-th paragraph (blank-line separated) is held out, so both
    parts cover every genre of the corpus and share no paragraph."""
    if every < 2:
        raise ValueError(f"every must be >= 2, got {every}")
    paras = [p for p in text.split("\n\n") if p.strip()]
    if len(paras) < every:
        raise ValueError(f"the text has {len(paras)} paragraphs; need at least {every} to hold one out")
    train = [p for i, p in enumerate(paras) if i % every != every - 1]
    val = [p for i, p in enumerate(paras) if i % every == every - 1]
    return "\n\n".join(train) + "\n\n", "\n\n".join(val) + "\n\n"
