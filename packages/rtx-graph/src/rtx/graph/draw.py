"""Drawing a Graph: Graphviz DOT text always; SVG/PNG through Graphviz's `dot` when it is on
PATH, else through matplotlib over the networkx view (laid out top to bottom by depth)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

_PALETTE = ["#fde2e4", "#e2ece9", "#dfe7fd", "#fff1e6", "#e8dff5", "#d8f3dc", "#fcefb4", "#cddafd"]


def _esc(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"')


def to_dot(graph):
    lines = ["digraph rtx_graph {", '  rankdir=TB; node [fontname="Helvetica", fontsize=10];']
    for v in graph.inputs:
        lines.append(f'  "{_esc(v.name)}" [shape=ellipse, style=filled, fillcolor="#cfe8ff", '
                     f'label="{_esc(v.name)}\\n{v.dtype.name}{list(v.shape)}"];')
    for v in graph.consts:
        lines.append(f'  "{_esc(v.name)}" [shape=note, fontsize=8, label="{_esc(v.name)}\\n{list(v.shape)}"];')
    for n in graph.nodes:
        shapes = ", ".join(str(list(o.shape)) for o in n.outputs)
        color = _PALETTE[n.group % len(_PALETTE)] if n.group is not None else "white"
        extra = f"\\ngroup {n.group}" if n.group is not None else ""
        lines.append(f'  "{_esc(n.name)}" [shape=box, style="rounded,filled", fillcolor="{color}", '
                     f'label="{_esc(n.op)}\\n{_esc(shapes)}{extra}"];')
        for v in n.inputs:
            src = v.node.name if v.kind == "node" else v.name
            lines.append(f'  "{_esc(src)}" -> "{_esc(n.name)}";')
    for i, v in enumerate(graph.output_values()):
        src = v.node.name if v.kind == "node" else v.name
        lines.append(f'  "output_{i}" [shape=ellipse, style=filled, fillcolor="#ffe5b4"];')
        lines.append(f'  "{_esc(src)}" -> "output_{i}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def draw(graph, path, fmt=None):
    """Write `path` (.dot, .svg or .png; fmt overrides the suffix). The DOT text goes to
    path with suffix .dot in every case. Returns the list of files written."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".") or "dot").lower()
    if fmt not in ("dot", "gv", "svg", "png"):
        raise ValueError(f"draw(): format must be dot, svg or png, got {fmt!r}")
    dot_path = path if fmt in ("dot", "gv") else path.with_suffix(".dot")
    dot_path.write_text(to_dot(graph))
    written = [dot_path]
    if fmt in ("dot", "gv"):
        return written
    exe = shutil.which("dot")
    if exe is not None:
        subprocess.run([exe, f"-T{fmt}", str(dot_path), "-o", str(path)], check=True, capture_output=True)
    else:
        _draw_matplotlib(graph, path, fmt)
    written.append(path)
    return written


def _draw_matplotlib(graph, path, fmt):
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("draw(): rendering SVG/PNG needs Graphviz's `dot` on PATH or matplotlib installed; "
                           "the .dot file was written") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import networkx as nx
    g = graph.to_networkx()
    depth = {}
    for name in nx.topological_sort(g):
        preds = list(g.predecessors(name))
        depth[name] = 1 + max((depth[p] for p in preds), default=-1)
    layers = {}
    for name, d in depth.items():
        layers.setdefault(d, []).append(name)
    pos = {}
    for d, names in layers.items():
        for i, name in enumerate(names):
            pos[name] = (i - (len(names) - 1) / 2, -d)
    width = max(4.0, 1.6 * max(len(v) for v in layers.values()))
    fig, ax = plt.subplots(figsize=(min(width, 40), min(max(4.0, 0.9 * len(layers)), 80)))
    colors = []
    for name in g.nodes:
        data = g.nodes[name]
        if data["kind"] == "input":
            colors.append("#cfe8ff")
        elif data["kind"] == "output":
            colors.append("#ffe5b4")
        elif data["kind"] == "const":
            colors.append("#eeeeee")
        else:
            grp = data.get("group")
            colors.append(_PALETTE[grp % len(_PALETTE)] if grp is not None else "white")
    labels = {name: (g.nodes[name]["op"] if g.nodes[name]["kind"] in ("primitive", "module") else name)
              for name in g.nodes}
    nx.draw_networkx(g, pos, ax=ax, labels=labels, node_color=colors, node_shape="s", node_size=900,
                     font_size=7, edgecolors="#555555", arrowsize=8)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, format=fmt)
    plt.close(fig)
