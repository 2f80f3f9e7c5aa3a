"""Schedulers against diffusers 0.42 (fixtures/make_scheduler_fixtures.py): whole sampling loops, every
config option of the issue, add_noise/get_velocity and the saved scheduler_config.json; closed forms."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.diffuse as diffuse
from rtx.diffuse.schedulers import (
    scheduling_ddim,
    scheduling_ddpm,
    scheduling_euler_ancestral_discrete,
    scheduling_euler_discrete,
)

FIX = Path(__file__).resolve().parent / "fixtures"
META = json.loads((FIX / "schedulers.json").read_text())
DATA = np.load(FIX / "schedulers.npz")
CASES = {c["name"]: c for c in META["cases"]}
SHAPE = tuple(META["shape"])


def model(x, t, out_channels, prediction_type):
    """The fixture script's analytic 'denoiser', in rtx ops."""
    t = float(t)
    if prediction_type == "sample":
        out = 0.2 * rtx.tanh(x) + 0.1 * math.sin(0.01 * t)
    else:
        out = 0.9 * x + 0.1 * rtx.tanh(x) * math.cos(0.003 * t)
    if out_channels == 2 * x.shape[1]:
        out = rtx.cat([out, rtx.tanh(0.5 * x + 0.001 * t)], dim=1)
    return out


@pytest.fixture
def replay(monkeypatch):
    """Make the schedulers draw diffusers' recorded noise, in order."""
    queue = []

    def randn_tensor(shape, generator=None, device=None, dtype=None):
        noise = queue.pop(0)
        assert tuple(noise.shape) == tuple(shape)
        return rtx.as_tensor(noise, dtype=dtype)

    for mod in (scheduling_ddpm, scheduling_ddim, scheduling_euler_discrete, scheduling_euler_ancestral_discrete):
        monkeypatch.setattr(mod, "randn_tensor", randn_tensor)
    return queue


def sample_loop(case, queue):
    ref = lambda k: DATA[f"{case['name']}/f64/{k}"]  # noqa: E731
    queue.extend(list(ref("noise")))
    s = getattr(diffuse, case["class"])(**case["config"])
    s.set_timesteps(case["num_inference_steps"])
    x = rtx.as_tensor(np.random.default_rng(1).standard_normal(SHAPE), dtype=rtx.float64) * s.init_noise_sigma
    out_c = 2 * SHAPE[1] if case["config"].get("variance_type") == "learned_range" else SHAPE[1]
    prev, pred = [], []
    for t in s.timesteps:
        inp = s.scale_model_input(x, t)
        out = s.step(model(inp, t, out_c, s.config.prediction_type), t, x, generator=rtx.Generator(),
                     **case["step_kwargs"])
        x = out.prev_sample
        prev.append(x.numpy())
        if out.get("pred_original_sample") is not None:
            pred.append(out.pred_original_sample.numpy())
    assert not queue, "the loop drew less noise than diffusers' did"
    return s, np.stack(prev), (np.stack(pred) if pred else None)


@pytest.mark.parametrize("name", list(CASES))
def test_sampling_loop_matches_diffusers_float64(name, replay):
    case = CASES[name]
    ref = lambda k: DATA[f"{name}/f64/{k}"]  # noqa: E731
    s, prev, pred = sample_loop(case, replay)
    np.testing.assert_allclose(s.timesteps.numpy().astype(np.float64), ref("timesteps"), rtol=1e-12)
    if f"{name}/f64/sigmas" in DATA:
        np.testing.assert_allclose(s.sigmas, ref("sigmas"), rtol=1e-12, atol=0)
    assert s.init_noise_sigma == pytest.approx(float(ref("init_noise_sigma")), rel=1e-12)
    np.testing.assert_allclose(prev, ref("prev"), rtol=0, atol=1e-6 * max(1.0, np.abs(ref("prev")).max()))
    # in practice the two agree to rounding, far inside the 1e-6
    assert np.abs(prev - ref("prev")).max() <= 1e-9 * max(1.0, np.abs(ref("prev")).max())
    if pred is not None:
        np.testing.assert_allclose(pred, ref("pred"), rtol=0, atol=1e-9 * max(1.0, np.abs(ref("pred")).max()))


@pytest.mark.parametrize("name", list(CASES))
def test_sampling_loop_near_diffusers_as_shipped_float32(name, replay):
    """diffusers' own float32 tables: the gap is float32 rounding of betas/sigmas (FACTS: up to ~3e-5 on unit
    samples; Karras and exponential sigma schedules ~1e-3), never a different algorithm."""
    case = CASES[name]
    _, prev, _ = sample_loop(case, replay)
    f32 = DATA[f"{name}/f32/prev"]
    scale = max(1.0, np.abs(f32).max())
    tol = 3e-3 if ("karras" in name or "exponential" in name or "log_linear" in name) else 2e-4
    assert np.abs(prev[-1] - f32[-1]).max() <= tol * scale
    np.testing.assert_allclose(DATA[f"{name}/f32/timesteps"], DATA[f"{name}/f64/timesteps"],
                               atol=2e-2 if "karras" in name or "exponential" in name else 1e-3)


@pytest.mark.parametrize("name", list(CASES))
def test_add_noise_and_velocity_match_diffusers(name):
    case = CASES[name]
    ref = lambda k: DATA[f"{name}/f64/{k}"]  # noqa: E731
    s = getattr(diffuse, case["class"])(**case["config"])
    s.set_timesteps(case["num_inference_steps"])
    x0 = rtx.as_tensor(np.random.default_rng(2).standard_normal(SHAPE), dtype=rtx.float64)
    eps = rtx.as_tensor(np.random.default_rng(3).standard_normal(SHAPE), dtype=rtx.float64)
    ts = s.timesteps[[1, len(s.timesteps) // 2]]
    np.testing.assert_allclose(ts.numpy().astype(np.float64), ref("noise_timesteps"), rtol=1e-12)
    np.testing.assert_allclose(s.add_noise(x0, eps, ts).numpy(), ref("add_noise"), rtol=1e-12, atol=1e-12)
    if f"{name}/f64/velocity" in DATA:
        np.testing.assert_allclose(s.get_velocity(x0, eps, ts).numpy(), ref("velocity"), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_config_json_matches_diffusers(name, tmp_path):
    case = CASES[name]
    s = getattr(diffuse, case["class"])(**case["config"])
    path = s.save_config(tmp_path)
    assert Path(path).name == "scheduler_config.json"
    ours, theirs = json.loads(Path(path).read_text()), dict(case["saved_config"])
    theirs.pop("_diffusers_version"), ours.pop("_diffusers_version")
    assert ours == theirs
    again = type(s).from_pretrained(tmp_path)
    assert again.config == s.config
    np.testing.assert_array_equal(again.alphas_cumprod, s.alphas_cumprod)


def test_from_config_swaps_schedulers_and_ignores_foreign_keys():
    ddpm = diffuse.DDPMScheduler(beta_schedule="scaled_linear", variance_type="fixed_large")
    euler = diffuse.EulerDiscreteScheduler.from_config(ddpm.config)
    assert euler.config.beta_schedule == "scaled_linear" and "variance_type" not in euler.config
    ddim = diffuse.DDIMScheduler.from_config(ddpm.config, timestep_spacing="trailing")
    assert ddim.config.timestep_spacing == "trailing"
    with pytest.raises(AttributeError, match="frozen"):
        ddim.config.beta_end = 0.1


@pytest.mark.parametrize("schedule", ["linear", "scaled_linear", "squaredcos_cap_v2"])
def test_alphas_cumprod_closed_forms(schedule):
    s = diffuse.DDPMScheduler(beta_schedule=schedule, beta_start=0.0001, beta_end=0.02)
    t = np.arange(1000)
    if schedule == "linear":
        betas = 0.0001 + (0.02 - 0.0001) * t / 999
    elif schedule == "scaled_linear":
        betas = (0.0001 ** 0.5 + (0.02 ** 0.5 - 0.0001 ** 0.5) * t / 999) ** 2
    else:  # alpha_bar(t) = cos^2(((t/T) + s)/(1 + s) pi/2) telescopes: prod(1 - beta) = f(t+1)/f(0) (uncapped)
        f = np.cos(((np.arange(1001) / 1000) + 0.008) / 1.008 * np.pi / 2) ** 2
        np.testing.assert_allclose(s.alphas_cumprod[:-1], f[1:-1] / f[0], rtol=1e-10)
        return
    np.testing.assert_allclose(s.alphas_cumprod, np.exp(np.cumsum(np.log1p(-betas))), rtol=1e-12)


def test_add_noise_moments():
    """x_t = sqrt(a) x0 + sqrt(1 - a) eps: mean sqrt(a) x0 and variance 1 - a over many noise draws."""
    s = diffuse.DDPMScheduler()
    g = rtx.Generator().manual_seed(0)
    n, t = 200_000, 600
    x0 = rtx.full((n,), 0.7, dtype=rtx.float64)
    xt = s.add_noise(x0, rtx.randn(n, generator=g, dtype=rtx.float64), rtx.full((n,), t, dtype=rtx.int64)).numpy()
    a = s.alphas_cumprod[t]
    assert xt.mean() == pytest.approx(a ** 0.5 * 0.7, abs=4 * (1 - a) ** 0.5 / n ** 0.5)
    assert xt.var() == pytest.approx(1 - a, rel=0.01)
    e = diffuse.EulerDiscreteScheduler()
    e.set_timesteps(10)
    xs = e.add_noise(x0, rtx.randn(n, generator=g, dtype=rtx.float64), e.timesteps[[0]].repeat(n)).numpy()
    assert xs.std() == pytest.approx(e.sigmas[0], rel=0.01) and xs.mean() == pytest.approx(0.7, abs=0.1)


def test_ddim_eta0_closed_form_on_gaussian_data():
    """For data x0 ~ N(0, I) the exact noise predictor is eps(x_t) = sqrt(1 - a_t) x_t. Writing a_t = cos^2(th_t),
    one DDIM step (eta = 0) is x_{t'} = (sqrt(a_t a_t') + sqrt((1 - a_t)(1 - a_t'))) x_t = cos(th_t - th_t') x_t."""
    s = diffuse.DDIMScheduler(set_alpha_to_one=False, clip_sample=False)
    s.set_timesteps(25)
    x = rtx.randn(4, 8, generator=rtx.Generator().manual_seed(1), dtype=rtx.float64)
    y = x
    for t in s.timesteps:
        a = s.alphas_cumprod[int(t)]
        y = s.step((1 - a) ** 0.5 * y, t, y).prev_sample
    a = np.linspace(0.0001, 0.02, 1000)
    th = np.arccos(np.sqrt(np.cumprod(1 - a)[[*range(960, -1, -40), 0]]))
    np.testing.assert_allclose(y.numpy(), x.numpy() * np.prod(np.cos(np.diff(th))), rtol=1e-12)


def test_errors_name_what_was_expected():
    with pytest.raises(NotImplementedError, match="squaredcos_cap_v2"):
        diffuse.DDPMScheduler(beta_schedule="quadratic")
    with pytest.raises(ValueError, match="cannot be larger"):
        diffuse.DDIMScheduler().set_timesteps(2000)
    s = diffuse.EulerDiscreteScheduler()
    s.set_timesteps(5)
    with pytest.raises(ValueError, match="integer indices"):
        s.step(rtx.zeros(1), 3, rtx.zeros(1))
    with pytest.raises(ValueError, match="set_timesteps"):
        diffuse.DDIMScheduler().step(rtx.zeros(1), 10, rtx.zeros(1))
    with pytest.raises(NotImplementedError, match="dpmsolver\\+\\+"):
        diffuse.DPMSolverMultistepScheduler(algorithm_type="sde-dpmsolver")
