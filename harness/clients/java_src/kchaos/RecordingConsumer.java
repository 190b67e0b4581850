package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Assigned every partition from offset 0, records each record the client returns with the high watermark (the
 * last stable offset under read_committed) the client knew when it returned it: its position after the poll
 * plus its lag ({@code currentLag}, KIP-695; on clients before 3.0 the fetch manager's {@code records-lag}
 * metric, the same figure). The history file gets one JSON array per record as it comes:
 * {@code [partition, offset, value, poll_ts_ms, hw]}.
 */
final class RecordingConsumer {
  private final JsonNode cfg;
  private final String topic;
  private final int partitions;
  private volatile boolean stopping;
  private Method currentLag;

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
      currentLag = lagMethod();
      c.assign(parts);
      c.seekToBeginning(parts);
      Driver.awaitGo();
      while (!stopping) {
        ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(200));
        long ts = System.currentTimeMillis();
        for (TopicPartition tp : records.partitions()) {
          Long hw = highWatermark(c, tp);
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

  private static Method lagMethod() {
    try {
      return KafkaConsumer.class.getMethod("currentLag", TopicPartition.class);
    } catch (NoSuchMethodException e) {
      return null; // a client before 3.0
    }
  }

  private Long highWatermark(KafkaConsumer<String, String> c, TopicPartition tp) throws Exception {
    long position = c.position(tp);
    if (currentLag != null) {
      OptionalLong lag = (OptionalLong) currentLag.invoke(c, tp);
      return lag.isPresent() ? position + lag.getAsLong() : null;
    }
    for (Map.Entry<MetricName, ? extends Metric> e : c.metrics().entrySet()) {
      MetricName m = e.getKey();
      if (m.name().equals("records-lag") && m.group().equals("consumer-fetch-manager-metrics")
          && topic.equals(m.tags().get("topic")) && String.valueOf(tp.partition()).equals(m.tags().get("partition"))) {
        double lag = (Double) e.getValue().metricValue();
        return Double.isNaN(lag) ? null : position + (long) lag;
      }
    }
    return null;
  }
}
