"""Monitor: episode return, length and time in `info["episode"]`, optionally a CSV per run (SB3's Monitor)."""
from __future__ import annotations

import csv
import json
import os
import time

import gymnasium as gym


class Monitor(gym.Wrapper):
    def __init__(self, env: gym.Env, filename: str | None = None, allow_early_resets: bool = True):
        super().__init__(env)
        self.t_start = time.time()
        self.rewards: list[float] = []
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self.episode_times: list[float] = []
        self.total_steps = 0
        self._file = self._writer = None
        if filename is not None:
            if not filename.endswith("monitor.csv"):
                is_dir = os.path.isdir(filename)
                filename = os.path.join(filename, "monitor.csv") if is_dir else filename + ".monitor.csv"
            self._file = open(filename, "w", newline="")
            spec = env.spec.id if env.spec is not None else None
            self._file.write("#" + json.dumps({"t_start": self.t_start, "env_id": spec}) + "\n")
            self._writer = csv.DictWriter(self._file, fieldnames=("r", "l", "t"))
            self._writer.writeheader()
            self._file.flush()

    def reset(self, **kwargs):
        self.rewards = []
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.rewards.append(float(reward))
        self.total_steps += 1
        if terminated or truncated:
            ep = {"r": round(sum(self.rewards), 6), "l": len(self.rewards), "t": round(time.time() - self.t_start, 6)}
            self.episode_returns.append(ep["r"])
            self.episode_lengths.append(ep["l"])
            self.episode_times.append(ep["t"])
            info = dict(info)
            info["episode"] = ep
            if self._writer is not None:
                self._writer.writerow(ep)
                self._file.flush()
        return obs, reward, terminated, truncated, info

    def get_episode_rewards(self):
        return self.episode_returns

    def get_episode_lengths(self):
        return self.episode_lengths

    def get_total_steps(self):
        return self.total_steps

    def close(self):
        super().close()
        if self._file is not None:
            self._file.close()
            self._file = None
