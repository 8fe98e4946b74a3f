package dev.paramserver.adminapi;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a JSON answer into admin-api's records without Jackson's data binding, whose start (an
 * object mapper, then the introspection of every record type and annotation) was a third of a
 * {@code psctl status}'s CPU time. It reads what Jackson reads the usual answers into, the same
 * way: a record from an object by its components' names, unknown fields ignored, a missing or null
 * field as null (0 or false for a primitive); numbers into {@code int}, {@code long}, {@code
 * double} and their boxes (a fraction truncated for an integer, {@code "NaN"} and the infinities
 * from strings for a double); strings, booleans, lists of these and maps of them by name. Anything
 * else (another type, a number out of range, a string for a number, text that is not strict JSON)
 * is an {@link IllegalArgumentException}, and {@link AdminClient} then reads the answer with
 * Jackson, which coerces what it can and words the error. JsonRecordsTest checks both read the same
 * records.
 */
final class JsonRecords {
  private final String text;
  private int at;

  private JsonRecords(String text) {
    this.text = text;
  }

  /** {@code json} as a {@code type}; IllegalArgumentException when it cannot be read here. */
  static <T extends Record> T read(String json, Class<T> type) {
    JsonRecords p = new JsonRecords(json);
    Object tree = p.value();
    p.blanks();
    if (p.at != json.length()) {
      throw p.error("text after the JSON value");
    }
    return type.cast(convert(tree, type));
  }

  private static Object convert(Object v, Type type) {
    if (type instanceof ParameterizedType pt && pt.getRawType() == List.class) {
      if (v == null) {
        return null;
      }
      if (!(v instanceof List<?> list)) {
        throw new IllegalArgumentException("not a list: " + type);
      }
      List<Object> out = new ArrayList<>(list.size());
      for (Object e : list) {
        out.add(convert(e, pt.getActualTypeArguments()[0]));
      }
      return out;
    }
    if (type instanceof ParameterizedType pt
        && pt.getRawType() == Map.class
        && pt.getActualTypeArguments()[0] == String.class) {
      if (v == null) {
        return null;
      }
      if (!(v instanceof Map<?, ?> map)) {
        throw new IllegalArgumentException("not an object: " + type);
      }
      Map<String, Object> out = new LinkedHashMap<>();
      for (Map.Entry<?, ?> e : map.entrySet()) {
        out.put((String) e.getKey(), convert(e.getValue(), pt.getActualTypeArguments()[1]));
      }
      return out;
    }
    if (!(type instanceof Class<?> c)) {
      throw new IllegalArgumentException("unsupported type " + type);
    }
    if (c.isRecord()) {
      return v == null ? null : record(v, c);
    }
    if (c == String.class) {
      if (v == null || v instanceof String) {
        return v;
      }
      throw new IllegalArgumentException("not a string: " + v);
    }
    if (c == boolean.class || c == Boolean.class) {
      if (v == null) {
        return c.isPrimitive() ? Boolean.FALSE : null;
      }
      if (v instanceof Boolean) {
        return v;
      }
      throw new IllegalArgumentException("not a boolean: " + v);
    }
    if (v == null) {
      return c == int.class ? (Object) 0 : c == long.class ? (Object) 0L : zero(c);
    }
    if (c == double.class || c == Double.class) {
      if (v instanceof Number n) {
        return n.doubleValue();
      }
      if (v.equals("NaN") || v.equals("Infinity") || v.equals("-Infinity")) {
        return Double.parseDouble((String) v);
      }
    } else if (v instanceof Long l && (c == long.class || c == Long.class)) {
      return l;
    } else if (v instanceof Long l && (c == int.class || c == Integer.class)) {
      if (l == l.intValue()) {
        return l.intValue();
      }
    } else if (v instanceof Double d && (c == long.class || c == Long.class)) {
      if (Math.abs(d) < 0x1p63) {
        return (long) d.doubleValue(); // truncated, as Jackson does
      }
    } else if (v instanceof Double d && (c == int.class || c == Integer.class)) {
      if (Math.abs(d) < 0x1p31) {
        return (int) d.doubleValue();
      }
    }
    throw new IllegalArgumentException("cannot read " + v + " as " + c.getSimpleName());
  }

  /** The value of a missing double (0.0) or boxed number (null). */
  private static Object zero(Class<?> c) {
    if (c == double.class) {
      return 0.0;
    }
    if (c == Double.class || c == Long.class || c == Integer.class) {
      return null;
    }
    throw new IllegalArgumentException("unsupported type " + c.getName());
  }

  private static Object record(Object v, Class<?> type) {
    if (!(v instanceof Map<?, ?> fields)) {
      throw new IllegalArgumentException("not an object for " + type.getSimpleName() + ": " + v);
    }
    RecordComponent[] components = type.getRecordComponents();
    Class<?>[] types = new Class<?>[components.length];
    Object[] args = new Object[components.length];
    for (int i = 0; i < components.length; i++) {
      types[i] = components[i].getType();
      args[i] = convert(fields.get(components[i].getName()), components[i].getGenericType());
    }
    try {
      Constructor<?> canonical = type.getDeclaredConstructor(types);
      return canonical.newInstance(args);
    } catch (NoSuchMethodException | InstantiationException | IllegalAccessException e) {
      throw new IllegalArgumentException("cannot make a " + type.getSimpleName(), e);
    } catch (InvocationTargetException e) {
      throw new IllegalArgumentException(type.getSimpleName() + ": " + e.getCause(), e);
    }
  }

  // ---- a strict JSON parser: objects as maps (in order), arrays as lists, integers as Long,
  // others Double

  private Object value() {
    blanks();
    char c = peek();
    switch (c) {
      case '{' -> {
        return object();
      }
      case '[' -> {
        return array();
      }
      case '"' -> {
        return string();
      }
      case 't' -> {
        return word("true", Boolean.TRUE);
      }
      case 'f' -> {
        return word("false", Boolean.FALSE);
      }
      case 'n' -> {
        return word("null", null);
      }
      default -> {
        return number();
      }
    }
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    at++;
    blanks();
    if (peek() == '}') {
      at++;
      return m;
    }
    while (true) {
      blanks();
      if (peek() != '"') {
        throw error("a field name expected");
      }
      String name = string();
      blanks();
      expect(':');
      m.put(name, value());
      blanks();
      if (peek() == '}') {
        at++;
        return m;
      }
      expect(',');
    }
  }

  private List<Object> array() {
    List<Object> l = new ArrayList<>();
    at++;
    blanks();
    if (peek() == ']') {
      at++;
      return l;
    }
    while (true) {
      l.add(value());
      blanks();
      if (peek() == ']') {
        at++;
        return l;
      }
      expect(',');
    }
  }

  private String string() {
    StringBuilder b = new StringBuilder();
    at++;
    while (true) {
      char c = peek();
      at++;
      if (c == '"') {
        return b.toString();
      } else if (c < 0x20) {
        throw error("a control character in a string");
      } else if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = peek();
      at++;
      switch (e) {
        case '"', '\\', '/' -> b.append(e);
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          if (at + 4 > text.length()) {
            throw error("a short \\u escape");
          }
          b.append((char) Integer.parseInt(text, at, at + 4, 16));
          at += 4;
        }
        default -> throw error("a bad escape");
      }
    }
  }

  /** A number as JSON spells it: {@code -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?}. */
  private Object number() {
    int start = at;
    accept('-');
    if (!accept('0') && digits() == 0) {
      throw error("a value expected");
    }
    boolean integer = true;
    if (accept('.')) {
      integer = false;
      if (digits() == 0) {
        throw error("digits expected after '.'");
      }
    }
    if (accept('e') || accept('E')) {
      integer = false;
      if (!accept('+')) {
        accept('-');
      }
      if (digits() == 0) {
        throw error("digits expected in the exponent");
      }
    }
    String n = text.substring(start, at);
    return integer ? (Object) Long.parseLong(n) : (Object) Double.parseDouble(n);
  }

  private boolean accept(char c) {
    if (at < text.length() && text.charAt(at) == c) {
      at++;
      return true;
    }
    return false;
  }

  private int digits() {
    int start = at;
    while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') {
      at++;
    }
    return at - start;
  }

  private Object word(String word, Object value) {
    if (!text.startsWith(word, at)) {
      throw error("a value expected");
    }
    at += word.length();
    return value;
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("'" + c + "' expected");
    }
    at++;
  }

  private char peek() {
    if (at >= text.length()) {
      throw error("the text ends early");
    }
    return text.charAt(at);
  }

  private void blanks() {
    while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException(what + " at character " + at);
  }
}
