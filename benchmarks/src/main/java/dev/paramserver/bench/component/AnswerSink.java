package dev.paramserver.bench.component;

import io.grpc.Drainable;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;

/**
 * The server side of one streaming call without a transport: each answer is encoded by the method's
 * response marshaller into a reused buffer, as gRPC writes it into its outgoing buffer; flow
 * control always ready. Counts answers and their bytes.
 */
final class AnswerSink<T> extends ServerCallStreamObserver<T> {
  private final MethodDescriptor.Marshaller<T> marshaller;
  private final Buffer buffer = new Buffer();
  private Throwable error;
  private T last;
  long answers;
  long bytes;
  boolean completed;

  AnswerSink(MethodDescriptor.Marshaller<T> marshaller) {
    this.marshaller = marshaller;
  }

  /** The last answer (kept for checks). */
  T last() {
    return last;
  }

  /** Throws when the call ended with an error. */
  void check() {
    if (error != null) {
      throw new IllegalStateException("the push stream failed: " + error, error);
    }
  }

  @Override
  public void onNext(T value) {
    last = value;
    buffer.reset();
    try (InputStream in = marshaller.stream(value)) {
      if (in instanceof Drainable d) {
        d.drainTo(buffer);
      } else {
        in.transferTo(buffer);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    answers++;
    bytes += buffer.size;
  }

  @Override
  public void onError(Throwable t) {
    error = t;
  }

  @Override
  public void onCompleted() {
    completed = true;
  }

  @Override
  public boolean isCancelled() {
    return false;
  }

  @Override
  public void setOnCancelHandler(Runnable onCancelHandler) {}

  @Override
  public void setCompression(String compression) {}

  @Override
  public boolean isReady() {
    return true;
  }

  @Override
  public void setOnReadyHandler(Runnable onReadyHandler) {}

  @Override
  public void disableAutoInboundFlowControl() {}

  @Override
  public void disableAutoRequest() {}

  @Override
  public void request(int count) {}

  @Override
  public void setMessageCompression(boolean enable) {}

  /** A growable byte buffer reused for every answer. */
  private static final class Buffer extends OutputStream {
    byte[] bytes = new byte[1 << 16];
    int size;

    void reset() {
      size = 0;
    }

    private void ensure(int more) {
      if (size + more > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
      }
    }

    @Override
    public void write(int b) {
      ensure(1);
      bytes[size++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      ensure(len);
      System.arraycopy(b, off, bytes, size, len);
      size += len;
    }
  }
}
