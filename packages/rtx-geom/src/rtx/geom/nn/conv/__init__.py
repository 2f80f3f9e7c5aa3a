"""Graph convolutions with PyG's constructors and state_dict keys."""
from .cheb_conv import ChebConv
from .edge_conv import EdgeConv
from .gat_conv import GATConv, GATv2Conv
from .gcn_conv import GCNConv, gcn_norm
from .gin_conv import GINConv, GINEConv
from .graph_conv import GraphConv
from .sage_conv import SAGEConv
from .transformer_conv import TransformerConv

__all__ = ["ChebConv", "EdgeConv", "GATConv", "GATv2Conv", "GCNConv", "GINConv", "GINEConv", "GraphConv",
           "SAGEConv", "TransformerConv", "gcn_norm"]
