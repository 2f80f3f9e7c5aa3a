"""Writes ONNX files made by PyTorch's exporter, which tests/test_load_torch_exported.py imports
with rtx.onnx.load. Run once with a Python that has torch (the CPU wheel of the side venv) and
onnx (the TorchScript exporter needs it):

    python make_torch_onnx_fixtures.py      # from this folder

Each model gets <name>.onnx and <name>.npz (inputs and torch's outputs at two batch sizes), so
the tests need neither torch nor onnxruntime.
"""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, stride=2, groups=2), nn.Hardswish(),
                                      nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1)).log_softmax(-1)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(10, 4, batch_first=True)
        self.head = nn.Linear(4, 3)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        g, _ = self.gru(h)
        return self.head(g[:, -1])


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, activation="gelu")
        self.norm = nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(self.layer(x)).mean(1)


CASES = {
    "torch_cnn": (Cnn(), lambda b: (torch.randn(b, 3, 12, 12),), {0: "batch"}),
    "torch_recurrent": (Recurrent(), lambda b: (torch.randint(0, 20, (b, 7)),), {0: "batch"}),
    "torch_encoder": (Encoder(), lambda b: (torch.randn(b, 9, 16),), {0: "batch"}),
}

for name, (model, make, axes) in CASES.items():
    model.eval()
    args = make(2)
    torch.onnx.export(model, args, f"{name}.onnx", dynamo=False, opset_version=17, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": axes, "y": {0: "batch"}})
    arrays = {}
    for b in (2, 5):
        x = make(b)[0]
        with torch.no_grad():
            arrays[f"x{b}"] = x.numpy()
            arrays[f"y{b}"] = model(x).numpy()
    np.savez(f"{name}.npz", **arrays)
print("torch", torch.__version__)
