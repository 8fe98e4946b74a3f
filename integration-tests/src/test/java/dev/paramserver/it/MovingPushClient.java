package dev.paramserver.it;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.PushPart;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;

/**
 * The scripted client of {@link MoveFaultSoakTest}: one thread pushing steps of {@link
 * ScriptedPushes#PARTS} parts in flight together, each part a gradient of {@code -1} on a row of
 * its own in {@link PushHistory#TABLE} (so a row's value counts its push's applications), routed by
 * the committed placement in etcd while the job is scaled. It follows the rules of a trainer
 * (docs/explanation/elastic.md, Trainers): a push refused with MOVED waits for the epoch it names
 * (or that move's rollback) and is resent to the row's owner with the same identity, {@code origin}
 * = the index it was first sent to + 1, a part of its own (32768 up) and {@code resent_from} naming
 * what it was cut from; a push without an answer is sent again as it was to the same server; a
 * server gone (not registered, owning nothing) counts as MOVED at the committed epoch. Every
 * attempt is recorded in a {@link PushHistory}.
 *
 * <p>Thread-safety: {@link #run} on one thread; {@link #stop} from any; the rest after it ended.
 */
final class MovingPushClient implements Runnable {
  static final String TRAINER = "move-soak-client";
  private static final String SESSION = "move-soak-1";
  private static final String INIT = "move-soak-init";
  private static final int FIRST_RESENT_PART = 32768;
  private static final long GIVE_UP_NANOS = TimeUnit.MINUTES.toNanos(3);

  private final EtcdCoordinator coordinator;
  private final PlacementStore store;
  private final IntUnaryOperator grpcPortOf;
  private final PushHistory history;
  private final long tableHash = ShardPlacement.tableHash(PushHistory.TABLE);
  private final Map<Integer, ManagedChannel> channels = new ConcurrentHashMap<>();
  private int nextResentPart = FIRST_RESENT_PART;
  private volatile boolean stop;
  private volatile Throwable failure;
  volatile long steps;
  volatile long moved;
  volatile long goneAsMoved;
  volatile long longestStallNanos;

  /**
   * @param grpcPortOf a pserver index's gRPC port now (the client dials it directly, not through
   *     the proxy the pserver advertises, so partitions between pservers leave it alone)
   */
  MovingPushClient(EtcdCoordinator coordinator, IntUnaryOperator grpcPortOf, long startNanos) {
    this.coordinator = coordinator;
    this.store = new PlacementStore(coordinator);
    this.grpcPortOf = grpcPortOf;
    // one shard of one: rows 0, 1, 2, ... in push order, wherever the placement puts them
    this.history = new PushHistory(0, 1, startNanos);
  }

  PushHistory history() {
    return history;
  }

  void stop() {
    stop = true;
  }

  Throwable failure() {
    return failure;
  }

  /** Defines the history table on pservers 0 .. {@code pservers - 1} (no dense parameter). */
  void init(int pservers) throws Exception {
    InitParametersRequest req =
        PushHistory.withTable(
            InitParametersRequest.newBuilder()
                .setTrainerId(TRAINER)
                .setInitId(INIT)
                .setMode(TrainingMode.ASYNC)
                .build());
    for (int ps = 0; ps < pservers; ps++) {
      int server = ps;
      dev.paramserver.testsupport.Poll.until(
          Duration.ofSeconds(60),
          () -> {
            try {
              stub(server).initParameters(req);
              stub(server)
                  .finishInit(
                      FinishInitRequest.newBuilder()
                          .setTrainerId(TRAINER)
                          .setInitId(INIT)
                          .setExpectedBlocks(0)
                          .build());
              return true;
            } catch (RuntimeException e) {
              return false;
            }
          },
          "pserver " + server + " initialised");
    }
  }

  @Override
  public void run() {
    try {
      for (long step = 1; !stop; step++) {
        long began = System.nanoTime();
        SlotMap map = committed();
        List<Push> pushes = new ArrayList<>();
        for (int part = 0; part < ScriptedPushes.PARTS; part++) {
          Push p = new Push(step, part, map.ownerOfRow(tableHash, history.rowOf(step, part)));
          p.inFlight = send(p);
          pushes.add(p);
        }
        for (Push p : pushes) {
          settle(p);
        }
        steps = step;
        longestStallNanos = Math.max(longestStallNanos, System.nanoTime() - began);
      }
    } catch (Throwable t) {
      failure = t;
    }
  }

  /** Closes the channels, once the checks are done. */
  void close() {
    channels.values().forEach(Channels::close);
  }

  /** One push identity and where its current request goes. */
  private static final class Push {
    final long step;
    final int part;
    int dest;
    int wirePart;
    int origin; // 0 until resent after MOVED
    final List<PushPart> resentFrom = new ArrayList<>();
    long sentNanos;
    Future<PushGradientsResponse> inFlight;

    Push(long step, int part, int dest) {
      this.step = step;
      this.part = part;
      this.dest = dest;
      this.wirePart = part;
    }
  }

  private Future<PushGradientsResponse> send(Push p) {
    ByteBuffer minusOne = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(-1f);
    minusOne.flip();
    PushGradientsRequest req =
        PushGradientsRequest.newBuilder()
            .setTrainerId(TRAINER)
            .setSession(SESSION)
            .setStep(p.step)
            .setPart(p.wirePart)
            .setOrigin(p.origin)
            .addAllResentFrom(p.resentFrom)
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName(PushHistory.TABLE)
                    .addRowIds(history.rowOf(p.step, p.part))
                    .setDtype(DataType.FLOAT32)
                    .setData(com.google.protobuf.ByteString.copyFrom(minusOne)))
            .build();
    p.sentNanos = System.nanoTime();
    return futureStub(p.dest).withDeadlineAfter(5, TimeUnit.SECONDS).pushGradients(req);
  }

  /** Waits for {@code p}'s answer, resending until it is acknowledged. */
  private void settle(Push p) throws InterruptedException {
    long deadline = System.nanoTime() + GIVE_UP_NANOS;
    while (true) {
      try {
        PushGradientsResponse r = ScriptedPushes.await(p.inFlight, 10);
        history.attempt(
            p.step,
            p.part,
            p.sentNanos,
            r.getDuplicate() ? PushHistory.Outcome.DUPLICATE : PushHistory.Outcome.ACKNOWLEDGED,
            "");
        return;
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        ErrorReason reason = RpcErrors.reasonOf(cause);
        if (reason == ErrorReason.MOVED) {
          history.attempt(p.step, p.part, p.sentNanos, PushHistory.Outcome.ERROR, "MOVED" + p.dest);
          moved++;
          long epoch = Long.parseLong(RpcErrors.metadataOf(cause).getOrDefault("epoch", "0"));
          resendAfterMoved(p, awaitEpoch(epoch));
        } else {
          boolean answered =
              cause instanceof StatusRuntimeException s
                  && s.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED;
          history.attempt(
              p.step,
              p.part,
              p.sentNanos,
              answered ? PushHistory.Outcome.ERROR : PushHistory.Outcome.NO_ANSWER,
              (answered
                      ? ((StatusRuntimeException) cause).getStatus().getCode().name()
                      : "NO_ANSWER")
                  + p.dest);
          if (reason == ErrorReason.WRONG_SHARD || reason == ErrorReason.BAD_ARGUMENT) {
            throw new AssertionError("push refused: " + cause.getMessage(), cause);
          }
          if (System.nanoTime() > deadline) {
            throw new AssertionError(
                "push " + p.step + "/" + p.part + " unacknowledged for 3 min", cause);
          }
          Thread.sleep(100);
          PlacementStore.Read read = store.read();
          SlotMap map = read.slotMap(SlotMap.initial(List.of(), 2));
          if (gone(p.dest, map)) {
            goneAsMoved++;
            resendAfterMoved(p, map);
          } else {
            p.inFlight = send(p); // as it was, to the same server
          }
        }
      }
    }
  }

  private void resendAfterMoved(Push p, SlotMap map) {
    p.resentFrom.add(
        PushPart.newBuilder()
            .setOrigin(p.origin != 0 ? p.origin : p.dest + 1)
            .setPart(p.wirePart)
            .build());
    if (p.origin == 0) {
      p.origin = p.dest + 1;
    }
    p.wirePart = nextResentPart++;
    if (nextResentPart > 65535) {
      nextResentPart = FIRST_RESENT_PART;
    }
    p.dest = map.ownerOfRow(tableHash, history.rowOf(p.step, p.part));
    p.inFlight = send(p);
  }

  /** Not registered and owning nothing in the committed map: an emptied pserver that exited. */
  private boolean gone(int index, SlotMap map) {
    boolean owns = index < map.pservers() && map.slotCounts()[index] > 0;
    return !owns && coordinator.kv().get(coordinator.keys().ps(index)).isEmpty();
  }

  private SlotMap committed() {
    return store.read().slotMap(SlotMap.initial(List.of(), 2));
  }

  /** The committed map once it reaches {@code epoch}, or as it is once that move is gone. */
  private SlotMap awaitEpoch(long epoch) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (System.nanoTime() < deadline) {
      PlacementStore.Read read = store.read();
      if (read.epoch() >= epoch || read.move().map(m -> m.getEpoch() != epoch).orElse(true)) {
        return read.slotMap(SlotMap.initial(List.of(), 2));
      }
      Thread.sleep(10);
    }
    throw new AssertionError("placement epoch " + epoch + " never committed nor rolled back");
  }

  /**
   * Every pushed row's value, pulled from its owner in the committed map {@code map}, by the
   * history's pulls cut by owner.
   */
  Map<Long, Float> pullRows(SlotMap map) {
    List<PullParametersResponse> responses = new ArrayList<>();
    for (PullParametersRequest all : history.pulls()) {
      Map<Integer, List<Long>> byOwner = new TreeMap<>();
      for (SparseRowsRef ref : all.getSparseRowsList()) {
        for (long id : ref.getRowIdsList()) {
          byOwner.computeIfAbsent(map.ownerOfRow(tableHash, id), k -> new ArrayList<>()).add(id);
        }
      }
      byOwner.forEach(
          (owner, ids) ->
              responses.add(
                  stub(owner)
                      .withDeadlineAfter(30, TimeUnit.SECONDS)
                      .pullParameters(
                          PullParametersRequest.newBuilder()
                              .setTrainerId("check")
                              .addSparseRows(
                                  SparseRowsRef.newBuilder()
                                      .setName(PushHistory.TABLE)
                                      .addAllRowIds(ids))
                              .build())));
    }
    return PushHistory.rowValues(responses);
  }

  private ManagedChannel channel(int index) {
    int port = grpcPortOf.applyAsInt(index);
    return channels.computeIfAbsent(port, p -> Channels.forAddress("127.0.0.1:" + p));
  }

  private ParameterServerGrpc.ParameterServerFutureStub futureStub(int index) {
    return ParameterServerGrpc.newFutureStub(channel(index));
  }

  private ParameterServerGrpc.ParameterServerBlockingStub stub(int index) {
    return ParameterServerGrpc.newBlockingStub(channel(index))
        .withDeadlineAfter(10, TimeUnit.SECONDS);
  }
}
