package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.zip.CRC32;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import sun.misc.Signal;

/**
 * One share-group member (KIP-932), started and acted on by the harness as a consumer-group member is
 * (share_groups.py: SIGTERM leaves cleanly, SIGUSR1 freezes it between calls, SIGKILL). It appends JSON lines to
 * the config's {@code out} file: {@code started}; {@code delivery} for each record poll gave it, with the delivery
 * count the client reports; and {@code ack} for each acknowledgement once its outcome is known: the member
 * acknowledges every record of a poll (explicitly: accept, or release / reject for a seeded share of them;
 * implicitly: accept), then commits synchronously, and each record's outcome is its partition's entry in
 * commitSync's answer ({@code ok}, {@code error} with the exception, or {@code unknown} when the commit itself
 * failed or the partition has no entry). Each line is written before the member goes on, so whatever a killed member
 * was given is on disk.
 *
 * <p>With {@code crash_ratio} above 0, a share of records are poison: processing one kills the process at once
 * ({@code crash} line, then {@code Runtime.halt(CRASH_EXIT)}, no clean leave), before anything of its poll is
 * committed, as an application that crashes on a record does. Which records are poison is decided by the value's
 * CRC-32 alone, so every incarnation of every member dies on the same ones; the harness starts a crashed member again.
 *
 * <p>{@code Driver share-offsets CONFIG} prints the group's state as its coordinators answer instead (one JSON
 * object): {@code offsets}, "topic:partition" -> {"start", "lag"}, the share-partition start offsets the harness
 * reads after healing, and {@code assigned}, the "topic:partition"s the group coordinator has given a member (none
 * before the partition's share state is initialized), which the harness waits for before its workload.
 */
final class ShareMember {
  static final int CRASH_EXIT = 3; // share_groups.py's CRASH_EXIT: died on a poison record
  private static JsonLines out;

  private final JsonNode cfg;
  private final String group;
  private final String topic;
  private final boolean explicit;
  private final double releaseRatio;
  private final double rejectRatio;
  private final double crashRatio;
  private final Random random;
  private volatile boolean stopping;
  private volatile boolean freezing;

  ShareMember(JsonNode cfg) throws Exception {
    this.cfg = cfg;
    this.group = cfg.get("group").asText();
    this.topic = cfg.get("topic").asText();
    this.explicit = cfg.get("acknowledge").asText().equals("explicit");
    this.releaseRatio = cfg.get("release_ratio").asDouble();
    this.rejectRatio = cfg.get("reject_ratio").asDouble();
    this.crashRatio = cfg.has("crash_ratio") ? cfg.get("crash_ratio").asDouble() : 0.0;
    this.random = new Random(cfg.get("seed").asLong());
    out = new JsonLines(Path.of(cfg.get("out").asText()));
  }

  /** The group's configuration (share.auto.offset.reset, share.isolation.level), set before it subscribes. */
  private void configureGroup(Properties props) throws Exception {
    Properties admin = new Properties();
    admin.put("bootstrap.servers", props.getProperty("bootstrap.servers"));
    List<AlterConfigOp> ops = new ArrayList<>();
    for (Map.Entry<String, JsonNode> e : iterable(cfg.get("group_config"))) {
      ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue().asText()), AlterConfigOp.OpType.SET));
    }
    try (Admin a = Admin.create(admin)) {
      a.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
    }
  }

  void run() throws Exception {
    Properties props = Driver.properties(cfg, "conf");
    props.put("group.id", group);
    props.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());
    if (!cfg.has("configure") || cfg.get("configure").asBoolean()) { // a later incarnation finds it configured
      configureGroup(props);
    }
    Signal.handle(new Signal("USR1"), s -> freezing = true);
    try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
      Driver.onTerm(() -> { // SIGTERM: finish the batch, leave cleanly
        stopping = true;
        consumer.wakeup();
      });
      line(row("t", "started", "ts_ms", System.currentTimeMillis()));
      consumer.subscribe(List.of(topic));
      while (!stopping) {
        ConsumerRecords<String, String> records;
        try {
          records = consumer.poll(Duration.ofMillis(200));
        } catch (org.apache.kafka.common.errors.WakeupException e) {
          break;
        }
        if (records.isEmpty()) {
          continue;
        }
        long ts = System.currentTimeMillis();
        Map<TopicPartition, List<Object[]>> given = new HashMap<>(); // partition -> (offset, value, type)
        for (ConsumerRecord<String, String> r : records) {
          Optional<Short> count = r.deliveryCount();
          line(row("t", "delivery", "topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
              "value", valueOf(r), "delivery_count", count.isPresent() ? (Object) count.get() : null, "ts_ms", ts));
        }
        for (ConsumerRecord<String, String> r : records) {
          String value = valueOf(r);
          if (poison(value)) {
            line(row("t", "crash", "topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                "value", value, "ts_ms", System.currentTimeMillis()));
            Runtime.getRuntime().halt(CRASH_EXIT);
          }
          AcknowledgeType type = explicit ? choose() : AcknowledgeType.ACCEPT;
          if (explicit) {
            consumer.acknowledge(r, type);
          }
          given.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), k -> new ArrayList<>())
              .add(new Object[] {r.offset(), value, type.toString().toLowerCase()});
        }
        if (freezing) { // client_pause: stop here, the poll's records acknowledged but not yet committed
          freezing = false;
          new ProcessBuilder("kill", "-STOP", String.valueOf(ProcessHandle.current().pid())).start().waitFor();
        }
        commit(consumer, given);
      }
    }
  }

  private static String valueOf(ConsumerRecord<String, String> r) {
    return r.value() == null ? "" : r.value();
  }

  /** Whether processing this value kills the member: its CRC-32 below crash_ratio of the range (share_groups.py's
   * ``poison``), the same answer in every process. */
  private boolean poison(String value) {
    CRC32 crc = new CRC32();
    crc.update(value.getBytes(StandardCharsets.UTF_8));
    return crc.getValue() < crashRatio * 4294967296.0;
  }

  private AcknowledgeType choose() {
    double x = random.nextDouble();
    if (x < rejectRatio) {
      return AcknowledgeType.REJECT;
    }
    return x < rejectRatio + releaseRatio ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
  }

  /** commitSync, then each record's outcome as its partition's entry in the answer says. */
  private void commit(KafkaShareConsumer<String, String> consumer, Map<TopicPartition, List<Object[]>> given) {
    Map<TopicPartition, String> outcome = new HashMap<>();
    Map<TopicPartition, String> error = new HashMap<>();
    try {
      Map<TopicIdPartition, Optional<KafkaException>> answer = consumer.commitSync(Duration.ofSeconds(30));
      for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : answer.entrySet()) {
        TopicPartition tp = e.getKey().topicPartition();
        outcome.put(tp, e.getValue().isPresent() ? "error" : "ok");
        e.getValue().ifPresent(x -> error.put(tp, x.getClass().getSimpleName() + ": " + x.getMessage()));
      }
    } catch (org.apache.kafka.common.errors.WakeupException e) {
      stopping = true; // SIGTERM during the commit: its outcome is not known
    } catch (KafkaException e) {
      for (TopicPartition tp : given.keySet()) {
        error.put(tp, e.getClass().getSimpleName() + ": " + e.getMessage());
      }
    }
    long ts = System.currentTimeMillis();
    for (Map.Entry<TopicPartition, List<Object[]>> e : given.entrySet()) {
      String o = outcome.getOrDefault(e.getKey(), "unknown");
      for (Object[] rec : e.getValue()) {
        line(row("t", "ack", "topic", e.getKey().topic(), "partition", e.getKey().partition(), "offset", rec[0],
            "value", rec[1], "type", rec[2], "outcome", o, "error", error.get(e.getKey()), "ts_ms", ts));
      }
    }
  }

  /** The group's share-partition start offsets and assigned partitions, printed as one JSON object on stdout. */
  static void printStartOffsets(JsonNode cfg) throws Exception {
    Properties admin = new Properties();
    admin.put("bootstrap.servers", cfg.get("bootstrap").asText());
    String group = cfg.get("group").asText();
    Map<String, Object> found = new LinkedHashMap<>();
    List<String> assigned = new ArrayList<>();
    try (Admin a = Admin.create(admin)) {
      Map<TopicPartition, ?> offsets = a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
          .all().get().get(group);
      for (Map.Entry<TopicPartition, ?> e : offsets.entrySet()) {
        if (e.getValue() != null) {
          found.put(e.getKey().topic() + ":" + e.getKey().partition(), describe(e.getValue()));
        }
      }
      for (ShareMemberDescription m : a.describeShareGroups(List.of(group)).all().get().get(group).members()) {
        for (TopicPartition tp : m.assignment().topicPartitions()) {
          assigned.add(tp.topic() + ":" + tp.partition());
        }
      }
    }
    Driver.say(Map.of("offsets", found, "assigned", assigned));
  }

  /** One partition's start offset (and lag, where the client has it): OffsetAndMetadata on 4.1, later
   * SharePartitionOffsetInfo. */
  private static Map<String, Object> describe(Object info) throws Exception {
    Map<String, Object> m = new LinkedHashMap<>();
    try {
      m.put("start", info.getClass().getMethod("startOffset").invoke(info));
      Object lag = info.getClass().getMethod("lag").invoke(info);
      m.put("lag", lag instanceof Optional<?> o ? o.orElse(null) : null);
    } catch (NoSuchMethodException e) {
      m.put("start", info.getClass().getMethod("offset").invoke(info));
      m.put("lag", null);
    }
    return m;
  }

  static void line(Map<String, Object> row) {
    out.line(row);
  }

  private static Map<String, Object> row(Object... kv) {
    return JsonLines.row(kv);
  }

  private static Iterable<Map.Entry<String, JsonNode>> iterable(JsonNode node) {
    List<Map.Entry<String, JsonNode>> l = new ArrayList<>();
    node.fields().forEachRemaining(l::add);
    return l;
  }

}
