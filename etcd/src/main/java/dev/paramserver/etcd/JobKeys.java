package dev.paramserver.etcd;

import java.util.regex.Pattern;

/** The etcd keys of one job (docs/design.md §1), all under {@code /paramserver/<job>/}. */
public final class JobKeys {
  private static final Pattern JOB_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");

  private final String job;
  private final String prefix;

  public JobKeys(String job) {
    if (!isValidName(job)) {
      throw new IllegalArgumentException(
          "job name '"
              + job
              + "' is invalid: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or"
              + " digit");
    }
    this.job = job;
    this.prefix = "/paramserver/" + job + "/";
  }

  /**
   * Whether {@code name} may name a job or a trainer: 1-63 letters, digits, '.', '_' or '-',
   * starting with a letter or digit.
   */
  public static boolean isValidName(String name) {
    return name != null && JOB_NAME.matcher(name).matches();
  }

  public String job() {
    return job;
  }

  /** {@code /paramserver/<job>/}. */
  public String prefix() {
    return prefix;
  }

  public String masterElection() {
    return prefix + "master/election";
  }

  public String masterAddr() {
    return prefix + "master/addr";
  }

  /** Prefix of the master's state keys (snapshot parts). */
  public String masterState() {
    return prefix + "master/state";
  }

  /** The dataset index, written once when the dataset is set. */
  public String masterDataset() {
    return prefix + "master/dataset";
  }

  public String psDesired() {
    return prefix + "ps_desired";
  }

  /** Prefix of the pserver registrations {@code ps/<idx>}. */
  public String psPrefix() {
    return prefix + "ps/";
  }

  public String ps(int index) {
    return psPrefix() + index;
  }

  /** Prefix of the backup registrations {@code ps_backup/<idx>} (pserver replicas). */
  public String psBackupPrefix() {
    return prefix + "ps_backup/";
  }

  /** The backup of shard {@code index}: its gRPC address, under the backup's lease. */
  public String psBackup(int index) {
    return psBackupPrefix() + index;
  }

  /** Prefix of the shards' in-sync records {@code ps_sync/<idx>} (pserver replicas). */
  public String psSyncPrefix() {
    return prefix + "ps_sync/";
  }

  /**
   * The in-sync record of shard {@code index} ({@link ShardSyncRecord}): written by its primary,
   * fenced on the primary's {@code ps/<index>}, and read by a backup before it takes the shard
   * over.
   */
  public String psSync(int index) {
    return psSyncPrefix() + index;
  }

  public String checkpoint(int index) {
    return prefix + "checkpoints/" + index;
  }

  /** Prefix of the job-wide checkpoints {@code checkpoints/job/<id>}, with their shards' files. */
  public String jobCheckpointPrefix() {
    return prefix + "checkpoints/job/";
  }

  /** A job-wide checkpoint: {@code checkpoints/job/<id>}, the id zero-padded to 20 digits. */
  public String jobCheckpoint(long id) {
    return jobCheckpointPrefix() + String.format(java.util.Locale.ROOT, "%020d", id);
  }

  /** The checkpoint shard {@code index} cut for job-wide checkpoint {@code id}. */
  public String jobCheckpointShard(long id, int index) {
    return jobCheckpoint(id) + "/ps/" + index;
  }

  /** Written by shard {@code index} once it restored job-wide checkpoint {@code id}. */
  public String jobCheckpointRestored(long id, int index) {
    return jobCheckpoint(id) + "/restored/" + index;
  }

  public String initLock() {
    return prefix + "init_ps/lock";
  }

  public String initDone() {
    return prefix + "init_ps/done";
  }

  /** Prefix of the trainer registrations {@code trainers/<id>}. */
  public String trainersPrefix() {
    return prefix + "trainers/";
  }

  public String trainer(String id) {
    return trainersPrefix() + id;
  }

  /**
   * Prefix of {@code trainer_sessions/<id>}: for a trainer whose membership the leader master holds
   * (the Coordination service), its session, under the same lease as {@code trainers/<id>}.
   */
  public String trainerSessionsPrefix() {
    return prefix + "trainer_sessions/";
  }

  public String trainerSession(String id) {
    return trainerSessionsPrefix() + id;
  }

  /** Prefix of the serving replicas' registrations {@code serving/<id>}. */
  public String servingPrefix() {
    return prefix + "serving/";
  }

  /**
   * The registration of serving replica {@code id} ({@link ServingReplicaRecord}), under the
   * replica's lease.
   */
  public String serving(String id) {
    return servingPrefix() + id;
  }

  /**
   * The job's model ({@code model/specs}): the parameter specs, mode and staleness the first
   * trainer that joined through the master defined; no lease, written once.
   */
  public String model() {
    return prefix + "model/specs";
  }

  /**
   * How the job's model predicts ({@code model/description}): a {@code ModelFile} without
   * parameters (model type, configuration, label names, feature scaling), written once by the first
   * trainer that joins, no lease. Serving replicas read it to answer Predict.
   */
  public String modelDescription() {
    return prefix + "model/description";
  }

  /** The election of the one trainer that evaluates pass {@code pass} (its id, under its lease). */
  public String evaluator(int pass) {
    return prefix + "eval/" + pass;
  }

  /** Prefix for the election of the trainer that writes the final model. */
  public String exportLock() {
    return prefix + "export/lock";
  }

  /**
   * The job's elastic placement ({@code placement}): a {@code PlacementMap}, written only by a
   * transaction fenced on its revision. Absent: the initial map of {@code ps_desired} pservers.
   */
  public String placement() {
    return prefix + "placement";
  }

  /** The slot move in progress ({@code placement_move}): a {@code SlotMove}, or absent. */
  public String placementMove() {
    return prefix + "placement_move";
  }
}
