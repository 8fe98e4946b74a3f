package dev.paramserver.trainer.pserver;

import dev.paramserver.models.Model;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.BlockLayout;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The model's parameters as the pservers see them: specs, blocks and which pserver owns each block
 * and row. Every trainer computes the same specs and blocks from the same model and block size; the
 * owners come from the job's placement map ({@link SlotMap}): at first the initial map of the
 * pserver count (the fixed rule), then each committed map the trainer sees ({@link #update}), so a
 * job can gain and lose pservers while it trains.
 */
public final class ModelLayout {
  private static final Logger log = LoggerFactory.getLogger(ModelLayout.class);

  private final List<ParameterSpec> specs = new ArrayList<>();
  private final List<BlockSpec> blocks = new ArrayList<>();
  private final List<ParameterDef> sparseTables = new ArrayList<>();
  // replaced whole when a newer placement epoch is committed (docs/explanation/elastic.md)
  private final AtomicReference<Routing> routing = new AtomicReference<>();
  private final Object epochs = new Object();

  /** A layout whose dense parameters and sparse tables use the same optimizer. */
  public ModelLayout(Model model, int blockSize, OptimizerConfig optimizer, int pservers) {
    this(model, blockSize, optimizer, optimizer, pservers);
  }

  /**
   * @param optimizer the update rule of dense parameters
   * @param sparseOptimizer the update rule of sparse tables
   */
  public ModelLayout(
      Model model,
      int blockSize,
      OptimizerConfig optimizer,
      OptimizerConfig sparseOptimizer,
      int pservers) {
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        float stddev = def.init() instanceof ParameterDef.Normal n ? n.stddev() : 0f;
        specs.add(
            ParameterSpec.newBuilder()
                .setName(def.name())
                .addAllShape(def.shape())
                .setDtype(DataType.FLOAT32)
                .setSparse(true)
                .setInitStddev(stddev)
                .setOptimizer(sparseOptimizer)
                .build());
        sparseTables.add(def);
        continue;
      }
      specs.add(
          ParameterSpec.newBuilder()
              .setName(def.name())
              .addAllShape(def.shape())
              .setDtype(DataType.FLOAT32)
              .setBlockSize(blockSize)
              .setOptimizer(optimizer)
              .build());
    }
    // the master's Coordination service places the same blocks from the same specs
    blocks.addAll(BlockLayout.denseBlocks(specs));
    routing.set(new Routing(SlotMap.initial(blocks, pservers), blocks));
  }

  /** The dense blocks of the model, in layout order. */
  public List<BlockSpec> blocks() {
    return blocks;
  }

  /** The current routing: plan each request against one snapshot. */
  public Routing routing() {
    return routing.get();
  }

  /**
   * Routes by {@code next} from now on if its epoch is newer than the current one (an older or
   * equal one is ignored: watches may deliver late). Wakes threads in {@link #awaitEpoch}.
   *
   * @return true if the routing changed
   * @throws IllegalArgumentException when the map does not place exactly this model's blocks (a map
   *     of another model: routing by it would lose gradients)
   */
  public boolean update(SlotMap next) {
    if (!next.places(blocks)) {
      throw new IllegalArgumentException(
          next + " does not place the model's " + blocks.size() + " dense blocks");
    }
    Routing fresh = new Routing(next, blocks);
    while (true) {
      Routing cur = routing.get();
      if (next.epoch() <= cur.epoch()) {
        return false;
      }
      // the slot count is the job's from its start: only the initial guess (epoch 0, of the
      // pserver count the trainer found) may differ, as when it starts while the job is scaled
      if (cur.epoch() > 0 && next.slots() != cur.map().slots()) {
        log.error("ignoring {}: the job routes by {} slots", next, cur.map().slots());
        return false;
      }
      if (routing.compareAndSet(cur, fresh)) {
        log.info("routing by {} (was epoch {})", next, cur.epoch());
        synchronized (epochs) {
          epochs.notifyAll();
        }
        return true;
      }
    }
  }

  /**
   * Waits up to {@code timeoutMs} until the routing reaches {@code epoch}.
   *
   * @return true if it did
   */
  public boolean awaitEpoch(long epoch, long timeoutMs) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    synchronized (epochs) {
      while (routing.get().epoch() < epoch) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        TimeUnit.NANOSECONDS.timedWait(epochs, left);
      }
    }
    return true;
  }

  public List<ParameterSpec> specs() {
    return specs;
  }

  /** The current placement of the dense blocks. */
  public ShardPlacement placement() {
    return routing().placement();
  }

  /** The pserver count of the current map (indexes that may own something). */
  public int pservers() {
    return routing().pservers();
  }

  /** The sparse tables: their rows live on the owner of their slot in the current map. */
  public List<ParameterDef> sparseTables() {
    return sparseTables;
  }

  public int ownerOfRow(String table, long row) {
    return routing().ownerOfRow(table, row);
  }

  /** {@link Routing#byOwner} of the current routing. */
  public long[][] byOwner(String table, long[] ids) {
    return routing().byOwner(table, ids);
  }

  public List<BlockSpec> blocksOf(int pserver) {
    return routing().blocksOf(pserver);
  }
}
