package kchaos;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * One {@code transactional.id} across the producer instances that hold it, with errors handled as KafkaProducer's
 * javadoc says: a commit that times out is retried (up to the transaction timeout); any other error of a commit,
 * or of a call inside the transaction, aborts it; an abort that fails, or a commit that stays open, leaves the
 * outcome "unknown" and a new instance takes over ({@code initTransactions} fences the old one). {@link #retire}
 * is a client_kill: the instance is closed at once, without ending its transaction, and never called again.
 */
final class TxnClient {
  private static final long INIT_DEADLINE_MS = 60_000;

  final String name;
  private final Properties props;
  private final long timeoutMs;
  KafkaProducer<String, String> p;

  TxnClient(String name, Properties props, long timeoutMs) {
    this.name = name;
    this.props = new Properties();
    this.props.putAll(props);
    this.props.put("key.serializer", StringSerializer.class.getName());
    this.props.put("value.serializer", StringSerializer.class.getName());
    this.timeoutMs = timeoutMs;
  }

  /** A new instance with the same transactional.id; its initTransactions fences the previous one. */
  void fresh() {
    retire();
    KafkaProducer<String, String> next = new KafkaProducer<>(props);
    long deadline = System.currentTimeMillis() + INIT_DEADLINE_MS;
    while (true) {
      try {
        next.initTransactions();
        break;
      } catch (RetriableException e) { // a timeout among them: the coordinator was not ready yet
        if (System.currentTimeMillis() > deadline) {
          next.close(Duration.ZERO);
          throw e;
        }
      }
    }
    p = next;
  }

  /** The current instance dies: closed at once, what it still queued failed, its transaction left open. */
  void retire() {
    if (p != null) {
      p.close(Duration.ZERO);
      p = null;
    }
  }

  /** Close the current instance cleanly (the run ended between transactions). */
  void close() {
    if (p != null) {
      p.close(Duration.ofSeconds(10));
      p = null;
    }
  }

  /** Commit or abort the open transaction: the outcome as the contract names it. */
  String finish(Map<String, Object> row, boolean abort) {
    long deadline = System.currentTimeMillis() + timeoutMs;
    if (!abort) {
      row.put("commit_ts_ms", System.currentTimeMillis());
    }
    while (true) {
      try {
        if (abort) {
          p.abortTransaction();
        } else {
          p.commitTransaction();
        }
        return end(row, abort ? "aborted" : "committed");
      } catch (TimeoutException | InterruptException e) {
        if (System.currentTimeMillis() < deadline) {
          continue;
        }
        return replaced(row, e);
      } catch (KafkaException | IllegalStateException e) {
        if (!abort) {
          abort = true;
          continue;
        }
        return replaced(row, e);
      }
    }
  }

  /** A call inside the transaction failed: abort it (a new instance when even that fails). */
  void fail(Map<String, Object> row, RuntimeException e) {
    System.err.println(name + ": transaction " + row.get("txn") + " failed: " + e);
    finish(row, true);
  }

  private String end(Map<String, Object> row, String outcome) {
    row.put("end_ts_ms", System.currentTimeMillis());
    row.put("outcome", outcome);
    return outcome;
  }

  private String replaced(Map<String, Object> row, RuntimeException e) {
    System.err.println(name + ": transaction " + row.get("txn") + " outcome unknown (" + e + "); new instance");
    end(row, "unknown");
    fresh();
    return "unknown";
  }
}
