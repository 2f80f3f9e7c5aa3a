"""Hogwild training (pytorch/examples mnist_hogwild): one model in shared memory
(model.share_memory()), several torch.multiprocessing processes each running SGD on it without
locks, then the parent evaluates the shared weights. Data: scikit-learn's 8x8 digits."""
import json

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(10 * 4 * 4, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = x.view(-1, 160)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def load():
    digits = load_digits()
    x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(digits.target)
    perm = torch.tensor(np.random.RandomState(0).permutation(len(y)))
    return x[perm[:1400]], y[perm[:1400]], x[perm[1400:]], y[perm[1400:]]


def train(rank, model, epochs, seed):
    torch.manual_seed(seed + rank)
    x, y, _, _ = load()
    shard = slice(rank, None, 2)  # each process its own half of the training set
    loader = DataLoader(TensorDataset(x[shard], y[shard]), batch_size=32, shuffle=True)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    model.train()
    for _ in range(epochs):
        for data, target in loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()


def test(model):
    _, _, x, y = load()
    model.eval()
    with torch.no_grad():
        output = model(x)
    return F.nll_loss(output, y).item(), output.argmax(1).eq(y).float().mean().item()


def main():
    torch.manual_seed(1)
    mp.set_start_method("spawn", force=True)
    model = Net()
    model.share_memory()  # gradients are allocated lazily, so they are not shared
    before = test(model)
    processes = []
    for rank in range(2):
        p = mp.Process(target=train, args=(rank, model, 10, 1))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
        assert p.exitcode == 0, f"a training process failed with exit code {p.exitcode}"
    loss, accuracy = test(model)
    print("RESULT " + json.dumps({"loss_before": before[0], "test_loss": loss, "accuracy": accuracy}))


if __name__ == "__main__":
    main()
