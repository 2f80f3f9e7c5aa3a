"""Generated gRPC code of the Open Inference Protocol (see inference.proto, tools/gen_grpc.sh)."""
