package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintStream;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The property names this version of the client library takes, for validating a scenario's config tables. */
final class ConfigNames {
  private ConfigNames() {}

  static void print(PrintStream out) throws Exception {
    out.println(Driver.JSON.writeValueAsString(Map.of(
        "producer", new TreeSet<>(ProducerConfig.configNames()),
        "consumer", new TreeSet<>(ConsumerConfig.configNames()))));
  }

  /** Whether the client library takes the config's properties (types and values), connecting nowhere. */
  static void check(String kind, JsonNode cfg) {
    Properties p = Driver.properties(cfg);
    p.put("bootstrap.servers", "127.0.0.1:9");
    try {
      if (kind.equals("producer")) {
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        new ProducerConfig(p);
      } else {
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        new ConsumerConfig(p);
      }
    } catch (ConfigException e) {
      System.out.println(e.getMessage());
      System.exit(2);
    }
  }
}
