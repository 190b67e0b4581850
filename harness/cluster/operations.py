"""What an operator does to a running cluster, as faults do it (the fault registry's admin
operations): leader elections by hand, topic configs changed and partitions added through the Admin API, partition
reassignments, a broker's unregistration and a group's offsets reset through Kafka's own
``kafka-reassign-partitions``, ``kafka-cluster`` and ``kafka-consumer-groups`` run from this machine
(confluent-kafka has no call for the first two, and the tool is what an operator runs for the third;
harness/cluster/host_tools.py).

Mixed into KafkaCluster (kafka_cluster.py), whose Admin client, describe and client ports it uses."""

from __future__ import annotations

import json
import logging
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    ResourceType,
)

from harness.cluster import host_tools
from harness.cluster.errors import ClusterError, TopicError
from harness.cluster.kafka_tools import ToolError

LOG = logging.getLogger("kchaos.cluster")

ELECTIONS = {"preferred": ElectionType.PREFERRED, "unclean": ElectionType.UNCLEAN}
# Answers that say the election had nothing to do, which an operator's tool reports and moves past.
NOTHING_TO_DO = {"ELECTION_NOT_NEEDED", "ELIGIBLE_LEADERS_NOT_AVAILABLE", "PREFERRED_LEADER_NOT_AVAILABLE"}
# The reassignment tool's Admin client: a broker that does not answer fails its call in seconds (the
# defaults wait a minute, and --verify asks every broker, dead ones too, to clear its throttle).
TOOL_ADMIN = {"request.timeout.ms": 5000, "default.api.timeout.ms": 10000}
ABORT_LOOK_S = 5.0  # how long abort_transaction looks for an open transaction, one tool run after another
TOOL_TIMEOUT_S = 40.0  # the tool as a whole: its JVM's start and a few bounded calls
TOPICS_OWN = ConfigSource.DYNAMIC_TOPIC_CONFIG.value  # a config the topic sets itself, not a default
RECREATE_WAIT_S = 30.0  # recreate_topic: how long the deletion and the new topic's leaders may take
RETRIED = {"NOT_CONTROLLER", "REQUEST_TIMED_OUT", "_TIMED_OUT", "_TRANSPORT"}


class Operations:

    def _libs(self) -> Path:
        """The cluster's Kafka jars on this machine, for the tools an operation runs from it."""
        if self.tool_libs is None:
            raise ClusterError("this cluster was given no Kafka jars for the operator's tools (ClusterImages.tool_libs:"
                               " setup.cluster_images gives them)")
        return self.tool_libs(self.settings.kafka_version)

    def elect_leader(self, topic: str, partition: int, election: str, timeout_s: float = 30.0) -> dict:
        """``kafka-leader-election --election-type PREFERRED|UNCLEAN`` for one partition: the leader
        before and after, and what the controller answered ("ok", or the error's name when the
        election had nothing to do: the preferred replica leads already, no replica may lead).
        Raises ClusterError for any other answer."""
        before = self.describe(topic).partition(topic, partition).leader
        tp = TopicPartition(topic, partition)
        deadline = time.monotonic() + timeout_s
        # A client of its own, as kafka-leader-election is a process of its own: the cluster's long-lived
        # Admin client may still be backing off from brokers that were all down a moment ago. Its
        # socket timeout bounds each try (confluent-kafka 2.16.1's elect_leaders raises SystemError
        # for either of its own timeout options).
        admin = AdminClient(self.client_config(**{"socket.timeout.ms": 5000}), logger=LOG)
        while True:
            try:
                err = admin.elect_leaders(ELECTIONS[election], [tp]).result(timeout_s).get(tp)
            except KafkaException as e:
                err = e.args[0]
            answer = "ok" if err is None else err.name()
            # the controller moved (a kill, a restart): asked again, as Kafka's own Admin client does
            if answer not in RETRIED or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if answer != "ok" and answer not in NOTHING_TO_DO:
            raise ClusterError(f"{election} leader election of {topic}-{partition}: {answer} ({err})")
        after = self.describe(topic).partition(topic, partition).leader
        return {"election": election, "answer": answer, "leader_before": before, "leader_after": after}

    def reassign(self, topic: str, partition: int, change: str, broker: int, to_broker: int | None,
                 throttle_bps: int | None) -> dict:
        """``kafka-reassign-partitions --execute`` of one partition (``planned_replicas``), with a
        replication throttle when ``throttle_bps`` is given; returns once the tool does (it starts
        the reassignment, it does not wait for it), with the assignment before and asked for and
        what the tool said."""
        before = self.describe(topic).partition(topic, partition).replicas
        after = planned_replicas(before, change, broker, to_broker, self.settings.broker_ids)
        args = ["--execute", *(["--throttle", str(throttle_bps)] if throttle_bps else [])]
        said = self._reassign_tool(topic, partition, after, args)
        LOG.info("reassignment of %s-%d: %s -> %s", topic, partition, before, after)
        return {"change": change, "replicas_before": before, "replicas_after": after,
                "answer": last_line(said)}

    def finish_reassignment(self, topic: str, partition: int, replicas: list[int], timeout_s: float = 30.0) -> str:
        """``kafka-reassign-partitions --verify`` until the reassignment to ``replicas`` is complete
        (which also takes its throttle off), or ``timeout_s``: "complete" or "in progress". A
        --verify that fails (it asks every broker, dead ones too, to clear its throttle) is said so,
        with what the metadata says of the reassignment."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                said = self._reassign_tool(topic, partition, replicas, ["--verify"])
            except ToolError as e:
                done = self.describe(topic).partition(topic, partition).replicas == replicas
                last = last_line(e.output)[:200]
                LOG.warning("reassignment of %s-%d: --verify failed (%s)", topic, partition, last)
                return f"{'complete' if done else 'in progress'}; --verify failed: {last}"
            if "is complete" in said and "in progress" not in said:
                return "complete"
            if time.monotonic() > deadline:
                return "in progress"
            time.sleep(1.0)

    def _reassign_tool(self, topic: str, partition: int, replicas: list[int], args: list[str]) -> str:
        """Kafka's reassignment tool on one partition's new ``replicas``, its Admin client's waits
        bounded (TOOL_ADMIN) so that a dead broker it asks costs seconds, not its default minute."""
        with _tool_files(topic, partition, replicas) as (plan, admin):
            return host_tools.run(self._libs(), "kafka-reassign-partitions",
                                  ["--bootstrap-server", self.bootstrap_servers, "--command-config", admin,
                                   "--reassignment-json-file", plan, *args], timeout_s=TOOL_TIMEOUT_S)

    def unregister_broker(self, n: int) -> str:
        """``kafka-cluster unregister --id n`` (KRaft): the controllers forget broker n until it
        registers again; what the tool said."""
        args = ["unregister", "--bootstrap-server", self.bootstrap_servers, "--id", str(n)]
        said = host_tools.run(self._libs(), "kafka-cluster", args, timeout_s=TOOL_TIMEOUT_S)
        LOG.info("broker %d unregistered: %s", n, said.strip())
        return last_line(said) or "ok"

    def reset_group_offsets(self, group: str, topic: str, offsets: str) -> str:
        """``kafka-consumer-groups --reset-offsets --to-earliest|--to-latest --execute`` (or
        ``--delete-offsets``) of ``group`` on ``topic``: "reset" when Kafka moved them, else
        "refused: " and what the tool said (Kafka moves only an inactive group's offsets, and deletes
        none of a topic the group is subscribed to)."""
        args = ["--bootstrap-server", self.bootstrap_servers, "--group", group, "--topic", topic]
        args += ["--delete-offsets"] if offsets == "delete" else ["--reset-offsets", f"--to-{offsets}", "--execute"]
        try:
            said = host_tools.run(self._libs(), "kafka-consumer-groups", args, timeout_s=TOOL_TIMEOUT_S)
        except ToolError as e:
            said = e.output
        answer = reset_answer(said, group, offsets)
        LOG.info("group %s's offsets of %s to %s: %s", group, topic, offsets, answer)
        return answer

    def delete_groups(self, groups: list[str]) -> dict[str, str]:
        """``kafka-consumer-groups --delete`` of ``groups``: for each, "deleted" or "refused: " and
        why Kafka kept it (a group with members, one that never formed).

        Kafka's own tool in a process of its own, not confluent-kafka's Admin client: a request to a
        group's coordinator that times out there while the coordinator is unreachable aborts the
        whole process once the coordinator answers again (librdkafka #4605; docs/findings.md,
        "Known issues kchaos met"), and this runs in the process of the user's tests."""
        if not groups:
            return {}
        named = [arg for g in groups for arg in ("--group", g)]
        with _admin_properties() as admin:
            args = ["--bootstrap-server", self.bootstrap_servers, "--command-config", admin, "--delete", *named]
            try:
                said = host_tools.run(self._libs(), "kafka-consumer-groups", args, timeout_s=TOOL_TIMEOUT_S)
            except ToolError as e:
                said = e.output
        answers = deletion_answers(said, groups)
        LOG.info("groups deleted: %s", answers)
        return answers

    def abort_transaction(self, topic: str, partition: int) -> dict:
        """``kafka-transactions abort`` of the oldest transaction open on the partition, as an operator
        aborts a hanging one: the producers ``describe-producers`` lists (asked again for up to
        ABORT_LOOK_S while none has one open: a producer spends most of its time between a commit
        and its next transaction's first record on the partition), then the abort of the one whose
        open transaction started first. Its account: the producer and the offset its transaction
        started at, and ``transaction_aborted``: "aborted", "none open", or "refused: " and what the
        tool said."""
        at = ["--topic", topic, "--partition", str(partition)]
        with _admin_properties() as admin:
            def tool(*args: str) -> str:
                return host_tools.run(self._libs(), "kafka-transactions",
                                      ["--bootstrap-server", self.bootstrap_servers, "--command-config", admin,
                                       *args, *at], timeout_s=TOOL_TIMEOUT_S)

            deadline = time.monotonic() + ABORT_LOOK_S
            try:
                while not (open_ones := open_transactions(tool("describe-producers"))) \
                        and time.monotonic() < deadline:
                    pass
            except ToolError as e:
                return {"transaction_aborted": f"refused: {last_line(e.output)[:300]}"}
            if not open_ones:
                return {"transaction_aborted": "none open"}
            oldest = min(open_ones, key=lambda t: t.start_offset)
            account = {"producer_id": oldest.producer_id, "start_offset": oldest.start_offset}
            # By the producer's id and epoch where the coordinator's epoch is listed: the tool's own
            # lookup by --start-offset runs in a JVM started a second later, when the producer has
            # usually committed that transaction; the marker then ends the one it has open.
            which = (["--producer-id", str(oldest.producer_id), "--producer-epoch", str(oldest.producer_epoch),
                      "--coordinator-epoch", str(oldest.coordinator_epoch)] if oldest.coordinator_epoch is not None
                     else ["--start-offset", str(oldest.start_offset)])
            try:
                tool("abort", *which)
            except ToolError as e:
                return {**account, "transaction_aborted": f"refused: {last_line(e.output)[:300]}"}
        LOG.info("%s-%d: transaction of producer %d from offset %d aborted", topic, partition, oldest.producer_id,
                 oldest.start_offset)
        return {**account, "transaction_aborted": "aborted"}

    def add_partitions(self, topic: str, more: int) -> dict:
        """``kafka-topics --alter --partitions`` through the Admin API: the topic gains ``more``
        partitions, each placed by the controller; its partition count before and after."""
        before = len(self.admin.list_topics(topic, timeout=10).topics[topic].partitions)
        self.admin.create_partitions([NewPartitions(topic, before + more)])[topic].result(30)
        LOG.info("topic %s: %d partitions, now %d", topic, before, before + more)
        return {"partitions_before": before, "partitions_after": before + more}

    def recreate_topic(self, topic: str, account: dict | None = None, timeout_s: float = RECREATE_WAIT_S) -> dict:
        """``kafka-topics --delete`` then ``--create`` of ``topic`` under the same name, with the same
        partitions, replicas (the assignment as the metadata lists it, offline brokers too) and the
        topic's own configs, as an operator starts a topic again from nothing.

        The account (``account``, filled in as it goes, so that what was done is in it whatever fails
        after): the topic, its id, when the deletion was asked, when the new topic served (every
        partition led) and its id, and "recreated" or "refused: " with Kafka's words (a deletion still
        pending when the wait ends: ZooKeeper mode waits for every replica's broker)."""
        account = {} if account is None else account
        account["topic"] = topic
        try:
            before = self.admin.list_topics(topic, timeout=10).topics[topic]
            assignment = [list(before.partitions[p].replicas) for p in sorted(before.partitions)]
            res = ConfigResource(ResourceType.TOPIC, topic)
            own = {k: e.value for k, e in self.admin.describe_configs([res])[res].result(15).items()
                   if int(getattr(e.source, "value", e.source)) == TOPICS_OWN and e.value is not None}
            account["topic_id_before"] = old_id = self.topic_id(topic)
            account["deleted_ms"] = int(time.time() * 1000)
            self.delete_topics([topic], timeout_s=timeout_s)
            self._create_anew(topic, assignment, own, old_id, timeout_s)
            self.wait_topic_leaders(topic, len(assignment), timeout_s)
        except Exception as e:  # the account says what Kafka refused; the run goes on with what there is
            LOG.info("topic %s: not recreated: %s", topic, e)
            account["recreated"] = f"refused: {str(e)[:300]}"
            return account
        account["created_ms"] = int(time.time() * 1000)
        account["recreated"] = "recreated"
        account["topic_id_after"] = self._new_topic_id(topic, old_id)
        LOG.info("topic %s: deleted and created again (%s -> %s)", topic, old_id, account["topic_id_after"])
        return account

    def _new_topic_id(self, topic: str, old_id: str, timeout_s: float = 10.0) -> str | None:
        """The recreated topic's id once the broker asked knows it (its metadata may lag the
        controller's by a moment); None if it does not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if (found := self.topic_id(topic)) != old_id:
                    return found
            except KafkaException:
                pass
            time.sleep(0.2)
        return None

    def _create_anew(self, topic: str, assignment: list[list[int]], config: dict[str, str], old_id: str,
                     timeout_s: float) -> None:
        """Create ``topic`` again once Kafka lets the name be used: ZooKeeper mode drops a topic from the
        metadata before its deletion is finished, and refuses the name meanwhile ("marked for
        deletion"). A refusal that the name exists is taken as done only when the topic there has a
        new id (an earlier request of ours that the client gave up on was carried out)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.create_topic(topic, replica_assignment=assignment, config=config, timeout_s=timeout_s)
                return
            except TopicError as e:
                exists = "already exists" in str(e) or "marked for deletion" in str(e)
                if exists and topic in self.admin.list_topics(timeout=10).topics and self.topic_id(topic) != old_id:
                    return
                if not exists or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def wait_topic_leaders(self, topic: str, partitions: int, timeout_s: float) -> None:
        """Until every partition of ``topic`` has a leader in the metadata (a new topic serves once they do)."""
        deadline = time.monotonic() + timeout_s
        while True:
            t = self.admin.list_topics(topic, timeout=10).topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) == partitions and \
                    all(p.leader >= 0 for p in t.partitions.values()):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"topic {topic}: partitions without a leader {timeout_s:g} s after it was created")
            time.sleep(0.1)

    def topic_config(self, topic: str, name: str) -> str | None:
        """The topic's own value of ``name``, or None where it takes the broker's (or Kafka's) default."""
        res = ConfigResource(ResourceType.TOPIC, topic)
        entries = self.admin.describe_configs([res])[res].result(15)
        entry = entries.get(name)
        own = entry is not None and int(getattr(entry.source, "value", entry.source)) == TOPICS_OWN
        return entry.value if own else None

    def alter_topic_config(self, topic: str, name: str, value: str | None) -> None:
        """``kafka-configs --alter --add-config name=value`` on the topic (``--delete-config`` for None),
        incrementally, so its other configs stay."""
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        res = ConfigResource(ResourceType.TOPIC, topic,
                             incremental_configs=[ConfigEntry(name, value or "", incremental_operation=op)])
        self.admin.incremental_alter_configs([res])[res].result(15)
        LOG.info("topic %s: %s %s", topic, name, "deleted" if value is None else f"= {value}")


def planned_replicas(replicas: list[int], change: str, broker: int, to_broker: int | None,
                     brokers: list[int]) -> list[int]:
    """The assignment a reassignment asks for: ``move`` puts ``to_broker`` where ``broker`` was (same
    place, so a moved leader's replica stays the preferred one), ``add`` appends ``to_broker``,
    ``remove`` drops ``broker``. ``to_broker`` None: the lowest broker holding no replica.
    ClusterError when the change cannot be made of this assignment."""
    spare = to_broker if to_broker is not None else next((b for b in sorted(brokers) if b not in replicas), None)
    if change in ("move", "remove") and broker not in replicas:
        raise ClusterError(f"reassignment ({change}): broker {broker} holds no replica of the partition ({replicas})")
    if change in ("move", "add") and (spare is None or spare in replicas):
        raise ClusterError(f"reassignment ({change}): no broker outside the assignment {replicas} to take a replica")
    if change == "move":
        return [spare if r == broker else r for r in replicas]
    if change == "add":
        return [*replicas, spare]
    if len(replicas) < 2:
        raise ClusterError(f"reassignment (remove): {replicas} is the partition's only replica")
    return [r for r in replicas if r != broker]


@contextmanager
def _tool_files(topic: str, partition: int, replicas: list[int]) -> Iterator[tuple[str, str]]:
    """The tool's --reassignment-json-file for one partition and its --command-config, removed after."""
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": partition, "replicas": replicas}]}
    with _admin_properties() as admin:
        plan_file = Path(admin).with_name("plan.json")
        plan_file.write_text(json.dumps(plan))
        yield str(plan_file), admin


@contextmanager
def _admin_properties() -> Iterator[str]:
    """A tool's --command-config bounding its Admin client's calls (TOOL_ADMIN), removed after."""
    with tempfile.TemporaryDirectory(prefix="kchaos-tool-") as tmp:
        (Path(tmp) / "admin.properties").write_text("".join(f"{k}={v}\n" for k, v in TOOL_ADMIN.items()))
        yield str(Path(tmp) / "admin.properties")


@dataclass(frozen=True)
class OpenTransaction:
    """A producer with a transaction open on a partition, as ``kafka-transactions describe-producers`` lists it."""

    producer_id: int
    producer_epoch: int
    start_offset: int
    coordinator_epoch: int | None = None  # LatestCoordinatorEpoch, where the release lists it


def open_transactions(said: str) -> list[OpenTransaction]:
    """The rows of ``describe-producers``' table whose CurrentTransactionStartOffset is an offset
    ("None" where the producer has no transaction open). Its columns are found by the header's
    names: releases differ in whether LatestCoordinatorEpoch is among them."""
    lines = [x.split() for x in said.splitlines() if x.strip() and not x.startswith("log4j:")]
    header = next((i for i, words in enumerate(lines) if "CurrentTransactionStartOffset" in words), None)
    if header is None:
        return []
    names = lines[header]
    col = {n: names.index(n) for n in ("ProducerId", "ProducerEpoch", "CurrentTransactionStartOffset")}
    coordinator = names.index("LatestCoordinatorEpoch") if "LatestCoordinatorEpoch" in names else None
    return [OpenTransaction(int(words[col["ProducerId"]]), int(words[col["ProducerEpoch"]]),
                            int(words[col["CurrentTransactionStartOffset"]]),
                            int(words[coordinator]) if coordinator is not None else None)
            for words in lines[header + 1:]
            if len(words) == len(names) and words[col["CurrentTransactionStartOffset"]].isdigit()]


def deletion_answers(said: str, groups: list[str]) -> dict[str, str]:
    """What ``kafka-consumer-groups --delete`` says of each group: "deleted" when a line naming
    deleted groups quotes it ("Deletion of requested consumer groups ('a', 'b') was successful.",
    or "These consumer groups were deleted successfully: 'a'" beside failures), "refused: " and the
    exception its "* Group 'a' could not be deleted due to: ..." line names, else "no answer: " and
    the tool's last line."""
    deleted: set[str] = set()
    refused: dict[str, str] = {}
    for line in (x.strip() for x in said.splitlines()):
        why = re.match(r"\* Group '(.+?)' could not be deleted due to: (.*)", line)
        if why:
            refused[why.group(1)] = why.group(2)
        elif "was successful" in line or "deleted successfully" in line:
            deleted |= set(re.findall(r"'([^']+)'", line))
    return {g: "deleted" if g in deleted else f"refused: {refused[g][:300]}" if g in refused
            else f"no answer: {(last_line(said) or 'nothing')[:300]}" for g in groups}


def reset_answer(said: str, group: str, offsets: str) -> str:
    """What kafka-consumer-groups' output says of a reset or deletion of ``group``'s offsets: "reset"
    when it lists a partition it moved (a row under NEW-OFFSET naming the group) or deleted
    ("Successful"), else "refused: " and its error line. The tool exits 0 either way, and prints
    the table's header under its error when it refuses an active group."""
    lines = [x.strip() for x in said.splitlines() if x.strip()]
    error = next((x for x in lines if x.startswith("Error")), None)
    if error is not None:
        return f"refused: {error[:300]}"
    # Its rows are printed "%n%-30s ..." (a newline before each, none after the last): read the
    # table's words, not its lines.
    table = said.partition("NEW-OFFSET")[2] if offsets != "delete" else said
    row = rf"(?:^|\s){re.escape(group)}\s+\S+\s+\d+\s+-?\d+(?:\s|$)" if offsets != "delete" else r"\bSuccessful\b"
    if re.search(row, table):
        return "reset"
    return f"refused: {(last_line(said) or 'no answer')[:300]}"


def last_line(said: str) -> str:
    """A tool's last line of its own: what it printed last, past the logging framework's complaints
    about its configuration (``log4j:WARN ...``, which releases on log4j 1 print when run without one)."""
    lines = [x.strip() for x in said.splitlines() if x.strip() and not x.startswith("log4j:")]
    return lines[-1] if lines else ""
