package dev.paramserver.bench.train;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Server-side time per gRPC method, from a service's {@code /actuator/prometheus} (the {@code
 * grpc_server_call_duration_seconds} histogram's sum and count): where a trainer's wall time goes.
 */
final class ServerRpcTimes {
  private static final Pattern LINE =
      Pattern.compile(
          "^grpc_server_call_duration_seconds_(sum|count)\\{([^}]*)\\}\\s+([0-9.eE+-]+)$");
  private static final Pattern METHOD = Pattern.compile("grpc_method=\"([^\"]+)\"");

  /** Calls and seconds of one method. */
  record Times(double calls, double seconds) {}

  private ServerRpcTimes() {}

  static Map<String, Times> scrape(int httpPort) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> resp =
        http.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + httpPort + "/actuator/prometheus"))
                .timeout(Duration.ofSeconds(10))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    Map<String, double[]> acc = new TreeMap<>();
    for (String line : resp.body().split("\n")) {
      Matcher m = LINE.matcher(line.trim());
      if (!m.matches()) {
        continue;
      }
      Matcher mm = METHOD.matcher(m.group(2));
      if (!mm.find()) {
        continue;
      }
      double[] a = acc.computeIfAbsent(mm.group(1), k -> new double[2]);
      double v = Double.parseDouble(m.group(3));
      if (m.group(1).equals("sum")) {
        a[1] += v;
      } else {
        a[0] += v;
      }
    }
    Map<String, Times> out = new TreeMap<>();
    acc.forEach((k, v) -> out.put(k, new Times(v[0], v[1])));
    return out;
  }
}
