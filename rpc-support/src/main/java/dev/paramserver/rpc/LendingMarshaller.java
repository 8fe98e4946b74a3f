package dev.paramserver.rpc;

import com.google.protobuf.Message;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A response marshaller that gives pooled arrays back once an answer was written: a handler builds
 * an answer whose {@code bytes} fields are views of arrays it took from a pool, {@link #lend lends}
 * them with the answer, and sends it. The transport asks for the answer's stream in the send call;
 * once the stream was written out ({@link Drainable#drainTo}, as grpc-netty does into its outgoing
 * buffer), read to its end or closed, the arrays go back to the pool ({@code giveBack}), so nothing
 * allocates them per answer. An in-process transport that hands the stream to its client reads it
 * as bytes (a copy of the answer), never the answer itself.
 *
 * <p>Buffer-ownership rule: after {@code lend}, the handler must call {@link #forget} with the
 * answer once its send call returned (on every path: an answer never sent has its arrays dropped,
 * not pooled), and nobody may read the answer's lent fields after the send. Answers not lent are
 * written the stock way ({@link ProtoUtils#marshaller}).
 */
public final class LendingMarshaller<T extends Message>
    implements MethodDescriptor.PrototypeMarshaller<T> {
  private final MethodDescriptor.PrototypeMarshaller<T> stock;
  private final Consumer<byte[]> giveBack;
  private final Map<T, List<byte[]>> lent = Collections.synchronizedMap(new IdentityHashMap<>());

  @SuppressWarnings("unchecked")
  public LendingMarshaller(T prototype, Consumer<byte[]> giveBack) {
    this.stock = (MethodDescriptor.PrototypeMarshaller<T>) ProtoUtils.marshaller(prototype);
    this.giveBack = giveBack;
  }

  /**
   * Records that {@code answer}'s fields are views of {@code arrays}, to be given back once it was
   * written. An empty list, or the default instance, lends nothing.
   */
  public void lend(T answer, List<byte[]> arrays) {
    if (arrays.isEmpty() || answer == stock.getMessagePrototype()) {
      return;
    }
    lent.put(answer, List.copyOf(arrays));
  }

  /**
   * Ends the loan of {@code answer} after its send call: when the transport did not take its stream
   * (the call had ended), its arrays are dropped (left to the garbage collector).
   */
  public void forget(T answer) {
    if (answer != null) {
      lent.remove(answer);
    }
  }

  /** Answers lent and neither written nor forgotten (tests). */
  public int lent() {
    return lent.size();
  }

  @Override
  public T getMessagePrototype() {
    return stock.getMessagePrototype();
  }

  @Override
  public Class<T> getMessageClass() {
    return stock.getMessageClass();
  }

  @Override
  public InputStream stream(T value) {
    List<byte[]> arrays = lent.remove(value);
    return arrays == null ? stock.stream(value) : new AnswerStream(value, arrays);
  }

  @Override
  public T parse(InputStream stream) {
    return stock.parse(stream);
  }

  /**
   * An answer's bytes, written straight into the transport's buffer ({@link #drainTo}) or, when
   * read, from a copy; its arrays go back to the pool once written, read to the end or closed.
   */
  private final class AnswerStream extends InputStream implements Drainable, KnownLength {
    private final AtomicBoolean returned = new AtomicBoolean();
    private final int size;
    private T message;
    private List<byte[]> arrays;
    private ByteArrayInputStream copy;

    AnswerStream(T message, List<byte[]> arrays) {
      this.message = message;
      this.arrays = arrays;
      this.size = message.getSerializedSize();
    }

    @Override
    public synchronized int drainTo(OutputStream target) throws IOException {
      if (message == null) {
        return copy == null ? 0 : (int) copy.transferTo(target);
      }
      // through protobuf's own small buffer (at most 4 KiB): the lent arrays pass through it
      message.writeTo(target);
      giveBack();
      return size;
    }

    @Override
    public synchronized int available() {
      return message != null ? size : copy == null ? 0 : copy.available();
    }

    @Override
    public synchronized int read() {
      return copied().read();
    }

    @Override
    public synchronized int read(byte[] b, int off, int len) {
      return copied().read(b, off, len);
    }

    @Override
    public synchronized void close() {
      giveBack();
    }

    /** The answer's bytes as a copy, its arrays given back (a reader that is not a transport). */
    private ByteArrayInputStream copied() {
      if (copy == null) {
        copy = new ByteArrayInputStream(message == null ? new byte[0] : message.toByteArray());
        giveBack();
      }
      return copy;
    }

    private void giveBack() {
      if (returned.compareAndSet(false, true)) {
        message = null;
        List<byte[]> a = arrays;
        arrays = null;
        a.forEach(giveBack);
      }
    }
  }
}
