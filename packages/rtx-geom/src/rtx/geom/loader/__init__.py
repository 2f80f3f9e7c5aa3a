"""Loaders with PyG's names (torch_geometric.loader)."""
from .dataloader import Collater, DataLoader
from .neighbor_loader import LinkNeighborLoader, NeighborLoader

__all__ = ["Collater", "DataLoader", "LinkNeighborLoader", "NeighborLoader"]
