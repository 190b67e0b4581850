import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.config.ConfigDef;

/**
 * Prints the broker's and the topic's config definitions of the Kafka jars on the class path, one
 * JSON line each: {"scope": "broker"|"topic", "name", "type", "check", "validator"}: ``check`` is the
 * validator's class (Range, ValidString, ...), ``validator`` its text. Each version keeps them
 * in another place (a Scala object before 3.7, AbstractKafkaConfig and the storage module's
 * LogConfig after), so each place is tried in turn by reflection.
 */
public final class ConfigDefs {
    private static final String[][] BROKER = {
        {"org.apache.kafka.server.config.AbstractKafkaConfig", "CONFIG_DEF"},
        {"kafka.server.KafkaConfig", "configDef"},
    };
    private static final String[][] TOPIC = {
        {"org.apache.kafka.storage.internals.log.LogConfig", "configDefCopy"},
        {"kafka.log.LogConfig", "configDefCopy"},
        {"kafka.log.LogConfig", "configDef"},
    };

    public static void main(String[] args) throws Exception {
        print("broker", find(BROKER));
        print("topic", find(TOPIC));
    }

    private static ConfigDef find(String[][] places) throws Exception {
        for (String[] place : places) {
            Class<?> c;
            try {
                c = Class.forName(place[0]);
            } catch (ClassNotFoundException e) {
                continue;
            }
            for (Field f : c.getDeclaredFields()) {
                if (f.getName().equals(place[1]) && Modifier.isStatic(f.getModifiers())) {
                    f.setAccessible(true);
                    return (ConfigDef) f.get(null);
                }
            }
            for (Method m : c.getMethods()) {
                if (m.getName().equals(place[1]) && m.getParameterCount() == 0 && Modifier.isStatic(m.getModifiers())) {
                    return (ConfigDef) m.invoke(null);
                }
            }
            ConfigDef inObject = scalaObject(place[0]);  // 2.8: a Scala object's private member
            if (inObject != null) {
                return inObject;
            }
        }
        throw new IllegalStateException("no config definition found in " + places[0][0] + " and the other places");
    }

    /** The ConfigDef a Scala object (class NAME$, instance MODULE$) holds in a field, if any. */
    private static ConfigDef scalaObject(String name) throws Exception {
        Class<?> c;
        try {
            c = Class.forName(name + "$");
        } catch (ClassNotFoundException e) {
            return null;
        }
        Object module = c.getField("MODULE$").get(null);
        for (Field f : c.getDeclaredFields()) {
            if (ConfigDef.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                return (ConfigDef) f.get(module);
            }
        }
        return null;
    }

    private static void print(String scope, ConfigDef def) {
        Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(def.configKeys());
        for (ConfigDef.ConfigKey k : keys.values()) {
            String validator = k.validator == null ? null : k.validator.toString();
            String kind = k.validator == null ? null : k.validator.getClass().getSimpleName();
            System.out.println("{\"scope\":" + quote(scope) + ",\"name\":" + quote(k.name) + ",\"type\":"
                + quote(k.type.name()) + ",\"check\":" + (kind == null ? "null" : quote(kind))
                + ",\"validator\":" + (validator == null ? "null" : quote(validator)) + "}");
        }
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                b.append('\\').append(ch);
            } else if (ch < 0x20) {
                b.append(String.format("\\u%04x", (int) ch));
            } else {
                b.append(ch);
            }
        }
        return b.append('"').toString();
    }
}
