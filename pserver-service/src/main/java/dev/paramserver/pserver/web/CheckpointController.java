package dev.paramserver.pserver.web;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.pserver.persistence.CheckpointService;
import java.util.Optional;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /admin/checkpoint}: writes a checkpoint now and answers its metadata (CheckpointMeta
 * as proto3 JSON), or 409 when the shard has no index or is not initialised. Token-protected like
 * every {@code /admin} endpoint. On pserver 0 with {@code checkpoint-consistency=job} in
 * synchronous mode it also proposes a job-wide checkpoint, which every shard cuts a moment later.
 */
@RestController
public final class CheckpointController {
  private static final JsonFormat.Printer JSON =
      JsonFormat.printer().omittingInsignificantWhitespace();

  private final CheckpointService checkpoints;

  public CheckpointController(CheckpointService checkpoints) {
    this.checkpoints = checkpoints;
  }

  @PostMapping(path = "/admin/checkpoint", produces = MediaType.APPLICATION_JSON_VALUE)
  public ResponseEntity<String> checkpoint() throws InvalidProtocolBufferException {
    Optional<CheckpointMeta> meta = checkpoints.checkpointNow();
    // pserver 0 with checkpoint-consistency=job also starts a job-wide checkpoint
    try {
      checkpoints.proposeJobCheckpoint();
    } catch (RuntimeException e) {
      LoggerFactory.getLogger(CheckpointController.class)
          .warn("job-wide checkpoint not proposed: {}", e.toString());
    }
    if (meta.isEmpty()) {
      return ResponseEntity.status(HttpStatus.CONFLICT)
          .contentType(MediaType.APPLICATION_JSON)
          .body(
              "{\"error\":\"pserver is not initialised (or has no index yet): nothing to"
                  + " checkpoint\"}");
    }
    return ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON).body(JSON.print(meta.get()));
  }
}
