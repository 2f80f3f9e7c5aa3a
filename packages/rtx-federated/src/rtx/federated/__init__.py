"""rtx federated: FedAvg/FedProx/FedAdam, secure aggregation, DP-SGD with an RDP accountant."""
from .accountant import DEFAULT_ORDERS, RDPAccountant, compute_rdp, get_privacy_spent
from .client import Client, DPConfig, FitResult
from .dp import clip_and_noise, dp_gradients, dp_sgd_step, per_sample_gradients, poisson_batches
from .params import flatten, get_weights, set_weights, unflatten
from .partition import dirichlet_partition, iid_partition
from .secagg import SecAggAbort, SecAggClient, SecAggServer, dequantize, prg_mask, quantize
from .server import History, RoundRecord, run_federated, sample_clients
from .strategy import FedAdam, FedAvg, FedProx, Strategy, get_strategy, weighted_mean
from .transport import InProcessTransport, MPITransport

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ORDERS", "RDPAccountant", "compute_rdp", "get_privacy_spent",
    "Client", "DPConfig", "FitResult",
    "clip_and_noise", "dp_gradients", "dp_sgd_step", "per_sample_gradients", "poisson_batches",
    "flatten", "get_weights", "set_weights", "unflatten",
    "dirichlet_partition", "iid_partition",
    "SecAggAbort", "SecAggClient", "SecAggServer", "dequantize", "prg_mask", "quantize",
    "History", "RoundRecord", "run_federated", "sample_clients",
    "FedAdam", "FedAvg", "FedProx", "Strategy", "get_strategy", "weighted_mean",
    "InProcessTransport", "MPITransport",
]
