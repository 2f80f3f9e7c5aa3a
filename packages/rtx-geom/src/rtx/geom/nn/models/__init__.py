from .autoencoder import GAE, VGAE, InnerProductDecoder
from .basic_gnn import GAT, GCN, GIN, BasicGNN, GraphSAGE
from .jumping_knowledge import JumpingKnowledge

__all__ = ["GAE", "GAT", "GCN", "GIN", "VGAE", "BasicGNN", "GraphSAGE", "InnerProductDecoder", "JumpingKnowledge"]
