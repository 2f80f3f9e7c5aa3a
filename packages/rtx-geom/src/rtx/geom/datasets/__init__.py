"""Datasets with PyG's names (torch_geometric.datasets); nothing is downloaded."""
from .karate import KarateClub
from .planetoid import Planetoid
from .synthetic import FakeDataset, StochasticBlockModelDataset, stochastic_blockmodel_graph
from .tu_dataset import TUDataset

__all__ = ["FakeDataset", "KarateClub", "Planetoid", "StochasticBlockModelDataset", "TUDataset",
           "stochastic_blockmodel_graph"]
