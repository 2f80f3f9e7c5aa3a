"""Each algorithm's update step on a fixed batch against a NumPy re-derivation.

The optimizer is SGD with lr=1, so new = old - clip(grad); the reference gradient is central finite
differences in float64 of the loss written in NumPy from the papers' / SB3's formulas."""
import numpy as np
import pytest

import rtx
import rtx.optim as optim
from rtx.rl import A2C, DQN, PPO, SAC, TD3, make_vec_env

SGD = dict(optimizer_class=optim.SGD, optimizer_kwargs={})


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def huber(x):
    return np.where(np.abs(x) < 1, 0.5 * x ** 2, np.abs(x) - 0.5)


def normal_logpdf(x, mu, std):
    return -((x - mu) ** 2) / (2 * std ** 2) - np.log(std) - 0.5 * np.log(2 * np.pi)


def _check_step(ref, p0, p1, grads, keys, atol=2e-4):
    for k in keys:
        np.testing.assert_allclose(p0[k] - p1[k], grads[k], rtol=2e-3, atol=atol, err_msg=k)


def _fill_rollout(model, rng, action_fn):
    buf, n_envs = model.rollout_buffer, model.n_envs
    buf.reset()
    obs_dim = model.observation_space.shape[0]
    for _ in range(model.n_steps):
        obs = rng.normal(size=(n_envs, obs_dim)).astype(np.float32)
        with rtx.no_grad():
            _, values, log_prob = model.policy(rtx.as_tensor(obs))
        act = action_fn(n_envs)
        # old log-probs near the current ones, so some ratios fall inside and some outside the clip range
        old = model.policy.evaluate_actions(rtx.as_tensor(obs), rtx.as_tensor(act.reshape(n_envs, -1).squeeze(-1)
                                                                               if act.ndim == 1 else act))[1]
        old = old.detach().numpy() + rng.normal(0, 0.3, n_envs).astype(np.float32)
        buf.add(obs, act.reshape(n_envs, -1), rng.normal(size=n_envs).astype(np.float32),
                (rng.random(n_envs) < 0.2).astype(np.float32), values + rtx.as_tensor(rng.normal(size=(n_envs, 1))
                                                                                      .astype(np.float32)), old)
    buf.compute_returns_and_advantage(rng.normal(size=n_envs).astype(np.float32), np.array([False, True]))
    data = {k: getattr(buf, k).copy() for k in ("observations", "actions", "advantages", "returns", "log_probs")}
    return {k: v.reshape(-1, *v.shape[2:]).astype(np.float64) for k, v in data.items()}


def test_ppo_update_matches_numpy(ref):
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    model = PPO("MlpPolicy", env, n_steps=6, batch_size=12, n_epochs=1, ent_coef=0.01, learning_rate=1.0,
                max_grad_norm=0.5, seed=0, policy_kwargs=dict(net_arch=dict(pi=[5], vf=[5]), **SGD))
    rng = np.random.default_rng(0)
    d = _fill_rollout(model, rng, lambda n: rng.integers(0, 2, n))
    p0 = ref.params_np(model.policy)
    obs, act, old = d["observations"], d["actions"][:, 0].astype(int), d["log_probs"]

    def loss(p):
        logits = ref.linear(p, "action_net", np.tanh(ref.linear(p, "mlp_extractor.policy_net.0", obs)))
        logp_all = log_softmax(logits)
        logp = logp_all[np.arange(len(act)), act]
        entropy = -(np.exp(logp_all) * logp_all).sum(axis=1)
        values = ref.linear(p, "value_net", np.tanh(ref.linear(p, "mlp_extractor.value_net.0", obs)))[:, 0]
        adv = d["advantages"]
        adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)  # torch's std is the unbiased one
        ratio = np.exp(logp - old)
        pg = -np.mean(np.minimum(adv * ratio, adv * np.clip(ratio, 0.8, 1.2)))
        return pg + 0.01 * -entropy.mean() + 0.5 * np.mean((d["returns"] - values) ** 2)

    keys = list(p0)
    grads = ref.clip(ref.fd_grad(loss, p0, keys), 0.5)
    model.train()
    _check_step(ref, p0, ref.params_np(model.policy), grads, keys)


def test_a2c_update_matches_numpy_gaussian(ref):
    env = make_vec_env("Pendulum-v1", n_envs=2, seed=0)
    model = A2C("MlpPolicy", env, n_steps=5, ent_coef=0.01, learning_rate=1.0, seed=0,
                policy_kwargs=dict(net_arch=[4], log_std_init=0.3, **SGD))
    rng = np.random.default_rng(1)
    d = _fill_rollout(model, rng, lambda n: rng.normal(size=(n, 1)).astype(np.float32))
    p0 = ref.params_np(model.policy)
    obs, act = d["observations"], d["actions"]

    def loss(p):
        mu = ref.linear(p, "action_net", np.tanh(ref.linear(p, "mlp_extractor.policy_net.0", obs)))
        std = np.exp(p["log_std"]) * np.ones_like(mu)
        logp = normal_logpdf(act, mu, std).sum(axis=1)
        entropy = (0.5 + 0.5 * np.log(2 * np.pi) + np.log(std)).sum(axis=1)
        values = ref.linear(p, "value_net", np.tanh(ref.linear(p, "mlp_extractor.value_net.0", obs)))[:, 0]
        pg = -np.mean(d["advantages"] * logp)
        return pg + 0.01 * -entropy.mean() + 0.5 * np.mean((d["returns"] - values) ** 2)

    keys = list(p0)
    grads = ref.clip(ref.fd_grad(loss, p0, keys), 0.5)
    model.train()
    _check_step(ref, p0, ref.params_np(model.policy), grads, keys)


def _fill_replay(model, rng, n, action_fn):
    obs_dim = model.observation_space.shape[0]
    for i in range(n):
        model.replay_buffer.add(rng.normal(size=(1, obs_dim)), rng.normal(size=(1, obs_dim)), action_fn(),
                                rng.normal(size=1), np.array([i % 3 == 0]), [{"TimeLimit.truncated": i % 6 == 0}])


def _replay_batch(model, seed, batch):
    np.random.seed(seed)  # the buffer samples with np.random: draw the same indices it will
    b = np.random.randint(0, model.replay_buffer.size(), size=batch)
    e = np.random.randint(0, 1, size=batch)
    rb = model.replay_buffer

    def cast(x):
        return x.astype(np.float64)

    return dict(obs=cast(rb.observations[b, e]), next_obs=cast(rb.next_observations[b, e]),
                act=rb.actions[b, e], rew=cast(rb.rewards[b, e]),
                done=cast(rb.dones[b, e] * (1 - rb.timeouts[b, e])))


@pytest.mark.parametrize("double_q", [False, True])
def test_dqn_update_matches_numpy(ref, double_q):
    model = DQN("MlpPolicy", make_vec_env("CartPole-v1", seed=0), learning_rate=1.0, learning_starts=0,
                batch_size=16, gamma=0.9, max_grad_norm=0.7, double_q=double_q, seed=0,
                policy_kwargs=dict(net_arch=[6], **SGD))
    with rtx.no_grad():  # a target network different from the online one
        for p in model.q_net_target.parameters():
            p.add_(rtx.randn(*p.shape) * 0.3)
    rng = np.random.default_rng(2)
    _fill_replay(model, rng, 20, lambda: rng.integers(0, 2, size=(1, 1)))
    d = _replay_batch(model, 5, 16)
    p0 = ref.params_np(model.policy)
    qn = ["q_net.q_net.0", "q_net.q_net.2"]
    tn = ["q_net_target.q_net.0", "q_net_target.q_net.2"]
    q_next_target = ref.mlp(p0, tn, d["next_obs"], ref.relu)
    if double_q:
        a_star = ref.mlp(p0, qn, d["next_obs"], ref.relu).argmax(axis=1)
        next_q = q_next_target[np.arange(16), a_star]
    else:
        next_q = q_next_target.max(axis=1)
    target = d["rew"] + (1 - d["done"]) * 0.9 * next_q

    def loss(p):
        q = ref.mlp(p, qn, d["obs"], ref.relu)[np.arange(16), d["act"][:, 0]]
        return np.mean(huber(q - target))

    keys = [k for k in p0 if k.startswith("q_net.")]
    grads = ref.clip(ref.fd_grad(loss, p0, keys), 0.7)
    np.random.seed(5)
    model.train(gradient_steps=1, batch_size=16)
    p1 = ref.params_np(model.policy)
    _check_step(ref, p0, p1, grads, keys)
    for k in p0:
        if k.startswith("q_net_target."):
            np.testing.assert_array_equal(p0[k], p1[k])


def test_sac_update_matches_numpy(ref):
    model = SAC("MlpPolicy", make_vec_env("Pendulum-v1", seed=0), learning_rate=1.0, learning_starts=0,
                batch_size=8, gamma=0.9, tau=0.1, seed=0, ent_coef="auto_0.5", policy_kwargs=dict(net_arch=[5], **SGD))
    rng = np.random.default_rng(3)
    _fill_replay(model, rng, 12, lambda: rng.uniform(-1, 1, size=(1, 1)))
    d = _replay_batch(model, 6, 8)
    p0 = ref.params_np(model.policy)
    lec0 = float(model.log_ent_coef.detach().numpy()[0])
    rtx.manual_seed(11)  # the actor's two reparameterized draws: actions for obs, then for next_obs
    eps1, eps2 = rtx.randn(8, 1).numpy().astype(np.float64), rtx.randn(8, 1).numpy().astype(np.float64)

    def actor(p, obs, eps):
        h = ref.relu(ref.linear(p, "actor.latent_pi.0", obs))
        mu, log_std = ref.linear(p, "actor.mu", h), np.clip(ref.linear(p, "actor.log_std", h), -20, 2)
        g = mu + np.exp(log_std) * eps
        a = np.tanh(g)
        logp = normal_logpdf(g, mu, np.exp(log_std)).sum(1) - np.log(1 - a ** 2 + 1e-6).sum(1)
        return a, logp

    def q(p, prefix, obs, a):
        x = np.concatenate([obs, a], axis=1)
        return [ref.mlp(p, [f"{prefix}.q_networks.{i}.0", f"{prefix}.q_networks.{i}.2"], x, ref.relu)[:, 0]
                for i in range(2)]

    _, logp = actor(p0, d["obs"], eps1)
    target_entropy = -1.0
    lec1 = lec0 - (-np.mean(logp + target_entropy))  # d/dlec of -(lec * (logp + H)).mean()
    alpha = np.exp(lec0)
    a_next, logp_next = actor(p0, d["next_obs"], eps2)
    next_q = np.minimum(*q(p0, "critic_target", d["next_obs"], a_next)) - alpha * logp_next
    target = d["rew"] + (1 - d["done"]) * 0.9 * next_q

    def critic_loss(p):
        return 0.5 * sum(np.mean((qi - target) ** 2) for qi in q(p, "critic", d["obs"], d["act"]))

    critic_keys = [k for k in p0 if k.startswith("critic.")]
    g_critic = ref.fd_grad(critic_loss, p0, critic_keys)
    p_mid = dict(p0)
    p_mid.update({k: p0[k] - g_critic[k] for k in critic_keys})

    def actor_loss(p):
        a, lp = actor(p, d["obs"], eps1)
        return np.mean(alpha * lp - np.minimum(*q(p, "critic", d["obs"], a)))

    actor_keys = [k for k in p0 if k.startswith("actor.")]
    g_actor = ref.fd_grad(actor_loss, p_mid, actor_keys)

    np.random.seed(6)
    rtx.manual_seed(11)
    model.train(gradient_steps=1, batch_size=8)
    p1 = ref.params_np(model.policy)
    np.testing.assert_allclose(float(model.log_ent_coef.detach().numpy()[0]), lec1, rtol=1e-4)
    _check_step(ref, p0, p1, g_critic, critic_keys)
    _check_step(ref, p0, p1, g_actor, actor_keys)
    for k in critic_keys:  # Polyak: target <- 0.9 target + 0.1 critic
        t = "critic_target." + k[len("critic."):]
        np.testing.assert_allclose(p1[t], 0.9 * p0[t] + 0.1 * p1[k], rtol=1e-5, atol=1e-6)


def test_td3_update_matches_numpy(ref):
    model = TD3("MlpPolicy", make_vec_env("Pendulum-v1", seed=0), learning_rate=1.0, learning_starts=0,
                batch_size=8, gamma=0.9, tau=0.1, policy_delay=1, seed=0, policy_kwargs=dict(net_arch=[5], **SGD))
    with rtx.no_grad():
        for p in list(model.actor_target.parameters()) + list(model.critic_target.parameters()):
            p.add_(rtx.randn(*p.shape) * 0.2)
    rng = np.random.default_rng(4)
    _fill_replay(model, rng, 12, lambda: rng.uniform(-1, 1, size=(1, 1)))
    d = _replay_batch(model, 7, 8)
    p0 = ref.params_np(model.policy)
    rtx.manual_seed(13)
    noise = np.clip(rtx.randn(8, 1).numpy().astype(np.float64) * 0.2, -0.5, 0.5)

    def actor(p, prefix, obs):
        return np.tanh(ref.mlp(p, [f"{prefix}.mu.0", f"{prefix}.mu.2"], obs, ref.relu))

    def q(p, prefix, obs, a):
        x = np.concatenate([obs, a], axis=1)
        return [ref.mlp(p, [f"{prefix}.q_networks.{i}.0", f"{prefix}.q_networks.{i}.2"], x, ref.relu)[:, 0]
                for i in range(2)]

    a_next = np.clip(actor(p0, "actor_target", d["next_obs"]) + noise, -1, 1)
    target = d["rew"] + (1 - d["done"]) * 0.9 * np.minimum(*q(p0, "critic_target", d["next_obs"], a_next))
    critic_keys = [k for k in p0 if k.startswith("critic.")]
    g_critic = ref.fd_grad(lambda p: sum(np.mean((qi - target) ** 2) for qi in q(p, "critic", d["obs"], d["act"])),
                           p0, critic_keys)
    p_mid = dict(p0)
    p_mid.update({k: p0[k] - g_critic[k] for k in critic_keys})
    actor_keys = [k for k in p0 if k.startswith("actor.")]
    g_actor = ref.fd_grad(lambda p: -np.mean(q(p, "critic", d["obs"], actor(p, "actor", d["obs"]))[0]),
                          p_mid, actor_keys)
    np.random.seed(7)
    rtx.manual_seed(13)
    model.train(gradient_steps=1, batch_size=8)
    p1 = ref.params_np(model.policy)
    _check_step(ref, p0, p1, g_critic, critic_keys)
    _check_step(ref, p0, p1, g_actor, actor_keys)
    for k in critic_keys + actor_keys:
        t = k.replace("critic.", "critic_target.", 1).replace("actor.", "actor_target.", 1)
        np.testing.assert_allclose(p1[t], 0.9 * p0[t] + 0.1 * p1[k], rtol=1e-5, atol=1e-6)
