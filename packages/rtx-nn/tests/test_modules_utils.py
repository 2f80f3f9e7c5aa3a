"""rtx.nn.modules.utils: PyTorch's _single/_pair/_triple/_ntuple, the one copy the layers,
rtx.compress and rtx.vision expand their arguments with."""
import numpy as np
import pytest

import rtx.nn as nn
from rtx.nn.modules.utils import _ntuple, _pair, _quadruple, _single, _triple


@pytest.mark.parametrize("fn, n", [(_single, 1), (_pair, 2), (_triple, 3), (_quadruple, 4), (_ntuple(5), 5)])
def test_scalars_repeat_and_sequences_pass_through(fn, n):
    assert fn(3) == (3,) * n
    assert fn(np.int64(2)) == (np.int64(2),) * n
    assert fn([7]) == (7,) * n                      # one value stands for every dimension
    seq = tuple(range(1, n + 2))
    assert fn(seq) == seq                           # a wrong length is left for the op to report
    assert fn(list(range(n))) == tuple(range(n))
    assert fn(x for x in (4, 5)) == (4, 5)          # any iterable, as PyTorch's


def test_names_follow_pytorch():
    assert (_single.__name__, _pair.__name__, _triple.__name__) == ("_single", "_pair", "_triple")


def test_layers_expand_their_arguments():
    c = nn.Conv2d(1, 2, 3, stride=(2,), padding=[1, 0])
    assert (c.kernel_size, c.stride, c.padding, c.dilation, c.output_padding) == ((3, 3), (2, 2), (1, 0), (1, 1),
                                                                                   (0, 0))
    t = nn.ConvTranspose3d(1, 1, (1, 2, 3), output_padding=0)
    assert t.kernel_size == (1, 2, 3) and t.output_padding == (0, 0, 0)
    p = nn.AvgPool1d(2)
    assert (p.kernel_size, p.stride, p.padding) == ((2,), (2,), (0,))
    u = nn.MaxUnpool2d(2, padding=[1])
    assert (u.kernel_size, u.stride, u.padding) == ((2, 2), (2, 2), (1, 1))
