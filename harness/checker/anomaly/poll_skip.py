"""poll_skip: for each (consumer, topic, partition, generation), the consumer's "live" rows in seq
order; let m be the highest offset among its rows up to and including row i. A pair (row i, row
i+1) counts when row i+1's offset o is above m and the final log of that partition holds a value
readable by this consumer at an offset strictly between m and o. (Generation null is one group.)"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from harness.checker.anomaly.record import AnomalyClass
from harness.checker.excuses import Excuses, Promise
from harness.checker.findings import (
    finding,
)
from harness.checker.prepare import Inputs
from harness.checker.prepare_txns_groups import readable
from harness.checker.reference import (
    Tables,
    final_log,
    is_committed,
)
from harness.checker.spark_api import F

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

SKIP_BUCKET = 4096  # offsets per bucket of the poll_skip range join (a gap spans one or two)


def count(i: Inputs) -> DataFrame:
    """poll_skip: for each (consumer, topic, partition, generation), the consumer's "live" rows in seq
    order; let m be the highest offset among its rows up to and including row i. A pair (row i, row
    i+1) counts when row i+1's offset o is above m and the final log of that partition holds a value
    readable by this consumer at an offset strictly between m and o. (Generation null is one group.)

    The gaps (o > m + 1) come from the poll marks; the final log is joined to them by partition and
    offset bucket, so the join stays an equality join however many gaps there are. The example gives
    the consumer, generation, m and o, how many readable records lie between, and the first of them."""
    gaps = (i.v2.polls.filter("gap")
            .select("run", "consumer", "topic", "partition", "generation", "isolation", "seq", "next_seq",
                    "poll_ts_ms", F.col("high").alias("m"), F.col("next_offset").alias("o"))
            .withColumn("bucket", F.explode(F.sequence(F.floor((F.col("m") + 1) / SKIP_BUCKET),
                                                       F.floor((F.col("o") - 1) / SKIP_BUCKET)))))
    fin = i.v2.final.withColumn("bucket", F.floor(F.col("offset") / SKIP_BUCKET))
    hits = (fin.join(i.pk.encode(gaps), on=[*i.pk.cols, "bucket"], how="inner")
            .filter((F.col("offset") > F.col("m")) & (F.col("offset") < F.col("o")) & readable()))
    pair = [*i.pk.cols, "consumer", "generation", "isolation", "seq", "next_seq", "poll_ts_ms", "m", "o"]
    skips = hits.groupBy(*pair).agg(F.count(F.lit(1)).alias("skipped"),
                                    F.min(F.struct("offset", "value")).alias("first"))
    return finding("poll_skip", i.pk.decode(skips.select(*pair, "skipped", F.col("first.offset").alias("first_skipped"),
                                                         F.col("first.value").alias("first_skipped_value"))),
                   "topic", "poll_ts_ms")


def reference(h: Tables) -> int:
    """Per (consumer, t, p, generation), live rows in seq order, m the highest offset up to row i: pairs
    (i, i+1) whose offset o > m with a value readable by the consumer in the final log strictly between."""
    produced, consumed, txns = h.produced, h.consumed, h.txns
    final = final_log(consumed)
    groups: dict[tuple, list] = defaultdict(list)
    for r in consumed:
        if r["phase"] == "live":
            groups[(r["consumer"], r["topic"], r["partition"], r.get("generation"))].append(r)
    n = 0
    for (_, t, p, _), rows in groups.items():
        rows.sort(key=lambda r: r["seq"])
        for i in range(len(rows) - 1):
            m = max(r["offset"] for r in rows[: i + 1])
            o = rows[i + 1]["offset"]
            rc = rows[i].get("isolation") == "read_committed"
            if o > m and any(ft == t and fp == p and m < fo < o and (not rc or is_committed(fv, produced, txns))
                             for ft, fp, fo, fv in final):
                n += 1
    return n


def promise(x: Excuses) -> Promise:
    return Promise("poll_skip", x.order is None, x.order or "a consumer's position only passes records it returned")


CLASS = AnomalyClass.of(__name__, label="poll skip", contract="v2", owner="partition")
