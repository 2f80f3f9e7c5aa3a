"""Jumping knowledge (Xu et al. 2018): combine the representations of every layer
(PyG's torch_geometric.nn.JumpingKnowledge; same arguments and state_dict keys)."""
import rtx
import rtx.nn as nn


class JumpingKnowledge(nn.Module):
    """mode 'cat' concatenates the layers' outputs, 'max' takes their elementwise maximum, 'lstm' weights them per
    node by attention scores from a bidirectional LSTM run over the layer axis (needs channels and num_layers)."""

    def __init__(self, mode, channels=None, num_layers=None):
        super().__init__()
        self.mode = mode.lower() if isinstance(mode, str) else mode
        if self.mode not in ("cat", "max", "lstm"):
            raise ValueError(f"JumpingKnowledge mode must be 'cat', 'max' or 'lstm', got {mode!r}")
        if self.mode != "lstm":
            self.lstm = self.att = self.channels = self.num_layers = None
        else:
            if channels is None or num_layers is None:
                raise ValueError("JumpingKnowledge('lstm') needs channels and num_layers, got "
                                 f"channels={channels!r}, num_layers={num_layers!r}")
            # PyG's sizes: the LSTM's hidden width is half the concatenated width, so both directions give it back.
            hidden = (num_layers * channels) // 2
            self.lstm = nn.LSTM(channels, hidden, bidirectional=True, batch_first=True)
            self.att = nn.Linear(2 * hidden, 1)
            self.channels, self.num_layers = channels, num_layers

    def reset_parameters(self):
        if self.lstm is not None:
            self.lstm.reset_parameters()
            self.att.reset_parameters()

    def forward(self, xs):
        if self.mode == "cat":
            return rtx.cat(xs, -1)
        if self.mode == "max":
            return rtx.stack(xs, -1).amax(-1)
        x = rtx.stack(xs, 1)                                # [num_nodes, num_layers, channels]
        alpha, _ = self.lstm(x)
        alpha = self.att(alpha).squeeze(-1).softmax(-1)    # [num_nodes, num_layers], a distribution per node
        return (x * alpha.unsqueeze(-1)).sum(1)

    def __repr__(self):
        if self.mode == "lstm":
            return f"{type(self).__name__}({self.mode}, channels={self.channels}, layers={self.num_layers})"
        return f"{type(self).__name__}({self.mode})"
