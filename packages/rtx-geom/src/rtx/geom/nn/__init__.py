"""Graph neural network layers with PyG's names (torch_geometric.nn)."""
from .conv import (
                   ChebConv,
                   EdgeConv,
                   GATConv,
                   GATv2Conv,
                   GCNConv,
                   GINConv,
                   GINEConv,
                   GraphConv,
                   SAGEConv,
                   TransformerConv,
)
from .linear import Linear
from .message_passing import MessagePassing
from .mlp import MLP
from .models import GAE, GAT, GCN, GIN, VGAE, GraphSAGE, InnerProductDecoder, JumpingKnowledge
from .norm import BatchNorm, LayerNorm
from .pool import global_add_pool, global_max_pool, global_mean_pool

__all__ = [
    "BatchNorm", "ChebConv", "EdgeConv", "GAE", "GAT", "GATConv", "GATv2Conv", "GCN", "GCNConv", "GIN", "GINConv",
    "GINEConv", "GraphConv", "GraphSAGE", "InnerProductDecoder", "JumpingKnowledge", "LayerNorm", "Linear", "MLP",
    "MessagePassing", "SAGEConv", "TransformerConv", "VGAE", "global_add_pool", "global_max_pool", "global_mean_pool",
]
