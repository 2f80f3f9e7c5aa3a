"""rtx federated: FedAvg/FedProx/FedAdam, secure aggregation, DP-SGD with an RDP accountant."""
__version__ = "0.1.0"
