package dev.paramserver.service;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /admin/status} and {@code POST /admin/shutdown}; {@link AdminTokenFilter} guards both.
 */
@RestController
@RequestMapping("/admin")
final class AdminController {
  private final ObjectProvider<AdminStatusSource> status;
  private final AdminShutdown shutdown;

  AdminController(ObjectProvider<AdminStatusSource> status, AdminShutdown shutdown) {
    this.status = status;
    this.shutdown = shutdown;
  }

  @GetMapping("/status")
  Map<String, Object> status() {
    AdminStatusSource source = status.getIfAvailable();
    Map<String, Object> body = new LinkedHashMap<>();
    if (source == null) {
      body.put("role", "unknown");
      body.put("state", shutdown.isShuttingDown() ? "SHUTTING_DOWN" : "UNKNOWN");
      body.put("identity", "");
      return body;
    }
    body.put("role", source.role());
    body.put("state", source.state());
    body.put("identity", source.identity());
    Map<String, Object> details = source.details();
    if (details != null) {
      details.forEach(body::putIfAbsent);
    }
    return body;
  }

  @PostMapping("/shutdown")
  ResponseEntity<Map<String, String>> shutdown() {
    shutdown.requestShutdown();
    return ResponseEntity.status(HttpStatus.ACCEPTED).body(Map.of("status", "shutting down"));
  }
}
