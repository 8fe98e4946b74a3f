package dev.paramserver.pserver.k8s;

import java.io.IOException;
import tools.jackson.databind.JsonNode;

/** The leader master's scaling endpoints, as a pserver calls them (see {@link LeaderMaster}). */
public interface JobScaler {
  /** {@code POST /admin/job/scale?pservers=N}. */
  void scale(int pservers) throws IOException, InterruptedException;

  /** {@code POST /admin/job/scale?pservers=N&grow-only=true}. */
  void growTo(int pservers) throws IOException, InterruptedException;

  /** {@code GET /admin/job/scaling}: {epoch, pservers, desired, phase, move, moves}. */
  JsonNode scaling() throws IOException, InterruptedException;
}
