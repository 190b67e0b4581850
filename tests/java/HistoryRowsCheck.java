import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import kchaos.HistoryRows;

/**
 * The Java driver's hand-written history lines (kchaos.HistoryRows) against what Jackson's generator writes for the
 * same rows: equal bytes, for values with quotes, backslashes, every control character, UTF-8 beyond ASCII, bytes
 * that are not UTF-8, an empty and a null value, values longer than HistoryRows's buffer, and offsets and
 * watermarks from 0 to Long.MAX_VALUE. Run by tests/test_units_java_history.py; prints "same" or the first
 * difference and exits 1.
 */
public class HistoryRowsCheck {
  public static void main(String[] args) throws Exception {
    byte[][] values = values();
    long[] offsets = {0, 1, 9, 10, 123456789, Long.MAX_VALUE, -1, Long.MIN_VALUE};
    ByteArrayOutputStream mine = new ByteArrayOutputStream();
    try (HistoryRows w = new HistoryRows(mine)) {
      for (int i = 0; i < offsets.length; i++) {
        w.header(i, offsets[i], i % 3 == 0 ? null : offsets[i]);
        for (int j = 0; j < values.length; j++) {
          w.record(offsets[(i + j) % offsets.length], values[j]);
        }
      }
    }
    ByteArrayOutputStream theirs = new ByteArrayOutputStream();
    try (JsonGenerator g = new ObjectMapper().getFactory().createGenerator(theirs, JsonEncoding.UTF8)) {
      g.setRootValueSeparator(new SerializedString("\n"));
      for (int i = 0; i < offsets.length; i++) {
        g.writeStartObject();
        g.writeNumberField("p", i);
        g.writeNumberField("ts", offsets[i]);
        if (i % 3 == 0) {
          g.writeNullField("hw");
        } else {
          g.writeNumberField("hw", offsets[i]);
        }
        g.writeEndObject();
        for (int j = 0; j < values.length; j++) {
          byte[] v = values[j] == null ? new byte[0] : values[j];
          g.writeStartArray();
          g.writeNumber(offsets[(i + j) % offsets.length]);
          g.writeUTF8String(v, 0, v.length);
          g.writeEndArray();
        }
      }
    }
    // Jackson separates root values ("a\nb"); HistoryRows ends each line ("a\nb\n").
    byte[] a = mine.toByteArray();
    byte[] b = Arrays.copyOf(theirs.toByteArray(), theirs.size() + 1);
    b[b.length - 1] = '\n';
    if (Arrays.equals(a, b)) {
      System.out.println("same (" + a.length + " bytes)");
      return;
    }
    int k = Arrays.mismatch(a, b);
    System.out.println("differ at byte " + k + ": HistoryRows "
        + new String(a, Math.max(0, k - 40), Math.min(80, a.length - Math.max(0, k - 40)), StandardCharsets.UTF_8)
        + " | Jackson "
        + new String(b, Math.max(0, k - 40), Math.min(80, b.length - Math.max(0, k - 40)), StandardCharsets.UTF_8));
    System.exit(1);
  }

  private static byte[][] values() {
    byte[] controls = new byte[32];
    for (int i = 0; i < 32; i++) {
      controls[i] = (byte) i;
    }
    byte[] notUtf8 = {(byte) 0xff, (byte) 0xfe, 'x', (byte) 0x80, 0x7f};
    byte[] longQuotes = new byte[200_000];
    Arrays.fill(longQuotes, (byte) '"');
    byte[] longPlain = new byte[70_000];
    Arrays.fill(longPlain, (byte) 'v');
    return new byte[][] {
      "p-123".getBytes(StandardCharsets.UTF_8), "say \"hi\" \\ there".getBytes(StandardCharsets.UTF_8), controls,
      "ünïcödé ✓ 𝄞".getBytes(StandardCharsets.UTF_8), notUtf8, new byte[0], null, longQuotes, longPlain,
    };
  }
}
