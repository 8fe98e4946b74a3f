package dev.paramserver.serving.web;

import dev.paramserver.serving.replica.ServedVersion;
import dev.paramserver.serving.replica.ServingReplica;
import jakarta.servlet.http.HttpServletRequest;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NoSuchElementException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /admin/serving/pin?checkpoint=ID}: serve job-wide checkpoint ID (a rollback when it
 * is older than what is served) and stop following; {@code DELETE /admin/serving/pin}: follow the
 * primaries again. Token-protected like every {@code /admin} endpoint; each call is logged (who,
 * what, the outcome) at INFO by the logger {@code dev.paramserver.serving.audit}.
 */
@RestController
public final class PinController {
  private static final Logger audit = LoggerFactory.getLogger("dev.paramserver.serving.audit");

  private final ServingReplica replica;

  public PinController(ServingReplica replica) {
    this.replica = replica;
  }

  @PostMapping(path = "/admin/serving/pin", produces = "application/json")
  public ResponseEntity<Map<String, Object>> pin(
      @RequestParam("checkpoint") long checkpoint, HttpServletRequest request) {
    String who = request.getRemoteAddr();
    if (checkpoint < 1) {
      return refused(who, "pin", HttpStatus.BAD_REQUEST, "checkpoint must be an id of 1 or more");
    }
    try {
      ServedVersion v = replica.pin(checkpoint);
      audit.info(
          "serving pinned to job-wide checkpoint {} by {}: serving version {}",
          checkpoint,
          who,
          v.number());
      return ResponseEntity.ok(body(v));
    } catch (NoSuchElementException e) {
      return refused(who, "pin " + checkpoint, HttpStatus.NOT_FOUND, e.getMessage());
    } catch (IllegalStateException e) {
      return refused(who, "pin " + checkpoint, HttpStatus.CONFLICT, e.getMessage());
    } catch (UncheckedIOException e) {
      return refused(
          who,
          "pin " + checkpoint,
          HttpStatus.SERVICE_UNAVAILABLE,
          e.getMessage() + ": " + e.getCause().getMessage());
    }
  }

  @DeleteMapping(path = "/admin/serving/pin", produces = "application/json")
  public ResponseEntity<Map<String, Object>> unpin(HttpServletRequest request) {
    long was = replica.unpin();
    audit.info(
        "serving pin removed by {}: {}",
        request.getRemoteAddr(),
        was == 0 ? "it was not pinned" : "was job-wide checkpoint " + was + ", following again");
    Map<String, Object> out = body(replica.model().version());
    out.put("was", was);
    return ResponseEntity.ok(out);
  }

  private Map<String, Object> body(ServedVersion v) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("pinned", replica.pinned());
    out.put("source", replica.source().name());
    out.put("loadedFrom", replica.loadedFrom());
    out.put("version", v == null ? null : v.number());
    return out;
  }

  private static ResponseEntity<Map<String, Object>> refused(
      String who, String what, HttpStatus status, String why) {
    audit.info("serving {} by {} refused ({}): {}", what, who, status.value(), why);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("error", why);
    return ResponseEntity.status(status).body(out);
  }
}
