package kchaos;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.Callback;

/**
 * What one transactional client records, as the v2 contract's rows: its sends (produced.parquet's columns, the
 * transaction and, for a copy, its source among them), its transactions (txns.parquet's), and for the copier its
 * reads and the offsets its committed transactions carried. Written after the workload as JSON lines, each one
 * object under its kind: {@code {"send": {...}}}, {@code {"txn": {...}}}, {@code {"read": {...}}},
 * {@code {"offset": {...}}}. A send's callback fills in its row on the client's I/O thread; the rows are written
 * after the client is closed, so every callback has run.
 */
final class TxnLog {
  final String name;
  final AtomicLong acked = new AtomicLong();
  private final List<Map<String, Object>> sends = new ArrayList<>();
  private final List<Map<String, Object>> txns = new ArrayList<>();
  private final List<Map<String, Object>> reads = new ArrayList<>();
  private final List<Map<String, Object>> offsets = new ArrayList<>();

  TxnLog(String name) {
    this.name = name;
  }

  /** A send about to be handed to the client: its row, and the callback that completes it. */
  Callback send(String value, String topic, int partition, String txn, String source, Runnable after) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("value", value);
    row.put("seq", sends.size());
    row.put("topic", topic);
    row.put("partition", partition);
    row.put("send_ts_ms", System.currentTimeMillis());
    row.put("ack_ts_ms", null);
    row.put("offset", null);
    row.put("error", null);
    row.put("txn", txn);
    row.put("source", source);
    synchronized (this) {
      sends.add(row);
    }
    return (meta, err) -> {
      synchronized (row) {
        row.put("ack_ts_ms", System.currentTimeMillis());
        if (err == null) {
          row.put("offset", meta.hasOffset() ? meta.offset() : null);
          acked.incrementAndGet();
        } else {
          row.put("error", err.getClass().getSimpleName() + ": " + err.getMessage());
        }
      }
      after.run();
    };
  }

  synchronized int sent() {
    return sends.size();
  }

  /** A transaction begun: its row, outcome unknown until the client says otherwise. */
  Map<String, Object> begin() {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("txn", name + ":" + txns.size());
    row.put("producer", name);
    row.put("outcome", "unknown");
    row.put("begin_ts_ms", System.currentTimeMillis());
    row.put("commit_ts_ms", null);
    row.put("end_ts_ms", null);
    txns.add(row);
    return row;
  }

  void read(Map<String, Object> row) {
    reads.add(row);
  }

  void offset(Map<String, Object> row) {
    offsets.add(row);
  }

  int reads() {
    return reads.size();
  }

  void write(Path path) throws Exception {
    try (BufferedWriter w = Files.newBufferedWriter(path, StandardCharsets.UTF_8)) {
      write(w, "send", sends);
      write(w, "txn", txns);
      write(w, "read", reads);
      write(w, "offset", offsets);
    }
  }

  private static void write(BufferedWriter w, String kind, List<Map<String, Object>> rows) throws Exception {
    for (Map<String, Object> row : rows) {
      synchronized (row) {
        w.write(Driver.JSON.writeValueAsString(Map.of(kind, row)));
      }
      w.newLine();
    }
  }
}
