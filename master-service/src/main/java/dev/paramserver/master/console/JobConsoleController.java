package dev.paramserver.master.console;

import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.master.placement.PlacementCoordinator;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.rpc.ChannelFactory;
import io.grpc.ManagedChannel;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /admin/job} (the whole job, see docs/console.md; its JSON Schema at {@code GET
 * /admin/job/schema}), {@code POST /admin/job/checkpoint} (every pserver checkpoints now) and
 * {@code POST /admin/job/stop} (checkpoint, then end the job), {@code POST /admin/job/scale} and
 * {@code GET /admin/job/scaling} (a live job's pserver count). Token-protected like every {@code
 * /admin} endpoint. A standby answers 409 naming the leader (its gRPC address and, when the leader
 * answers, its HTTP address).
 */
@RestController
@RequestMapping("/admin/job")
final class JobConsoleController {
  private final JobConsole console;
  private final ChannelFactory channels;
  private final PlacementCoordinator placement;

  JobConsoleController(
      JobConsole console, ChannelFactory channels, PlacementCoordinator placement) {
    this.console = console;
    this.channels = channels;
    this.placement = placement;
  }

  /**
   * Scales the live job to {@code pservers} pservers (docs/explanation/elastic.md): answers at once
   * with the scaling's state; the moves run in the background ({@code GET /admin/job/scaling}).
   * {@code grow-only=true} (a new pserver of a scaled-up StatefulSet) never lowers the count. 400
   * when the count is not positive, 409 when the job cannot be scaled now, naming why.
   */
  @PostMapping("/scale")
  ResponseEntity<Map<String, Object>> scale(
      @RequestParam("pservers") int pservers,
      @RequestParam(name = "grow-only", defaultValue = "false") boolean growOnly) {
    if (!console.isLeader()) {
      return notLeader();
    }
    try {
      return ResponseEntity.ok(growOnly ? placement.growTo(pservers) : placement.scale(pservers));
    } catch (IllegalArgumentException e) {
      return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
    } catch (IllegalStateException e) {
      return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", e.getMessage()));
    }
  }

  /** The placement: epoch, pserver count asked for and committed, the move under way, the last. */
  @GetMapping("/scaling")
  ResponseEntity<Map<String, Object>> scaling() {
    if (!console.isLeader()) {
      return notLeader();
    }
    return ResponseEntity.ok(placement.view());
  }

  @GetMapping
  ResponseEntity<?> job() {
    if (!console.isLeader()) {
      return notLeader();
    }
    return ResponseEntity.ok(console.view());
  }

  /**
   * The JSON Schema of {@code GET /admin/job}'s answer (the one published in admin-api). Any master
   * answers it, a standby too: it is the same everywhere.
   */
  @GetMapping(value = "/schema", produces = MediaType.APPLICATION_JSON_VALUE)
  ResponseEntity<String> schema() {
    return ResponseEntity.ok(JobViewSchema.published());
  }

  @PostMapping("/checkpoint")
  ResponseEntity<Map<String, Object>> checkpoint() {
    if (!console.isLeader()) {
      return notLeader();
    }
    List<Map<String, Object>> results = console.checkpointNow();
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("checkpoints", results);
    return ResponseEntity.ok(body);
  }

  @PostMapping("/stop")
  ResponseEntity<Map<String, Object>> stop() {
    if (!console.isLeader()) {
      return notLeader();
    }
    return ResponseEntity.ok(console.stopJob());
  }

  private ResponseEntity<Map<String, Object>> notLeader() {
    Map<String, Object> body = new LinkedHashMap<>();
    Optional<String> leader = console.election().leaderAddress();
    body.put("error", "not the leader");
    body.put("leader", false);
    body.put("state", console.election().state().name());
    body.put("identity", console.election().identity());
    body.put("leaderAddress", leader.orElse(null));
    body.put("leaderAdminAddress", leader.map(this::adminAddressOf).orElse(null));
    body.put(
        "message",
        leader
            .map(a -> "this master is a standby; the leader is at " + a)
            .orElse("this master is not the leader and no leader is known yet"));
    return ResponseEntity.status(HttpStatus.CONFLICT).body(body);
  }

  /** The leader's HTTP address from its GetStatus, or null when it does not answer. */
  private String adminAddressOf(String grpcAddress) {
    ManagedChannel channel = channels.forAddress(grpcAddress);
    try {
      String a =
          MasterGrpc.newBlockingStub(channel)
              .withDeadlineAfter(2, TimeUnit.SECONDS)
              .getStatus(GetStatusRequest.getDefaultInstance())
              .getAdminAddress();
      return a.isEmpty() ? null : a;
    } catch (RuntimeException e) {
      return null;
    } finally {
      channel.shutdownNow();
    }
  }
}
