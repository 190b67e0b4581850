package kchaos;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A member's history file: one JSON object per line, appended and flushed before the member goes on, so whatever a
 * killed member did is on disk (groups.py and share_groups.py read the lines back).
 */
final class JsonLines {
  private final BufferedWriter out;

  JsonLines(Path path) throws IOException {
    out = Files.newBufferedWriter(path, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  synchronized void line(Map<String, Object> row) {
    try {
      out.write(Driver.JSON.writeValueAsString(row));
      out.newLine();
      out.flush();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** An ordered row from alternating keys and values. */
  static Map<String, Object> row(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }
}
