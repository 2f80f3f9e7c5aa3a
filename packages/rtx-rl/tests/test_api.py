"""SB3-shaped API: save/load round trips, parameters, determinism, VecNormalize, Monitor, callbacks, CLI."""
import json
import os
import zipfile

import gymnasium as gym
import numpy as np
import pytest

import rtx
from rtx.rl import (
    A2C,
    DQN,
    PPO,
    SAC,
    TD3,
    CheckpointCallback,
    EvalCallback,
    StopTrainingOnRewardThreshold,
    VecNormalize,
    evaluate_policy,
    make_vec_env,
)
from rtx.rl.cli import rl_command

CASES = [(PPO, "CartPole-v1", dict(n_steps=64, batch_size=32, n_epochs=2)),
         (A2C, "Pendulum-v1", dict()),
         (DQN, "CartPole-v1", dict(learning_starts=50)),
         (SAC, "Pendulum-v1", dict(learning_starts=50, batch_size=32, policy_kwargs=dict(net_arch=[32, 32]))),
         (TD3, "Pendulum-v1", dict(learning_starts=50, batch_size=32, policy_kwargs=dict(net_arch=[32, 32])))]


@pytest.mark.parametrize("algo,env_id,kw", CASES, ids=[c[0].__name__ for c in CASES])
def test_save_load_gives_identical_actions(tmp_path, algo, env_id, kw):
    model = algo("MlpPolicy", env_id, seed=0, **kw)
    model.learn(160)
    obs = np.stack([model.observation_space.sample() for _ in range(16)])
    path = model.save(tmp_path / "m")
    with zipfile.ZipFile(path) as zf:  # safetensors + JSON, nothing pickled
        assert sorted(zf.namelist()) == ["data.json", "parameters.safetensors"]
        data = json.loads(zf.read("data.json"))
    assert data["algo"] == algo.__name__ and data["num_timesteps"] == model.num_timesteps
    loaded = algo.load(path, env=make_vec_env(env_id, n_envs=1))
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0],
                                  loaded.predict(obs, deterministic=True)[0])
    for name, state in model.get_parameters().items():
        other = loaded.get_parameters()[name]
        if isinstance(state, dict):
            for k in state:
                np.testing.assert_array_equal(state[k], other[k])
    for (hp, value) in data["hyperparams"].items():
        if isinstance(value, (int, float, str, bool)):
            assert getattr(loaded, hp) == value, hp
    loaded.learn(64, reset_num_timesteps=False)  # optimizer state came back: training goes on


def test_load_without_env_predicts_and_checks_the_algo(tmp_path):
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, seed=1)
    path = model.save(tmp_path / "ppo.zip")
    loaded = PPO.load(path)
    obs = np.zeros(4, np.float32)
    assert loaded.predict(obs, deterministic=True)[0] == model.predict(obs, deterministic=True)[0]
    with pytest.raises(ValueError, match="holds a PPO model"):
        DQN.load(path)
    with pytest.raises(ValueError, match="differ"):
        PPO.load(path, env="Pendulum-v1")


def test_set_parameters_roundtrip():
    a = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, seed=1)
    b = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, seed=2)
    obs = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
    assert not np.array_equal(a.policy.predict_values(rtx.as_tensor(obs)).detach().numpy(),
                              b.policy.predict_values(rtx.as_tensor(obs)).detach().numpy())
    b.set_parameters(a.get_parameters())
    np.testing.assert_array_equal(a.policy.predict_values(rtx.as_tensor(obs)).detach().numpy(),
                                  b.policy.predict_values(rtx.as_tensor(obs)).detach().numpy())


@pytest.mark.parametrize("algo,env_id,kw", [CASES[0], CASES[3]], ids=["PPO", "SAC"])
def test_same_seed_same_run(algo, env_id, kw):
    runs = []
    for _ in range(2):
        model = algo("MlpPolicy", make_vec_env(env_id, n_envs=1), seed=7, **kw)
        model.learn(200)
        runs.append(model.get_parameters()["policy"])
    for k in runs[0]:
        np.testing.assert_array_equal(runs[0][k], runs[1][k])


def test_orthogonal_init_gains_as_sb3():
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, seed=0)
    w = model.policy.action_net.weight.detach().numpy().astype(np.float64)  # (2, 64): gain 0.01
    np.testing.assert_allclose(w @ w.T, 0.01 ** 2 * np.eye(2), atol=1e-9)
    w = model.policy.mlp_extractor.policy_net[0].weight.detach().numpy().astype(np.float64)  # (64, 4): sqrt 2
    np.testing.assert_allclose(w.T @ w, 2 * np.eye(4), atol=1e-5)
    assert np.all(model.policy.value_net.bias.detach().numpy() == 0)


def test_vec_normalize_statistics_and_save(tmp_path):
    venv = VecNormalize(make_vec_env("Pendulum-v1", n_envs=2, seed=0), gamma=0.9)
    venv.reset()
    raw = [venv.get_original_obs()]
    returns, seen = np.zeros(2), []
    for _ in range(50):
        obs, r, dones, _ = venv.step(np.random.default_rng(0).uniform(-2, 2, (2, 1)).astype(np.float32))
        raw.append(venv.get_original_obs())
        returns = returns * 0.9 + venv.get_original_reward()
        seen.append(returns.copy())
        returns[dones] = 0
    allobs = np.concatenate(raw)
    # running moments of everything seen equal the batch moments (the prior count 1e-4 aside)
    np.testing.assert_allclose(venv.obs_rms.mean, allobs.mean(0), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(venv.obs_rms.var, allobs.var(0), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(venv.ret_rms.var, np.concatenate(seen).var(), rtol=1e-3)
    expected = np.clip((raw[-1] - venv.obs_rms.mean) / np.sqrt(venv.obs_rms.var + 1e-8), -10, 10)
    np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-5)
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=32, seed=0)
    model.learn(32)
    path = model.save(tmp_path / "m")
    fresh = make_vec_env("Pendulum-v1", n_envs=1, seed=3)
    loaded = PPO.load(path, env=fresh)
    vn = loaded.get_vec_normalize_env()
    assert vn is not None and not vn.training
    np.testing.assert_allclose(vn.obs_rms.mean, venv.obs_rms.mean)
    venv.save(str(tmp_path / "vn.json"))
    np.testing.assert_allclose(VecNormalize.load(str(tmp_path / "vn.json"), fresh).ret_rms.var, venv.ret_rms.var)


def test_monitor_and_evaluate_policy_count_episodes():
    env = make_vec_env("CartPole-v1", n_envs=3, seed=0)

    class Left:
        def predict(self, obs, state=None, episode_start=None, deterministic=True):
            return np.zeros(len(obs), dtype=np.int64), state

    rewards, lengths = evaluate_policy(Left(), env, n_eval_episodes=7, return_episode_rewards=True)
    assert len(rewards) == 7 and rewards == [float(n) for n in lengths]
    assert all(8 <= n <= 12 for n in lengths)  # always pushing left topples the pole in about ten steps


def test_async_vector_env_trains():
    from gymnasium.vector import AsyncVectorEnv
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0, vec_env_cls=AsyncVectorEnv)
    model = PPO("MlpPolicy", env, n_steps=16, batch_size=32, seed=0).learn(64)
    assert model.num_timesteps == 64
    env.close()


def test_callbacks_checkpoint_eval_and_stop(tmp_path):
    model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=16, batch_size=32, seed=0)
    stop = StopTrainingOnRewardThreshold(reward_threshold=-1.0)  # any return stops it at the first evaluation
    ev = EvalCallback(make_vec_env("CartPole-v1", seed=5), callback_on_new_best=stop, n_eval_episodes=2,
                      eval_freq=40, log_path=str(tmp_path), best_model_save_path=str(tmp_path), verbose=0)
    ck = CheckpointCallback(save_freq=16, save_path=str(tmp_path / "ck"))
    model.learn(10_000, callback=[ck, ev])
    assert model.num_timesteps == 80  # stopped at the first evaluation (40 calls x 2 envs)
    assert os.path.isfile(tmp_path / "best_model.zip")
    assert sorted(os.listdir(tmp_path / "ck")) == ["rl_model_32_steps.zip", "rl_model_64_steps.zip"]
    data = np.load(tmp_path / "evaluations.npz")
    assert list(data["timesteps"]) == [80] and data["results"].shape == (1, 2)


def test_errors_are_clear():
    with pytest.raises(ValueError, match="does not support the action space"):
        DQN("MlpPolicy", "Pendulum-v1")
    with pytest.raises(ValueError, match="unknown policy"):
        PPO("MlpPolcy", "CartPole-v1")
    with pytest.raises(NotImplementedError, match="gSDE"):
        SAC("MlpPolicy", "Pendulum-v1", use_sde=True)
    model = PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32)
    with pytest.raises(ValueError, match="does not fit the observation space"):
        model.predict(np.zeros(5))


def test_cnn_policy_on_image_observations():
    class Img(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (3, 36, 36), np.uint8)
        action_space = gym.spaces.Discrete(3)

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return self.observation_space.sample(), {}

        def step(self, action):
            self.t += 1
            return self.observation_space.sample(), float(action == 1), self.t >= 8, False, {}

    model = PPO("CnnPolicy", Img(), n_steps=16, batch_size=16, n_epochs=1, seed=0).learn(16)
    assert type(model.policy.features_extractor).__name__ == "NatureCNN"
    assert model.predict(Img().observation_space.sample())[0] in (0, 1, 2)


def test_cli_train_and_eval(tmp_path, capsys):
    out = tmp_path / "run"
    assert rl_command(["train", "--algo", "ppo", "--env", "CartPole-v1", "--timesteps", "512", "--seed", "0",
                       "--out", str(out), "--no-progress", "--eval-freq", "256", "--eval-episodes", "2"]) == 0
    for name in ("model.zip", "best_model.zip", "evaluations.csv", "progress.csv", "learning_curve.png", "run.json"):
        assert (out / name).is_file(), name
    assert rl_command(["eval", str(out), "--episodes", "3"]) == 0
    assert "mean return" in capsys.readouterr().out
    assert rl_command(["eval", str(tmp_path / "nothing")]) == 1
