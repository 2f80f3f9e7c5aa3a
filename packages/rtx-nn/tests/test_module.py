"""nn.Module end to end: registration, traversal order and prefixes, shared parameters,
buffers, train/eval, zero_grad, dtype moves that keep Parameter identity, state_dict round
trips and load_state_dict's errors (PyTorch's wording), forward and backward hooks, repr,
the containers, and Parameter itself."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.testing import assert_close


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 3)
        self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        self.scale = nn.Parameter(rtx.ones(1))
        self.register_buffer("steps", rtx.zeros(()))
        self.register_buffer("cache", rtx.zeros(2), persistent=False)

    def forward(self, x):
        return self.seq(self.fc(x)) * self.scale


# ---- registration ---------------------------------------------------------------------------------


def test_setattr_registers_parameters_modules_and_buffers():
    m = Net()
    assert list(m._parameters) == ["scale"]
    assert list(m._modules) == ["fc", "seq"]
    assert list(m._buffers) == ["steps", "cache"]
    m.plain = rtx.zeros(3)  # a plain tensor is an ordinary attribute
    assert "plain" not in m._buffers and "plain" not in m._parameters
    m.extra = nn.Buffer(rtx.ones(2))
    m.hidden = nn.Buffer(rtx.ones(2), persistent=False)
    assert "extra" in m._buffers and "extra" in m.state_dict() and "hidden" not in m.state_dict()
    m.scale = None  # a parameter slot may be emptied
    assert m.scale is None and "scale" not in m.state_dict()
    m.scale = nn.Parameter(rtx.ones(1))
    with pytest.raises(TypeError, match="cannot assign .* as parameter 'scale'"):
        m.scale = rtx.ones(1)
    with pytest.raises(TypeError, match="as child module 'fc'"):
        m.fc = 3
    with pytest.raises(KeyError, match="attribute 'fc' already exists"):
        m.register_buffer("fc", rtx.zeros(1))
    with pytest.raises(KeyError):
        m.register_parameter("a.b", nn.Parameter(rtx.zeros(1)))
    with pytest.raises(TypeError, match="cannot assign 'int' object to parameter"):
        m.register_parameter("p", 3)
    del m.fc
    assert "fc" not in m._modules
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'fc'"):
        _ = m.fc


def test_assigning_before_init_raises():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(rtx.zeros(1))
            super().__init__()

    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Bad()


def test_forward_missing():
    with pytest.raises(NotImplementedError, match='Module \\[Module\\] is missing the required "forward" function'):
        nn.Module()(rtx.zeros(1))


# ---- traversal --------------------------------------------------------------------------------------


def test_named_parameters_order_and_prefixes():
    m = Net()
    # the module's own parameters first, then each child's in registration order
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc.weight", "fc.bias", "seq.0.weight", "seq.0.bias"]
    assert [n for n, _ in m.named_parameters(prefix="model")] == \
        ["model.scale", "model.fc.weight", "model.fc.bias", "model.seq.0.weight", "model.seq.0.bias"]
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert len(list(m.parameters())) == 5
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert m.get_parameter("seq.0.weight") is m.seq[0].weight
    assert m.get_submodule("seq.1").__class__ is nn.ReLU
    with pytest.raises(AttributeError, match="has no submodule `nope`"):
        m.get_submodule("seq.nope")


def test_shared_parameters_and_modules_remove_duplicate():
    shared = nn.Linear(2, 2)
    m = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in m.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == \
        ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert len(list(m.children())) == 2
    # tied weights (same Parameter in two modules)
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight
    tied = nn.ModuleList([a, b])
    assert [n for n, _ in tied.named_parameters()] == ["0.weight", "0.bias", "1.bias"]
    assert list(tied.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_children_modules_named_modules():
    m = Net()
    assert [n for n, _ in m.named_children()] == ["fc", "seq"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "seq", "seq.0", "seq.1"]
    assert [type(x).__name__ for x in m.modules()] == ["Net", "Linear", "Sequential", "Linear", "ReLU"]
    assert [n for n, _ in m.named_modules(prefix="root")] == ["root", "root.fc", "root.seq", "root.seq.0",
                                                              "root.seq.1"]


def test_apply_is_post_order_and_returns_self():
    m = Net()
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "Linear", "ReLU", "Sequential", "Net"]

    def init(mod):
        if isinstance(mod, nn.Linear):
            nn.init.constant_(mod.weight, 0.5)

    m.apply(init)
    assert m.seq[0].weight.tolist() == [[0.5] * 3] * 3


def test_train_eval_recurse():
    m = Net()
    assert m.training and all(x.training for x in m.modules())
    assert m.eval() is m
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    m.train(False)
    assert not m.seq[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


def test_zero_grad():
    m = Net()
    m(rtx.randn(4, 2)).sum().backward()
    grads = {n: p.grad for n, p in m.named_parameters()}
    assert all(g is not None for g in grads.values())
    m.zero_grad(set_to_none=False)
    for n, p in m.named_parameters():
        assert p.grad is grads[n] and not p.grad.numpy().any()  # the same tensors, zeroed
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_requires_grad_():
    m = Net()
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())


# ---- moves --------------------------------------------------------------------------------------------


def test_to_dtype_keeps_parameter_identity():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    params = list(m.parameters())  # what an optimizer holds
    m(rtx.randn(4, 2)).sum().backward()
    assert m.to(rtx.float64) is m
    assert [p is q for p, q in zip(params, m.parameters())] == [True] * 4
    assert all(p.dtype == rtx.float64 and isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    assert all(p.grad.dtype == rtx.float64 for p in params)
    assert m[1].running_mean.dtype == rtx.float64
    assert m[1].num_batches_tracked.dtype == rtx.int64  # integer buffers keep their dtype
    out = m(rtx.randn(4, 2, dtype=rtx.float64))
    assert out.dtype == rtx.float64
    m.float()
    assert params[0].dtype == rtx.float32 and m[0].weight is params[0]
    m.half()
    assert params[0].dtype == rtx.float16
    m.to(dtype=rtx.float32)
    assert params[0].dtype == rtx.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        m.to(rtx.int32)
    assert m.cpu() is m and params[0].device.type == "cpu"


# ---- state_dict -----------------------------------------------------------------------------------------


def test_state_dict_round_trip():
    m = Net()
    sd = m.state_dict()
    assert list(sd) == ["scale", "steps", "fc.weight", "fc.bias", "seq.0.weight", "seq.0.bias"]
    assert all(not v.requires_grad for v in sd.values())
    assert m.state_dict(keep_vars=True)["fc.weight"] is m.fc.weight
    m2 = Net()
    result = m2.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    x = rtx.randn(5, 2)
    assert_close(m2(x), m(x))
    assert m2.fc.weight is not m.fc.weight  # values copied, not tensors shared
    w_before = m2.fc.weight
    m2.load_state_dict(Net().state_dict())
    assert m2.fc.weight is w_before  # loading copies in place


def test_load_state_dict_strict_errors_match_pytorch():
    m = Net()
    sd = m.state_dict()
    sd["extra"] = rtx.zeros(1)
    sd["fc.extra"] = rtx.zeros(1)
    del sd["seq.0.bias"]
    sd["fc.weight"] = rtx.zeros(4, 4)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    assert str(info.value) == (
        'Error(s) in loading state_dict for Net:\n'
        '\tMissing key(s) in state_dict: "seq.0.bias". \n'
        '\tUnexpected key(s) in state_dict: "extra", "fc.extra". \n'
        '\tsize mismatch for fc.weight: copying a param with shape rtx.Size([4, 4]) from checkpoint, the shape in '
        'current model is rtx.Size([3, 2]).')
    sd = m.state_dict()
    sd["fc"] = rtx.zeros(1)
    sd["fc.weight.x"] = rtx.zeros(1)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    assert str(info.value) == ('Error(s) in loading state_dict for Net:\n'
                               '\tUnexpected key(s) in state_dict: "fc", "fc.weight.x". ')


def test_load_state_dict_non_strict_returns_keys():
    m = Net()
    new_w = rtx.randn(3, 2)
    result = m.load_state_dict({"fc.weight": new_w, "bogus": rtx.zeros(1)}, strict=False)
    assert result.missing_keys == ["scale", "steps", "fc.bias", "seq.0.weight", "seq.0.bias"]
    assert result.unexpected_keys == ["bogus"]
    assert repr(result).startswith("_IncompatibleKeys(missing_keys=['scale'")
    assert_close(m.fc.weight, new_w)
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight"):  # sizes are checked even so
        m.load_state_dict({"fc.weight": rtx.zeros(2, 2)}, strict=False)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])


def test_load_state_dict_assign_and_numpy_values():
    m = nn.Linear(2, 2)
    w = rtx.ones(2, 2)
    m.load_state_dict({"weight": w, "bias": np.zeros(2, dtype=np.float32)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.tolist() == [[1.0, 1.0], [1.0, 1.0]] and m.bias.tolist() == [0.0, 0.0]


def test_deepcopy_and_pickle_keep_parameters():
    m = Net()
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert isinstance(clone.fc.weight, nn.Parameter) and clone.fc.weight is not m.fc.weight
        assert not isinstance(clone.steps, nn.Parameter)
        assert_close(clone.fc.weight, m.fc.weight)
        x = rtx.randn(2, 2)
        assert_close(clone(x), m(x))
    shared = nn.Linear(2, 2)
    tied = copy.deepcopy(nn.Sequential(shared, shared))
    assert tied[0] is tied[1]


# ---- hooks -----------------------------------------------------------------------------------------------


def test_forward_pre_hooks_and_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda mod, args, out: calls.append((mod, args[0].sum().item())) or out + 1)
    y = lin(rtx.ones(1, 2))
    assert calls == [(lin, 0.0)]
    assert_close(y, lin.bias.detach()[None] + 1)
    h1.remove()
    h2.remove()
    assert_close(lin(rtx.zeros(1, 2)), lin.bias.detach()[None])
    order = []
    lin.register_forward_hook(lambda *a: order.append("second"))
    lin.register_forward_hook(lambda *a: order.append("first"), prepend=True)
    lin(rtx.zeros(1, 2))
    assert order == ["first", "second"]


def test_hooks_with_kwargs():
    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Scaled()

    def pre(mod, args, kwargs):
        return args, {**kwargs, "scale": 3.0}

    def post(mod, args, kwargs, out):
        assert kwargs["scale"] == 3.0
        return out + 1

    m.register_forward_pre_hook(pre, with_kwargs=True)
    with m.register_forward_hook(post, with_kwargs=True):
        assert m(rtx.tensor([1.0, 2.0])).tolist() == [4.0, 7.0]
    assert m(rtx.tensor([1.0, 2.0])).tolist() == [3.0, 6.0]


def test_full_backward_hook_values_for_linear():
    lin = nn.Linear(3, 2, dtype=rtx.float64)
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["in"], seen["out"] = grad_input, grad_output

    lin.register_full_backward_hook(hook)
    x = rtx.randn(4, 3, dtype=rtx.float64, requires_grad=True)
    g = rtx.randn(4, 2, dtype=rtx.float64)
    lin(x).backward(g)
    W = lin.weight.detach().numpy()
    assert len(seen["out"]) == 1 and len(seen["in"]) == 1
    assert_close(seen["out"][0], g)
    assert_close(seen["in"][0], g.numpy() @ W)  # dL/dx = g W for y = x W^T + b
    assert_close(x.grad, g.numpy() @ W)
    assert_close(lin.weight.grad, g.numpy().T @ x.detach().numpy())


def test_backward_hook_replacing_grad_input_changes_upstream_gradient():
    lin = nn.Linear(3, 2, dtype=rtx.float64)
    lin.register_full_backward_hook(lambda mod, gi, go: tuple(2 * t for t in gi))
    pre = rtx.randn(4, 3, dtype=rtx.float64, requires_grad=True)
    x = pre * 1.0  # the gradient must flow on, upstream, to `pre`
    g = rtx.randn(4, 2, dtype=rtx.float64)
    lin(x).backward(g)
    assert_close(pre.grad, 2 * (g.numpy() @ lin.weight.detach().numpy()))
    assert_close(lin.weight.grad, g.numpy().T @ x.detach().numpy())  # parameters are not affected


def test_backward_pre_hook_and_input_without_grad():
    lin = nn.Linear(3, 2, dtype=rtx.float64)
    lin.register_full_backward_pre_hook(lambda mod, go: tuple(0.5 * t for t in go))
    seen = {}
    lin.register_full_backward_hook(lambda mod, gi, go: seen.update(gi=gi, go=go))
    x = rtx.randn(4, 3, dtype=rtx.float64)  # needs no gradient
    g = rtx.ones(4, 2, dtype=rtx.float64)
    lin(x).backward(g)
    assert seen["gi"] == (None,)
    assert_close(seen["go"][0], 0.5 * g.numpy())
    assert_close(lin.bias.grad, np.full(2, 2.0))  # the pre-hook halved grad_output for the module


# ---- repr --------------------------------------------------------------------------------------------------


def test_repr_of_nested_modules_matches_pytorch():
    m = nn.Sequential(nn.Linear(4, 3), nn.Sequential(nn.ReLU(), nn.Dropout(0.1)), nn.BatchNorm1d(3))
    assert repr(m) == (
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (1): Sequential(\n"
        "    (0): ReLU()\n"
        "    (1): Dropout(p=0.1, inplace=False)\n"
        "  )\n"
        "  (2): BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        ")")
    assert repr(Net()) == (
        "Net(\n"
        "  (fc): Linear(in_features=2, out_features=3, bias=True)\n"
        "  (seq): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): ReLU()\n"
        "  )\n"
        ")")

    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Identity()

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Multi()) == "Multi(\n  a=1\n  b=2\n  (body): Identity()\n)"


def test_modulelist_repr_compresses_repeats_as_pytorch():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU()])
    assert repr(ml) == ("ModuleList(\n"
                        "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
                        "  (3): ReLU()\n"
                        ")")
    assert repr(nn.ModuleList()) == "ModuleList()"


# ---- containers ------------------------------------------------------------------------------------------------


def test_sequential_indexing_slicing_and_editing():
    layers = [nn.Linear(1, 1) for _ in range(4)]
    s = nn.Sequential(*layers)
    assert s[0] is layers[0] and s[-1] is layers[3] and len(s) == 4
    sub = s[1:3]
    assert type(sub) is nn.Sequential and list(sub._modules) == ["1", "2"]  # slicing keeps the keys
    del s[1]
    assert list(s._modules) == ["0", "1", "2"] and s[1] is layers[2]
    s.insert(1, nn.ReLU())
    assert [type(x).__name__ for x in s] == ["Linear", "ReLU", "Linear", "Linear"]
    assert list(s._modules) == ["0", "1", "2", "3"]
    s.append(nn.Tanh())
    assert isinstance(s[-1], nn.Tanh) and len(s) == 5
    s[0] = nn.Identity()
    assert isinstance(s[0], nn.Identity)
    assert isinstance(s.pop(1), nn.ReLU) and len(s) == 4 and list(s._modules) == ["0", "1", "2", "3"]
    s.extend([nn.ReLU()])
    assert len(s) == 5
    both = nn.Sequential(nn.ReLU()) + nn.Sequential(nn.Tanh())
    assert [type(x).__name__ for x in both] == ["ReLU", "Tanh"]
    with pytest.raises(IndexError, match="index 9 is out of range"):
        s[9]
    named = nn.Sequential(OrderedDict([("conv", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(named._modules) == ["conv", "act"] and named.conv is named[0]
    x = rtx.randn(3, 2)
    assert_close(named(x), nn.functional.relu(named.conv(x)))


def test_modulelist():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    ml.append(nn.Tanh())
    ml.extend([nn.Sigmoid()])
    ml.insert(0, nn.Identity())
    assert [type(x).__name__ for x in ml] == ["Identity", "Linear", "ReLU", "Tanh", "Sigmoid"]
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"] and isinstance(ml[0], nn.Linear)
    assert isinstance(ml[-1], nn.Sigmoid) and len(ml[1:3]) == 2
    ml += [nn.ReLU()]
    assert len(ml) == 5
    assert isinstance(ml.pop(-1), nn.ReLU) and len(ml) == 4
    assert [n for n, _ in ml.named_parameters()] == ["0.weight", "0.bias"]
    with pytest.raises(NotImplementedError):
        ml(rtx.zeros(1))


def test_moduledict():
    md = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    md["c"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert isinstance(md.pop("b"), nn.ReLU) and list(md) == ["a", "c"]
    md.update([("d", nn.Identity())])
    del md["a"]
    assert list(md.keys()) == ["c", "d"]
    assert [k for k, _ in md.items()] == ["c", "d"]


def test_parameterlist_and_parameterdict():
    pl = nn.ParameterList([nn.Parameter(rtx.randn(2, 3)), rtx.randn(4)])
    assert isinstance(pl[1], nn.Parameter) and pl[1].requires_grad  # plain tensors are wrapped
    pl.append(rtx.zeros(1))
    assert len(pl) == 3 and [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert repr(pl) == ("ParameterList(\n"
                        "    (0): Parameter containing: [rtx.float32 of size 2x3]\n"
                        "    (1): Parameter containing: [rtx.float32 of size 4]\n"
                        "    (2): Parameter containing: [rtx.float32 of size 1]\n"
                        ")")
    pd = nn.ParameterDict({"a": nn.Parameter(rtx.randn(2)), "b": rtx.randn(3, dtype=rtx.float64)})
    assert isinstance(pd["b"], nn.Parameter) and list(pd.keys()) == ["a", "b"] and "a" in pd
    assert repr(pd).startswith("ParameterDict(\n    (a): Parameter containing: [")

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = pl
            self.pdict = pd

    h = Holder()
    assert list(h.state_dict()) == ["plist.0", "plist.1", "plist.2", "pdict.a", "pdict.b"]


# ---- Parameter ----------------------------------------------------------------------------------------------------


def test_parameter():
    t = rtx.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert isinstance(p, nn.Parameter) and isinstance(p, rtx.Tensor)
    assert not isinstance(t, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.], requires_grad=True)")
    p.data[0] = 5.0
    assert t[0].item() == 5.0  # shares memory with the tensor it wraps
    assert not nn.Parameter(rtx.zeros(2), requires_grad=False).requires_grad
    assert not isinstance(p * 2, nn.Parameter)  # results of ops are plain tensors
    assert nn.Parameter().shape == (0,)
    with pytest.raises(TypeError, match="Parameter expects a Tensor"):
        nn.Parameter([1.0])


def test_flatten_unflatten():
    x = rtx.randn(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    u = nn.Unflatten(1, (3, 20))
    assert u(nn.Flatten()(x)).shape == (2, 3, 20)
    assert nn.Unflatten(-1, [5, -1])(rtx.randn(2, 10)).shape == (2, 5, 2)
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(3, 20))"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 4)
    y = nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 4, 5)))(x)
    assert_close(y, x)


def test_full_backward_hook_grad_input_has_one_entry_per_argument():
    class Pair(nn.Module):
        def forward(self, a, b, scale):
            return a * b * scale

    m = Pair()
    seen = {}

    def hook(mod, grad_input, grad_output):
        seen["gi"] = grad_input
        return (grad_input[0] * 10, None, None)

    m.register_full_backward_hook(hook)
    a = rtx.tensor([1.0, 2.0], requires_grad=True)
    b = rtx.tensor([3.0, 4.0])  # no gradient
    m(a, b, 2.0).sum().backward()
    assert len(seen["gi"]) == 3 and seen["gi"][1] is None and seen["gi"][2] is None
    assert seen["gi"][0].tolist() == [6.0, 8.0]
    assert a.grad.tolist() == [60.0, 80.0]
    m2 = Pair()
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 1, but "
                                           "expected 3"):
        m2(a, b, 2.0).sum().backward()
