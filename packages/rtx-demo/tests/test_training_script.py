"""Training written the way a PyTorch user writes it, with only the import changed: a Module
subclass, DataLoader, optimizer, LR scheduler, loss.backward(), optimizer.step(),
torch.save(model.state_dict()) and load. Stated goal: >= 95 % test accuracy on digits."""
import numpy as np
from sklearn.datasets import load_digits

import rtx as torch
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x.flatten(1)))))


def test_pytorch_style_training_script(tmp_path):
    torch.manual_seed(0)
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    train_idx, test_idx = perm[:1400], perm[1400:]
    loader = DataLoader(TensorDataset(x[train_idx], y[train_idx]), batch_size=64, shuffle=True)

    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
    criterion = nn.CrossEntropyLoss()
    for _epoch in range(20):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        scheduler.step()

    model.eval()
    with torch.no_grad():
        accuracy = (model(x[test_idx]).argmax(dim=1) == y[test_idx]).float().mean().item()
    assert accuracy >= 0.95

    torch.save(model.state_dict(), tmp_path / "mlp.pt")
    fresh = MLP()
    fresh.load_state_dict(torch.load(tmp_path / "mlp.pt"))
    fresh.eval()
    with torch.no_grad():
        np.testing.assert_array_equal(fresh(x[test_idx]).numpy(), model(x[test_idx]).numpy())
