"""Post-processors of tokenizer.json: the special tokens Hugging Face's tokenizers add around
the encoded text when add_special_tokens=True (encode's default there and here).

    TemplateProcessing   Llama 3's "<|begin_of_text|> $A", BERT-style "[CLS] $A [SEP] $B:1 [SEP]:1"
    BertProcessing       [CLS] A [SEP]          and  [CLS] A [SEP] B [SEP]      (type ids 0 / 1)
    RobertaProcessing    <s> A </s>             and  <s> A </s> </s> B </s>     (type ids all 0)
    ByteLevel            no ids added (it only trims offsets, which rtx does not return)
    Sequence             each of its processors in turn

    pp = PostProcessor.from_json(data["post_processor"])
    ids, type_ids = pp.process(ids_a, ids_b)
"""
from __future__ import annotations

__all__ = ["PostProcessor"]


class PostProcessor:
    """One tokenizer.json post_processor. `process(a, b=None)` returns (ids, type_ids)."""

    def __init__(self, data: dict | None):
        self.data = data
        kind = None if data is None else data.get("type")
        if kind not in (None, "TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"):
            raise ValueError(f"tokenizer.json: post_processor type {kind!r} is not supported (TemplateProcessing, "
                             f"BertProcessing, RobertaProcessing, ByteLevel, Sequence)")
        self.kind = kind
        self.steps = [PostProcessor(p) for p in data.get("processors", ())] if kind == "Sequence" else []
        if kind == "TemplateProcessing":
            self.special = {name: list(tok["ids"]) for name, tok in (data.get("special_tokens") or {}).items()}
            for which in ("single", "pair"):
                for item in data.get(which) or ():
                    if "SpecialToken" in item and item["SpecialToken"]["id"] not in self.special:
                        raise ValueError(f"tokenizer.json: the {which} template names the special token "
                                         f"{item['SpecialToken']['id']!r}, which special_tokens does not list")

    @classmethod
    def from_json(cls, data: dict | None) -> PostProcessor:
        return cls(data)

    def to_json(self) -> dict | None:
        return self.data

    def added(self, pair: bool = False) -> int:
        """How many ids process() adds (HF's num_special_tokens_to_add)."""
        a, b = [0], ([0] if pair else None)
        return len(self.process(a, b)[0]) - (2 if pair else 1)

    def process(self, a: list[int], b: list[int] | None = None) -> tuple[list[int], list[int]]:
        d = self.data
        if self.kind in (None, "ByteLevel"):
            return a + (b or []), [0] * len(a) + [1] * len(b or [])
        if self.kind == "Sequence":
            # tokenizers runs each processor on the encodings the previous one returned; only one
            # of them may add tokens (ByteLevel + Template is what Llama 3's file holds)
            adders = [s for s in self.steps if s.kind not in (None, "ByteLevel")]
            if len(adders) > 1:
                raise ValueError("tokenizer.json: a Sequence post_processor with more than one step that adds tokens "
                                 "is not supported")
            return adders[0].process(a, b) if adders else PostProcessor(None).process(a, b)
        if self.kind == "BertProcessing":
            cls_id, sep_id = d["cls"][1], d["sep"][1]
            ids, types = [cls_id] + a + [sep_id], [0] * (len(a) + 2)
            if b is not None:
                ids += b + [sep_id]
                types += [1] * (len(b) + 1)
            return ids, types
        if self.kind == "RobertaProcessing":
            cls_id, sep_id = d["cls"][1], d["sep"][1]
            ids = [cls_id] + a + [sep_id]
            if b is not None:
                ids += [sep_id] + b + [sep_id]
            return ids, [0] * len(ids)
        # TemplateProcessing
        ids, types = [], []
        for item in d["pair" if b is not None else "single"]:
            if "Sequence" in item:
                seq = a if item["Sequence"]["id"] == "A" else b
                if seq is None:
                    raise ValueError("tokenizer.json: the single template names sequence $B")
                ids += seq
                types += [item["Sequence"]["type_id"]] * len(seq)
            else:
                new = self.special[item["SpecialToken"]["id"]]
                ids += new
                types += [item["SpecialToken"]["type_id"]] * len(new)
        return ids, types

    def __repr__(self):
        return f"PostProcessor({self.kind})"
