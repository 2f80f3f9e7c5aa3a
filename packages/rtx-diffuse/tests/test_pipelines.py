"""Pipelines, EMAModel, training and the CLI (tiny runs; the 10-minute digits run is opt-in, see README)."""
import json

import numpy as np
import pytest
from PIL import Image

import rtx
import rtx.diffuse as diffuse
from rtx.diffuse.cli import diffuse_command


def tiny_unet(num_class_embeds=None):
    rtx.manual_seed(0)
    return diffuse.UNet2DModel(sample_size=8, in_channels=1, out_channels=1, block_out_channels=(8, 16),
                               layers_per_block=1, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                               up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4,
                               num_class_embeds=num_class_embeds)


def test_ddim_pipeline_is_the_sampling_loop():
    unet, sched = tiny_unet(), diffuse.DDIMScheduler()
    pipe = diffuse.DDIMPipeline(unet, sched)
    pipe.set_progress_bar_config(disable=True)
    out = pipe(batch_size=2, generator=rtx.Generator().manual_seed(3), num_inference_steps=5, output_type="np")
    x = rtx.randn(2, 1, 8, 8, generator=rtx.Generator().manual_seed(3))
    sched.set_timesteps(5)
    with rtx.no_grad():
        for t in sched.timesteps:
            x = sched.step(unet(x, t).sample, t, x).prev_sample
    np.testing.assert_allclose(out.images, (x / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1).numpy(), atol=1e-6)
    assert out.images.shape == (2, 8, 8, 1)
    pil = pipe(batch_size=2, num_inference_steps=2).images
    assert len(pil) == 2 and isinstance(pil[0], Image.Image) and pil[0].mode == "L"


def test_ddpm_pipeline_seeded_and_reproducible():
    pipe = diffuse.DDPMPipeline(tiny_unet(), diffuse.DDPMScheduler(num_train_timesteps=20))
    pipe.set_progress_bar_config(disable=True)
    a = pipe(generator=rtx.Generator().manual_seed(1), num_inference_steps=20, output_type="np").images
    b = pipe(generator=rtx.Generator().manual_seed(1), num_inference_steps=20, output_type="np").images
    c = pipe(generator=rtx.Generator().manual_seed(2), num_inference_steps=20, output_type="np").images
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_classifier_free_guidance_combines_conditional_and_null_predictions(tmp_path):
    unet = tiny_unet(num_class_embeds=4)
    sched = diffuse.EulerDiscreteScheduler()
    pipe = diffuse.ClassConditionalPipeline(unet, sched)
    pipe.set_progress_bar_config(disable=True)
    out = pipe([0, 2], guidance_scale=2.5, generator=rtx.Generator().manual_seed(0), num_inference_steps=4,
               output_type="np").images
    # the same loop by hand: eps = eps(null) + s (eps(label) - eps(null)), null = the last class
    x = rtx.randn(2, 1, 8, 8, generator=rtx.Generator().manual_seed(0)) * sched.init_noise_sigma
    sched.set_timesteps(4)
    with rtx.no_grad():
        for t in sched.timesteps:
            inp = sched.scale_model_input(x, t)
            c = unet(inp, t, class_labels=rtx.tensor([0, 2])).sample
            u = unet(inp, t, class_labels=rtx.tensor([3, 3])).sample
            x = sched.step(u + 2.5 * (c - u), t, x).prev_sample
    np.testing.assert_allclose(out, (x / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1).numpy(), atol=1e-5)
    pipe.save_pretrained(tmp_path)
    index = json.loads((tmp_path / "model_index.json").read_text())
    assert index["unet"] == ["diffusers", "UNet2DModel"] and index["scheduler"][1] == "EulerDiscreteScheduler"
    again = diffuse.ClassConditionalPipeline.from_pretrained(tmp_path)
    again.set_progress_bar_config(disable=True)
    np.testing.assert_array_equal(again([0, 2], guidance_scale=2.5, generator=rtx.Generator().manual_seed(0),
                                        num_inference_steps=4, output_type="np").images, out)
    with pytest.raises(ValueError, match=r"class labels must be in \[0, 3\)"):
        pipe([3])


def test_ema_decay_schedule_and_update():
    p = rtx.nn.Parameter(rtx.tensor([1.0, 2.0]))
    ema = diffuse.EMAModel([p], decay=0.9, update_after_step=0)
    assert ema.get_decay(1) == 0.0 and ema.get_decay(2) == pytest.approx(2 / 11)
    assert ema.get_decay(1000) == 0.9
    shadow = np.array([1.0, 2.0])
    for step, value in enumerate([3.0, 5.0, -1.0, 0.5], start=1):
        with rtx.no_grad():
            p.fill_(value)
        ema.step([p])
        d = ema.get_decay(step)
        shadow = d * shadow + (1 - d) * value
        np.testing.assert_allclose(ema.shadow_params[0].numpy(), shadow, rtol=1e-6)
    ema.store([p])
    ema.copy_to([p])
    np.testing.assert_allclose(p.detach().numpy(), shadow, rtol=1e-6)
    ema.restore([p])
    np.testing.assert_allclose(p.detach().numpy(), [0.5, 0.5])
    warm = diffuse.EMAModel([p], use_ema_warmup=True, power=0.75)
    assert warm.get_decay(11) == pytest.approx(1 - (1 + 10) ** -0.75)


def test_short_training_run_learns_and_cli_round_trip(tmp_path, capsys):
    from rtx.diffuse.train import train
    r = train(out=str(tmp_path / "m"), max_steps=40, batch_size=32, channels=(16, 32), checkpoint_every=0,
              progress=False, log=lambda *_: None)
    # the noise-prediction loss starts at ~1 (predicting zero) and must fall well below it
    assert r.steps == 40 and np.mean(r.losses[-10:]) < 0.7 * np.mean(r.losses[:10])
    assert diffuse_command(["sample", str(tmp_path / "m"), "--label", "7", "--n", "4", "--steps", "3",
                            "--out", str(tmp_path / "g.png")]) == 0
    assert Image.open(tmp_path / "g.png").size[0] > 8
    assert diffuse_command(["bogus"]) == 2
    assert "unknown subcommand" in capsys.readouterr().out


def test_v_prediction_min_snr_recipe_and_cli_options(tmp_path, capsys):
    # the recipe options reach the saved folder: v-prediction in the scheduler config, channels in the UNet's
    out = tmp_path / "v"
    assert diffuse_command(["train", "--out", str(out), "--steps", "30", "--batch-size", "16", "--channels", "8,16",
                            "--prediction-type", "v_prediction", "--snr-gamma", "5", "--no-attention",
                            "--checkpoint-every", "0", "--no-progress"]) == 0
    assert "30 steps" in capsys.readouterr().out
    sched = json.loads((out / "scheduler" / "scheduler_config.json").read_text())
    unet = json.loads((out / "unet" / "config.json").read_text())
    assert sched["prediction_type"] == "v_prediction" and unet["block_out_channels"] == [8, 16]
    assert "AttnDownBlock2D" not in unet["down_block_types"] and unet["add_attention"] is False
    index = json.loads((out / "model_index.json").read_text())
    assert index["scheduler"][1] == "DPMSolverMultistepScheduler"  # the folder samples with DPM-Solver++

    # evaluate with a given classifier file: its accuracy is the demo's own, nearest-neighbour medians as sklearn's
    from sklearn.neighbors import NearestNeighbors

    from rtx.demo.train import train as train_classifier
    from rtx.diffuse.train import digits_split, evaluate
    clf = train_classifier(epochs=1, out=str(tmp_path / "cnn.safetensors"), progress=False, log=lambda *_: None)
    r, images = evaluate(str(out), n_per_class=2, num_inference_steps=3, classifier=clf.path, log=lambda *_: None,
                         sampler="ddim")
    assert images.shape == (20, 8, 8) and len(r.per_class) == 10
    assert r.classifier_test_accuracy == pytest.approx(clf.accuracy)
    x_train, _, x_test, _ = digits_split()
    nn = NearestNeighbors(n_neighbors=1).fit(x_train.reshape(len(x_train), -1))
    assert r.nn_test_median == pytest.approx(np.median(nn.kneighbors(x_test.reshape(len(x_test), -1))[0]), rel=1e-5)
    assert r.nn_sample_median == pytest.approx(np.median(nn.kneighbors(images.reshape(20, -1))[0]), rel=1e-5)
    with pytest.raises(SystemExit):
        diffuse_command(["train", "--out", str(out), "--channels", "8;16"])


def test_min_snr_weighting(tmp_path):
    # with lr 0 the model stays at its initial weights and sees the same batches in every run: Min-SNR weights
    # min(snr, gamma)/snr are 1 for a huge gamma (the plain loss again) and <= 1 for gamma 5 (a smaller loss)
    from rtx.diffuse.train import train
    kw = dict(out=str(tmp_path / "m"), max_steps=4, batch_size=16, channels=(8, 16), checkpoint_every=0,
              progress=False, log=lambda *_: None, lr=0.0, prediction_type="epsilon")
    plain = train(**kw, snr_gamma=None).losses
    np.testing.assert_allclose(train(**kw, snr_gamma=1e12).losses, plain, rtol=1e-5)
    weighted = train(**kw, snr_gamma=5.0).losses
    assert all(w < p for w, p in zip(weighted, plain))
