package dev.paramserver.serving.replica;

import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.ShardLookups;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;
import java.util.TreeMap;

/**
 * The model at one version, for the length of one read ({@link ServedModel#read}): sparse rows are
 * read from the shard that owns them under the version's committed placement map, or the fixed
 * routing rule for a job never scaled (docs/reference/routing.md); dense parameters are assembled
 * from their blocks, each from the shard the map gives it.
 */
public final class View {
  private final ServedVersion version;
  private final SlotMap placement;
  private final ParameterShard[] shards;

  View(ServedVersion version, SlotMap placement, ParameterShard[] shards) {
    this.version = version;
    this.placement = placement;
    this.shards = shards;
  }

  public ServedVersion version() {
    return version;
  }

  /** Every parameter's definition (dense and sparse), by name. */
  public Map<String, ParameterSpec> parameters() {
    Map<String, ParameterSpec> out = new TreeMap<>();
    for (ParameterShard s : shards) {
      out.putAll(ShardLookups.parameters(s));
    }
    return out;
  }

  /** The width of sparse table {@code table}, or -1 when no shard has it. */
  public int width(String table) {
    for (ParameterShard s : shards) {
      int w = ShardLookups.width(s, table);
      if (w >= 0) {
        return w;
      }
    }
    return -1;
  }

  /**
   * Copies row {@code id} of {@code table} (known to exist: {@link #width}) to {@code out} at
   * {@code at}; false when the table holds no such row (the initial values were copied).
   */
  public boolean row(String table, long tableHash, long id, float[] out, int at) {
    int owner =
        placement == null
            ? ShardPlacement.ownerOfRow(tableHash, id, shards.length)
            : placement.ownerOfRow(tableHash, id);
    ParameterShard s = shards[owner];
    return ShardLookups.readRow(s, table, id, out, at);
  }

  /** The dense parameter {@code spec}'s values, assembled from its blocks on every shard. */
  public float[] dense(ParameterSpec spec) {
    long n = 1;
    for (long d : spec.getShapeList()) {
      n *= d;
    }
    float[] out = new float[Math.toIntExact(n)];
    for (int i = 0; i < shards.length; i++) {
      for (TensorBlock b :
          shards[i].pull(PullParametersRequest.getDefaultInstance()).getBlocksList()) {
        // a shard may still hold a block that moved away (a move is not on its stream)
        if (b.getName().equals(spec.getName()) && ownsBlock(i, b)) {
          ByteBuffer bytes = b.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
          bytes.asFloatBuffer().get(out, Math.toIntExact(b.getOffset()), bytes.remaining() / 4);
        }
      }
    }
    return out;
  }

  private boolean ownsBlock(int index, TensorBlock b) {
    if (placement == null) {
      return true;
    }
    int owner = placement.ownerOfBlock(b.getName(), b.getBlock());
    return owner < 0 || owner == index;
  }
}
