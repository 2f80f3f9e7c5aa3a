"""The demo's model: a small CNN for 8x8 digit images, written as a PyTorch user writes one."""
import rtx.nn as nn
import rtx.nn.functional as F


class DigitsCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(32 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)   # 16 x 4 x 4
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)   # 32 x 2 x 2
        x = x.flatten(1)
        return self.fc2(F.relu(self.fc1(x)))
