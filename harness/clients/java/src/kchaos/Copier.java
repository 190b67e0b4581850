package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Consume-transform-produce with exactly-once semantics, as the librdkafka driver's Copier does
 * (harness/transactions.py): reads the input topic (read_committed, in the config's group), writes one copy of each
 * record to the output topic (the same partition number modulo the output's partitions) and commits the group's
 * offsets in the same transaction ({@code sendOffsetsToTransaction}). After an abort it rewinds to the committed
 * offsets, and its reads go on under a new reader name ({@code NAME-in1.2}). A {@code kill} command makes the
 * member and its producer die mid-transaction (the member is abandoned without leaving) and new ones take over.
 */
final class Copier {
  private final JsonNode cfg;
  private final String name;
  private final String group;
  private final String input;
  private final String output;
  private final int outPartitions;
  private final TxnLog log;
  private final List<KafkaConsumer<String, String>> dead = new ArrayList<>();
  private volatile boolean stopping;
  private int generation;
  private int rewinds;

  Copier(JsonNode cfg) {
    this.cfg = cfg;
    this.name = cfg.get("name").asText();
    this.group = cfg.get("group").asText();
    this.input = cfg.get("input_topic").asText();
    this.output = cfg.get("output_topic").asText();
    this.outPartitions = cfg.get("output_partitions").asInt();
    this.log = new TxnLog(name);
  }

  void run() throws Exception {
    BlockingQueue<String> commands = Driver.commands(() -> stopping = true);
    TxnClient c = new TxnClient(name, Driver.properties(cfg), cfg.get("transaction_timeout_ms").asLong());
    KafkaConsumer<String, String> consumer = null;
    int instance = 1;
    try {
      c.fresh();
      consumer = member();
      Driver.awaitGo();
      while (!stopping) {
        if ("kill".equals(commands.poll())) {
          dead.add(consumer);
          c.retire();
          consumer = member();
          instance++;
          c.fresh();
        }
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
        if (!records.isEmpty()) {
          copy(c, consumer, records, name + "-in" + instance + (rewinds > 0 ? "." + (rewinds + 1) : ""));
        }
      }
      c.close();
    } finally {
      if (consumer != null) {
        consumer.close(Duration.ofSeconds(5));
      }
      c.retire();
      log.write(Path.of(cfg.get("history").asText()));
    }
    Driver.say(Map.of("t", "done", "sent", log.sent(), "read", log.reads()));
  }

  private KafkaConsumer<String, String> member() {
    Properties props = Driver.properties(cfg, "consumer_properties");
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
    consumer.subscribe(List.of(input), new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> parts) {}

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> parts) {
        generation++;
      }
    });
    return consumer;
  }

  private void copy(TxnClient c, KafkaConsumer<String, String> consumer, ConsumerRecords<String, String> records,
      String reader) throws Exception {
    Map<String, Object> row = log.begin();
    String txn = (String) row.get("txn");
    try {
      c.p.beginTransaction();
      long ts = System.currentTimeMillis();
      for (TopicPartition tp : records.partitions()) {
        Long hw = HighWatermark.of(consumer, tp);
        for (ConsumerRecord<String, String> r : records.records(tp)) {
          String value = r.value() == null ? "" : r.value();
          read(reader, r, value, ts, hw);
          int part = r.partition() % outPartitions;
          String copy = name + "-" + log.sent();
          c.p.send(new ProducerRecord<>(output, part, null, copy), log.send(copy, output, part, txn, value, () -> {}));
        }
      }
      Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
      for (TopicPartition tp : consumer.assignment()) {
        positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
      }
      c.p.sendOffsetsToTransaction(positions, consumer.groupMetadata());
      if (c.finish(row, false).equals("committed")) {
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : positions.entrySet()) {
          Map<String, Object> o = new LinkedHashMap<>();
          o.put("group", group);
          o.put("topic", e.getKey().topic());
          o.put("partition", e.getKey().partition());
          o.put("offset", e.getValue().offset());
          o.put("ts_ms", row.get("end_ts_ms"));
          o.put("phase", "live");
          log.offset(o);
        }
        return;
      }
    } catch (KafkaException | IllegalStateException e) {
      c.fail(row, e);
    }
    rewind(consumer);
  }

  private void read(String reader, ConsumerRecord<String, String> r, String value, long ts, Long hw) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("consumer", reader);
    row.put("seq", log.reads());
    row.put("topic", r.topic());
    row.put("partition", r.partition());
    row.put("offset", r.offset());
    row.put("value", value);
    row.put("poll_ts_ms", ts);
    row.put("hw", hw);
    row.put("phase", "live");
    row.put("isolation", "read_committed");
    row.put("group", group);
    row.put("generation", generation);
    log.read(row);
  }

  /**
   * After an abort: back to the group's committed offsets, so nothing read in the aborted transaction is skipped.
   * The reads after it go under a new reader name: the application moved the position back itself, which
   * nonmonotonic_poll (a client returning records out of order on its own) must not count.
   */
  private void rewind(KafkaConsumer<String, String> consumer) {
    Set<TopicPartition> parts = consumer.assignment();
    if (parts.isEmpty()) {
      return;
    }
    rewinds++;
    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(parts);
    for (TopicPartition tp : parts) {
      OffsetAndMetadata at = committed.get(tp);
      consumer.seek(tp, at == null ? 0 : at.offset());
    }
  }
}
