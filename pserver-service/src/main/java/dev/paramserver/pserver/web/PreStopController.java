package dev.paramserver.pserver.web;

import dev.paramserver.pserver.k8s.PreStopHook;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /k8s/pre-stop}: the pserver container's preStop hook ({@code httpGet}), present only
 * when {@code paramserver.pserver.kubernetes.stateful-set} is set. See {@link PreStopHook} (package
 * {@code k8s}).
 *
 * <p>It is not under {@code /admin}, so it needs no admin token: a kubelet's {@code httpGet} hook
 * cannot send one. That is safe because the hook acts only on what the Kubernetes API says: it
 * scales the job only when the pod's own StatefulSet already asks for fewer replicas than this
 * pod's ordinal (so the pod is being removed whoever calls), and only down to that count; in every
 * other case it does nothing. Nothing else is opened: every {@code /admin} path still needs the
 * token.
 */
@RestController
@ConditionalOnExpression("'${paramserver.pserver.kubernetes.stateful-set:}' != ''")
final class PreStopController {
  private final PreStopHook hook;

  PreStopController(PreStopHook hook) {
    this.hook = hook;
  }

  /** Always 200 (the kubelet only logs a failed hook): the body says what was done. */
  @GetMapping("/k8s/pre-stop")
  ResponseEntity<Map<String, Object>> preStop() throws InterruptedException {
    PreStopHook.Outcome o = hook.preStop();
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("action", o.action());
    body.put("message", o.message());
    return ResponseEntity.ok(body);
  }

  /** The master's shutdown (or SIGTERM) began: a waiting hook returns. */
  @EventListener(ContextClosedEvent.class)
  public void onContextClosed() {
    hook.shutdownStarted();
  }
}
