package dev.paramserver.master.web;

import dev.paramserver.adminapi.JobViewSchema;
import dev.paramserver.master.console.JobConsole;
import dev.paramserver.master.console.JobStop;
import dev.paramserver.master.console.PserverCheckpoint;
import dev.paramserver.master.placement.PlacementCoordinator;
import dev.paramserver.master.placement.ScalingStatus;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /admin/job} (the whole job, see docs/console.md; {@code ?passes=N}: its latest N
 * passes only; its JSON Schema at {@code GET /admin/job/schema}), {@code POST
 * /admin/job/checkpoint} (every pserver checkpoints now) and {@code POST /admin/job/stop}
 * (checkpoint, then end the job), {@code POST /admin/job/scale} and {@code GET /admin/job/scaling}
 * (a live job's pserver count). Token-protected like every {@code /admin} endpoint. A standby
 * answers 409 naming the leader ({@link NotLeaderAdvice}).
 */
@RestController
@RequestMapping("/admin/job")
final class JobConsoleController {
  private final JobConsole console;
  private final PlacementCoordinator placement;

  JobConsoleController(JobConsole console, PlacementCoordinator placement) {
    this.console = console;
    this.placement = placement;
  }

  /**
   * Scales the live job to {@code pservers} pservers (docs/explanation/elastic.md): answers at once
   * with the scaling's state; the moves run in the background ({@code GET /admin/job/scaling}).
   * {@code grow-only=true} (a new pserver of a scaled-up StatefulSet) never lowers the count. 400
   * when the count is not positive, 409 when the job cannot be scaled now, naming why.
   */
  @PostMapping("/scale")
  ResponseEntity<?> scale(
      @RequestParam("pservers") int pservers,
      @RequestParam(name = "grow-only", defaultValue = "false") boolean growOnly) {
    requireLeader();
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
  ScalingStatus scaling() {
    requireLeader();
    return placement.view();
  }

  /**
   * The whole job; with {@code passes=N} only the latest N passes and the count of the earlier ones
   * ({@code passesOmitted}), so that a poller's answer does not grow with the job. 400 when N is
   * negative.
   */
  @GetMapping
  ResponseEntity<?> job(@RequestParam(name = "passes", required = false) Integer passes) {
    requireLeader();
    if (passes == null) {
      return ResponseEntity.ok(console.view());
    }
    if (passes < 0) {
      return ResponseEntity.badRequest()
          .body(
              Map.of(
                  "error",
                  "passes must be 0 or more (the latest passes to return), got " + passes));
    }
    return ResponseEntity.ok(console.view().withLatestPasses(passes));
  }

  /**
   * The JSON Schema of {@code GET /admin/job}'s answer (the one published in admin-api). Any master
   * answers it, a standby too: it is the same everywhere.
   */
  @GetMapping(value = "/schema", produces = MediaType.APPLICATION_JSON_VALUE)
  ResponseEntity<String> schema() {
    return ResponseEntity.ok(JobViewSchema.published());
  }

  /** The answer of {@code POST /admin/job/checkpoint}. */
  record Checkpoints(List<PserverCheckpoint> checkpoints) {}

  @PostMapping("/checkpoint")
  Checkpoints checkpoint() {
    requireLeader();
    return new Checkpoints(console.checkpointNow());
  }

  @PostMapping("/stop")
  JobStop stop() {
    requireLeader();
    return console.stopJob();
  }

  private void requireLeader() {
    if (!console.isLeader()) {
      throw new NotLeaderException();
    }
  }
}
