package kchaos;

import java.io.IOException;
import java.io.OutputStream;

/**
 * A recording consumer's history lines written by hand into a buffer of bytes: per partition a poll returned
 * records of, {@code {"p":P,"ts":TS,"hw":HW}}, then {@code [OFFSET,"VALUE"]} per record, one a line. The same bytes
 * Jackson's generator writes (the value's UTF-8 bytes as they came, {@code "} and {@code \} escaped with a backslash,
 * control characters as {@code \}{@code u00XX}, or the short escapes Jackson uses for them), held to it by
 * tests/java/HistoryRowsCheck.java. Written by hand because a generator call per field cost the consumer a tenth of
 * its throughput against kafka-consumer-perf-test (benchmarks/consumer.py).
 */
public final class HistoryRows implements AutoCloseable {
  private static final byte[] HEX = "0123456789ABCDEF".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  private final OutputStream out;
  private final byte[] buf = new byte[1 << 16];
  private int at;

  public HistoryRows(OutputStream out) {
    this.out = out;
  }

  /** A poll's partition header; {@code hw} null when the client knew no high watermark. */
  public void header(int partition, long ts, Long hw) throws IOException {
    room(64);
    put((byte) '{');
    ascii("\"p\":");
    number(partition);
    ascii(",\"ts\":");
    number(ts);
    ascii(",\"hw\":");
    if (hw == null) {
      ascii("null");
    } else {
      number(hw);
    }
    put((byte) '}');
    put((byte) '\n');
  }

  /** One record: its offset and its value (null: empty). */
  public void record(long offset, byte[] value) throws IOException {
    int n = value == null ? 0 : value.length;
    room(32 + 6 * n);
    put((byte) '[');
    number(offset);
    put((byte) ',');
    put((byte) '"');
    for (int i = 0; i < n; i++) {
      if (at + 6 > buf.length) {
        flush();  // a value longer than the buffer: written out a buffer at a time
      }
      escaped(value[i]);
    }
    room(8);
    put((byte) '"');
    put((byte) ']');
    put((byte) '\n');
  }

  private void escaped(byte b) {
    if (b == '"' || b == '\\') {
      put((byte) '\\');
      put(b);
    } else if (b >= 0 && b < 0x20) {
      control(b);
    } else {
      put(b);
    }
  }

  private void control(byte b) {
    put((byte) '\\');
    switch (b) {
      case '\n' -> put((byte) 'n');
      case '\r' -> put((byte) 'r');
      case '\t' -> put((byte) 't');
      case '\b' -> put((byte) 'b');
      case '\f' -> put((byte) 'f');
      default -> {
        ascii("u00");
        put(HEX[b >> 4]);
        put(HEX[b & 0xF]);
      }
    }
  }

  private void number(long v) {
    if (v < 0) {
      put((byte) '-');
      if (v == Long.MIN_VALUE) {
        ascii("9223372036854775808");
        return;
      }
      v = -v;
    }
    int start = at;
    do {
      put((byte) ('0' + (v % 10)));
      v /= 10;
    } while (v != 0);
    for (int i = start, j = at - 1; i < j; i++, j--) {
      byte t = buf[i];
      buf[i] = buf[j];
      buf[j] = t;
    }
  }

  private void ascii(String s) {
    for (int i = 0; i < s.length(); i++) {
      put((byte) s.charAt(i));
    }
  }

  private void put(byte b) {
    buf[at++] = b;
  }

  /** Room for {@code n} more bytes (a long value's are made a byte at a time): the buffer written out if not. */
  private void room(int n) throws IOException {
    if (at + Math.min(n, 64) > buf.length) {
      flush();
    }
  }

  public void flush() throws IOException {
    out.write(buf, 0, at);
    at = 0;
  }

  @Override
  public void close() throws IOException {
    flush();
    out.close();
  }
}
