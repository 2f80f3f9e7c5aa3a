"""Train a class-conditional diffusion model on scikit-learn's 8x8 digits (`rtx diffuse train`), sample
grids from it (`rtx diffuse sample`) and score its samples with a separately trained classifier
(`rtx diffuse evaluate`: rtx demo's DigitsCNN) and by nearest-neighbour distance to the training set."""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.diffuse.models import UNet2DModel
from rtx.diffuse.pipelines import ClassConditionalPipeline
from rtx.diffuse.schedulers import DDIMScheduler, DDPMScheduler, DPMSolverMultistepScheduler
from rtx.diffuse.training_utils import EMAModel

NUM_CLASSES = 10


def digits_split(seed=0, test_fraction=0.2):
    """(x_train, y_train, x_test, y_test) in [0, 1], shape (N, 1, 8, 8): rtx demo's split, so the classifier
    that scores samples never saw the held-out images either."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = int(len(y) * test_fraction)
    return x[perm[n_test:]], y[perm[n_test:]], x[perm[:n_test]], y[perm[:n_test]]


def digits_unet(channels=(32, 64), layers_per_block=1, attention=True):
    down = ("DownBlock2D", "AttnDownBlock2D" if attention else "DownBlock2D")
    up = ("AttnUpBlock2D" if attention else "UpBlock2D", "UpBlock2D")
    return UNet2DModel(sample_size=8, in_channels=1, out_channels=1, block_out_channels=tuple(channels),
                       layers_per_block=layers_per_block, down_block_types=down, up_block_types=up,
                       norm_num_groups=8, attention_head_dim=8, add_attention=attention,
                       num_class_embeds=NUM_CLASSES + 1)  # the last label is "no label", for guidance


@dataclass
class TrainResult:
    steps: int
    seconds: float
    final_loss: float
    parameters: int
    path: str
    losses: list


def train(dataset="digits", out="diffuse_digits", minutes=10.0, max_steps=None, batch_size=64, lr=2e-3, seed=0,
          ema_decay=0.999, p_uncond=0.1, channels=(32, 64), checkpoint_every=500, progress=True, log=print,
          prediction_type="epsilon", beta_schedule="squaredcos_cap_v2", warmup_steps=100, ema_warmup=False,
          snr_gamma=None, layers_per_block=1, attention=True):
    """Train until `minutes` of wall time or `max_steps` steps, whichever comes first; write the EMA weights as a
    pipeline folder (model_index.json, unet/, scheduler/) at every checkpoint and at the end.

    The learning rate warms up linearly over `warmup_steps`, then follows a cosine to zero over `max_steps` (or over
    the wall budget when no step budget is given). `prediction_type` is the UNet's target ("epsilon" or
    "v_prediction", Salimans & Ho 2022); `snr_gamma` turns on Min-SNR loss weighting (Hang et al. 2023);
    `ema_warmup` uses EMAModel's power-2/3 warm-up instead of (1 + s)/(10 + s)."""
    if dataset != "digits":
        raise ValueError(f"dataset must be 'digits' (scikit-learn's 8x8 digits), got {dataset!r}")
    if prediction_type not in ("epsilon", "v_prediction"):
        raise ValueError(f"prediction_type must be 'epsilon' or 'v_prediction', got {prediction_type!r}")
    rtx.manual_seed(seed)
    x_train, y_train, _, _ = digits_split()
    x_train = x_train * 2 - 1  # the model works in [-1, 1]
    unet = digits_unet(channels, layers_per_block, attention)
    noise_scheduler = DDPMScheduler(num_train_timesteps=1000, beta_schedule=beta_schedule,
                                    prediction_type=prediction_type)
    alphas_cumprod = np.asarray(noise_scheduler.alphas_cumprod, dtype=np.float64)
    snr = alphas_cumprod / (1 - alphas_cumprod)
    optimizer = rtx.optim.AdamW(unet.parameters(), lr=lr, weight_decay=0.0)
    ema = EMAModel(unet.parameters(), decay=ema_decay, use_ema_warmup=ema_warmup)
    rng = np.random.default_rng(seed)
    g = rtx.Generator().manual_seed(seed)
    budget = minutes * 60.0
    total = max_steps if max_steps is not None else 10 ** 9
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=max_steps, desc="rtx diffuse train", unit="step")
    start, step, loss_avg, losses = time.perf_counter(), 0, None, []

    def save():
        # the folder samples with DPM-Solver++ (2nd order) on the training noise schedule; see sample()
        sampler = DPMSolverMultistepScheduler.from_config(noise_scheduler.config)
        ema.store(list(unet.parameters()))
        ema.copy_to(unet.parameters())
        ClassConditionalPipeline(unet, sampler).save_pretrained(out)
        ema.restore(list(unet.parameters()))

    unet.train()
    while step < total and time.perf_counter() - start < budget:
        idx = rng.integers(0, len(x_train), batch_size)
        x0 = rtx.from_numpy(x_train[idx])
        labels = y_train[idx].copy()
        labels[rng.random(batch_size) < p_uncond] = NUM_CLASSES  # label dropout trains the unconditional model
        noise = rtx.randn(x0.shape, generator=g)
        t_np = rng.integers(0, 1000, batch_size)
        t = rtx.from_numpy(t_np)
        noisy = noise_scheduler.add_noise(x0, noise, t)
        target = noise if prediction_type == "epsilon" else noise_scheduler.get_velocity(x0, noise, t)
        pred = unet(noisy, t, class_labels=rtx.from_numpy(labels)).sample
        if snr_gamma is None:
            loss = F.mse_loss(pred, target)
        else:
            # Min-SNR-gamma: the x0-error weight min(snr, gamma), expressed for the eps or v target
            s = snr[t_np]
            w = np.minimum(s, snr_gamma) / (s if prediction_type == "epsilon" else s + 1)
            per_sample = ((pred - target) ** 2).mean((1, 2, 3))
            loss = (per_sample * rtx.from_numpy(w.astype(np.float32))).mean()
        optimizer.zero_grad()
        loss.backward()
        frac = min(1.0, (time.perf_counter() - start) / budget) if max_steps is None else step / max_steps
        for group in optimizer.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / max(1, warmup_steps)) * 0.5 * (1 + math.cos(math.pi * frac))
        optimizer.step()
        ema.step(unet.parameters())
        step += 1
        value = loss.item()
        losses.append(value)
        loss_avg = value if loss_avg is None else 0.98 * loss_avg + 0.02 * value
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_avg:.4f}")
        if checkpoint_every and step % checkpoint_every == 0:
            save()
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - start
    save()
    final = float(np.mean(losses[-50:]))
    log(f"trained {step} steps in {seconds:.0f} s, loss (mean of the last 50 batches) {final:.4f}")
    return TrainResult(step, seconds, final, unet.num_parameters(), out, losses)


SAMPLERS = ("ddim", "dpmsolver++")


def sample(path, label, n=16, guidance_scale=3.0, num_inference_steps=25, seed=0, progress=False, sampler=None):
    """n samples of `label` from a pipeline folder, as (n, 8, 8) floats in [0, 1]. `sampler` None uses the folder's
    scheduler (DPM-Solver++ for folders `train` writes); "ddim" or "dpmsolver++" builds that scheduler on the
    folder's noise schedule. DDIM runs with clip_sample=False: with clipping (DDPMScheduler's default, which a
    DDIM made from its config inherits) the early, very noisy x0 estimates are clipped to +-1 while the step keeps
    the unclipped noise estimate, which leaves speckled digits (71% classified right vs 99% unclipped, same model)."""
    pipe = ClassConditionalPipeline.from_pretrained(path)
    if sampler == "dpmsolver++":
        pipe.scheduler = DPMSolverMultistepScheduler.from_config(pipe.scheduler.config)
    elif sampler == "ddim":
        pipe.scheduler = DDIMScheduler.from_config(pipe.scheduler.config, clip_sample=False)
    elif sampler is not None:
        raise ValueError(f"sampler must be None (the folder's) or one of {SAMPLERS}, got {sampler!r}")
    pipe.set_progress_bar_config(disable=not progress)
    out = pipe([label] * n, guidance_scale=guidance_scale, num_inference_steps=num_inference_steps,
               generator=rtx.Generator().manual_seed(seed), output_type="np")
    return out.images[..., 0]


def save_grid(images, path, cols=8, scale=4):
    """A PNG grid of (N, H, W) images in [0, 1], each enlarged `scale` times."""
    from PIL import Image

    n, h, w = images.shape
    rows = -(-n // cols)
    grid = np.ones((rows * (h + 1) + 1, cols * (w + 1) + 1), dtype=np.float64)
    for i, im in enumerate(images):
        r, c = divmod(i, cols)
        grid[1 + r * (h + 1):1 + r * (h + 1) + h, 1 + c * (w + 1):1 + c * (w + 1) + w] = im
    img = Image.fromarray((grid * 255).round().astype(np.uint8), mode="L")
    img = img.resize((img.width * scale, img.height * scale), Image.NEAREST)
    img.save(path)
    return path


@dataclass
class EvalResult:
    accuracy: float
    per_class: list
    classifier_test_accuracy: float
    nn_sample_median: float
    nn_test_median: float
    nn_sample_min: float
    samples: int
    seconds: float


def evaluate(path, n_per_class=20, guidance_scale=3.0, num_inference_steps=25, seed=0, classifier_epochs=15,
             log=print, sampler=None, classifier=None):
    """Train rtx demo's DigitsCNN on the same training split (separately from the diffusion model), classify
    n_per_class samples of each label, and measure each sample's distance to its nearest training image
    against the same distance for held-out test images (a model that copies its training set scores ~0).
    `classifier` names a DigitsCNN state file (from `rtx demo train`) to reuse instead of training one."""
    import tempfile

    from rtx.demo.model import DigitsCNN
    from rtx.demo.train import evaluate as classifier_accuracy
    from rtx.demo.train import train as train_classifier

    start = time.perf_counter()
    cnn = DigitsCNN()
    if classifier is None:
        with tempfile.TemporaryDirectory() as d:
            clf = train_classifier(epochs=classifier_epochs, out=os.path.join(d, "cnn.safetensors"),
                                   progress=False, log=lambda *_: None)
            cnn.load_state_dict(rtx.load(clf.path))
    else:
        cnn.load_state_dict(rtx.load(classifier))
    x_train, _, x_test, y_test = digits_split()
    # the classifier's own accuracy on the held-out test digits (neither model trained on them)
    clf_accuracy, _ = classifier_accuracy(cnn, rtx.from_numpy(x_test), rtx.from_numpy(y_test), "cpu")
    cnn.eval()
    log(f"classifier: DigitsCNN, test accuracy {clf_accuracy * 100:.1f}%")
    per_class, all_samples = [], []
    for label in range(NUM_CLASSES):
        s = sample(path, label, n_per_class, guidance_scale, num_inference_steps, seed=seed + label,
                   sampler=sampler)
        all_samples.append(s)
        with rtx.no_grad():
            pred = cnn(rtx.from_numpy(s[:, None].astype(np.float32))).argmax(1).numpy()
        per_class.append(float((pred == label).mean()))
    samples = np.concatenate(all_samples).reshape(-1, 64)
    train_flat, test_flat = x_train.reshape(-1, 64), x_test.reshape(-1, 64)

    def nn_dist(a):
        d2 = (a ** 2).sum(1)[:, None] - 2 * a @ train_flat.T + (train_flat ** 2).sum(1)[None]
        return np.sqrt(np.maximum(d2.min(1), 0))

    ns, nt = nn_dist(samples), nn_dist(test_flat)
    r = EvalResult(float(np.mean(per_class)), per_class, clf_accuracy, float(np.median(ns)), float(np.median(nt)),
                   float(ns.min()), len(samples), time.perf_counter() - start)
    return r, np.concatenate(all_samples)
