package dev.paramserver.bench.wire;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/**
 * The bare gRPC baseline's methods, on raw {@code byte[]} messages with no protobuf at all: Echo
 * (answers the request's bytes), Sink (answers nothing) and Source (answers as many bytes as the
 * 4-byte request asks for). Messages are written with {@link Drainable}, so no extra copy is made.
 */
final class EchoProtocol {
  static final String SERVICE = "bench.ByteEcho";
  static final MethodDescriptor<byte[], byte[]> ECHO = method("Echo");
  static final MethodDescriptor<byte[], byte[]> SINK = method("Sink");
  static final MethodDescriptor<byte[], byte[]> SOURCE = method("Source");

  private EchoProtocol() {}

  private static MethodDescriptor<byte[], byte[]> method(String name) {
    return MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
        .setRequestMarshaller(BytesMarshaller.INSTANCE)
        .setResponseMarshaller(BytesMarshaller.INSTANCE)
        .build();
  }

  static byte[] sizeRequest(int size) {
    return new byte[] {
      (byte) (size >>> 24), (byte) (size >>> 16), (byte) (size >>> 8), (byte) size
    };
  }

  static int sizeOf(byte[] req) {
    return ((req[0] & 0xff) << 24)
        | ((req[1] & 0xff) << 16)
        | ((req[2] & 0xff) << 8)
        | (req[3] & 0xff);
  }

  /** byte[] as the whole message. */
  static final class BytesMarshaller implements MethodDescriptor.Marshaller<byte[]> {
    static final BytesMarshaller INSTANCE = new BytesMarshaller();

    @Override
    public InputStream stream(byte[] value) {
      return new BytesStream(value);
    }

    @Override
    public byte[] parse(InputStream stream) {
      try {
        // grpc hands a KnownLength stream: read it in one go into an exact-size array
        int n = stream.available();
        byte[] out = new byte[n];
        int off = 0;
        while (off < n) {
          int r = stream.read(out, off, n - off);
          if (r < 0) {
            break;
          }
          off += r;
        }
        if (off < n || stream.read() >= 0) {
          throw new IllegalStateException(
              "message length differs from its announced " + n + " bytes");
        }
        return out;
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private static final class BytesStream extends ByteArrayInputStream
      implements KnownLength, Drainable {
    BytesStream(byte[] buf) {
      super(buf);
    }

    @Override
    public int drainTo(OutputStream target) throws IOException {
      int n = count - pos;
      target.write(buf, pos, n);
      pos = count;
      return n;
    }
  }
}
