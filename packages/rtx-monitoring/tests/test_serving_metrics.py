"""ServingMetrics, checked through what Prometheus would scrape: the exposition text parsed back with
prometheus_client's own parser, compared with sums and counts computed here from the raw inputs."""
import bisect
import math
import random
import threading

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from rtx.monitoring import LATENCY_BUCKETS, ServingMetrics


def scrape(m, accept=None):
    """{(sample name, frozenset(labels)): value} from the exposition text."""
    body, content_type = m.exposition(accept)
    parse = parse_openmetrics if "openmetrics" in content_type else text_string_to_metric_families
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in parse(body.decode()) for s in family.samples}


def value(samples, name, **labels):
    return samples[(name, frozenset(labels.items()))]


def test_requests_and_latency_histogram_match_the_inputs():
    m = ServingMetrics()
    rng = random.Random(0)
    calls = [(rng.choice(["resnet", "bert"]), rng.choice(["1.0.0", "2.0.0"]), rng.choice(["v2", "openai"]),
              rng.choice([200, 200, 200, 404, 500]), rng.lognormvariate(-5, 1.5)) for _ in range(500)]
    for call in calls:
        m.observe_request(*call)
    samples = scrape(m)

    counts = {}
    for model, version, protocol, code, _ in calls:
        key = (model, version, protocol, str(code))
        counts[key] = counts.get(key, 0) + 1
    for (model, version, protocol, code), n in counts.items():
        assert value(samples, "rtx_requests_total", model=model, version=version, protocol=protocol, code=code) == n
    assert sum(v for (name, _), v in samples.items() if name == "rtx_requests_total") == len(calls)

    for model in ("resnet", "bert"):
        for version in ("1.0.0", "2.0.0"):
            secs = [c[4] for c in calls if c[0] == model and c[1] == version]
            labels = dict(model=model, version=version)
            assert value(samples, "rtx_request_duration_seconds_count", **labels) == len(secs)
            assert value(samples, "rtx_request_duration_seconds_sum", **labels) == pytest.approx(sum(secs))
            for le in LATENCY_BUCKETS:   # cumulative: observations <= the bound
                expected = sum(1 for s in secs if s <= le)
                assert value(samples, "rtx_request_duration_seconds_bucket", le=repr(float(le)), **labels) == expected
            assert value(samples, "rtx_request_duration_seconds_bucket", le="+Inf", **labels) == len(secs)


def test_latency_buckets_span_half_a_millisecond_to_ten_seconds():
    assert LATENCY_BUCKETS[0] == 0.0005 and LATENCY_BUCKETS[-1] == 10.0
    assert list(LATENCY_BUCKETS) == sorted(LATENCY_BUCKETS)
    # no gap wider than a factor 2.5 between neighbours: every decade is resolved
    assert max(b / a for a, b in zip(LATENCY_BUCKETS, LATENCY_BUCKETS[1:])) <= 2.5


def test_batch_queue_in_flight_and_model_load():
    m = ServingMetrics()
    sizes = [1, 3, 8, 8, 32, 200]
    for s in sizes:
        m.observe_batch("resnet", s)
    m.set_queue_depth("resnet", 7)
    m.set_queue_depth("resnet", 4)
    m.observe_model_load("resnet", "1.0.0", 2.5)
    m.in_flight.inc(3)
    samples = scrape(m)
    assert value(samples, "rtx_batch_size_count", model="resnet") == len(sizes)
    assert value(samples, "rtx_batch_size_sum", model="resnet") == sum(sizes)
    bounds = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    for le in bounds:
        assert value(samples, "rtx_batch_size_bucket", model="resnet", le=repr(float(le))) == \
            bisect.bisect_right(sorted(sizes), le)
    assert value(samples, "rtx_queue_depth", model="resnet") == 4
    assert value(samples, "rtx_model_load_seconds", model="resnet", version="1.0.0") == 2.5
    assert value(samples, "rtx_in_flight_requests") == 3


def test_track_request_counts_in_flight_and_codes():
    m = ServingMetrics()
    with m.track_request("bert", "1", "v2") as r:
        assert value(scrape(m), "rtx_in_flight_requests") == 1
        r.code = 404
    with pytest.raises(RuntimeError):
        with m.track_request("bert", "1", "v2"):
            raise RuntimeError("boom")
    with m.track_request("bert", "1", "v2"):
        pass
    samples = scrape(m)
    assert value(samples, "rtx_in_flight_requests") == 0
    for code in ("200", "404", "500"):
        assert value(samples, "rtx_requests_total", model="bert", version="1", protocol="v2", code=code) == 1
    assert value(samples, "rtx_request_duration_seconds_count", model="bert", version="1") == 3


def test_each_instance_has_its_own_registry():
    a, b = ServingMetrics(), ServingMetrics()    # a second app in the same process: no duplicate-name error
    a.observe_request("m", "1", "v2", 200, 0.001)
    assert not any(name == "rtx_requests_total" for name, _ in scrape(b))
    shared = CollectorRegistry()
    c = ServingMetrics(registry=shared)
    Counter("app_other_total", "another metric of the app", registry=shared).inc()
    c.observe_request("m", "1", "v2", 200, 0.001)
    text = c.exposition()[0].decode()
    assert "app_other_total 1.0" in text and "rtx_requests_total{" in text
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        ServingMetrics(registry=shared)          # the same names twice in one registry are refused


def test_openmetrics_when_asked():
    m = ServingMetrics()
    m.observe_request("m", "1", "v2", 200, 0.002)
    body, content_type = m.exposition("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text") and body.endswith(b"# EOF\n")
    assert value(scrape(m, "application/openmetrics-text"), "rtx_requests_total",
                 model="m", version="1", protocol="v2", code="200") == 1
    assert m.exposition()[1].startswith("text/plain; version=0.0.4")


def test_remove_model_drops_its_series():
    m = ServingMetrics()
    for version in ("1", "2"):
        m.observe_request("m", version, "v2", 200, 0.01)
        m.observe_model_load("m", version, 1.0)
    m.observe_request("other", "1", "v2", 200, 0.01)
    m.observe_batch("m", 4)
    m.remove_model("m", "1")
    names = {(name, dict(labels).get("model"), dict(labels).get("version")) for name, labels in scrape(m)}
    assert ("rtx_requests_total", "m", "1") not in names and ("rtx_requests_total", "m", "2") in names
    assert ("rtx_batch_size_count", "m", None) in names      # per-model series stay while a version is left
    m.remove_model("m")
    assert not any(model == "m" for _, model, _ in
                   {(n, dict(lb).get("model"), None) for n, lb in scrape(m)})
    assert value(scrape(m), "rtx_requests_total", model="other", version="1", protocol="v2", code="200") == 1


def test_concurrent_updates_are_not_lost():
    m = ServingMetrics()

    def work():
        for _ in range(2000):
            m.observe_request("m", "1", "v2", 200, 0.001)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    samples = scrape(m)
    assert value(samples, "rtx_requests_total", model="m", version="1", protocol="v2", code="200") == 8000
    assert value(samples, "rtx_request_duration_seconds_sum", model="m", version="1") == pytest.approx(8.0)


@pytest.mark.parametrize("bad, err, match", [
    (-0.1, ValueError, "finite and >= 0"), (math.nan, ValueError, "finite"), (math.inf, ValueError, "finite"),
    ("fast", TypeError, "must be a number, got str"), (None, TypeError, "got NoneType")])
def test_bad_latency_is_refused(bad, err, match):
    m = ServingMetrics()
    with pytest.raises(err, match=match):
        m.observe_request("m", "1", "v2", 200, bad)
    assert not any(name == "rtx_requests_total" for name, _ in scrape(m))   # nothing half-recorded


def test_bad_arguments_are_refused():
    m = ServingMetrics()
    with pytest.raises(ValueError, match="size must be an int >= 1, got 0"):
        m.observe_batch("m", 0)
    with pytest.raises(ValueError, match="depth must be an int >= 0, got -1"):
        m.set_queue_depth("m", -1)
    with pytest.raises(TypeError, match="CollectorRegistry or None, got dict"):
        ServingMetrics(registry={})
    with pytest.raises(ValueError, match="HTTP status code .* got 'OK'"):
        m.observe_request("m", "1", "v2", "OK", 0.1)


# --- regressions and edge cases found in review ------------------------------------------------

@pytest.mark.parametrize("code", [200.7, True, 99, 600, 99999, "2OO", "\u0662\u0660\u0660", None])
def test_status_codes_must_be_real_http_codes(code):
    # int(code) used to turn 200.7 into "200" and True into "1"
    m = ServingMetrics()
    with pytest.raises(ValueError, match="HTTP status code .*100 to 599"):
        m.observe_request("m", "1", "v2", code, 0.1)
    assert not any(name == "rtx_requests_total" for name, _ in scrape(m))


def test_status_code_as_digit_string_or_numpy_int():
    np = pytest.importorskip("numpy")
    m = ServingMetrics()
    m.observe_request("m", "1", "v2", "404", 0.1)
    m.observe_request("m", "1", "v2", np.int64(404), 0.1)
    assert value(scrape(m), "rtx_requests_total", model="m", version="1", protocol="v2", code="404") == 2


def test_observations_on_bucket_bounds_count_in_that_bucket():
    # Prometheus buckets are "le": an observation equal to a bound belongs to it (and to all above).
    m = ServingMetrics()
    for s in (0.0, 0.0005, 0.001, 10.0, 10.5):
        m.observe_request("m", "1", "v2", 200, s)
    samples = scrape(m)
    got = {le: value(samples, "rtx_request_duration_seconds_bucket", model="m", version="1", le=repr(float(le)))
           for le in (0.0005, 0.001, 0.0025, 10.0)}
    assert got == {0.0005: 2, 0.001: 3, 0.0025: 3, 10.0: 4}
    assert value(samples, "rtx_request_duration_seconds_bucket", model="m", version="1", le="+Inf") == 5


def test_label_values_with_quotes_backslashes_and_newlines_round_trip():
    m = ServingMetrics()
    odd = 'a"b\\c\nd}{,=é'
    m.observe_request(odd, "1.0.0+x", 'p"', 200, 0.01)
    for accept in (None, "application/openmetrics-text"):
        assert value(scrape(m, accept), "rtx_requests_total", model=odd, version="1.0.0+x", protocol='p"',
                     code="200") == 1
