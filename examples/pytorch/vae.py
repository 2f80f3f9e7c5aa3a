"""A variational autoencoder (pytorch/examples vae/main.py) with torch.distributions: the encoder
gives a Normal posterior, sampled with rsample (reparameterised), and the KL term is
kl_divergence against a standard Normal prior. Data: scikit-learn's 8x8 digits in [0, 1]."""
import json

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn, optim
from torch.distributions import Normal, kl_divergence
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self, latent=8):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc21 = nn.Linear(128, latent)
        self.fc22 = nn.Linear(128, latent)
        self.fc3 = nn.Linear(latent, 128)
        self.fc4 = nn.Linear(128, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def decode(self, z):
        return torch.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        q = Normal(mu, torch.exp(0.5 * logvar))
        z = q.rsample()
        return self.decode(z), q


def loss_function(recon_x, x, q):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    prior = Normal(torch.zeros_like(q.loc), torch.ones_like(q.scale))
    return bce + kl_divergence(q, prior).sum()


def main():
    torch.manual_seed(1)
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    perm = np.random.RandomState(0).permutation(len(x))
    train_x, test_x = x[torch.tensor(perm[:1400])], x[torch.tensor(perm[1400:])]
    loader = DataLoader(TensorDataset(train_x), batch_size=64, shuffle=True)
    model = VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(30):
        model.train()
        for (data,) in loader:
            optimizer.zero_grad()
            recon, q = model(data)
            loss = loss_function(recon, data, q)
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        recon, q = model(test_x)
        test_loss = loss_function(recon, test_x, q).item() / len(test_x)
        sample = model.decode(torch.randn(16, 8))
    assert sample.shape == (16, 64)
    print("RESULT " + json.dumps({"test_loss_per_image": test_loss}))


if __name__ == "__main__":
    main()
