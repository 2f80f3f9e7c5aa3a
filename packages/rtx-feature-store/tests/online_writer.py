"""A writer process for test_online's concurrency test, run as a script (`python online_writer.py SPEC REPO
SEED N`) so the child never has to import the test module (pytest's importlib mode gives it no importable name)."""
import datetime as dt
import random
import sys

from rtx.feature_store import FeatureStore

T0 = dt.datetime(2024, 1, 1)


def write_rows(spec, repo, seed, n):
    store = FeatureStore(repo, online_store=spec)
    r = random.Random(seed)
    for i in range(n):
        k = r.randrange(10)
        # every row keeps its invariant: trips == 2 * round(rate * 1000): a torn row breaks it
        v = r.randrange(1000)
        store.write_to_online_store("stats", {"driver_id": [k], "ts": [T0 + dt.timedelta(seconds=i * 3 + seed)],
                                              "rate": [v / 1000], "trips": [2 * v]})


if __name__ == "__main__":
    spec, repo, seed, n = sys.argv[1:]
    write_rows(spec, repo, int(seed), int(n))
