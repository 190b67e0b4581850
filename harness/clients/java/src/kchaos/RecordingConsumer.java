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
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
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
 * with no string or list made per record and nothing a poll's records share repeated: the consumer is measured
 * against Kafka's own kafka-consumer-perf-test (benchmarks/consumer.py).
 */
final class RecordingConsumer {
  private final JsonNode cfg;
  private final String topic;
  private final int partitions;
  private static final byte[] EMPTY = new byte[0];
  private volatile boolean stopping;

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
    long n = 0;
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(props);
         JsonGenerator w = Driver.JSON.getFactory().createGenerator(
             new BufferedOutputStream(Files.newOutputStream(Path.of(cfg.get("history").asText())), 1 << 16),
             JsonEncoding.UTF8)) {
      w.setRootValueSeparator(new SerializedString("\n"));
      c.assign(parts);
      c.seekToBeginning(parts);
      Driver.awaitGo();
      while (!stopping) {
        ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(200));
        long ts = System.currentTimeMillis();
        for (TopicPartition tp : records.partitions()) {
          Long hw = HighWatermark.of(c, tp);
          w.writeStartObject();
          w.writeNumberField("p", tp.partition());
          w.writeNumberField("ts", ts);
          if (hw == null) {
            w.writeNullField("hw");
          } else {
            w.writeNumberField("hw", hw);
          }
          w.writeEndObject();
          for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
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
    Driver.say(Map.of("t", "done", "read", n));
  }
}
