"""Rollout and replay buffers against hand-written NumPy references."""
import gymnasium as gym
import numpy as np
import pytest

from rtx.rl.common.buffers import ReplayBuffer, RolloutBuffer

OBS = gym.spaces.Box(-1, 1, (3,), np.float32)


def _filled_rollout(n_steps=7, n_envs=3, gamma=0.97, lam=0.9, seed=0):
    rng = np.random.default_rng(seed)
    buf = RolloutBuffer(n_steps, OBS, gym.spaces.Discrete(4), gamma=gamma, gae_lambda=lam, n_envs=n_envs)
    data = dict(obs=rng.normal(size=(n_steps, n_envs, 3)).astype(np.float32),
                act=rng.integers(0, 4, size=(n_steps, n_envs, 1)),
                rew=rng.normal(size=(n_steps, n_envs)).astype(np.float32),
                starts=(rng.random((n_steps, n_envs)) < 0.3).astype(np.float32),
                val=rng.normal(size=(n_steps, n_envs)).astype(np.float32),
                logp=rng.normal(size=(n_steps, n_envs)).astype(np.float32))
    for t in range(n_steps):
        buf.add(data["obs"][t], data["act"][t], data["rew"][t], data["starts"][t], data["val"][t], data["logp"][t])
    last_values = rng.normal(size=n_envs).astype(np.float32)
    dones = np.array([True, False, True][:n_envs])
    buf.compute_returns_and_advantage(last_values, dones)
    return buf, data, last_values, dones


@pytest.mark.parametrize("lam", [1.0, 0.95, 0.0])
def test_gae_matches_reference(ref, lam):
    buf, d, last_values, dones = _filled_rollout(lam=lam)
    adv, ret = ref.gae(d["rew"].astype(np.float64), d["val"].astype(np.float64), d["starts"], last_values,
                       dones.astype(np.float64), 0.97, lam)
    np.testing.assert_allclose(buf.advantages, adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buf.returns, ret, rtol=1e-5, atol=1e-5)


def test_gae_lambda_zero_is_one_step_td_and_one_is_monte_carlo():
    buf, d, last_values, dones = _filled_rollout(lam=0.0)
    nxt = np.concatenate([d["val"][1:], last_values[None]], axis=0)
    nonterminal = np.concatenate([1 - d["starts"][1:], (1 - dones)[None]], axis=0)
    np.testing.assert_allclose(buf.advantages, d["rew"] + 0.97 * nxt * nonterminal - d["val"], atol=1e-5)


def test_minibatches_cover_every_transition_once_env_major():
    buf, d, _, _ = _filled_rollout()
    np.random.seed(0)
    batches = list(buf.get(batch_size=5))
    assert [len(b.observations) for b in batches] == [5, 5, 5, 5, 1]
    obs = np.concatenate([b.observations.numpy() for b in batches])
    adv = np.concatenate([b.advantages.numpy() for b in batches])
    flat_obs = d["obs"].swapaxes(0, 1).reshape(-1, 3)  # env-major, as SB3's swap_and_flatten
    order = [int(np.flatnonzero((flat_obs == o).all(axis=1))[0]) for o in obs]
    assert sorted(order) == list(range(21))
    np.testing.assert_allclose(adv, buf.advantages.reshape(-1)[np.array(order)], atol=0)


def test_rollout_buffer_refuses_overflow_and_early_get():
    buf = RolloutBuffer(2, OBS, gym.spaces.Discrete(2))
    with pytest.raises(RuntimeError, match="not full"):
        next(buf.get(1))
    for _ in range(2):
        buf.add(np.zeros((1, 3)), np.zeros((1, 1)), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))
    with pytest.raises(RuntimeError, match="full"):
        buf.add(np.zeros((1, 3)), np.zeros((1, 1)), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1))


def test_replay_buffer_wraps_and_masks_timeouts():
    buf = ReplayBuffer(4, OBS, gym.spaces.Box(-1, 1, (2,), np.float32), n_envs=1)
    for t in range(6):  # 6 adds into 4 slots: the first two are overwritten
        infos = [{"TimeLimit.truncated": t == 5}]
        buf.add(np.full((1, 3), t), np.full((1, 3), t + 1), np.full((1, 2), t / 10), np.array([t]),
                np.array([t in (4, 5)]), infos)
    assert buf.full and buf.pos == 2 and buf.size() == 4
    np.testing.assert_array_equal(buf.observations[:, 0, 0], [4, 5, 2, 3])
    np.random.seed(1)
    s = buf.sample(64)
    obs, nxt, rew, done = (x.numpy() for x in (s.observations, s.next_observations, s.rewards, s.dones))
    np.testing.assert_array_equal(nxt[:, 0], obs[:, 0] + 1)
    np.testing.assert_array_equal(rew[:, 0], obs[:, 0])
    # step 4 ended (terminal), step 5 was cut by the time limit: only 4 counts as done
    np.testing.assert_array_equal(done[:, 0], (obs[:, 0] == 4).astype(np.float32))
    assert set(obs[:, 0]) == {2, 3, 4, 5}
