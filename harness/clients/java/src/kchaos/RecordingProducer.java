package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends payload ids {@code NAME-SEQ} round-robin over the partitions at the config's rate (or one record per
 * {@code send P} command when quiet), and records per send: its partition, when it was handed to the client,
 * and what its callback said and when. The history file gets one JSON array per send after the workload:
 * {@code [seq, partition, send_ts_ms, ack_ts_ms, offset, error]}, with nulls for a send whose callback never
 * came; {@code error} is the exception's class name and message, for the harness to classify.
 */
final class RecordingProducer {
  private static final int CHUNK = 1 << 16;
  private static final double UNLIMITED_RATE = 1e6;

  private final JsonNode cfg;
  private final String name;
  private final String topic;
  private final int partitions;
  private final double rate;
  private final Sends sends = new Sends();
  private final AtomicLong acked = new AtomicLong();
  private volatile boolean stopping;
  private long sendingMs;

  RecordingProducer(JsonNode cfg) {
    this.cfg = cfg;
    this.name = cfg.get("name").asText();
    this.topic = cfg.get("topic").asText();
    this.partitions = cfg.get("partitions").asInt();
    this.rate = cfg.get("rate").asDouble();
  }

  void run() throws Exception {
    Properties props = Driver.properties(cfg);
    props.put("key.serializer", StringSerializer.class.getName());
    props.put("value.serializer", StringSerializer.class.getName());
    BlockingQueue<String> steps = Driver.commands(() -> stopping = true);
    Thread progress = Driver.progress(sends::count, acked::get);
    try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
      p.partitionsFor(topic); // metadata and a connection before the workload: the first send does not wait
      Driver.awaitGo();
      long t0 = System.nanoTime();
      if (cfg.get("quiet").asBoolean()) {
        quiet(p, steps);
      } else {
        paced(p);
      }
      p.flush(); // every send's callback has run: delivery.timeout.ms bounds each
      sendingMs = (System.nanoTime() - t0) / 1_000_000;
    } finally {
      progress.interrupt();
      writeHistory();
    }
    Driver.say(Map.of("t", "done", "sent", sends.count(), "acked", acked.get(), "sending_ms", sendingMs));
  }

  private void paced(KafkaProducer<String, String> p) throws InterruptedException {
    boolean unlimited = rate >= UNLIMITED_RATE;
    long t0 = System.nanoTime();
    long base = 0;
    long seq = 0;
    while (!stopping) {
      long due = unlimited ? 1000 : base + (long) ((System.nanoTime() - t0) / 1e9 * rate) - seq;
      if (!unlimited && due > rate) { // fell behind by over a second (paused by a fault): do not burst
        t0 = System.nanoTime();
        base = seq;
        due = 1;
      }
      if (due <= 0) {
        long waitNs = (long) ((seq + 1 - base) / rate * 1e9) - (System.nanoTime() - t0);
        TimeUnit.NANOSECONDS.sleep(Math.max(0, Math.min(waitNs, 100_000_000L)));
        continue;
      }
      for (long i = 0; i < due && !stopping; i++) {
        send(p, seq, (int) (seq % partitions), null);
        seq++;
      }
    }
  }

  private void quiet(KafkaProducer<String, String> p, BlockingQueue<String> steps) throws InterruptedException {
    long seq = 0;
    while (!stopping) {
      String step = steps.poll(50, TimeUnit.MILLISECONDS);
      if (step == null) {
        continue;
      }
      CountDownLatch done = new CountDownLatch(1);
      send(p, seq++, Integer.parseInt(step.substring("send ".length()).trim()), done);
      done.await();
      Driver.say(Map.of("t", "step"));
    }
  }

  private void send(KafkaProducer<String, String> p, long seq, int partition, CountDownLatch done) {
    int i = sends.add(TrueClock.nowMs(), partition);
    p.send(new ProducerRecord<>(topic, partition, null, name + "-" + seq), (meta, err) -> {
      sends.report(i, TrueClock.nowMs(), err == null && meta.hasOffset() ? meta.offset() : -1,
          err == null ? null : err.getClass().getSimpleName() + ": " + err.getMessage());
      if (err == null) {
        acked.incrementAndGet();
      }
      if (done != null) {
        done.countDown();
      }
    });
  }

  private void writeHistory() throws Exception {
    try (BufferedWriter w = Files.newBufferedWriter(Path.of(cfg.get("history").asText()), StandardCharsets.UTF_8)) {
      for (int i = 0; i < sends.count(); i++) {
        w.write(Driver.JSON.writeValueAsString(sends.row(i)));
        w.newLine();
      }
    }
  }

  /**
   * Sends in chunks of arrays: the sending thread appends (a chunk is allocated before the send that needs it,
   * so the callback, which happens after its send, always finds it), the client's I/O thread fills in reports.
   */
  private static final class Sends {
    private final long[][] sendTs = new long[1 << 14][];
    private final int[][] partition = new int[1 << 14][];
    private final long[][] ackTs = new long[1 << 14][];
    private final long[][] offset = new long[1 << 14][];
    private final String[][] error = new String[1 << 14][];
    private volatile int count;

    int add(long ts, int part) {
      int i = count;
      int c = i / CHUNK;
      if (sendTs[c] == null) {
        sendTs[c] = new long[CHUNK];
        partition[c] = new int[CHUNK];
        ackTs[c] = new long[CHUNK];
        offset[c] = new long[CHUNK];
        error[c] = new String[CHUNK];
        Arrays.fill(ackTs[c], -1);
        Arrays.fill(offset[c], -1);
      }
      sendTs[c][i % CHUNK] = ts;
      partition[c][i % CHUNK] = part;
      count = i + 1;
      return i;
    }

    void report(int i, long ts, long off, String err) {
      ackTs[i / CHUNK][i % CHUNK] = ts;
      offset[i / CHUNK][i % CHUNK] = off;
      error[i / CHUNK][i % CHUNK] = err;
    }

    int count() {
      return count;
    }

    List<Object> row(int i) {
      int c = i / CHUNK;
      int k = i % CHUNK;
      long ack = ackTs[c][k];
      return Arrays.asList(i, partition[c][k], sendTs[c][k], ack < 0 ? null : ack,
          offset[c][k] < 0 ? null : offset[c][k], error[c][k]);
    }
  }
}
