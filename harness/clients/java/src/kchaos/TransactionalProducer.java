package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;

/**
 * Writes {@code txn_records} records per transaction, in equal runs over the topic's partitions, at the config's
 * rate, as the librdkafka driver's TransactionalProducer does (harness/transactions.py); a seeded share of the
 * transactions is aborted after their records went out (it waits up to a second for their callbacks first, so on
 * a healthy cluster they are in the log, aborted). A {@code kill} command makes the instance die mid-transaction
 * and a new one take over: the client_kill fault. History: TxnLog's.
 */
final class TransactionalProducer {
  private static final long ABORT_FLUSH_MS = 1000;

  private final JsonNode cfg;
  private final String name;
  private final String topic;
  private final int partitions;
  private final double rate;
  private final int txnRecords;
  private final double abortRatio;
  private final Random rng;
  private final TxnLog log;
  private final AtomicInteger pending = new AtomicInteger();
  private volatile boolean stopping;

  TransactionalProducer(JsonNode cfg) {
    this.cfg = cfg;
    this.name = cfg.get("name").asText();
    this.topic = cfg.get("topic").asText();
    this.partitions = cfg.get("partitions").asInt();
    this.rate = cfg.get("rate").asDouble();
    this.txnRecords = cfg.get("txn_records").asInt();
    this.abortRatio = cfg.get("abort_ratio").asDouble();
    this.rng = new Random((cfg.get("seed").asText() + ":" + name).hashCode());
    this.log = new TxnLog(name);
  }

  void run() throws Exception {
    BlockingQueue<String> commands = Driver.commands(() -> stopping = true);
    TxnClient c = new TxnClient(name, Driver.properties(cfg), cfg.get("transaction_timeout_ms").asLong());
    Thread progress = Driver.progress(log::sent, log.acked::get);
    try {
      c.fresh();
      c.p.partitionsFor(topic);
      Driver.awaitGo();
      paced(c, commands);
      c.close();
    } finally {
      progress.interrupt();
      c.retire();
      log.write(Path.of(cfg.get("history").asText()));
    }
    Driver.say(Map.of("t", "done", "sent", log.sent(), "acked", log.acked.get()));
  }

  private void paced(TxnClient c, BlockingQueue<String> commands) throws InterruptedException {
    long t0 = System.nanoTime();
    long k = 0;
    long seq = 0;
    int part = 0;
    while (!stopping) {
      double due = (t0 + k * txnRecords / rate * 1e9 - System.nanoTime()) / 1e9;
      if (due > 0) {
        TimeUnit.MILLISECONDS.sleep((long) Math.ceil(Math.min(due, 0.1) * 1000));
        continue;
      }
      if (due < -1) { // fell behind (paused by a fault): start again from now, no burst
        t0 = System.nanoTime();
        k = 0;
      }
      k++;
      Map<String, Object> row = log.begin();
      String txn = (String) row.get("txn");
      try {
        c.p.beginTransaction();
        for (int chunk : spread(txnRecords, partitions)) {
          for (int i = 0; i < chunk; i++) {
            pending.incrementAndGet();
            c.p.send(new ProducerRecord<>(topic, part, null, name + "-" + seq),
                log.send(name + "-" + seq, topic, part, txn, null, pending::decrementAndGet));
            seq++;
          }
          part = (part + 1) % partitions;
        }
        if ("kill".equals(commands.poll())) { // dies mid-transaction; a new instance fences it
          row.put("end_ts_ms", System.currentTimeMillis());
          c.fresh();
          continue;
        }
        end(c, row);
      } catch (KafkaException | IllegalStateException e) {
        c.fail(row, e);
      }
    }
  }

  /** Commit, or (a seeded share) abort once the transaction's callbacks came or a second passed. */
  private void end(TxnClient c, Map<String, Object> row) throws InterruptedException {
    boolean abort = rng.nextDouble() < abortRatio;
    if (abort) {
      long deadline = System.currentTimeMillis() + ABORT_FLUSH_MS;
      while (pending.get() > 0 && System.currentTimeMillis() < deadline) {
        TimeUnit.MILLISECONDS.sleep(5);
      }
    }
    c.finish(row, abort);
  }

  /** {@code n} records as runs for consecutive partitions: equal runs, the remainder one by one. */
  static int[] spread(int n, int parts) {
    if (n < parts) {
      int[] ones = new int[n];
      java.util.Arrays.fill(ones, 1);
      return ones;
    }
    int[] runs = new int[parts];
    for (int i = 0; i < parts; i++) {
      runs[i] = n / parts + (i < n % parts ? 1 : 0);
    }
    return runs;
  }
}
