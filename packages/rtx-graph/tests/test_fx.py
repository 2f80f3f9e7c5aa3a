"""rtx.fx: the common torch.fx tutorials (replace an op, insert a node, invert a function, fuse
conv+bn), the Node/Graph API, generated code and print_tabular."""
import contextlib
import io
import operator

import numpy as np
import pytest

import rtx
import rtx.fx as fx
import rtx.nn as nn
import rtx.nn.functional as F


class AddMul(nn.Module):
    def forward(self, x, y):
        return rtx.add(x, y) + x * 2


def test_trace_node_kinds_and_code_run_like_the_module():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(3, 2))
            self.scale = nn.Parameter(rtx.ones(2))

        def forward(self, x):
            z = F.relu(self.lin(x)) + 1.0
            return self.seq(z).sum(-1, keepdim=True) * self.scale + x.size(0)

    m = M()
    gm = fx.symbolic_trace(m)
    ops = [(n.op, n.target) for n in gm.graph.nodes]
    assert ops[0] == ("placeholder", "x") and ops[-1] == ("output", "output")
    assert ("call_module", "lin") in ops and ("call_module", "seq.1") in ops
    assert ("call_function", F.relu) in ops and ("call_function", operator.add) in ops
    assert ("call_method", "sum") in ops and ("call_method", "size") in ops and ("get_attr", "scale") in ops
    assert "def forward(self, x):" in gm.code and "self.lin(x)" in gm.code
    x = rtx.randn(5, 4)
    np.testing.assert_array_equal(gm(x).detach().numpy(), m(x).detach().numpy())
    gm.graph.lint()
    relu = next(n for n in gm.graph.nodes if n.target is F.relu)
    assert relu.all_input_nodes == [next(n for n in gm.graph.nodes if n.name == "lin")]
    assert [u.name for u in relu.users] == ["add"]
    assert relu.format_node() == ("%relu : [num_users=1] = call_function[target=rtx.nn.functional.relu]"
                                  "(args = (%lin,), kwargs = {})")


def test_tutorial_replace_add_with_mul():
    gm = fx.symbolic_trace(AddMul())
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (rtx.add, operator.add):
            node.target = rtx.mul if node.target is rtx.add else operator.mul
    gm.recompile()
    x, y = rtx.randn(3), rtx.randn(3)
    np.testing.assert_array_equal(gm(x, y).numpy(), ((x * y) * (x * 2)).numpy())
    assert "+" not in gm.code


def test_tutorial_insert_relu_after_every_linear():
    rtx.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 2))
    gm = fx.symbolic_trace(model)
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(modules[node.target], nn.Linear):
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(rtx.relu, args=(node,))
            node.replace_all_uses_with(new, delete_user_cb=lambda user, new=new: user is not new)
    gm.graph.lint()
    gm.recompile()
    x = rtx.randn(6, 4)
    want = F.relu(model[2](F.relu(model[1](F.relu(model[0](x))))))
    np.testing.assert_array_equal(gm(x).detach().numpy(), want.detach().numpy())
    assert sum(n.target is rtx.relu for n in gm.graph.nodes) == 3


def test_tutorial_invert_a_function():
    inverse = {rtx.exp: rtx.log, rtx.log: rtx.exp, rtx.neg: rtx.neg}

    def f(x):
        return rtx.exp(rtx.neg(rtx.exp(x)))

    traced = fx.symbolic_trace(f)
    g = fx.Graph()
    value = g.placeholder("y")
    for node in reversed(traced.graph.nodes):
        if node.op == "call_function":
            value = g.call_function(inverse[node.target], (value,))
    g.output(value)
    inv = fx.GraphModule(traced, g)
    x = rtx.tensor(np.linspace(-1, 1, 9), dtype=rtx.float64)
    np.testing.assert_allclose(inv(f(x)).numpy(), x.numpy(), rtol=0, atol=1e-12)
    assert [n.target for n in g.nodes if n.op == "call_function"] == [rtx.log, rtx.neg, rtx.log]


def _fuse_conv_bn(model):
    """The torch.fx conv+bn fusion tutorial."""
    gm = fx.symbolic_trace(model)
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if conv_node.op != "call_module" or not isinstance(modules[conv_node.target], nn.Conv2d) \
                or len(conv_node.users) > 1:
            continue
        conv, bn = modules[conv_node.target], modules[node.target]
        with rtx.no_grad():
            scale = bn.weight / rtx.sqrt(bn.running_var + bn.eps)
            fused = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                              conv.dilation, conv.groups, bias=True).to(conv.weight.dtype)
            fused.weight.copy_(conv.weight * scale.reshape(-1, 1, 1, 1))
            bias = conv.bias if conv.bias is not None else rtx.zeros_like(bn.running_mean)
            fused.bias.copy_((bias - bn.running_mean) * scale + bn.bias)
        *parent, last = conv_node.target.split(".")
        owner = gm.get_submodule(".".join(parent)) if parent else gm
        setattr(owner, last, fused)
        node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm


def test_tutorial_conv_bn_fusion_float64():
    rtx.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.Conv2d(6, 4, 3, stride=2), nn.BatchNorm2d(4)).double()
    model.train()
    with rtx.no_grad():
        for _ in range(3):  # non-trivial running statistics
            model(rtx.randn(8, 3, 10, 10, dtype=rtx.float64) * 2 + 1)
    for bn in (model[1], model[4]):
        with rtx.no_grad():
            bn.weight.copy_(rtx.rand(bn.num_features, dtype=rtx.float64) + 0.5)
            bn.bias.copy_(rtx.rand(bn.num_features, dtype=rtx.float64) - 0.5)
    model.eval()
    fused = _fuse_conv_bn(model)
    mods = dict(fused.named_modules())
    assert not any(isinstance(mods[n.target], nn.BatchNorm2d) for n in fused.graph.nodes if n.op == "call_module")
    assert [n.op for n in fused.graph.nodes].count("call_module") == 3
    x = rtx.randn(2, 3, 10, 10, dtype=rtx.float64)
    with rtx.no_grad():
        np.testing.assert_allclose(fused(x).numpy(), model(x).numpy(), rtol=1e-12, atol=1e-12)


def test_print_tabular_shape():
    gm = fx.symbolic_trace(AddMul())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        gm.graph.print_tabular()
    lines = buf.getvalue().splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == 2 + len(gm.graph.nodes)
    assert lines[2].split()[:2] == ["placeholder", "x"] and lines[-1].split()[:2] == ["output", "output"]
    assert "rtx.add" in lines[4] and "operator.add" in buf.getvalue()


def test_graph_editing_api():
    gm = fx.symbolic_trace(AddMul())
    g = gm.graph
    x = g.nodes[0]
    with g.inserting_before(g.nodes[2]):
        dead = g.call_method("exp", (x,))
    assert g.nodes[2] is dead and dead.prev is g.nodes[1]
    with pytest.raises(RuntimeError, match=r"still has 3 user\(s\): \[add, mul, exp\]"):
        g.erase_node(x)
    assert g.eliminate_dead_code() and dead not in g.nodes
    add = next(n for n in g.nodes if n.target is rtx.add)
    mul = next(n for n in g.nodes if n.target is operator.mul)
    mul.append(add)      # move: add now after mul
    assert g.nodes.index(add) == g.nodes.index(mul) + 1
    g.lint()
    add.prepend(mul)
    mul.replace_input_with(x, g.nodes[1])   # x * 2 -> y * 2
    gm.recompile()
    a, b = rtx.randn(3), rtx.randn(3)
    np.testing.assert_array_equal(gm(a, b).numpy(), (a + b + b * 2).numpy())
    bad = fx.Graph()
    p = bad.placeholder("p")
    q = bad.call_function(rtx.neg, (p,))
    bad.output(q)
    q.prepend(bad.nodes[-1])   # output no longer last, reads q before it is defined
    with pytest.raises(RuntimeError):
        bad.lint()


def test_control_flow_on_a_proxy_is_an_error():
    def f(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(fx.TraceError, match="control flow"):
        fx.symbolic_trace(f)


def test_rtx_namespace_is_restored_after_tracing():
    relu = rtx.relu
    fx.symbolic_trace(AddMul())
    assert rtx.relu is relu and F.relu.__module__.startswith("rtx.nn")
    import rtx.fx as again
    assert again is fx and rtx.fx is fx
