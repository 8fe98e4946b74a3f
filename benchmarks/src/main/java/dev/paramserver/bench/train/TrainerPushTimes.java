package dev.paramserver.bench.train;

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
 * A trainer's push round trips, from its {@code /actuator/prometheus}: the client-side duration of
 * unary {@code PushGradients} calls ({@code grpc_client_call_duration_seconds}) and the time from
 * writing a streamed push to taking its answer ({@code
 * paramserver_trainer_push_round_trip_seconds}). The trainer exits when its job ends, so the
 * figures are polled while the job runs ({@link #poll}) and the last look is kept.
 */
final class TrainerPushTimes implements AutoCloseable {
  private static final Pattern UNARY =
      Pattern.compile(
          "^grpc_client_call_duration_seconds_(sum|count)\\{[^}]*grpc_method=\""
              + "paramserver\\.v1\\.ParameterServer/PushGradients\"[^}]*\\}\\s+([0-9.eE+-]+)$");
  private static final Pattern STREAMED =
      Pattern.compile(
          "^paramserver_trainer_push_round_trip_seconds_(sum|count)(?:\\{[^}]*\\})?\\s+([0-9.eE+-]+)$");

  private final Thread poller;
  private volatile Map<String, ServerRpcTimes.Times> last = Map.of();

  private TrainerPushTimes(int httpPort) {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    HttpRequest req =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/actuator/prometheus"))
            .timeout(Duration.ofSeconds(5))
            .build();
    poller =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                try {
                  last = parse(http.send(req, HttpResponse.BodyHandlers.ofString()).body());
                  Thread.sleep(1000);
                } catch (InterruptedException e) {
                  return;
                } catch (Exception e) {
                  // the trainer is starting or has exited: keep the last look
                  try {
                    Thread.sleep(1000);
                  } catch (InterruptedException ie) {
                    return;
                  }
                }
              }
            },
            "trainer-push-times");
    poller.setDaemon(true);
  }

  /** Polls the trainer on {@code httpPort} every second until {@link #close}. */
  static TrainerPushTimes poll(int httpPort) {
    TrainerPushTimes t = new TrainerPushTimes(httpPort);
    t.poller.start();
    return t;
  }

  /** The last figures read, by row name (empty if none was read). */
  Map<String, ServerRpcTimes.Times> last() {
    return last;
  }

  static Map<String, ServerRpcTimes.Times> parse(String body) {
    double[] unary = new double[2];
    double[] streamed = new double[2];
    for (String line : body.split("\n")) {
      String l = line.trim();
      Matcher m = UNARY.matcher(l);
      double[] into = unary;
      if (!m.matches()) {
        m = STREAMED.matcher(l);
        into = streamed;
        if (!m.matches()) {
          continue;
        }
      }
      into[m.group(1).equals("sum") ? 1 : 0] += Double.parseDouble(m.group(2));
    }
    Map<String, ServerRpcTimes.Times> out = new TreeMap<>();
    if (unary[0] > 0) {
      out.put("PushGradients round trip (client)", new ServerRpcTimes.Times(unary[0], unary[1]));
    }
    if (streamed[0] > 0) {
      out.put(
          "streamed push round trip (client)", new ServerRpcTimes.Times(streamed[0], streamed[1]));
    }
    return out;
  }

  @Override
  public void close() {
    poller.interrupt();
  }
}
