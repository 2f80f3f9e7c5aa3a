"""Graph neural networks with PyTorch Geometric's API: Data/Batch, loaders, message passing, GCN/GAT/SAGE/GIN, datasets."""
__version__ = "0.1.0"
