#!/usr/bin/env bash
# Regenerate src/rtx/serving_api/proto/inference_pb2{,_grpc}.py from inference.proto.
# The generated modules are committed, so installing rtx-serving-api needs only grpcio and protobuf
# at run time (no compiler, no build step). They were made with grpcio-tools 1.81.1 (protobuf
# gencode 6.33.5): the runtime needs protobuf >= 6.33.5 and grpcio >= 1.81.1, as pyproject.toml says.
#   python3 -m venv /tmp/gen && /tmp/gen/bin/pip install grpcio-tools==1.81.1 && PYTHON=/tmp/gen/bin/python tools/gen_grpc.sh
set -euo pipefail
cd "$(dirname "$0")/../src/rtx/serving_api/proto"
"${PYTHON:-python3}" -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. inference.proto
# grpc_tools writes `import inference_pb2`, which only works with the folder on sys.path
sed -i 's/^import inference_pb2 as inference__pb2$/from rtx.serving_api.proto import inference_pb2 as inference__pb2/' inference_pb2_grpc.py
# A private descriptor pool: the package `inference` is also what tritonclient and other clients of
# the protocol register in protobuf's default pool, and a second registration there fails
# ("duplicate symbol"), so a process could not hold both the server and such a client.
sed -i 's/^DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(/_POOL = _descriptor_pool.DescriptorPool()\nDESCRIPTOR = _POOL.AddSerializedFile(/' inference_pb2.py
grep -q '^_POOL = ' inference_pb2.py
# generated code is not held to the project's lint rules (long lines, import order)
for f in inference_pb2.py inference_pb2_grpc.py; do sed -i '1i # ruff: noqa' "$f"; done
