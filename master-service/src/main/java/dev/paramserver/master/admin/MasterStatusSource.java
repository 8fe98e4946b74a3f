package dev.paramserver.master.admin;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.paramserver.adminapi.BuildInfo;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.master.task.MasterJob;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.service.AdminStatusSource;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import tools.jackson.core.JacksonException;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.ObjectMapper;

/**
 * The master's {@code GET /admin/status}: role "master", state LEADER / STANDBY / ..., identity
 * {@code host:grpcPort}, and details {@code leader}, {@code leaderAddress} and, on the leader,
 * {@code job}: the {@link JobStatus} as proto3 JSON (lowerCamelCase names, int64 as strings, enums
 * as names, fields with default values included); then the build, {@code version} and {@code
 * commit} ({@link BuildInfo}), which {@code psctl version} shows.
 */
public final class MasterStatusSource implements AdminStatusSource {
  private static final JsonFormat.Printer PRINTER =
      JsonFormat.printer().alwaysPrintFieldsWithNoPresence().omittingInsignificantWhitespace();
  private static final TypeReference<LinkedHashMap<String, Object>> MAP = new TypeReference<>() {};

  private final MasterElection election;
  private final MasterJob job;
  private static final ObjectMapper JSON = new ObjectMapper();

  public MasterStatusSource(MasterElection election, MasterJob job) {
    this.election = election;
    this.job = job;
  }

  @Override
  public String role() {
    return "master";
  }

  @Override
  public String state() {
    return switch (election.state()) {
      case LEADER -> election.isLeader() ? "LEADER" : "STEPPING_DOWN";
      case CAMPAIGNING -> "STANDBY";
      case IDLE -> "STARTING";
      case STEPPING_DOWN -> "STEPPING_DOWN";
      case STOPPED -> "STOPPED";
    };
  }

  @Override
  public String identity() {
    return election.identity();
  }

  @Override
  public Map<String, Object> details() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("leader", election.isLeader());
    out.put("leaderAddress", election.leaderAddress().orElse(null));
    Optional<JobStatus> status = election.isLeader() ? job.statusIfServing() : Optional.empty();
    status.ifPresent(s -> out.put("job", toMap(s)));
    out.put("version", BuildInfo.current().version());
    out.put("commit", BuildInfo.current().commit());
    return out;
  }

  /** A job status as the proto3 JSON object the admin endpoint shows. */
  public static Map<String, Object> toMap(JobStatus status) {
    try {
      return JSON.readValue(PRINTER.print(status), MAP);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("cannot print the job status as JSON", e);
    } catch (JacksonException e) {
      throw new IllegalStateException("cannot read the job status's JSON", e);
    }
  }
}
