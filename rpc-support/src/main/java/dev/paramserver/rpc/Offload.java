package dev.paramserver.rpc;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

/**
 * Runs a unary call's work that may wait off the gRPC transport thread: the answer (or the error,
 * mapped as {@link ErrorMappingInterceptor} maps errors thrown inline) is sent from the executor's
 * thread; a full executor answers OVERLOADED, a stopped one UNAVAILABLE (SHUTTING_DOWN).
 */
public final class Offload {
  private Offload() {}

  /**
   * Answers a unary call when {@code result} completes, from the thread that completes it: its
   * value, or its error mapped as {@link ErrorMappingInterceptor} maps errors thrown inline.
   *
   * @param method the full method name ({@code service/Method}) for error messages
   */
  public static <T> void complete(CompletionStage<T> result, String method, StreamObserver<T> out) {
    result.whenComplete(
        (value, error) -> {
          if (error != null) {
            out.onError(ErrorMappingInterceptor.map(method, unwrap(error)));
            return;
          }
          out.onNext(value);
          out.onCompleted();
        });
  }

  /** What a completion stage failed with, without the CompletionException around it. */
  public static RuntimeException unwrap(Throwable error) {
    Throwable cause =
        error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    return cause instanceof RuntimeException re
        ? re
        : new IllegalStateException("the call's work failed: " + cause, cause);
  }

  /**
   * @param method the full method name ({@code service/Method}) for error messages
   */
  public static <T> void run(
      Executor executor, String method, StreamObserver<T> out, Supplier<T> work) {
    Runnable task =
        () -> {
          T value;
          try {
            value = work.get();
          } catch (RuntimeException e) {
            out.onError(ErrorMappingInterceptor.map(method, e));
            return;
          }
          out.onNext(value);
          out.onCompleted();
        };
    try {
      executor.execute(task);
    } catch (RejectedExecutionException e) {
      out.onError(ErrorMappingInterceptor.map(method, refusalOf(e)));
    }
  }

  /**
   * What a refused execution is answered with: OVERLOADED with a retry hint when the executor's
   * queue is full ({@link QueueFull}), SHUTTING_DOWN when it is stopped.
   */
  public static ServiceException refusalOf(RejectedExecutionException e) {
    return e instanceof QueueFull full
        ? full.refusal()
        : new ServiceException(
            ErrorReason.SHUTTING_DOWN, "the server is shutting down: retry on its replacement");
  }
}
