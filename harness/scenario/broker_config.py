"""Broker settings a scenario's workload needs beyond its own ``broker_config``: share groups' lock,
attempt and session limits, and KIP-848 groups' session floors."""

from __future__ import annotations

from harness.scenario.tables import ShareGroupSpec


def share_broker_config(groups: list[ShareGroupSpec]) -> dict[str, str]:
    """The broker settings share groups need: Kafka keeps their lock duration, attempt limit and
    sessions on the broker, and its floors (15 s locks, 45 s sessions) would outlast a short run;
    the least of the groups' values is every group's. A group is given partitions only once their
    share state is initialized, and an attempt that fails (the first one often does, racing the
    creation of ``__share_group_state``) is retried after ``group.share.initialize.retry.interval.ms``:
    30 s by default, longer than a run; the broker raises anything lower to offsets.commit.timeout.ms
    (5 s)."""
    if not groups:
        return {}
    lock = min(g.lock_ms for g in groups)
    session = min(g.session_timeout_ms for g in groups)
    beat = max(500, session // 6)
    return {"group.share.record.lock.duration.ms": str(lock), "group.share.min.record.lock.duration.ms": str(lock),
            "group.share.delivery.count.limit": str(min(g.delivery_count_limit for g in groups)),
            "group.share.session.timeout.ms": str(session), "group.share.min.session.timeout.ms": str(session),
            "group.share.heartbeat.interval.ms": str(beat), "group.share.min.heartbeat.interval.ms": str(beat),
            "group.share.initialize.retry.interval.ms": "1000"}


def kip848_broker_config(session_timeout_ms: int = 6000) -> dict[str, str]:
    """KIP-848 groups keep their session on the broker: its timeout and heartbeat interval, which
    default to 45 s and 5 s and would outlast a short run, set from the groups' session_timeout_ms."""
    beat = str(max(500, session_timeout_ms // 6))
    return {"group.consumer.session.timeout.ms": str(session_timeout_ms),
            "group.consumer.min.session.timeout.ms": str(session_timeout_ms),
            "group.consumer.heartbeat.interval.ms": beat, "group.consumer.min.heartbeat.interval.ms": beat}


