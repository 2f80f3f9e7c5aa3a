"""The CUDA path without a GPU: its source compiles (nvcc, where a CUDA toolkit is installed),
and the GPU check's machinery runs (on the CPU path). On a GPU, tools/gpu-check runs
`python -m rtx.flash_attn.gpu_check`, which compares the kernels with the CPU path."""
import re
import shutil
import subprocess

import pytest

from rtx.flash_attn import _cuda, gpu_check

NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (a CUDA toolkit) on PATH")
def test_kernels_compile_for_every_dtype_and_head_dim(tmp_path):
    # Taking each instantiation's address makes nvcc compile every template CuPy will ask for.
    refs = ", ".join(f"(void*)&{k}" for k in _cuda.NAME_EXPRESSIONS)
    src = tmp_path / "flash.cu"
    src.write_text(f"{_cuda.SOURCE}\nvoid* const rtx_instances[] = {{{refs}}};\n")
    done = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", "-cubin", "-Xptxas", "-v", str(src), "-o",
                           str(tmp_path / "flash.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    smem = [int(n) for n in re.findall(r"(\d+) bytes smem", done.stderr)]
    assert len(smem) == len(_cuda.NAME_EXPRESSIONS)
    assert max(smem) <= 48 * 1024  # static shared memory: no opt-in attribute needed


def test_every_dtype_and_head_dim_has_an_instantiation():
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        assert _cuda.supports_dtype(dtype) if dtype != "bfloat16" else "bfloat16" in _cuda.CTYPES
        t, a = _cuda.CTYPES[dtype]
        for D in (8, 32, 33, 64, 80, 128, 200, 256):
            assert f"flash_fwd<{t}, {a}, {_cuda._slots(D)}>" in _cuda.NAME_EXPRESSIONS
    with pytest.raises(ValueError, match="up to 256"):
        _cuda._slots(257)
    assert not _cuda.supports_dtype("int32")


def test_gpu_check_runs_on_the_host(capsys):
    assert gpu_check.main(["--host", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "0 case(s) failed" in out and "FAIL" not in out


def test_gpu_check_says_when_there_is_no_gpu(capsys):
    from rtx.runtime import cuda
    if cuda.is_available():
        pytest.skip("a GPU is present")
    assert gpu_check.main(["--quick"]) == 2
