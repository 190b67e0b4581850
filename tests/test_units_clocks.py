"""Clock faults on data the tests build: what a clock_skew fault needs (bad ones exit 2 naming the
key and what is allowed), that a scenario with one starts its nodes with skewable clocks, the file
a skew writes, and that a hunt draws skews on a cluster shared with its other draws. What the JVM
does with a skewed clock is tested against real Kafka in tests/test_clocks.py."""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness import scenario as scenario_mod
from harness.cluster.archive import one_file_tar
from harness.cluster.clocks import offset_text
from harness.hunt.space import draw, vocabulary
from harness.run import schedule
from harness.run.kept_cluster import with_node_faults
from harness.scenario import Scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def with_faults(*faults: dict, **extra) -> Scenario:
    base = scenario_mod.load(SCENARIOS / "smoke.toml")
    return Scenario.model_validate({**base.model_dump(mode="json"), "faults": list(faults), "duration_s": 30, **extra})


def skew(**kw) -> dict:
    return {"at_s": 2, "duration_s": 5, "kind": "clock_skew", "target": "leader", **kw}


@pytest.mark.parametrize(("fault", "refused"), [
    (skew(), "offset_s: clock_skew needs how far the clock jumps, in seconds (allowed: any number but 0"),
    (skew(offset_s=0), "offset_s: clock_skew needs how far the clock jumps"),
    ({"at_s": 2, "kind": "kill", "offset_s": 60},
     "offset_s: only clock_skew and client_clock_skew take offset_s, not kill"),
    ({"at_s": 2, "kind": "client_clock_skew", "target": "client:all"},
     "offset_s: client_clock_skew needs how far the clock jumps"),
    ({"at_s": 2, "kind": "client_clock_skew", "target": "leader", "offset_s": 60},
     "faults.0.target: client_clock_skew takes a client:NAME target"),
])
def test_bad_clock_faults_are_refused_naming_the_key(fault, refused):
    with pytest.raises(ValidationError, match=refused.replace("(", r"\(")):
        with_faults(fault)


def test_a_scenario_with_a_skew_starts_skewable_clocks_and_plans_its_offset():
    s = with_faults(skew(offset_s=-600, target="zookeeper"))
    assert s.cluster_settings().skewable_clocks and not with_faults().cluster_settings().skewable_clocks
    (f,) = schedule.plan(s)
    assert (f.kind, f.offset_s, str(f.target)) == ("clock_skew", -600, "zookeeper")


def test_generated_skews_take_the_generators_offset():
    s = with_faults(generator={"kinds": ["clock_skew"], "targets": ["leader"], "offset_s": 7200})
    planned = schedule.plan(s)
    assert planned and all(f.offset_s == 7200 for f in planned) and s.cluster_settings().skewable_clocks


def test_the_offset_file_is_what_libfaketime_reads():
    assert [offset_text(x) for x in (3600, -600, 0, 1.5)] == ["+3600", "-600", "+0", "+1.5"]
    with tarfile.open(fileobj=io.BytesIO(one_file_tar("clock-offset", b"+3600\n"))) as tf:
        (m,) = tf.getmembers()
        assert m.name == "clock-offset" and m.mtime > 0 and tf.extractfile(m).read() == b"+3600\n"


def test_a_hunt_draws_skews_from_ten_seconds_to_days_either_way():
    s = with_faults()
    moves = [m for m in vocabulary(s) if m.kind == "clock_skew"]
    assert moves, "the vocabulary has clock_skew"
    offsets = [f.offset_s for i in range(40) for f in draw(s, random.Random(i), moves).faults]
    assert offsets and all(10 <= abs(o) <= 10 ** 5.9 + 1 for o in offsets)
    assert min(offsets) < 0 < max(offsets) and max(abs(o) for o in offsets) > 7 * 86400 * 0.5


def test_draws_with_and_without_a_skew_share_one_cluster():
    plain = with_node_faults(with_faults(), True, False)
    skewed = with_node_faults(with_faults(skew(offset_s=60)), True, False)
    assert plain.cluster_settings() == skewed.cluster_settings()
    assert with_node_faults(with_faults(), False, False).cluster_settings() != plain.cluster_settings()


def client_skew(**kw) -> dict:
    return {"at_s": 2, "duration_s": 5, "kind": "client_clock_skew", "target": "client:all", "offset_s": -3600, **kw}


def test_a_client_skew_aims_at_a_plain_producer_and_marks_it_for_a_movable_clock():
    s = with_faults(client_skew())
    (p,) = s.producers
    assert p.clock_skewed("all") and not with_faults().producers[0].clock_skewed("all")
    assert not s.cluster_settings().skewable_clocks, "a client's clock is the client's, not the nodes'"
    (f,) = schedule.plan(s)
    assert (f.kind, f.offset_s, str(f.target)) == ("client_clock_skew", -3600, "client:all")


@pytest.mark.parametrize(("extra", "refused"), [
    ({"producers": [{"name": "t", "transactional": True}]},
     "client_clock_skew acts on plain (not transactional) producers, not 't' (allowed: none)"),
    ({"groups": [{"name": "g", "members": 1}]}, "client_clock_skew acts on plain (not transactional) producers, "
     "not 'g-1' (allowed: all)"),
])
def test_a_client_skew_on_a_client_other_than_a_plain_producer_is_refused(extra, refused):
    target = "client:" + ("t" if "producers" in extra else "g-1")
    with pytest.raises(ValidationError, match=refused.replace("(", r"\(").replace(")", r"\)")):
        with_faults(client_skew(target=target), **extra)


@pytest.mark.parametrize("library", ["franz-go", "sarama"])
def test_a_client_skew_on_a_go_librarys_producer_is_refused_before_any_container(library):
    """libfaketime reaches a JVM and librdkafka's Python process, not a static Go program: refused at
    load, naming the producers whose clock can move."""
    refused = (f"client_clock_skew: 'all' is a {library} client, whose clock kchaos cannot move (allowed: none; "
               "a producer of librdkafka, java)")
    with pytest.raises(ValidationError, match=refused.replace("(", r"\(").replace(")", r"\)")):
        with_faults(client_skew(), client=library)
