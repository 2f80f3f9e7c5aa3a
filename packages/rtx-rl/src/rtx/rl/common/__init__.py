"""Building blocks shared by the algorithms, laid out as stable_baselines3.common."""
