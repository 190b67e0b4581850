package kchaos;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;

/**
 * The high watermark (the last stable offset under read_committed) a consumer knew when a poll returned a
 * partition's records: its position after the poll plus its lag ({@code currentLag}, KIP-695; on clients before
 * 3.0, which lack it, the fetch manager's {@code records-lag} metric, the same figure). Null when the client
 * knows no lag yet.
 */
final class HighWatermark {
  private static final Method CURRENT_LAG = currentLag();

  private HighWatermark() {}

  private static Method currentLag() {
    try {
      return KafkaConsumer.class.getMethod("currentLag", TopicPartition.class);
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  static Long of(KafkaConsumer<?, ?> c, TopicPartition tp) throws Exception {
    long position = c.position(tp);
    if (CURRENT_LAG != null) {
      OptionalLong lag = (OptionalLong) CURRENT_LAG.invoke(c, tp);
      return lag.isPresent() ? position + lag.getAsLong() : null;
    }
    for (Map.Entry<MetricName, ? extends Metric> e : c.metrics().entrySet()) {
      MetricName m = e.getKey();
      if (m.name().equals("records-lag") && m.group().equals("consumer-fetch-manager-metrics")
          && tp.topic().equals(m.tags().get("topic"))
          && String.valueOf(tp.partition()).equals(m.tags().get("partition"))) {
        double lag = (Double) e.getValue().metricValue();
        return Double.isNaN(lag) ? null : position + (long) lag;
      }
    }
    return null;
  }
}
