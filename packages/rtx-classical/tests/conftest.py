import pytest

import rtx.runtime as rt

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not rt.cuda.is_available(), reason="no CUDA device"))]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
