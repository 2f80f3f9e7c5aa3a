"""Writes the PyTorch-made checkpoints the serialization tests read. Run once with a real torch
(CPU wheel, side venv): /path/to/torch-venv/bin/python make_torch_fixtures.py
The expected values go to an .npz written by NumPy, so the tests need no torch."""
import collections

import numpy as np
import torch

torch.manual_seed(0)
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
sd = collections.OrderedDict()
sd["linear.weight"] = torch.nn.Parameter(torch.randn(3, 5))
sd["linear.bias"] = torch.randn(3)
sd["bn.num_batches_tracked"] = torch.tensor(7)
sd["half"] = torch.randn(2, 3).half()
sd["bf16"] = torch.randn(4).bfloat16()
sd["ints"] = torch.arange(5, dtype=torch.int32)
sd["mask"] = torch.tensor([True, False, True])
sd["transposed"] = base.t()           # non-contiguous: stride (1, 6)
sd["offset_view"] = base[1:3, 2:5]    # storage offset 8
sd["shared_a"] = base                 # shares storage with the two views above
obj = {"state_dict": sd, "epoch": 3, "names": ["a", "b"], "lr": 0.01}
torch.save(obj, "torch_checkpoint.pt")
torch.save(sd, "torch_legacy.pt", _use_new_zipfile_serialization=False)
np.savez("torch_expected.npz", **{k.replace(".", "__"): (v.float() if v.dtype == torch.bfloat16 else v)
                                  .detach().numpy() for k, v in sd.items()})
print("torch", torch.__version__)
