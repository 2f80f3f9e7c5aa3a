"""The model card: README.md beside the artifact, for people (model.json is for programs)."""
from __future__ import annotations

import json


def render_card(info: dict, text: str | None) -> str:
    """Markdown: title, the facts from model.json, the signature as tables, then the user's text."""
    lines = [f"# {info['name']} {info['version']}", "",
             "| | |", "| --- | --- |",
             f"| format | {info['format']} |",
             f"| artifact | `{info['artifact']}` ({info['size']:,} bytes) |",
             f"| sha256 | `{info['sha256']}` |",
             f"| created | {info['created']} |"]
    if info.get("checkpoint_format"):
        lines.append(f"| checkpoint format | {info['checkpoint_format']} |")
    if info.get("metadata"):
        lines += ["", "## Metadata", ""]
        lines += [f"- **{k}**: {_cell(v)}" for k, v in info["metadata"].items()]
    sig = info.get("signature")
    if sig:
        lines += ["", "## Signature"]
        for side in ("inputs", "outputs"):
            lines += ["", f"{side.capitalize()}:", "", "| name | datatype | shape |", "| --- | --- | --- |"]
            lines += [f"| {t['name']} | {t['datatype']} | {t['shape']} |" for t in sig.get(side, [])]
    lines += ["", "## Description", "", (text or "").strip() or "_No description was given._", ""]
    return "\n".join(lines)


def _cell(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)
