package dev.paramserver.rpc;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.tensor.ReceiveBuffers;
import io.grpc.Detachable;
import io.grpc.HasByteBuffer;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A request marshaller that parses without copying the received bytes field by field: when the
 * transport's stream exposes its buffers ({@link Detachable} and {@link HasByteBuffer}, as
 * grpc-netty's do), the buffers are detached from the call and parsed with aliasing, so the
 * message's {@code bytes} fields are views of them. A message that arrived in one buffer is parsed
 * in place; one that arrived in several is gathered into one pooled array first (one copy, then
 * protobuf's array decoder, the fastest; the transport's buffers are freed at once) and its fields
 * are views of that array. The buffer or array stays alive until {@link #release} is called with
 * the message: the handler must call it exactly when it no longer reads the message (the message
 * must not be read after: a pooled array is reused), on every path. Messages a handler never
 * receives are released by {@link ZeroCopyServices#releasingUnary}. Any other stream is parsed the
 * stock way ({@link ProtoUtils#marshaller}); {@code release} is then a no-op.
 */
public final class ZeroCopyMarshaller<T extends Message>
    implements MethodDescriptor.PrototypeMarshaller<T> {
  /** Told of each parse: true when it aliased the received buffers. */
  public interface ParseListener {
    void parsed(boolean zeroCopy);
  }

  private final T prototype;
  private final Parser<T> parser;
  private final MethodDescriptor.PrototypeMarshaller<T> stock;
  private final ParseListener listener;
  // What each message aliases, by message (identity: two equal messages hold two): the detached
  // stream (InputStream) or a pooled array (byte[]).
  private final Map<T, Object> held = Collections.synchronizedMap(new IdentityHashMap<>());
  private final ReceiveBuffers arrays = new ReceiveBuffers();

  @SuppressWarnings("unchecked")
  public ZeroCopyMarshaller(T prototype, ParseListener listener) {
    this.prototype = prototype;
    this.parser = (Parser<T>) prototype.getParserForType();
    this.stock = (MethodDescriptor.PrototypeMarshaller<T>) ProtoUtils.marshaller(prototype);
    this.listener = listener;
  }

  @Override
  public T getMessagePrototype() {
    return prototype;
  }

  @Override
  public Class<T> getMessageClass() {
    return stock.getMessageClass();
  }

  @Override
  public InputStream stream(T value) {
    return stock.stream(value);
  }

  @Override
  public T parse(InputStream stream) {
    if (!(stream instanceof Detachable detachable)
        || !(stream instanceof HasByteBuffer hb)
        || !hb.byteBufferSupported()) {
      listener.parsed(false);
      return stock.parse(stream);
    }
    InputStream detached = detachable.detach();
    T message;
    Object alias;
    try {
      Gathered gathered = gather(detached);
      if (gathered == null) {
        message = parseInPlace(detached);
        alias = detached;
      } else {
        closeQuietly(detached);
        detached = null;
        alias = gathered.array();
        message = parseGathered(gathered);
      }
    } catch (IOException | RuntimeException e) {
      if (detached != null) {
        closeQuietly(detached);
      }
      throw Status.INTERNAL
          .withDescription("invalid protobuf message: " + e.getMessage())
          .withCause(e)
          .asRuntimeException();
    }
    listener.parsed(true);
    if (message == prototype || held.putIfAbsent(message, alias) != null) {
      // nothing aliases the buffers of an empty message (the parser may share one instance)
      free(alias);
    }
    return message;
  }

  /**
   * The message's bytes gathered into a pooled array when the stream holds them in several buffers
   * (the stream then read to its end); null when they are in one (the stream as it was).
   */
  private Gathered gather(InputStream detached) throws IOException {
    HasByteBuffer buffers = (HasByteBuffer) detached;
    int size = detached.available();
    ByteBuffer first = buffers.getByteBuffer();
    if (first == null || first.remaining() >= size) {
      return null;
    }
    byte[] out = arrays.take(size);
    int at = 0;
    try {
      while (at < size) {
        ByteBuffer b = buffers.getByteBuffer();
        if (b == null) {
          // the stream stopped exposing buffers part way: read the rest as bytes
          at += detached.readNBytes(out, at, size - at);
          break;
        }
        int n = Math.min(b.remaining(), size - at);
        b.get(out, at, n);
        if (detached.skip(n) != n) {
          throw new IOException("could not skip " + n + " received bytes");
        }
        at += n;
      }
      if (at != size) {
        throw new IOException("read " + at + " of " + size + " received bytes");
      }
    } catch (IOException | RuntimeException e) {
      arrays.give(out);
      throw e;
    }
    return new Gathered(out, size);
  }

  /** A message's bytes gathered into the first {@code size} bytes of a pooled array. */
  private record Gathered(byte[] array, int size) {}

  private T parseGathered(Gathered gathered) throws IOException {
    try {
      // through a wrapping ByteString: only a decoder over bytes it takes as immutable aliases
      CodedInputStream in =
          UnsafeByteOperations.unsafeWrap(gathered.array(), 0, gathered.size()).newCodedInput();
      in.enableAliasing(true);
      in.setSizeLimit(Integer.MAX_VALUE);
      T message = parser.parseFrom(in);
      in.checkLastTagWas(0);
      return message;
    } catch (IOException | RuntimeException e) {
      arrays.give(gathered.array());
      throw e;
    }
  }

  private T parseInPlace(InputStream detached) throws IOException {
    List<ByteString> parts = new ArrayList<>();
    HasByteBuffer buffers = (HasByteBuffer) detached;
    // Without a mark, skipping past a buffer releases it: the mark keeps every buffer until the
    // stream is closed (release), and reset leaves the stream as it was.
    detached.mark(Integer.MAX_VALUE);
    while (detached.available() > 0) {
      ByteBuffer b = buffers.getByteBuffer();
      if (b == null) {
        break;
      }
      int n = b.remaining();
      parts.add(UnsafeByteOperations.unsafeWrap(b));
      long skipped = detached.skip(n);
      if (skipped != n) {
        throw new IOException("skipped " + skipped + " of " + n + " received bytes");
      }
    }
    if (detached.available() > 0) {
      // the stream stopped exposing buffers part way: read the rest as bytes
      parts.add(ByteString.readFrom(detached));
    }
    detached.reset();
    CodedInputStream in = ByteString.copyFrom(parts).newCodedInput();
    in.enableAliasing(true);
    // the transport enforces the message size limit
    in.setSizeLimit(Integer.MAX_VALUE);
    T message = parser.parseFrom(in);
    in.checkLastTagWas(0);
    return message;
  }

  private void free(Object alias) {
    if (alias instanceof InputStream s) {
      closeQuietly(s);
    } else if (alias instanceof byte[] b) {
      arrays.give(b);
    }
  }

  /**
   * Releases the received buffers {@code message} aliases (once: later calls, and calls for a
   * message parsed the stock way, do nothing). The message must not be read afterwards.
   */
  public void release(T message) {
    if (message == null) {
      return;
    }
    Object alias = held.remove(message);
    if (alias != null) {
      free(alias);
    }
  }

  /** Gathering arrays back in the pool (tests). */
  int pooledArrays() {
    return arrays.pooled();
  }

  /** Messages parsed with aliasing and not yet released. */
  public int held() {
    return held.size();
  }

  private static void closeQuietly(InputStream s) {
    try {
      s.close();
    } catch (IOException | RuntimeException e) {
      // releasing a buffer does not fail in practice; nothing to recover
    }
  }
}
