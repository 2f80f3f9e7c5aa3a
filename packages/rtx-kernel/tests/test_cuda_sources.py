"""Every CUDA source in rtx.kernel compiles: checked with nvcc where a CUDA toolkit is
installed, so a machine without a GPU still catches syntax and template errors. (CuPy compiles
with NVRTC at run time; nvcc's front end and headers are the same.)"""
import re
import shutil
import subprocess

import pytest

import rtx.kernel  # noqa: F401  (registers every kernel)
from rtx.kernel import _cuda

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="needs nvcc (a CUDA toolkit) on PATH")

C_TYPES = {"float16": "__half", "float32": "float", "float64": "double", "int32": "int", "int64": "long long",
           "bool": "bool", "uint64": "unsigned long long"}


def _compile(tmp_path, source: str, kernels: list[str]) -> None:
    # Taking each kernel's address in host code makes nvcc instantiate the templates.
    refs = ", ".join(f"(void*)&{k}" for k in kernels)
    path = tmp_path / "check.cu"
    path.write_text(f"{source}\nvoid* const rtx_instances[] = {{{refs}}};\n")
    done = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", "-ptx", str(path), "-o", str(tmp_path / "check.ptx")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "check.ptx").read_text()
    assert ptx.count(".entry") >= len(kernels)


def _params(spec: str, const: bool) -> tuple[list[str], list[str]]:
    args, binds = [], []
    for i, param in enumerate(p.split() for p in spec.split(",")):
        assert param[0] != "raw", "raw params are not checked here"
        ctype, name = C_TYPES.get(param[0], param[0]), param[1]
        args.append(f"{'const ' if const else ''}{ctype}* p{i}_{name}")
        binds.append(f"{'const ' if const else ''}{ctype}& {name} = *p{i}_{name};")
    return args, binds


@pytest.mark.parametrize("name", sorted(_cuda.ELEMENTWISE))
def test_elementwise_kernel_compiles(name, tmp_path):
    spec = _cuda.ELEMENTWISE[name]
    in_args, in_binds = _params(spec.in_params, const=True)
    out_args, out_binds = _params(spec.out_params, const=False)
    placeholders = sorted({p.split()[0] for p in (spec.in_params + "," + spec.out_params).split(",")}
                          - set(C_TYPES))
    assert all(re.fullmatch(r"[A-Z]", t) for t in placeholders), placeholders
    template = ", ".join(f"typename {t}" for t in placeholders)
    source = (f"{spec.preamble}\ntemplate <{template}>\n__global__ void check({', '.join(in_args + out_args)}) {{\n"
              f"    {' '.join(in_binds + out_binds)}\n    {spec.operation};\n}}\n")
    kernels = [f"check<{', '.join([t] * len(placeholders))}>" for t in ("float", "double")]
    _compile(tmp_path, source, kernels)


@pytest.mark.parametrize("name", sorted(_cuda.RAW))
def test_raw_module_compiles(name, tmp_path):
    spec = _cuda.RAW[name]
    _compile(tmp_path, spec.code, list(spec.name_expressions))


@pytest.mark.parametrize("name", sorted(_cuda.REDUCTION))
def test_reduction_kernel_compiles(name, tmp_path):
    spec = _cuda.REDUCTION[name]
    in_args, in_binds = _params(spec.in_params, const=True)
    out_args, out_binds = _params(spec.out_params, const=False)
    source = (f"template <typename T>\n__global__ void check({', '.join(in_args + out_args)}) {{\n"
              f"    typedef {spec.reduce_type} R;\n    {' '.join(in_binds)}\n"
              f"    R a = R({spec.identity}), b = ({spec.map_expr});\n    a = ({spec.reduce_expr});\n"
              f"    {' '.join(out_binds)}\n    {spec.post_map_expr};\n}}\n")
    _compile(tmp_path, source, ["check<float>", "check<double>"])
