package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pullAll;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Async mode: many threads pushing to the same blocks lose no update. */
class ConcurrentPushTest {
  private static final int THREADS = 8;
  private static final int PUSHES = 2_000;
  private static final int SIZE = 64;

  @Test
  void concurrentPushes_toTheSameBlocks_sumExactly() throws Exception {
    ParameterShard shard = new ParameterShard(true);
    // lr 1 and integer-valued gradients: every partial sum is exact in float32.
    shard.init(
        init(
            "i",
            List.of(dense("w", 2 * SIZE, SIZE, sgd(1f))),
            List.of(block("w", 0, SIZE, new float[SIZE]), block("w", 1, SIZE, new float[SIZE]))));
    shard.finishInit(finish("i", 2));
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    try {
      for (int t = 0; t < THREADS; t++) {
        float[] g = new float[SIZE];
        for (int i = 0; i < SIZE; i++) {
          g[i] = -(t + 1);
        }
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  for (int p = 0; p < PUSHES; p++) {
                    shard.push(push(gradient("w", 0, g), gradient("w", 1, g)));
                  }
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    // each element: sum over threads of (t + 1) * PUSHES = 36 * 2000 = 72000
    float expected = (THREADS * (THREADS + 1) / 2f) * PUSHES;
    PullParametersResponse r = shard.pull(pullAll());
    assertThat(r.getStep()).isEqualTo((long) THREADS * PUSHES);
    for (int b = 0; b < 2; b++) {
      assertThat(TensorCodec.decode(r.getBlocks(b).getData())).containsOnly(expected);
    }
  }
}
