package dev.paramserver.serving.replica;

import dev.paramserver.proto.v1.ServingVersion;
import dev.paramserver.proto.v1.ShardPosition;
import java.util.List;

/**
 * A version a replica serves: a cut of the model in which every shard is at a prefix of its
 * primary's applied records ({@code shards}, by index), numbered by the replica.
 *
 * @param number increases by one at each cut the replica publishes; comparable only between
 *     versions of the same {@code replica}
 * @param shards where each shard is, by index
 * @param replica the replica's instance id
 * @param placementEpoch the committed placement epoch rows and blocks are read by (0: the initial
 *     map); every shard holds what that epoch's map gives it
 */
public record ServedVersion(
    long number, List<Position> shards, String replica, long placementEpoch) {
  public ServedVersion {
    shards = List.copyOf(shards);
  }

  /**
   * One shard's place in a version.
   *
   * @param index the shard index
   * @param epoch the feed epoch of the primary the records came from; 0 for a model file
   * @param sequence the shard's update count: the step its primary answered for the last push held
   */
  public record Position(int index, long epoch, long sequence) {}

  /**
   * The least version a read accepts: every listed shard at least at its sequence; with no shard
   * listed and this replica named, the number at least {@code number}.
   */
  public record Minimum(List<Position> shards, long number, String replica) {
    public static final Minimum ANY = new Minimum(List.of(), 0, "");

    public Minimum {
      shards = List.copyOf(shards);
    }
  }

  /** The first shard of {@code min} this version has not reached, or null when it reached all. */
  public Position behind(Minimum min) {
    for (Position p : min.shards()) {
      if (p.index() < 0 || p.index() >= shards.size()) {
        return p;
      }
      if (shards.get(p.index()).sequence() < p.sequence()) {
        return p;
      }
    }
    if (min.shards().isEmpty() && replica.equals(min.replica()) && number < min.number()) {
      return new Position(-1, 0, min.number());
    }
    return null;
  }

  /** The wire form. */
  public ServingVersion toProto() {
    ServingVersion.Builder b =
        ServingVersion.newBuilder()
            .setNumber(number)
            .setReplica(replica)
            .setPlacementEpoch(placementEpoch);
    for (Position p : shards) {
      b.addShards(
          ShardPosition.newBuilder()
              .setIndex(p.index())
              .setEpoch(p.epoch())
              .setSequence(p.sequence()));
    }
    return b.build();
  }
}
