import java.lang.reflect.*;
/**
 * Prints, as JSON lines, the feature levels (KIP-584) the Kafka server jars on the class path can
 * format a KRaft cluster with: for metadata.version and every feature but Kafka's test features, the
 * lowest level, the level a new cluster gets, the newest production-ready level and the newest
 * level at all (which needs unstable.feature.versions.enable). Reflection, because the names moved:
 * Features (3.9) became Feature (4.0), defaultValue became defaultLevel, MINIMUM_KRAFT_VERSION
 * became MINIMUM_VERSION.
 */
public class FeatureLevels {
  public static void main(String[] a) throws Exception {
    Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
    Object prod = mv.getField("LATEST_PRODUCTION").get(null);
    Object test = mv.getMethod("latestTesting").invoke(null);
    Object min;
    try { min = mv.getField("MINIMUM_VERSION").get(null); } catch (NoSuchFieldException e) { min = mv.getField("MINIMUM_KRAFT_VERSION").get(null); }
    Method level = mv.getMethod("featureLevel");
    line("metadata.version", level.invoke(min), level.invoke(prod), level.invoke(prod), level.invoke(test));
    Class<?> f;
    try { f = Class.forName("org.apache.kafka.server.common.Feature"); } catch (ClassNotFoundException e) { f = Class.forName("org.apache.kafka.server.common.Features"); }
    for (Object x : (Object[]) f.getMethod("values").invoke(null)) {
      String name = (String) f.getMethod("featureName").invoke(x);
      if (name.contains("test")) continue;
      Method dflt;
      try { dflt = f.getMethod("defaultLevel", mv); } catch (NoSuchMethodException e) { dflt = f.getMethod("defaultValue", mv); }
      line(name, f.getMethod("minimumProduction").invoke(x), dflt.invoke(x, prod),
           f.getMethod("latestProduction").invoke(x), f.getMethod("latestTesting").invoke(x));
    }
  }
  static void line(String n, Object min, Object dflt, Object prod, Object test) {
    System.out.println("{\"feature\": \"" + n + "\", \"min\": " + min + ", \"default\": " + dflt + ", \"production\": " + prod + ", \"testing\": " + test + "}");
  }
}
