"""Secure aggregation: the unmasked sum is exact in the ring (with and without dropouts), a single
masked update reveals nothing about the update, and clients refuse unsafe requests."""
import numpy as np
import pytest

from rtx.federated import SecAggAbort, SecAggClient, SecAggServer, dequantize, prg_mask, quantize


def _round(vectors, dropped=(), scale_bits=24, round_id=7):
    ids = sorted(vectors)
    clients = {i: SecAggClient(i, round_id) for i in ids}
    server = SecAggServer(round_id, scale_bits)
    for i, c in clients.items():
        server.add_public_key(i, c.public_key)
    for c in clients.values():
        c.set_peers(dict(server.public_keys))
    for i, c in clients.items():
        if i not in dropped:
            server.add_masked(i, c.mask(quantize(vectors[i], scale_bits)))
    revealed = {i: clients[i].reveal(server.dropped, server.survivors) for i in server.survivors} if dropped else {}
    return server, clients, server.unmask(revealed)


def test_sum_is_exact_in_the_ring():
    rng = np.random.default_rng(0)
    vecs = {i: rng.normal(size=1000) for i in [3, 5, 8, 11, 20]}
    _, _, total = _round(vecs)
    exact = sum(quantize(v) for v in vecs.values())  # plain sum of the quantised updates (mod 2^64)
    np.testing.assert_array_equal(total, exact)
    # and dequantised, within the stated bound n / 2^(scale_bits+1)
    err = np.abs(dequantize(total) - sum(vecs.values())).max()
    assert err <= len(vecs) / 2 ** 25


@pytest.mark.parametrize("dropped", [(5,), (3, 20), (8, 11, 20)])
def test_dropouts_leave_the_exact_sum_of_the_survivors(dropped):
    rng = np.random.default_rng(1)
    vecs = {i: rng.normal(size=257) for i in [3, 5, 8, 11, 20]}
    server, _, total = _round(vecs, dropped)
    assert server.dropped == sorted(dropped)
    exact = sum(quantize(vecs[i]) for i in vecs if i not in dropped)
    np.testing.assert_array_equal(total, exact)


def test_without_revealed_seeds_a_dropout_corrupts_the_sum():
    rng = np.random.default_rng(2)
    vecs = {i: rng.normal(size=64) for i in range(4)}
    clients = {i: SecAggClient(i) for i in vecs}
    server = SecAggServer()
    for i, c in clients.items():
        server.add_public_key(i, c.public_key)
    for c in clients.values():
        c.set_peers(dict(server.public_keys))
    for i in (0, 1, 2):
        server.add_masked(i, clients[i].mask(quantize(vecs[i])))
    with pytest.raises(SecAggAbort, match="did not reveal its seed with dropped client 3"):
        server.unmask({})
    bogus = {i: {3: b"\0" * 32} for i in (0, 1, 2)}
    assert np.abs(dequantize(server.unmask(bogus)) - sum(vecs[i] for i in (0, 1, 2))).max() > 1e3


def test_a_single_masked_update_is_uniform_and_uncorrelated_with_the_update():
    rng = np.random.default_rng(3)
    n = 20000
    x = np.linspace(-1, 1, n)  # a strongly structured update
    vecs = {0: x, 1: rng.normal(size=n), 2: rng.normal(size=n)}
    clients = {i: SecAggClient(i) for i in vecs}
    keys = {i: c.public_key for i, c in clients.items()}
    for c in clients.values():
        c.set_peers(keys)
    y = clients[0].mask(quantize(x))
    as_int = y.view(np.int64).astype(np.float64)
    assert abs(np.corrcoef(as_int, x)[0, 1]) < 4 / np.sqrt(n)
    # the top byte of each word is uniform on 0..255 (chi-square, 255 dof: mean 255, sd 22.6)
    counts = np.bincount((y >> np.uint64(56)).astype(np.int64), minlength=256)
    chi2 = ((counts - n / 256) ** 2 / (n / 256)).sum()
    assert chi2 < 255 + 6 * 22.6
    # the plain quantised update is anything but uniform: the test can fail
    q = quantize(x)
    qc = np.bincount((q >> np.uint64(56)).astype(np.int64), minlength=256)
    assert ((qc - n / 256) ** 2 / (n / 256)).sum() > 10 * chi2
    # the server, not holding any private key, cannot derive the seeds: its own key gives other masks
    server_side = SecAggClient(99)
    server_side.set_peers({99: server_side.public_key, **{i: keys[i] for i in (1, 2)}})
    guess = y.copy()
    for j in (1, 2):
        guess -= prg_mask(server_side._seeds[j], n)
    assert np.abs(dequantize(guess) - x).max() > 1e3
    # whereas the true pairwise seeds (held only by clients 1 and 2) do unmask it: the masks are the only protection
    true = y.copy()
    for j in (1, 2):
        true -= prg_mask(clients[j]._seeds[0], n)
    np.testing.assert_array_equal(true, q)


def test_clients_refuse_unsafe_reveal_requests():
    clients = {i: SecAggClient(i) for i in range(3)}
    keys = {i: c.public_key for i, c in clients.items()}
    for c in clients.values():
        c.set_peers(keys)
    with pytest.raises(SecAggAbort, match="only 1 survivors"):
        clients[0].reveal([1, 2], [0])
    with pytest.raises(SecAggAbort, match="both dropped and surviving"):
        clients[0].reveal([1], [0, 1, 2])
    assert set(clients[0].reveal([2], [0, 1])) == {2}
    with pytest.raises(SecAggAbort, match="already revealed"):
        clients[0].reveal([1], [0, 2])
    with pytest.raises(SecAggAbort, match="does not hold this client's own key"):
        clients[1].set_peers({0: keys[0], 2: keys[2]})


def test_pairwise_seeds_agree_and_depend_on_the_round():
    a, b = SecAggClient(0, round_id=1), SecAggClient(1, round_id=1)
    keys = {0: a.public_key, 1: b.public_key}
    a.set_peers(keys)
    b.set_peers(keys)
    assert a._seeds[1] == b._seeds[0]
    c = SecAggClient(0, round_id=2)
    c._sk = a._sk
    c.set_peers(keys)
    assert c._seeds[1] != a._seeds[1]


def test_quantize_refuses_overflow_and_nan():
    with pytest.raises(ValueError, match="overflow the int64 sum"):
        quantize(np.array([1e12]))
    with pytest.raises(ValueError, match="NaN or inf"):
        quantize(np.array([np.nan]))
    x = np.array([-3.25, 0.0, 1.5, 2 ** -30])
    np.testing.assert_allclose(dequantize(quantize(x)), x, atol=2 ** -25)
