package kchaos;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Assigned every partition from offset 0, records each record the client returns with the high watermark (the
 * last stable offset under read_committed) the client knew when it returned it ({@link HighWatermark}). The
 * history file gets, as they come, for each partition a poll returned records of, one JSON object
 * {@code {"p": partition, "ts": poll_ts_ms, "hw": hw}}, then one array {@code [offset, value]} per record. Each
 * record is streamed to the file as it is (the value's UTF-8 bytes as they came, escaped where JSON needs it),
 * with no string or list made per record and nothing a poll's records share repeated, by a thread of its own
 * while the polling thread fetches on: the consumer is measured against Kafka's own kafka-consumer-perf-test
 * (benchmarks/consumer.py).
 */
final class RecordingConsumer {
  private final JsonNode cfg;
  private final String topic;
  private final int partitions;
  private static final byte[] EMPTY = new byte[0];
  private volatile boolean stopping;
  private final BlockingQueue<Poll> queue = new ArrayBlockingQueue<>(16);

  RecordingConsumer(JsonNode cfg) {
    this.cfg = cfg;
    this.topic = cfg.get("topic").asText();
    this.partitions = cfg.get("partitions").asInt();
  }

  void run() throws Exception {
    Properties props = new Properties();
    props.put("group.id", "kchaos-" + UUID.randomUUID().toString().substring(0, 8));
    props.put("enable.auto.commit", "false");
    props.put("auto.offset.reset", "earliest");
    props.putAll(Driver.properties(cfg));
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    Driver.commands(() -> stopping = true);
    List<TopicPartition> parts = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      parts.add(new TopicPartition(topic, p));
    }
    long n;
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props)) {
      c.assign(parts);
      c.seekToBeginning(parts);
      FutureTask<Long> writer = new FutureTask<>(this::write);
      Thread t = new Thread(writer, "history-writer");
      t.setDaemon(true);
      t.start();
      Driver.awaitGo();
      while (!stopping && !writer.isDone()) {
        ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(200));
        if (!records.isEmpty()) {
          hand(writer, new Poll(System.currentTimeMillis(), records, watermarks(c, records)));
        }
      }
      hand(writer, END);
      n = writer.get();
    }
    Driver.say(Map.of("t", "done", "read", n));
  }

  /** What one poll returned, with each partition's high watermark when it returned it. */
  private record Poll(long ts, ConsumerRecords<byte[], byte[]> records, Map<TopicPartition, Long> hws) {}

  private static final Poll END = new Poll(0, ConsumerRecords.empty(), Map.of());

  /**
   * The high watermark of each partition a poll returned records of, read on the polling thread (a consumer is
   * not safe to share).
   */
  private static Map<TopicPartition, Long> watermarks(KafkaConsumer<?, ?> c, ConsumerRecords<?, ?> records)
      throws Exception {
    Map<TopicPartition, Long> hws = new HashMap<>();
    for (TopicPartition tp : records.partitions()) {
      hws.put(tp, HighWatermark.of(c, tp));
    }
    return hws;
  }

  /** Queues a poll for the writer, giving up if the writer has ended (its failure is get()'s). */
  private void hand(FutureTask<Long> writer, Poll poll) throws InterruptedException {
    while (!queue.offer(poll, 100, TimeUnit.MILLISECONDS)) {
      if (writer.isDone()) {
        return;
      }
    }
  }

  /**
   * Writes each queued poll to the history until END, on its own thread so that the polling thread does what
   * kafka-consumer-perf-test's does and no more: the history's encoding overlaps the next fetch. Returns the
   * records written.
   */
  private long write() throws Exception {
    long n = 0;
    try (JsonGenerator w = Driver.JSON.getFactory().createGenerator(
        new BufferedOutputStream(Files.newOutputStream(Path.of(cfg.get("history").asText())), 1 << 16),
        JsonEncoding.UTF8)) {
      w.setRootValueSeparator(new SerializedString("\n"));
      for (Poll poll = queue.take(); poll != END; poll = queue.take()) {
        for (TopicPartition tp : poll.records().partitions()) {
          Long hw = poll.hws().get(tp);
          w.writeStartObject();
          w.writeNumberField("p", tp.partition());
          w.writeNumberField("ts", poll.ts());
          if (hw == null) {
            w.writeNullField("hw");
          } else {
            w.writeNumberField("hw", hw);
          }
          w.writeEndObject();
          for (ConsumerRecord<byte[], byte[]> r : poll.records().records(tp)) {
            byte[] v = r.value() == null ? EMPTY : r.value();
            w.writeStartArray();
            w.writeNumber(r.offset());
            w.writeUTF8String(v, 0, v.length);
            w.writeEndArray();
            n++;
          }
        }
      }
    }
    return n;
  }
}
