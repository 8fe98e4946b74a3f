package dev.paramserver.bench.train;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A pserver's sparse tables and heap, from its {@code /actuator/prometheus}: rows held and bytes of
 * storage per table ({@code paramserver_pserver_sparse_rows} and {@code
 * paramserver_pserver_sparse_bytes}), and heap in use ({@code jvm_memory_used_bytes} of the heap
 * pools).
 */
final class PserverTables {
  private static final Pattern LINE =
      Pattern.compile("^([a-z_]+)\\{([^}]*)\\}\\s+([0-9.eE+-]+|NaN)$");
  private static final Pattern TABLE = Pattern.compile("table=\"([^\"]+)\"");

  private PserverTables() {}

  /**
   * {@code rows_<table>} and {@code bytes_<table>} of each sparse table, and {@code
   * heap_used_bytes}, of the pserver on {@code httpPort}.
   */
  static Map<String, Double> scrape(int httpPort) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> resp =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + httpPort + "/actuator/prometheus"))
                .timeout(Duration.ofSeconds(10))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    return parse(resp.body());
  }

  static Map<String, Double> parse(String prometheus) {
    Map<String, Double> out = new LinkedHashMap<>();
    out.put("heap_used_bytes", 0.0);
    for (String line : prometheus.split("\n")) {
      Matcher m = LINE.matcher(line.trim());
      if (!m.matches() || m.group(3).equals("NaN")) {
        continue;
      }
      Matcher table = TABLE.matcher(m.group(2));
      String key =
          switch (m.group(1)) {
            case "paramserver_pserver_sparse_rows" ->
                table.find() ? "rows_" + table.group(1) : null;
            case "paramserver_pserver_sparse_bytes" ->
                table.find() ? "bytes_" + table.group(1) : null;
            case "jvm_memory_used_bytes" ->
                m.group(2).contains("area=\"heap\"") ? "heap_used_bytes" : null;
            default -> null;
          };
      if (key != null) {
        out.merge(key, Double.parseDouble(m.group(3)), Double::sum);
      }
    }
    return out;
  }
}
