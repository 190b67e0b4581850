package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Assigned every partition from offset 0, records each record the client returns with the high watermark (the
 * last stable offset under read_committed) the client knew when it returned it ({@link HighWatermark}). The
 * history file gets one JSON array per record as it comes:
 * {@code [partition, offset, value, poll_ts_ms, hw]}.
 */
final class RecordingConsumer {
  private final JsonNode cfg;
  private final String topic;
  private final int partitions;
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
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());
    Driver.commands(() -> stopping = true);
    List<TopicPartition> parts = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      parts.add(new TopicPartition(topic, p));
    }
    long n = 0;
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props);
         BufferedWriter w = Files.newBufferedWriter(Path.of(cfg.get("history").asText()), StandardCharsets.UTF_8)) {
      c.assign(parts);
      c.seekToBeginning(parts);
      Driver.awaitGo();
      while (!stopping) {
        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
        long ts = System.currentTimeMillis();
        for (TopicPartition tp : records.partitions()) {
          Long hw = HighWatermark.of(c, tp);
          for (ConsumerRecord<String, String> r : records.records(tp)) {
            w.write(Driver.JSON.writeValueAsString(Arrays.asList(tp.partition(), r.offset(),
                r.value() == null ? "" : r.value(), ts, hw)));
            w.newLine();
            n++;
          }
        }
      }
    }
    Driver.say(Map.of("t", "done", "read", n));
  }
}
