package dev.paramserver.pserver.placement;

import static dev.paramserver.pserver.placement.ElasticCluster.BLOCK;
import static dev.paramserver.pserver.placement.ElasticCluster.BLOCKS;
import static dev.paramserver.pserver.placement.ElasticCluster.DENSE;
import static dev.paramserver.pserver.placement.ElasticCluster.TABLE;
import static dev.paramserver.pserver.placement.ElasticCluster.WIDTH;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.shard.Requests;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A trainer as the elastic design describes it (docs/explanation/elastic.md), reduced to pushes:
 * identified pushes (trainer, session, step, part 0 on each pserver) of small integer gradients,
 * split by the committed map read from etcd; a piece refused with MOVED waits for the epoch it
 * names (or the move's rollback), is split again by the map and resent with the same identity and
 * {@code origin}. It sums what was acknowledged, per dense element and per row, so the test can
 * check the values bit for bit (SGD with learning rate 1 on small integers is exact in float).
 */
final class PlacementPusher implements Runnable {
  private final ElasticCluster cluster;
  private final String trainer;
  private final int rows;
  private final int n0;
  private final Random random;
  // acknowledged gradient sums, shared by every pusher of a test
  private final Sums sums;
  private volatile boolean stop;
  private int resplits;
  final AtomicInteger steps = new AtomicInteger();
  final AtomicInteger moved = new AtomicInteger();
  final AtomicReference<Throwable> failure = new AtomicReference<>();
  // the first piece acknowledged by pserver 0, as sent
  final AtomicReference<PushGradientsRequest> firstAcknowledgedBy0 = new AtomicReference<>();

  /** What every pusher had acknowledged, summed. */
  static final class Sums {
    final float[][] dense = new float[BLOCKS][BLOCK];
    final Map<Long, float[]> rows = new HashMap<>();

    synchronized void add(Piece p) {
      p.dense.forEach(
          (b, g) -> {
            for (int i = 0; i < BLOCK; i++) {
              dense[b][i] += g[i];
            }
          });
      p.rows.forEach(
          (id, g) -> {
            float[] s = rows.computeIfAbsent(id, k -> new float[WIDTH]);
            for (int i = 0; i < WIDTH; i++) {
              s[i] += g[i];
            }
          });
    }
  }

  /** Part of one step for one pserver. */
  record Piece(
      long step,
      int part,
      int origin,
      TreeMap<Integer, float[]> dense,
      TreeMap<Long, float[]> rows) {}

  PlacementPusher(ElasticCluster cluster, String trainer, int rows, int n0, long seed, Sums sums) {
    this.cluster = cluster;
    this.trainer = trainer;
    this.rows = rows;
    this.n0 = n0;
    this.random = new Random(seed);
    this.sums = sums;
  }

  /** Runs this pusher on a daemon thread of its own, started, and answers the thread. */
  Thread startThread() {
    Thread thread = new Thread(this, "pusher");
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /**
   * Stops this pusher, waits up to 30 s for each of {@code threads}, and fails with the pusher's
   * failure, if any.
   */
  void stopAndJoin(Thread... threads) throws InterruptedException {
    stop();
    for (Thread t : threads) {
      t.join(30_000);
    }
    if (failure.get() != null) {
      throw new AssertionError("pusher failed", failure.get());
    }
  }

  void stop() {
    stop = true;
  }

  @Override
  public void run() {
    SlotMap map = null;
    long mapReadAt = 0;
    try {
      for (long step = 1; !stop; step++) {
        TreeMap<Integer, float[]> dense = new TreeMap<>();
        for (int b = 0; b < BLOCKS; b++) {
          float[] g = new float[BLOCK];
          Arrays.fill(g, (step + b) % 3 + 1);
          dense.put(b, g);
        }
        TreeMap<Long, float[]> touched = new TreeMap<>();
        for (int i = 0; i < 24; i++) {
          long id = random.nextInt(rows);
          float[] g = new float[WIDTH];
          Arrays.fill(g, (step + id) % 4 + 1);
          touched.put(id, g);
        }
        Piece whole = new Piece(step, 0, 0, dense, touched);
        // as a trainer whose watch lags: the map is read again every 200 ms, and stale maps
        // meanwhile are answered MOVED
        if (map == null || System.nanoTime() - mapReadAt > 200_000_000L) {
          map = cluster.committed(n0);
          mapReadAt = System.nanoTime();
        }
        for (Map.Entry<Integer, Piece> e : split(whole, map).entrySet()) {
          deliver(e.getValue(), e.getKey());
        }
        steps.incrementAndGet();
        Thread.sleep(2);
      }
    } catch (Throwable t) {
      failure.compareAndSet(null, t);
    }
  }

  static Map<Integer, Piece> split(Piece p, SlotMap map) {
    Map<Integer, Piece> out = new TreeMap<>();
    long hash = ShardPlacement.tableHash(TABLE);
    p.dense.forEach(
        (b, g) ->
            out.computeIfAbsent(
                    map.ownerOfBlock(DENSE, b),
                    k -> new Piece(p.step, p.part, p.origin, new TreeMap<>(), new TreeMap<>()))
                .dense
                .put(b, g));
    p.rows.forEach(
        (id, g) ->
            out.computeIfAbsent(
                    map.ownerOfRow(hash, id),
                    k -> new Piece(p.step, p.part, p.origin, new TreeMap<>(), new TreeMap<>()))
                .rows
                .put(id, g));
    return out;
  }

  PushGradientsRequest request(Piece p) {
    PushGradientsRequest.Builder r =
        PushGradientsRequest.newBuilder()
            .setTrainerId(trainer)
            .setSession("s1")
            .setStep(p.step)
            .setPart(p.part)
            .setOrigin(p.origin);
    p.dense.forEach((b, g) -> r.addGradients(Requests.gradient(DENSE, b, g)));
    if (!p.rows.isEmpty()) {
      float[] data = new float[p.rows.size() * WIDTH];
      int i = 0;
      SparseRows.Builder s = SparseRows.newBuilder().setName(TABLE).setDtype(DataType.FLOAT32);
      for (Map.Entry<Long, float[]> e : p.rows.entrySet()) {
        s.addRowIds(e.getKey());
        System.arraycopy(e.getValue(), 0, data, i * WIDTH, WIDTH);
        i++;
      }
      r.addSparseGradients(s.setData(TensorCodec.encode(data)));
    }
    return r.build();
  }

  /** Sends {@code p} to pserver {@code server} until it is acknowledged (or moved and resent). */
  private void deliver(Piece p, int server) throws InterruptedException {
    PushGradientsRequest req = request(p);
    for (int attempt = 0; ; attempt++) {
      try {
        cluster.ps(server).pushGradients(req);
        // a duplicate here is an attempt before that was applied and its answer lost
        sums.add(p);
        if (server == 0 && p.origin == 0) {
          firstAcknowledgedBy0.compareAndSet(null, req);
        }
        return;
      } catch (StatusRuntimeException e) {
        if (RpcErrors.reasonOf(e) == ErrorReason.MOVED) {
          moved.incrementAndGet();
          long epoch = Long.parseLong(RpcErrors.metadataOf(e).get("epoch"));
          SlotMap map = awaitPlacement(epoch);
          int origin = p.origin != 0 ? p.origin : server + 1;
          Piece resent = new Piece(p.step, p.part, origin, p.dense, p.rows);
          // Each piece of the refused push gets a part of its own: none of them was applied, so
          // any identity is right, and a piece refused again and split again could otherwise
          // reach a pserver that holds a piece of the same (step, part, origin) already.
          for (Map.Entry<Integer, Piece> x : split(resent, map).entrySet()) {
            Piece q = x.getValue();
            int part = 1 + (resplits++ % 65_000);
            deliver(new Piece(q.step, part, q.origin, q.dense, q.rows), x.getKey());
          }
          return;
        }
        if (Status.fromThrowable(e).getCode() == Status.Code.UNAVAILABLE && attempt < 200) {
          Thread.sleep(50);
          continue;
        }
        throw new AssertionError("push of step " + p.step + " to pserver " + server, e);
      }
    }
  }

  /** Waits until the committed epoch reaches {@code epoch} or that move is rolled back. */
  private SlotMap awaitPlacement(long epoch) throws InterruptedException {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (System.nanoTime() < deadline) {
      PlacementStore.Read r = cluster.store.read();
      boolean moving = r.move().map(m -> m.getEpoch() == epoch).orElse(false);
      if (r.epoch() >= epoch || !moving) {
        return r.slotMap(SlotMap.initial(ElasticCluster.blockSpecs(), n0));
      }
      Thread.sleep(10);
    }
    throw new AssertionError("placement epoch " + epoch + " neither committed nor rolled back");
  }
}
