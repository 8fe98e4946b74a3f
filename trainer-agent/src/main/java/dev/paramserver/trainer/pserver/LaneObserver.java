package dev.paramserver.trainer.pserver;

import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.trainer.pserver.PushLane.Event;
import dev.paramserver.trainer.pserver.PushLane.Part;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.Queue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The callbacks of one {@code StreamPushes} call of a {@link PushLane}, on gRPC's threads: a push's
 * answer, a failure, the end or readiness of the call are queued as events of the call's generation
 * for the training thread; a pull's answer completes the pull's future here (the thread that waits
 * for it may not be the one that drives the lanes).
 */
final class LaneObserver
    implements ClientResponseObserver<PushGradientsRequest, PushGradientsResponse> {
  private final PushLane lane;
  private final int g;
  private final BlockingQueue<Event> events;
  // the pushes written on the call not yet answered, in order
  final Queue<Part> written = new ConcurrentLinkedQueue<>();
  // the pulls written on the call not yet answered, in order
  final Queue<CompletableFuture<PullParametersResponse>> pulls = new ConcurrentLinkedQueue<>();

  LaneObserver(PushLane lane, int g, BlockingQueue<Event> events) {
    this.lane = lane;
    this.g = g;
    this.events = events;
  }

  @Override
  public void beforeStart(ClientCallStreamObserver<PushGradientsRequest> requests) {
    requests.setOnReadyHandler(() -> events.add(new Event(lane, g, null, null, Event.Kind.READY)));
  }

  @Override
  public void onNext(PushGradientsResponse answer) {
    // the stream answers in order: a pull's answer answers the oldest pull written on it, a push's
    // the oldest push
    if (answer.hasPulled() || !answer.getPullDeclined().isEmpty()) {
      CompletableFuture<PullParametersResponse> pull = pulls.poll();
      if (pull != null && answer.hasPulled()) {
        pull.complete(answer.getPulled());
      } else if (pull != null) {
        pull.completeExceptionally(
            new PullNotStreamed(
                "pserver " + lane.pserver() + " declined it: " + answer.getPullDeclined()));
      }
      return;
    }
    Part p = written.poll();
    if (p != null) {
      p.acknowledge();
    }
    events.add(new Event(lane, g, answer, null, Event.Kind.ANSWER));
  }

  @Override
  public void onError(Throwable t) {
    endPulls("the push stream failed: " + t);
    events.add(new Event(lane, g, null, t, Event.Kind.ERROR));
  }

  @Override
  public void onCompleted() {
    endPulls("the push stream ended");
    events.add(new Event(lane, g, null, null, Event.Kind.COMPLETED));
  }

  private void endPulls(String why) {
    CompletableFuture<PullParametersResponse> pull;
    while ((pull = pulls.poll()) != null) {
      pull.completeExceptionally(new PullNotStreamed(why));
    }
  }

  /** A pull written on a push stream that did not answer it: it is made by PullParameters. */
  static final class PullNotStreamed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    PullNotStreamed(String why) {
      super(why, null, false, false);
    }
  }
}
