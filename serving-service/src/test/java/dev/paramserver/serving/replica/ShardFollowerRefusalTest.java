package dev.paramserver.serving.replica;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.rpc.Backoff;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/**
 * How a follower reports its primary's refusals: the reason in its status until a stream delivers,
 * a WARN for the first refusal and each change of reason, not for repeats. The follower runs on the
 * test's thread against a source that plays a script, one step per call.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ShardFollowerRefusalTest {
  private static final String DELIVER = "deliver";

  private final Logger logger = (Logger) LoggerFactory.getLogger(ShardFollower.class);
  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

  @AfterEach
  void detach() {
    logger.detachAppender(logged);
  }

  @Test
  void refusals_areInTheStatusUntilAStreamDelivers_andWarnedOncePerReason() {
    logged.start();
    logger.addAppender(logged);
    Deque<String> script =
        new ArrayDeque<>(
            List.of(
                "UNAUTHENTICATED: a",
                "UNAUTHENTICATED: a",
                "NOT_FOUND: b",
                "NOT_FOUND: b",
                DELIVER,
                "UNAUTHENTICATED: a"));
    List<String> seenAtEachCall = new ArrayList<>();
    ServedModel model = new ServedModel("r", 1);
    ShardFollower[] follower = new ShardFollower[1];
    FollowSource source =
        new FollowSource() {
          @Override
          public void follow(FollowRequest request, Sink sink) {
            seenAtEachCall.add(follower[0].status().lastRefusal());
            String step = script.poll();
            if (step == null) {
              follower[0].stop();
              throw new Refused("the script ended", null);
            }
            sink.connected("127.0.0.1:1");
            if (step.equals(DELIVER)) {
              sink.accept(FollowMessage.getDefaultInstance());
              return;
            }
            throw new Refused(step, null);
          }

          @Override
          public void close() {}
        };
    follower[0] =
        new ShardFollower(
            0,
            model,
            source,
            new Backoff(Duration.ofMillis(1), Duration.ofMillis(1)),
            System::currentTimeMillis,
            new PlacementSwitch(model, PlacementSwitch.FIXED, n -> {}));

    follower[0].run();

    assertThat(seenAtEachCall)
        .containsExactly(
            "",
            "UNAUTHENTICATED: a",
            "UNAUTHENTICATED: a",
            "NOT_FOUND: b",
            "NOT_FOUND: b",
            "",
            "UNAUTHENTICATED: a");
    assertThat(follower[0].status().connected()).isFalse();
    assertThat(
            logged.list.stream()
                .filter(e -> e.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage))
        .hasSize(3)
        .allMatch(m -> m.startsWith("following shard 0 at 127.0.0.1:1 refused ("))
        .satisfies(
            m -> {
              assertThat(m.get(0)).contains("(UNAUTHENTICATED: a)");
              assertThat(m.get(1)).contains("(NOT_FOUND: b)");
              assertThat(m.get(2)).contains("(UNAUTHENTICATED: a)");
            });
  }
}
