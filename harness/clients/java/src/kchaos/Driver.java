package kchaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.LongSupplier;

/**
 * kchaos's driver for Apache Kafka's Java client: one process per client, as docs/drivers.md says.
 *
 * <p>{@code java -cp ... kchaos.Driver ROLE CONFIG.json}: the role is {@code producer}, {@code consumer},
 * {@code member} (a consumer group's, GroupMember.java), {@code txn-producer} (TransactionalProducer.java),
 * {@code copier} (Copier.java), {@code share-member} or {@code share-offsets} (ShareMember.java)
 * ({@code config-names} prints the property names the client library takes; {@code check KIND CONFIG.json}
 * exits 2 with the library's words when it refuses the config's properties). The process reads commands on
 * stdin ({@code stop}; {@code send P} for a quiet producer's step; {@code kill} for a transactional client's
 * client_kill), writes JSON lines of what is happening on
 * stdout, and its history to the file the config names; the client library logs to stderr.
 */
public final class Driver {
  static final ObjectMapper JSON = new ObjectMapper();
  private static final CountDownLatch GO = new CountDownLatch(1);
  private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

  private Driver() {}

  public static void main(String[] args) throws Exception {
    TrueClock.nowMs(); // its base taken now, before any fault can move this process's wall clock
    switch (args[0]) {
      case "config-names" -> ConfigNames.print(OUT);
      case "check" -> ConfigNames.check(args[1], config(args[2]));
      case "producer" -> new RecordingProducer(config(args[1])).run();
      case "consumer" -> new RecordingConsumer(config(args[1])).run();
      case "member" -> new GroupMember(config(args[1])).run();
      case "txn-producer" -> new TransactionalProducer(config(args[1])).run();
      case "copier" -> new Copier(config(args[1])).run();
      case "share-member", "share-offsets" -> shareRole(args[0], config(args[1]));
      default -> throw new IllegalArgumentException("unknown role " + args[0]
          + " (allowed: producer, consumer, member, txn-producer, copier, share-member, share-offsets, config-names,"
          + " check)");
    }
    OUT.flush();
  }

  /**
   * A share group's member or its offsets (ShareMember.java), compiled only into builds of kafka-clients 4.1 and
   * later, where KafkaShareConsumer exists: reached by name, so the driver of an older client builds without it.
   */
  private static void shareRole(String role, JsonNode cfg) throws Exception {
    Class<?> c;
    try {
      c = Class.forName("kchaos.ShareMember");
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException(role + ": this kafka-clients has no share consumer (4.1 and later have)");
    }
    if (role.equals("share-offsets")) {
      c.getDeclaredMethod("printStartOffsets", JsonNode.class).invoke(null, cfg);
    } else {
      Object member = c.getDeclaredConstructor(JsonNode.class).newInstance(cfg);
      c.getDeclaredMethod("run").invoke(member);
    }
  }

  static JsonNode config(String path) throws Exception {
    return JSON.readTree(Files.readString(Path.of(path)));
  }

  /** The client properties of the config, as the client library takes them. */
  static Properties properties(JsonNode cfg) {
    return properties(cfg, "properties");
  }

  /** The client properties under {@code key} (a group member's config, shared with librdkafka's, says "conf"). */
  static Properties properties(JsonNode cfg, String key) {
    Properties p = new Properties();
    for (Iterator<Map.Entry<String, JsonNode>> it = cfg.get(key).fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      p.put(e.getKey(), e.getValue().asText());
    }
    return p;
  }

  /** One JSON line on stdout (the harness reads them as they come). */
  static void say(Object line) {
    try {
      String text = JSON.writeValueAsString(line);
      synchronized (OUT) {
        OUT.println(text);
        OUT.flush();
      }
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Commands from the harness on stdin: {@code go} (the workload starts: {@link #awaitGo}), {@code stop} (or the
   * end of stdin: the harness is gone) and any other line, queued for the role.
   */
  static BlockingQueue<String> commands(Runnable onStop) {
    BlockingQueue<String> queue = new LinkedBlockingQueue<>();
    Thread t = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        String line;
        while ((line = in.readLine()) != null && !line.equals("stop")) {
          if (line.equals("go")) {
            GO.countDown();
          } else {
            queue.add(line);
          }
        }
      } catch (Exception ignored) {
        // stdin closed: the harness is gone, so stop
      }
      onStop.run();
      GO.countDown();
    }, "commands");
    t.setDaemon(true);
    t.start();
    return queue;
  }

  /** A progress line every 20 ms while the counts move: {@code acked} triggers count them live. */
  static Thread progress(LongSupplier sent, LongSupplier acked) {
    Thread t = new Thread(() -> {
      long lastSent = -1;
      long lastAcked = -1;
      try {
        while (true) {
          long s = sent.getAsLong();
          long a = acked.getAsLong();
          if (s != lastSent || a != lastAcked) {
            say(Map.of("t", "progress", "sent", s, "acked", a));
            lastSent = s;
            lastAcked = a;
          }
          Thread.sleep(20);
        }
      } catch (InterruptedException ignored) {
        // the workload ended
      }
    }, "progress");
    t.setDaemon(true);
    t.start();
    return t;
  }

  /**
   * On SIGTERM: run {@code stop} (which makes the calling thread's loop end), then let that thread finish for up to
   * 30 s before the JVM exits: a member's clean leave, its last acknowledgements or commit included.
   */
  static void onTerm(Runnable stop) {
    Thread main = Thread.currentThread();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      stop.run();
      try {
        main.join(30_000);
      } catch (InterruptedException ignored) {
        // exit now
      }
    }));
  }

  /** Say ready, then wait for {@code go} (or {@code stop}): a run starts its clients' JVMs before its workload. */
  static void awaitGo() throws InterruptedException {
    say(java.util.Map.of("t", "ready"));
    GO.await();
  }
}
