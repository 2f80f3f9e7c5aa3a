#!/bin/sh
# Build torch-sparse 0.6.18's neighbor_sample operator alone against the PyG venv's torch, for
# tools/bench/geom.py --torch-sparse-op (PyG's NeighborLoader needs pyg-lib or torch-sparse; neither has a
# wheel reachable here, and the full torch-sparse build is too slow on the shared cores).
# Usage: sh packages/rtx-geom/scripts/build_torch_sparse_sampler.sh [PYG_PYTHON] [OUT.so]
set -e
PY=${1:-/work/venvs/pyg/bin/python}
OUT=${2:-/tmp/geom/torch_sparse_neighbor_sample.so}
WORK=$(mktemp -d)
"$PY" -m pip download --no-deps --no-build-isolation -d "$WORK" torch-sparse==0.6.18
tar xzf "$WORK"/torch_sparse-0.6.18.tar.gz -C "$WORK"
cd "$WORK"/torch_sparse-0.6.18
INC=$("$PY" -c "from torch.utils.cpp_extension import include_paths; print(' '.join('-I' + p for p in include_paths()))")
LIB=$("$PY" -c "from torch.utils.cpp_extension import library_paths; print(library_paths()[0])")
ABI=$("$PY" -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
PYINC=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
mkdir -p "$(dirname "$OUT")"
g++ -O3 -shared -fPIC -std=c++20 -D_GLIBCXX_USE_CXX11_ABI="$ABI" -DTORCH_API_INCLUDE_EXTENSION_H -Icsrc \
    -I"$PYINC" -Ithird_party/parallel-hashmap $INC csrc/neighbor_sample.cpp csrc/cpu/neighbor_sample_cpu.cpp \
    -L"$LIB" -lc10 -ltorch -ltorch_cpu -Wl,-rpath,"$LIB" -o "$OUT" 2>/dev/null
echo "built $OUT"
