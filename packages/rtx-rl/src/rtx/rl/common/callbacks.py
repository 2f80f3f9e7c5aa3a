"""Callbacks (stable_baselines3.common.callbacks): evaluation with best-model saving, checkpoints,
stopping on a reward threshold, a progress bar."""
from __future__ import annotations

import os

import numpy as np


class BaseCallback:
    def __init__(self, verbose: int = 0):
        self.verbose = verbose
        self.n_calls = 0
        self.num_timesteps = 0
        self.model = None
        self.locals: dict = {}
        self.globals: dict = {}
        self.parent = None

    @property
    def training_env(self):
        return self.model.get_env()

    @property
    def logger(self):
        return self.model.logger

    def init_callback(self, model) -> None:
        self.model = model
        self._init_callback()

    def _init_callback(self) -> None:
        pass

    def on_training_start(self, locals_, globals_) -> None:
        self.locals, self.globals = locals_, globals_
        self.num_timesteps = self.model.num_timesteps
        self._on_training_start()

    def _on_training_start(self) -> None:
        pass

    def on_rollout_start(self) -> None:
        self._on_rollout_start()

    def _on_rollout_start(self) -> None:
        pass

    def on_step(self) -> bool:
        """Called after each env.step(); returning False stops training."""
        self.n_calls += 1
        self.num_timesteps = self.model.num_timesteps
        return self._on_step()

    def _on_step(self) -> bool:
        return True

    def on_rollout_end(self) -> None:
        self._on_rollout_end()

    def _on_rollout_end(self) -> None:
        pass

    def on_training_end(self) -> None:
        self._on_training_end()

    def _on_training_end(self) -> None:
        pass

    def update_locals(self, locals_) -> None:
        self.locals.update(locals_)
        self.update_child_locals(locals_)

    def update_child_locals(self, locals_) -> None:
        pass


class EventCallback(BaseCallback):
    """Runs `callback` (e.g. StopTrainingOnRewardThreshold) when an event happens (a new best model)."""

    def __init__(self, callback: BaseCallback | None = None, verbose: int = 0):
        super().__init__(verbose)
        self.callback = callback
        if callback is not None:
            callback.parent = self

    def init_callback(self, model) -> None:
        super().init_callback(model)
        if self.callback is not None:
            self.callback.init_callback(model)

    def _on_training_start(self) -> None:
        if self.callback is not None:
            self.callback.on_training_start(self.locals, self.globals)

    def _on_event(self) -> bool:
        return self.callback.on_step() if self.callback is not None else True


class CallbackList(BaseCallback):
    def __init__(self, callbacks: list):
        super().__init__()
        self.callbacks = list(callbacks)

    def _init_callback(self) -> None:
        for cb in self.callbacks:
            cb.init_callback(self.model)

    def _on_training_start(self) -> None:
        for cb in self.callbacks:
            cb.on_training_start(self.locals, self.globals)

    def _on_rollout_start(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_start()

    def _on_step(self) -> bool:
        go_on = True
        for cb in self.callbacks:
            go_on = cb.on_step() and go_on  # every callback sees every step, as in SB3
        return go_on

    def _on_rollout_end(self) -> None:
        for cb in self.callbacks:
            cb.on_rollout_end()

    def _on_training_end(self) -> None:
        for cb in self.callbacks:
            cb.on_training_end()

    def update_child_locals(self, locals_) -> None:
        for cb in self.callbacks:
            cb.update_locals(locals_)


class ConvertCallback(BaseCallback):
    """A plain function f(locals, globals) -> bool as a callback."""

    def __init__(self, callback, verbose: int = 0):
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        return bool(self.callback(self.locals, self.globals)) if self.callback is not None else True


class CheckpointCallback(BaseCallback):
    """Saves the model every `save_freq` calls (env steps of the vector env) as
    <save_path>/<name_prefix>_<num_timesteps>_steps.zip."""

    def __init__(self, save_freq: int, save_path: str, name_prefix: str = "rl_model",
                 save_replay_buffer: bool = False, save_vecnormalize: bool = False, verbose: int = 0):
        super().__init__(verbose)
        if save_replay_buffer:
            raise NotImplementedError("save_replay_buffer=True is not implemented in rtx.rl")
        self.save_freq, self.save_path, self.name_prefix = save_freq, save_path, name_prefix
        self.save_vecnormalize = save_vecnormalize

    def _init_callback(self) -> None:
        os.makedirs(self.save_path, exist_ok=True)

    def _checkpoint_path(self, checkpoint_type: str = "", extension: str = "") -> str:
        name = f"{self.name_prefix}_{checkpoint_type}{self.num_timesteps}_steps.{extension}"
        return os.path.join(self.save_path, name)

    def _on_step(self) -> bool:
        if self.n_calls % self.save_freq == 0:
            path = self.model.save(self._checkpoint_path(extension="zip"))
            if self.verbose >= 2:
                print(f"Saving model checkpoint to {path}")
            vn = self.model.get_vec_normalize_env()
            if self.save_vecnormalize and vn is not None:
                vn.save(self._checkpoint_path("vecnormalize_", extension="json"))
        return True


class StopTrainingOnRewardThreshold(BaseCallback):
    """Use as EvalCallback(callback_on_new_best=...): stops once the mean evaluation reward reaches the threshold."""

    def __init__(self, reward_threshold: float, verbose: int = 0):
        super().__init__(verbose)
        self.reward_threshold = reward_threshold

    def _on_step(self) -> bool:
        if self.parent is None:
            raise ValueError("StopTrainingOnRewardThreshold must be used with an EvalCallback (callback_on_new_best)")
        go_on = bool(self.parent.best_mean_reward < self.reward_threshold)
        if self.verbose >= 1 and not go_on:
            print(f"Stopping training because the mean reward {self.parent.best_mean_reward:.2f} "
                  f"is above the threshold {self.reward_threshold}")
        return go_on


class EvalCallback(EventCallback):
    """Evaluates the agent every `eval_freq` calls on `eval_env`; keeps the best model as best_model.zip and
    the curve in evaluations.npz (timesteps, results, ep_lengths) and evaluations.csv."""

    def __init__(self, eval_env, callback_on_new_best: BaseCallback | None = None,
                 callback_after_eval: BaseCallback | None = None, n_eval_episodes: int = 5, eval_freq: int = 10000,
                 log_path: str | None = None, best_model_save_path: str | None = None, deterministic: bool = True,
                 render: bool = False, verbose: int = 1, warn: bool = True):
        super().__init__(callback_after_eval, verbose)
        from rtx.rl.common.vec_env import wrap_env
        self.callback_on_new_best = callback_on_new_best
        if callback_on_new_best is not None:
            callback_on_new_best.parent = self
        self.n_eval_episodes, self.eval_freq = n_eval_episodes, eval_freq
        self.best_mean_reward, self.last_mean_reward = -np.inf, -np.inf
        self.deterministic, self.render, self.warn = deterministic, render, warn
        self.eval_env = wrap_env(eval_env)
        self.best_model_save_path = best_model_save_path
        self.log_path = os.path.join(log_path, "evaluations") if log_path is not None else None
        self.evaluations_results, self.evaluations_timesteps, self.evaluations_length = [], [], []

    def _init_callback(self) -> None:
        for path in (self.best_model_save_path, self.log_path and os.path.dirname(self.log_path)):
            if path:
                os.makedirs(path, exist_ok=True)
        if self.callback_on_new_best is not None:
            self.callback_on_new_best.init_callback(self.model)

    def _on_step(self) -> bool:
        from rtx.rl.common.evaluation import evaluate_policy
        from rtx.rl.common.vec_env import sync_envs_normalization

        go_on = True
        if self.eval_freq > 0 and self.n_calls % self.eval_freq == 0:
            sync_envs_normalization(self.training_env, self.eval_env)
            rewards, lengths = evaluate_policy(self.model, self.eval_env, n_eval_episodes=self.n_eval_episodes,
                                               deterministic=self.deterministic, return_episode_rewards=True,
                                               warn=self.warn)
            self.evaluations_timesteps.append(self.num_timesteps)
            self.evaluations_results.append(rewards)
            self.evaluations_length.append(lengths)
            if self.log_path is not None:
                np.savez(self.log_path, timesteps=self.evaluations_timesteps, results=self.evaluations_results,
                         ep_lengths=self.evaluations_length)
                with open(self.log_path + ".csv", "w") as f:
                    f.write("timesteps,mean_reward,std_reward,mean_ep_length\n")
                    for t, r, ln in zip(self.evaluations_timesteps, self.evaluations_results,
                                        self.evaluations_length):
                        f.write(f"{t},{np.mean(r):.6g},{np.std(r):.6g},{np.mean(ln):.6g}\n")
            mean_reward, std_reward = float(np.mean(rewards)), float(np.std(rewards))
            self.last_mean_reward = mean_reward
            if self.verbose >= 1:
                print(f"Eval num_timesteps={self.num_timesteps}, episode_reward={mean_reward:.2f} +/- {std_reward:.2f}")
                print(f"Episode length: {np.mean(lengths):.2f} +/- {np.std(lengths):.2f}")
            self.logger.record("eval/mean_reward", mean_reward)
            self.logger.record("eval/mean_ep_length", float(np.mean(lengths)))
            if mean_reward > self.best_mean_reward:
                if self.verbose >= 1:
                    print("New best mean reward!")
                if self.best_model_save_path is not None:
                    self.model.save(os.path.join(self.best_model_save_path, "best_model"))
                self.best_mean_reward = mean_reward
                if self.callback_on_new_best is not None:
                    go_on = self.callback_on_new_best.on_step()
            if self.callback is not None:
                go_on = go_on and self._on_event()
        return go_on

    def update_child_locals(self, locals_) -> None:
        if self.callback is not None:
            self.callback.update_locals(locals_)


class ProgressBarCallback(BaseCallback):
    """A tqdm bar over the timesteps of learn()."""

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm
        self.pbar = tqdm(total=self.locals["total_timesteps"] - self.model.num_timesteps)

    def _on_step(self) -> bool:
        self.pbar.update(self.training_env.num_envs)
        return True

    def _on_training_end(self) -> None:
        self.pbar.refresh()
        self.pbar.close()
