"""Graph data containers with PyG's names (torch_geometric.data)."""
from .batch import Batch
from .data import Data
from .dataset import Dataset, InMemoryDataset

__all__ = ["Batch", "Data", "Dataset", "InMemoryDataset"]
