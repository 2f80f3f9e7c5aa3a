from .autoencoder import GAE, VGAE, InnerProductDecoder
from .basic_gnn import GAT, GCN, GIN, BasicGNN, GraphSAGE

__all__ = ["GAE", "GAT", "GCN", "GIN", "VGAE", "BasicGNN", "GraphSAGE", "InnerProductDecoder"]
