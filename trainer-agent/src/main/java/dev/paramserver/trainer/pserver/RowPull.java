package dev.paramserver.trainer.pserver;

import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.pserver.RequestPlanner.Planned;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A pull of sparse rows under way ({@link ParameterClient#startRowPull}): one request per owning
 * pserver, all sent at once, each on the pserver's push stream when it serves pulls there ({@link
 * StreamedPushes#pull}), else by {@code PullParameters}. {@link #await} takes the answers, retrying
 * a failed request until it succeeds as every pull is retried (pulls are safe to repeat); a pull
 * the stream declined or did not answer (it failed, or within the call timeout) is made by {@code
 * PullParameters}.
 */
public final class RowPull {
  private final ParameterClient client;
  private final List<Planned<PullParametersRequest>> planned;
  private final List<Future<PullParametersResponse>> futures;
  // which futures are pulls written on a push stream
  private final boolean[] streamed;
  private final RowWants wants;

  private RowPull(
      ParameterClient client,
      List<Planned<PullParametersRequest>> planned,
      List<Future<PullParametersResponse>> futures,
      boolean[] streamed,
      RowWants wants) {
    this.client = client;
    this.planned = planned;
    this.futures = futures;
    this.streamed = streamed;
    this.wants = wants;
  }

  static RowPull start(
      ParameterClient client, List<Planned<PullParametersRequest>> planned, RowWants wants) {
    List<Future<PullParametersResponse>> futures = new ArrayList<>(planned.size());
    boolean[] streamed = new boolean[planned.size()];
    for (int i = 0; i < planned.size(); i++) {
      Planned<PullParametersRequest> p = planned.get(i);
      Future<PullParametersResponse> f = client.streams().pull(p.pserver(), p.request());
      streamed[i] = f != null;
      if (f == null) {
        ParameterServerGrpc.ParameterServerFutureStub s = client.stub(p.pserver());
        f = s == null ? null : s.pullParameters(p.request());
      }
      futures.add(f);
    }
    return new RowPull(client, planned, futures, streamed, wants);
  }

  /**
   * The rows pulled, waiting for the answers; a request that failed is sent again (its failure
   * acted on as any pull's) until it succeeds.
   *
   * @param latest the values to re-initialise a pserver that lost its state with
   * @throws StoppedException when the trainer stops meanwhile
   */
  public List<SparseRows> await(Parameters latest) {
    List<SparseRows> out = new ArrayList<>();
    for (int i = 0; i < planned.size(); i++) {
      PullParametersResponse resp = null;
      Throwable failure = null;
      Future<PullParametersResponse> f = futures.get(i);
      if (f != null) {
        try {
          resp =
              streamed[i]
                  ? f.get(client.streams().pullTimeoutMs(), TimeUnit.MILLISECONDS)
                  : f.get();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new StoppedException("pulling rows");
        } catch (ExecutionException e) {
          // retried below, where the failure is acted on (MOVED: re-split); a streamed pull not
          // answered is made by PullParameters, which meets the failure (if any) itself
          failure = streamed[i] ? null : e.getCause();
        } catch (TimeoutException e) {
          // the stream did not answer in time (its pushes' deadline fails it): PullParameters
        }
      }
      if (resp == null) {
        resp =
            failure != null
                ? client.pullAfter(planned.get(i), failure, latest)
                : client.pullWithRetry(planned.get(i), latest);
      }
      for (SparseRows rows : resp.getSparseRowsList()) {
        client.pulledRows(rows.getData().size());
        out.add(rows);
      }
    }
    return out;
  }

  /** The writer tag the pull was sent with (0: none). */
  public int writerTag() {
    return wants.writerTag();
  }

  /**
   * The rows asked for: once {@link #await} returned, each held row (the first {@code held} ids of
   * a table) that none of its rows lists was left out by an answer with {@code rows_changed_only}
   * (an answer without it lists every row): only this writer changed it since its previous push.
   */
  public RowWants wants() {
    return wants;
  }
}
