package dev.paramserver.tensor;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.proto.v1.DataType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/**
 * Float tensors as little-endian bytes on the wire. Encoding wraps a fresh array without a second
 * copy; decoding reads straight from the received buffer.
 */
public final class TensorCodec {
  private TensorCodec() {}

  /** Bytes per element of a wire type. */
  public static int elementSize(DataType dtype) {
    return switch (dtype) {
      case FLOAT32, INT32 -> 4;
      case FLOAT16, BFLOAT16 -> 2;
      case FLOAT64, INT64 -> 8;
      default -> throw new IllegalArgumentException("data type " + dtype + " has no element size");
    };
  }

  /** {@code length} floats from {@code src[offset]} as FLOAT32 bytes. */
  public static ByteString encode(float[] src, int offset, int length) {
    byte[] bytes = new byte[length * 4];
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(src, offset, length);
    return UnsafeByteOperations.unsafeWrap(bytes);
  }

  /**
   * {@code length} floats from {@code src[offset]} as FLOAT32 bytes written into {@code into} (at
   * least {@code 4 * length} bytes long, a pooled array say): a view of its first bytes, valid
   * while the array is not written again.
   */
  public static ByteString encodeInto(float[] src, int offset, int length, byte[] into) {
    ByteBuffer.wrap(into).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(src, offset, length);
    return UnsafeByteOperations.unsafeWrap(into, 0, length * 4);
  }

  public static ByteString encode(float[] src) {
    return encode(src, 0, src.length);
  }

  /** Encodes as the given wire type (FLOAT32, FLOAT16 or BFLOAT16). */
  public static ByteString encode(float[] src, int offset, int length, DataType dtype) {
    return switch (dtype) {
      case FLOAT32 -> encode(src, offset, length);
      case FLOAT16, BFLOAT16 -> {
        byte[] bytes = new byte[length * 2];
        boolean bf = dtype == DataType.BFLOAT16;
        for (int i = 0; i < length; i++) {
          short h =
              bf ? HalfFloat.toBfloat16(src[offset + i]) : HalfFloat.toFloat16(src[offset + i]);
          bytes[2 * i] = (byte) h;
          bytes[2 * i + 1] = (byte) (h >>> 8);
        }
        yield UnsafeByteOperations.unsafeWrap(bytes);
      }
      default ->
          throw new IllegalArgumentException(
              "cannot encode floats as " + dtype + ": use FLOAT32, FLOAT16 or BFLOAT16");
    };
  }

  /** Number of elements in {@code data} of type {@code dtype}. */
  public static int elementCount(ByteString data, DataType dtype) {
    int size = elementSize(dtype);
    if (data.size() % size != 0) {
      throw new IllegalArgumentException(
          data.size() + " bytes is not a whole number of " + dtype + " elements");
    }
    return data.size() / size;
  }

  /** A little-endian float view of FLOAT32 bytes, without copying. */
  public static FloatBuffer floats(ByteString data) {
    return data.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
  }

  /** Decodes FLOAT32, FLOAT16 or BFLOAT16 bytes into {@code dst[dstOffset..]}. */
  public static void decode(ByteString data, DataType dtype, float[] dst, int dstOffset) {
    switch (dtype) {
      case FLOAT32 -> floats(data).get(dst, dstOffset, data.size() / 4);
      case FLOAT16, BFLOAT16 -> {
        ByteBuffer buf = data.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        int n = data.size() / 2;
        boolean bf = dtype == DataType.BFLOAT16;
        for (int i = 0; i < n; i++) {
          short h = buf.getShort(2 * i);
          dst[dstOffset + i] = bf ? HalfFloat.fromBfloat16(h) : HalfFloat.fromFloat16(h);
        }
      }
      default ->
          throw new IllegalArgumentException(
              "cannot decode " + dtype + " as floats: use FLOAT32, FLOAT16 or BFLOAT16");
    }
  }

  public static float[] decode(ByteString data, DataType dtype) {
    float[] out = new float[elementCount(data, dtype)];
    decode(data, dtype, out, 0);
    return out;
  }

  /** Decodes FLOAT32 bytes. */
  public static float[] decode(ByteString data) {
    return decode(data, DataType.FLOAT32);
  }
}
