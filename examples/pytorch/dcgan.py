"""A DCGAN (pytorch/examples dcgan/main.py) shrunk to scikit-learn's 8x8 digits: transposed
convolutions with BatchNorm in the generator, a Sigmoid discriminator trained with nn.BCELoss,
Adam(0.0002, betas=(0.5, 0.999)) and the weights_init of the example. BCELoss sees
probabilities of exactly 0 or 1 as the discriminator saturates: its gradient must stay finite."""
import json

import torch
import torch.nn as nn
import torch.optim as optim
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

nz, ngf, ndf = 16, 32, 32


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.constant_(m.bias, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),      # 4x4
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),     # 8x8
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.Conv2d(ngf, 1, 3, 1, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),                    # 4x4
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 1, 0, bias=False),              # 1x1
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Flatten(),
            nn.Linear(ndf * 2, 1),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def main():
    torch.manual_seed(999)
    digits = load_digits()
    x = torch.tensor(digits.images / 8.0 - 1.0, dtype=torch.float32).unsqueeze(1)
    loader = DataLoader(TensorDataset(x), batch_size=64, shuffle=True, drop_last=True)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(64, nz, 1, 1)
    real_label, fake_label = 1.0, 0.0
    optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    d_losses, g_losses = [], []
    for _ in range(8):
        for (real,) in loader:
            netD.zero_grad()
            b_size = real.size(0)
            label = torch.full((b_size,), real_label, dtype=torch.float)
            errD_real = criterion(netD(real), label)
            errD_real.backward()
            noise = torch.randn(b_size, nz, 1, 1)
            fake = netG(noise)
            label.fill_(fake_label)
            errD_fake = criterion(netD(fake.detach()), label)
            errD_fake.backward()
            optimizerD.step()

            netG.zero_grad()
            label.fill_(real_label)
            errG = criterion(netD(fake), label)
            errG.backward()
            optimizerG.step()
            d_losses.append((errD_real + errD_fake).item())
            g_losses.append(errG.item())
            grads = [p.grad for p in netG.parameters()] + [p.grad for p in netD.parameters()]
            assert all(bool(torch.isfinite(g).all()) for g in grads if g is not None), "a gradient is not finite"
    with torch.no_grad():
        samples = netG(fixed_noise)
    # Samples should look like digits: pixel statistics close to the data's.
    stats = {"d_loss_last_epoch": sum(d_losses[-21:]) / 21, "g_loss_last_epoch": sum(g_losses[-21:]) / 21,
             "sample_mean": samples.mean().item(), "data_mean": x.mean().item(),
             "sample_std": samples.std().item(), "data_std": x.std().item()}
    print("RESULT " + json.dumps(stats))


if __name__ == "__main__":
    main()
