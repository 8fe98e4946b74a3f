package dev.paramserver.deploy;

import java.lang.reflect.RecordComponent;
import java.util.Set;
import java.util.TreeSet;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The property names a {@code @ConfigurationProperties} record binds, derived from its compiled
 * record components the way Spring Boot maps them: the annotation's prefix, then each component in
 * kebab case, nested records expanded ({@code paramserver.master.adaptive-timeout.enabled}).
 */
final class ConfigurationPropertyNames {
  private ConfigurationPropertyNames() {}

  static Set<String> of(Class<?> recordClass) {
    ConfigurationProperties annotation = recordClass.getAnnotation(ConfigurationProperties.class);
    if (annotation == null || !recordClass.isRecord()) {
      throw new IllegalArgumentException(
          recordClass.getName() + " is not a @ConfigurationProperties record");
    }
    String prefix = annotation.prefix().isEmpty() ? annotation.value() : annotation.prefix();
    Set<String> names = new TreeSet<>();
    collect(prefix, recordClass, names);
    return names;
  }

  private static void collect(String prefix, Class<?> recordClass, Set<String> names) {
    for (RecordComponent c : recordClass.getRecordComponents()) {
      String name = prefix + "." + kebab(c.getName());
      if (c.getType().isRecord()) {
        collect(name, c.getType(), names);
      } else {
        names.add(name);
      }
    }
  }

  /** {@code learningRate} to {@code learning-rate}. */
  static String kebab(String camel) {
    StringBuilder b = new StringBuilder();
    for (char ch : camel.toCharArray()) {
      if (Character.isUpperCase(ch)) {
        b.append('-').append(Character.toLowerCase(ch));
      } else {
        b.append(ch);
      }
    }
    return b.toString();
  }

  /**
   * The environment variables Spring Boot binds to a property: upper case with '.' replaced by '_'
   * and '-' either removed or replaced by '_' ({@code paramserver.etcd.call-timeout} is {@code
   * PARAMSERVER_ETCD_CALLTIMEOUT} or {@code PARAMSERVER_ETCD_CALL_TIMEOUT}).
   */
  static Set<String> envNames(String property) {
    String upper = property.replace('.', '_').toUpperCase(java.util.Locale.ROOT);
    return Set.copyOf(java.util.List.of(upper.replace("-", ""), upper.replace('-', '_')));
  }
}
