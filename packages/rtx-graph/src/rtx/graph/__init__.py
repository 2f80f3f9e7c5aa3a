"""rtx graph: tracing to a graph IR, networkx views, optimisation passes.

    g = rtx.graph.trace(model, (x,))     # a Graph of Primitive applications, symbolic batch
    g(x2)                                 # runs the same Primitives: equals model(x2)
    g.to_networkx()                       # networkx.DiGraph for analysis
    g.optimize()                          # DCE, constant folding, CSE, elementwise fusion
    g.draw("model.svg")                   # DOT always; SVG/PNG via Graphviz or matplotlib
"""
__version__ = "0.1.0"

from rtx.graph.fusion import FusedGroup, fuse_elementwise
from rtx.graph.ir import ArrayOf, Graph, Node, Value
from rtx.graph.passes import (
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
    replace_all_uses,
)
from rtx.graph.symbolic import SymInt
from rtx.graph.tracer import TraceError, trace

__all__ = ["trace", "TraceError", "Graph", "Node", "Value", "ArrayOf", "SymInt", "FusedGroup",
           "eliminate_dead_code", "fold_constants", "eliminate_common_subexpressions", "fuse_elementwise",
           "replace_all_uses"]
