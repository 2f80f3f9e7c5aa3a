"""torch.fx graph rewriting, as the FX tutorials do it: symbolically trace a module, replace every
torch.add with torch.mul by walking graph.nodes, insert a relu after a Linear with
graph.inserting_after + call_function, erase a dead node, recompile, and check the rewritten
module against the same arithmetic written by hand."""
import json
import operator

import torch
import torch.fx as fx
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, y):
        a = torch.add(x, y)
        b = self.linear(a)
        return b + x


def main():
    torch.manual_seed(0)
    m = M()
    traced = fx.symbolic_trace(m)
    replaced = 0
    for node in traced.graph.nodes:
        if node.op == "call_function" and node.target in (torch.add, operator.add):
            with traced.graph.inserting_after(node):
                new = traced.graph.call_function(torch.mul, node.args, node.kwargs)
                node.replace_all_uses_with(new)
            traced.graph.erase_node(node)
            replaced += 1
    for node in traced.graph.nodes:
        if node.op == "call_module" and node.target == "linear":
            with traced.graph.inserting_after(node):
                relu = traced.graph.call_function(torch.relu, (node,))
            node.replace_all_uses_with(relu)
            relu.args = (node,)
    traced.graph.lint()
    traced.recompile()
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    expected = torch.relu(m.linear(x * y)) * x
    got = traced(x, y)
    ops = [n.op for n in traced.graph.nodes]
    print("RESULT " + json.dumps({"replaced": replaced, "max_abs_diff": (got - expected).abs().max().item(),
                                  "ops": ops, "code_has_mul": "mul" in traced.code}))


if __name__ == "__main__":
    main()
