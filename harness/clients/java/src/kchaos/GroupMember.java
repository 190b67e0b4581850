package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import sun.misc.Signal;

/**
 * One consumer-group member, as harness/group_member.py is for librdkafka and with the same lines: the harness
 * (groups.py) starts it with a config file, acts on it with signals (SIGTERM: leave cleanly, its last commit
 * included; SIGUSR1: freeze between calls, after a batch and before its commit; SIGKILL) and reads the JSON lines
 * it appends to the config's {@code out} file: {@code started}, {@code read}, {@code commit}, {@code commit_failed}
 * and {@code rebalance}. {@code commitAsync} is the Java client's: sent in call order, never retried.
 *
 * <p>A {@code commit} line is one acknowledged offset. A synchronous or asynchronous commit's lines come from its own
 * completion (commitSync's return, commitAsync's callback) and carry the commit's {@code call} number: the client
 * completes responses on two threads (the polling thread and the heartbeat thread both fire completed requests), so
 * two commits answered in one order can be reported in the other, and the harness takes a member's acknowledgements
 * in call order (docs/drivers.md). Auto-commits have no call of the member's: their lines come from the client's
 * interceptor ({@code onCommit}), without a number.
 */
final class GroupMember implements ConsumerRebalanceListener {
  private static JsonLines out;

  private final JsonNode cfg;
  private final String commit;
  private final String consumerName;
  private final String isolation;
  private final String group;
  private final KafkaConsumer<String, String> consumer;
  private final java.util.Set<Integer> returnedFrom = new java.util.HashSet<>();
  private String reader;
  private int generation;
  private long seq;
  private long uncommitted;
  private long calls; // sync and async commits made
  private long lastCommit = System.nanoTime();
  private volatile boolean stopping;
  private volatile boolean freezing;

  GroupMember(JsonNode cfg) throws Exception {
    this.cfg = cfg;
    this.commit = cfg.get("commit").asText();
    this.consumerName = cfg.get("consumer").asText();
    this.reader = consumerName;
    Properties props = Driver.properties(cfg, "conf");
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());
    props.put(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG, Acknowledged.class.getName());
    this.isolation = props.getProperty("isolation.level");
    this.group = props.getProperty("group.id");
    out = new JsonLines(Path.of(cfg.get("out").asText()));
    this.consumer = new KafkaConsumer<>(props);
  }

  static void line(Map<String, Object> row) {
    out.line(row);
  }

  private static Map<String, Object> row(Object... kv) {
    return JsonLines.row(kv);
  }

  private static List<Integer> parts(Collection<TopicPartition> tps) {
    List<Integer> l = new ArrayList<>();
    for (TopicPartition tp : tps) {
      l.add(tp.partition());
    }
    l.sort(null);
    return l;
  }

  @Override
  public void onPartitionsAssigned(Collection<TopicPartition> tps) {
    generation++;
    for (TopicPartition tp : tps) {
      if (returnedFrom.contains(tp.partition())) { // read again from the group's committed offset: a new reader
        reader = consumerName + "/" + generation;
        break;
      }
    }
    line(row("t", "rebalance", "kind", "assign", "partitions", parts(tps), "generation", generation,
        "ts_ms", System.currentTimeMillis()));
  }

  @Override
  public void onPartitionsRevoked(Collection<TopicPartition> tps) {
    if (!commit.equals("auto")) { // what was processed is committed before the partitions go
      commitSync();
    }
    line(row("t", "rebalance", "kind", "revoke", "partitions", parts(tps), "generation", generation,
        "ts_ms", System.currentTimeMillis()));
  }

  @Override
  public void onPartitionsLost(Collection<TopicPartition> tps) {
    line(row("t", "rebalance", "kind", "lost", "partitions", parts(tps), "generation", generation,
        "ts_ms", System.currentTimeMillis()));
  }

  private void failed(Exception e) {
    line(row("t", "commit_failed", "error", e.getClass().getSimpleName() + ": " + e.getMessage(),
        "generation", generation, "ts_ms", System.currentTimeMillis()));
  }

  /** What commitSync() and commitAsync() without offsets commit: the position of each assigned partition that has one. */
  private Map<TopicPartition, OffsetAndMetadata> positions() {
    Map<TopicPartition, OffsetAndMetadata> at = new LinkedHashMap<>();
    for (TopicPartition tp : consumer.assignment()) {
      try {
        at.put(tp, new OffsetAndMetadata(consumer.position(tp, Duration.ZERO)));
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        // no position yet: not consumed from, so not committed
      }
    }
    return at;
  }

  private static void acknowledged(long call, Map<TopicPartition, OffsetAndMetadata> offsets) {
    long ts = System.currentTimeMillis();
    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
      line(row("t", "commit", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
          "offset", e.getValue().offset(), "ts_ms", ts, "call", call));
    }
  }

  private void commitSync() {
    Map<TopicPartition, OffsetAndMetadata> offsets = positions();
    long call = calls++;
    try {
      if (!offsets.isEmpty()) {
        consumer.commitSync(offsets);
        acknowledged(call, offsets);
      }
    } catch (Exception e) {
      failed(e);
    }
    uncommitted = 0;
    lastCommit = System.nanoTime();
  }

  private void maybeCommit() {
    if (commit.equals("auto") || uncommitted == 0) {
      return;
    }
    if (uncommitted < cfg.get("every_records").asLong()
        && System.nanoTime() - lastCommit < cfg.get("every_ms").asLong() * 1_000_000L) {
      return;
    }
    if (commit.equals("sync")) {
      commitSync();
      return;
    }
    long call = calls++;
    consumer.commitAsync(positions(), (offsets, e) -> {
      if (e != null) {
        failed(e);
      } else {
        acknowledged(call, offsets);
      }
    });
    uncommitted = 0;
    lastCommit = System.nanoTime();
  }

  void run() throws Exception {
    String topic = cfg.get("topic").asText();
    Signal.handle(new Signal("USR1"), s -> freezing = true);
    Driver.onTerm(() -> { // SIGTERM: leave cleanly, then exit
      stopping = true;
      consumer.wakeup();
    });
    line(row("t", "started", "ts_ms", System.currentTimeMillis()));
    consumer.subscribe(List.of(topic), this);
    while (!stopping) {
      ConsumerRecords<String, String> records;
      try {
        records = consumer.poll(Duration.ofMillis(200));
      } catch (org.apache.kafka.common.errors.WakeupException e) {
        break;
      }
      long ts = System.currentTimeMillis();
      for (TopicPartition tp : records.partitions()) {
        Long hw = HighWatermark.of(consumer, tp);
        for (ConsumerRecord<String, String> r : records.records(tp)) {
          line(row("t", "read", "consumer", reader, "seq", seq++, "topic", r.topic(), "partition", r.partition(),
              "offset", r.offset(), "value", r.value() == null ? "" : r.value(), "poll_ts_ms", ts, "hw", hw,
              "phase", "live", "isolation", isolation, "group", group, "generation", generation));
          returnedFrom.add(r.partition());
          uncommitted++;
        }
      }
      if (freezing) { // client_pause: stop here, records processed and not yet committed
        freezing = false;
        new ProcessBuilder("kill", "-STOP", String.valueOf(ProcessHandle.current().pid())).start().waitFor();
      }
      maybeCommit(); // after a freeze: the zombie's commit, sent with what it last knew
    }
    if (!commit.equals("auto")) {
      commitSync();
    }
    consumer.close(); // a clean leave (auto-commit commits on close)
  }

  /** The client's own word that offsets were auto-committed (a member that commits itself records its commits). */
  public static final class Acknowledged implements ConsumerInterceptor<String, String> {
    private boolean auto;

    @Override
    public ConsumerRecords<String, String> onConsume(ConsumerRecords<String, String> records) {
      return records;
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
      if (!auto) {
        return;
      }
      long ts = System.currentTimeMillis();
      for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
        line(row("t", "commit", "topic", e.getKey().topic(), "partition", e.getKey().partition(),
            "offset", e.getValue().offset(), "ts_ms", ts));
      }
    }

    @Override
    public void close() {}

    @Override
    public void configure(Map<String, ?> configs) {
      auto = Boolean.parseBoolean(String.valueOf(configs.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG)));
    }
  }
}
