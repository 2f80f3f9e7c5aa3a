"""rtx.fx: torch.fx's program capture and transformation API for rtx modules.

    gm = rtx.fx.symbolic_trace(model)         # GraphModule: nn.Module + graph + generated code
    for node in gm.graph.nodes: ...           # placeholder / get_attr / call_function /
                                              # call_method / call_module / output
    gm.recompile()                            # after editing the graph
    gm.graph.print_tabular()

Tracing runs forward on Proxy objects (see _symbolic_trace); rtx.graph.trace is the other
tracer, at the level of rtx's Primitives, for compilers and exporters.
"""
from rtx.fx._symbolic_trace import Proxy, TraceError, Tracer, symbolic_trace
from rtx.fx.graph import Graph, PythonCode
from rtx.fx.graph_module import GraphModule
from rtx.fx.node import Node, map_arg

__all__ = ["symbolic_trace", "Tracer", "Proxy", "TraceError", "Graph", "GraphModule", "Node", "PythonCode",
           "map_arg"]
