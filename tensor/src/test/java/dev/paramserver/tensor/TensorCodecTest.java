package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import org.junit.jupiter.api.Test;

class TensorCodecTest {

  @Test
  void float32_isLittleEndian_andRoundTripsExactly() {
    float[] values = {1.0f, -0.0f, Float.MIN_VALUE, Float.MAX_VALUE, Float.NaN};
    ByteString bytes = TensorCodec.encode(values);
    assertThat(bytes.size()).isEqualTo(20);
    assertThat(bytes.substring(0, 4).toByteArray()).containsExactly(0x00, 0x00, 0x80, 0x3f);
    float[] back = TensorCodec.decode(bytes);
    for (int i = 0; i < values.length; i++) {
      assertThat(Float.floatToRawIntBits(back[i])).isEqualTo(Float.floatToRawIntBits(values[i]));
    }
  }

  @Test
  void halfTypes_useTwoLittleEndianBytesPerElement_andDecodeToTheRoundedValues() {
    float[] values = {1.0f, -2.0f, 1f + 0x1p-11f, 1e10f};
    ByteString f16 = TensorCodec.encode(values, 0, values.length, DataType.FLOAT16);
    assertThat(f16.substring(0, 2).toByteArray()).containsExactly(0x00, 0x3c);
    assertThat(TensorCodec.elementCount(f16, DataType.FLOAT16)).isEqualTo(4);
    assertThat(TensorCodec.decode(f16, DataType.FLOAT16))
        .containsExactly(1.0f, -2.0f, 1.0f, Float.POSITIVE_INFINITY);
    ByteString bf16 = TensorCodec.encode(values, 1, 2, DataType.BFLOAT16);
    assertThat(bf16.toByteArray()).containsExactly(0x00, 0xc0, 0x80, 0x3f);
    float[] dst = new float[4];
    TensorCodec.decode(bf16, DataType.BFLOAT16, dst, 2);
    assertThat(dst).containsExactly(0f, 0f, -2.0f, 1.0f);
  }

  @Test
  void badInput_isRejectedWithAMessageNamingTheProblem() {
    assertThatThrownBy(
            () -> TensorCodec.elementCount(ByteString.copyFrom(new byte[3]), DataType.FLOAT32))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("3 bytes")
        .hasMessageContaining("FLOAT32");
    assertThatThrownBy(() -> TensorCodec.encode(new float[1], 0, 1, DataType.INT32))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("INT32");
    assertThatThrownBy(() -> TensorCodec.decode(ByteString.copyFrom(new byte[8]), DataType.FLOAT64))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("FLOAT64");
  }
}
