package dev.paramserver.master.console;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.etcd.ServingReplicaRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code serving} of {@code /admin/job}: the serving replicas' registrations ({@code
 * serving/<id>}, {@link ServingReplicaRecord}) with how far each is behind the pservers sampled at
 * the same time. Plain logic, no network.
 */
final class ServingSample {
  private ServingSample() {}

  /**
   * The replicas of {@code registrations} (replica id to record), ordered by address, each with
   * {@code behind}: the sum over its shards of the step of the pserver registered at that index
   * minus the sequence the replica serves (at least 0 each: the two are sampled one after the
   * other); null while a shard's pserver did not answer or the replica serves no version.
   */
  static List<JobView.Serving> of(
      Map<String, ServingReplicaRecord> registrations, List<PserverSample> pservers) {
    Map<Integer, Long> steps = new HashMap<>();
    for (PserverSample p : pservers) {
      if (p.error().isEmpty()) {
        steps.put(p.index(), p.step());
      }
    }
    List<JobView.Serving> out = new ArrayList<>();
    registrations.forEach(
        (id, r) ->
            out.add(
                new JobView.Serving(
                    id,
                    r.address(),
                    r.adminAddress(),
                    r.state(),
                    r.source(),
                    r.version(),
                    r.sequences(),
                    behind(r.sequences(), steps),
                    r.lagMs(),
                    r.connected())));
    out.sort(
        java.util.Comparator.comparing(JobView.Serving::address)
            .thenComparing(JobView.Serving::id));
    return out;
  }

  private static Long behind(List<Long> sequences, Map<Integer, Long> steps) {
    if (sequences.isEmpty()) {
      return null;
    }
    long behind = 0;
    for (int i = 0; i < sequences.size(); i++) {
      Long step = steps.get(i);
      if (step == null) {
        return null;
      }
      behind += Math.max(0, step - sequences.get(i));
    }
    return behind;
  }
}
