package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HalfFloatTest {

  /** The value of a float16 bit pattern, computed from the IEEE 754 definition. */
  private static double float16Value(int h) {
    int sign = (h >>> 15) & 1;
    int exp = (h >>> 10) & 0x1f;
    int mant = h & 0x3ff;
    double v = exp == 0 ? Math.scalb((double) mant, -24) : Math.scalb(1024.0 + mant, exp - 25);
    return sign == 1 ? -v : v;
  }

  private static boolean isFloat16NaN(short h) {
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
  }

  private static int f16(float f) {
    return HalfFloat.toFloat16(f) & 0xffff;
  }

  private static int bf16(float f) {
    return HalfFloat.toBfloat16(f) & 0xffff;
  }

  // ---- float16 ----

  @Test
  void float16_exactValues_haveTheirStandardBitPatterns() {
    assertThat(f16(1.0f)).isEqualTo(0x3c00);
    assertThat(f16(-2.0f)).isEqualTo(0xc000);
    assertThat(f16(0.5f)).isEqualTo(0x3800);
    assertThat(f16(65504f)).isEqualTo(0x7bff); // largest finite
    assertThat(f16(0x1p-14f)).isEqualTo(0x0400); // smallest normal
    assertThat(f16(0x1p-24f)).isEqualTo(0x0001); // smallest subnormal
    assertThat(f16(1023 * 0x1p-24f)).isEqualTo(0x03ff); // largest subnormal
    assertThat(f16(0.0f)).isEqualTo(0x0000);
    assertThat(f16(-0.0f)).isEqualTo(0x8000);
  }

  @Test
  void float16_everyFiniteAndInfinitePattern_decodesToItsValueAndEncodesBackToItself() {
    for (int h = 0; h < 0x10000; h++) {
      short bits = (short) h;
      if (isFloat16NaN(bits)) {
        continue;
      }
      float decoded = HalfFloat.fromFloat16(bits);
      if ((h & 0x7fff) == 0x7c00) {
        assertThat(decoded)
            .isEqualTo(h == 0x7c00 ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY);
      } else {
        assertThat((double) decoded).as("value of 0x%04x", h).isEqualTo(float16Value(h));
      }
      assertThat(f16(decoded)).as("round trip of 0x%04x", h).isEqualTo(h);
    }
    assertThat(Float.floatToRawIntBits(HalfFloat.fromFloat16((short) 0x8000)))
        .as("negative zero keeps its sign")
        .isEqualTo(Float.floatToRawIntBits(-0.0f));
  }

  @Test
  void float16_halfwayCases_roundToEven_andAnythingPastHalfwayRoundsAway() {
    // 1 + 2^-11 lies halfway between 0x3c00 (even) and 0x3c01
    assertThat(f16(1f + 0x1p-11f)).isEqualTo(0x3c00);
    assertThat(f16(Math.nextUp(1f + 0x1p-11f))).isEqualTo(0x3c01);
    assertThat(f16(Math.nextDown(1f + 0x1p-11f))).isEqualTo(0x3c00);
    // 1 + 3 * 2^-11 lies halfway between 0x3c01 and 0x3c02 (even)
    assertThat(f16(1f + 3 * 0x1p-11f)).isEqualTo(0x3c02);
    assertThat(f16(-(1f + 3 * 0x1p-11f))).isEqualTo(0xbc02);
  }

  @Test
  void float16_midpointOfEveryAdjacentFinitePair_roundsToTheEvenPattern() {
    for (int h = 0; h < 0x7bff; h++) {
      // the midpoint needs 12 significant bits: exact in a float
      float lo = HalfFloat.fromFloat16((short) h);
      float hi = HalfFloat.fromFloat16((short) (h + 1));
      float mid = (float) (((double) lo + hi) / 2);
      int even = (h & 1) == 0 ? h : h + 1;
      assertThat(f16(mid)).as("midpoint of 0x%04x and 0x%04x", h, h + 1).isEqualTo(even);
      assertThat(f16(Math.nextDown(mid))).isEqualTo(h);
      assertThat(f16(Math.nextUp(mid))).isEqualTo(h + 1);
      assertThat(f16(-mid)).isEqualTo(0x8000 | even);
    }
  }

  @Test
  void float16_subnormals_roundToNearestEven_andTinyValuesFlushToSignedZero() {
    assertThat(f16(0x1p-25f)).as("halfway between 0 and the smallest subnormal").isEqualTo(0);
    assertThat(f16(Math.nextUp(0x1p-25f))).isEqualTo(0x0001);
    assertThat(f16(3 * 0x1p-25f)).as("halfway between 0x0001 and 0x0002").isEqualTo(0x0002);
    assertThat(f16(5 * 0x1p-25f)).as("halfway between 0x0002 and 0x0003").isEqualTo(0x0002);
    assertThat(f16(1023.5f * 0x1p-24f))
        .as("halfway between the largest subnormal and the smallest normal")
        .isEqualTo(0x0400);
    assertThat(f16(Float.MIN_VALUE)).isEqualTo(0x0000);
    assertThat(f16(-Float.MIN_VALUE)).isEqualTo(0x8000);
    assertThat(f16(-0x1p-30f)).isEqualTo(0x8000);
  }

  @Test
  void float16_infinities_mapToInfinities() {
    assertThat(f16(Float.POSITIVE_INFINITY)).isEqualTo(0x7c00);
    assertThat(f16(Float.NEGATIVE_INFINITY)).isEqualTo(0xfc00);
    assertThat(HalfFloat.fromFloat16((short) 0x7c00)).isEqualTo(Float.POSITIVE_INFINITY);
    assertThat(HalfFloat.fromFloat16((short) 0xfc00)).isEqualTo(Float.NEGATIVE_INFINITY);
  }

  @Test
  void float16_valuesBeyondTheLargestFinite_overflowToInfinity() {
    assertThat(f16(65519f)).as("below the halfway point to 65536").isEqualTo(0x7bff);
    assertThat(f16(65520f)).as("halfway, rounds to the even pattern: infinity").isEqualTo(0x7c00);
    assertThat(f16(65536f)).isEqualTo(0x7c00);
    assertThat(f16(1e10f)).isEqualTo(0x7c00);
    assertThat(f16(-1e10f)).isEqualTo(0xfc00);
    assertThat(f16(Float.MAX_VALUE)).isEqualTo(0x7c00);
    assertThat(f16(-Float.MAX_VALUE)).isEqualTo(0xfc00);
  }

  @Test
  void float16_nan_staysNaN_evenWhenItsPayloadIsOnlyInTheDroppedBits() {
    assertThat(isFloat16NaN(HalfFloat.toFloat16(Float.NaN))).isTrue();
    // payload only in the low 13 bits: a plain truncation would turn it into infinity
    float lowPayloadNaN = Float.intBitsToFloat(0x7f800001);
    assertThat(isFloat16NaN(HalfFloat.toFloat16(lowPayloadNaN))).isTrue();
    assertThat(isFloat16NaN(HalfFloat.toFloat16(Float.intBitsToFloat(0xff800001)))).isTrue();
    assertThat(HalfFloat.fromFloat16(HalfFloat.toFloat16(Float.NaN))).isNaN();
    for (int mant = 1; mant < 0x400; mant++) {
      assertThat(HalfFloat.fromFloat16((short) (0x7c00 | mant))).isNaN();
      assertThat(HalfFloat.fromFloat16((short) (0xfc00 | mant))).isNaN();
    }
  }

  // ---- bfloat16 ----

  @Test
  void bfloat16_exactValues_keepTheUpperHalfOfTheFloat() {
    assertThat(bf16(1.0f)).isEqualTo(0x3f80);
    assertThat(bf16(-2.0f)).isEqualTo(0xc000);
    assertThat(bf16(0.0f)).isEqualTo(0x0000);
    assertThat(bf16(-0.0f)).isEqualTo(0x8000);
    assertThat(bf16(Float.MIN_NORMAL)).isEqualTo(0x0080);
  }

  @Test
  void bfloat16_everyNonNaNPattern_roundTripsExactly() {
    for (int h = 0; h < 0x10000; h++) {
      if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0) {
        continue; // NaN
      }
      float decoded = HalfFloat.fromBfloat16((short) h);
      assertThat(Float.floatToRawIntBits(decoded)).isEqualTo(h << 16);
      assertThat(bf16(decoded)).as("round trip of 0x%04x", h).isEqualTo(h);
    }
  }

  @Test
  void bfloat16_halfwayCases_roundToEven() {
    assertThat(bf16(Float.intBitsToFloat(0x3f808000))).as("halfway, even below").isEqualTo(0x3f80);
    assertThat(bf16(Float.intBitsToFloat(0x3f818000))).as("halfway, even above").isEqualTo(0x3f82);
    assertThat(bf16(Float.intBitsToFloat(0x3f808001))).isEqualTo(0x3f81);
    assertThat(bf16(Float.intBitsToFloat(0x3f807fff))).isEqualTo(0x3f80);
    assertThat(bf16(Float.intBitsToFloat(0xbf818000))).isEqualTo(0xbf82);
    // a carry out of the mantissa moves to the next binade
    assertThat(bf16(Float.intBitsToFloat(0x3fffc000))).isEqualTo(0x4000);
  }

  @Test
  void bfloat16_subnormals_roundToNearestEven() {
    assertThat(bf16(Float.intBitsToFloat(0x00010000))).isEqualTo(0x0001);
    assertThat(bf16(Float.MIN_VALUE)).isEqualTo(0x0000);
    assertThat(bf16(Float.intBitsToFloat(0x00008000))).as("halfway to 0x0001").isEqualTo(0x0000);
    assertThat(bf16(Float.intBitsToFloat(0x00018000))).as("halfway to 0x0002").isEqualTo(0x0002);
    assertThat(bf16(Float.intBitsToFloat(0x80018000))).isEqualTo(0x8002);
    assertThat(bf16(Float.intBitsToFloat(0x007fffff)))
        .as("rounds up to the smallest normal")
        .isEqualTo(0x0080);
  }

  @Test
  void bfloat16_infinities_andOverflow() {
    assertThat(bf16(Float.POSITIVE_INFINITY)).isEqualTo(0x7f80);
    assertThat(bf16(Float.NEGATIVE_INFINITY)).isEqualTo(0xff80);
    assertThat(HalfFloat.fromBfloat16((short) 0x7f80)).isEqualTo(Float.POSITIVE_INFINITY);
    assertThat(bf16(Float.intBitsToFloat(0x7f7f7fff))).as("below halfway").isEqualTo(0x7f7f);
    assertThat(bf16(Float.MAX_VALUE)).as("past the largest bfloat16").isEqualTo(0x7f80);
    assertThat(bf16(-Float.MAX_VALUE)).isEqualTo(0xff80);
  }

  @Test
  void bfloat16_nan_staysNaN_evenWhenItsPayloadIsOnlyInTheDroppedBits() {
    assertThat(HalfFloat.fromBfloat16(HalfFloat.toBfloat16(Float.NaN))).isNaN();
    // payload only in the low 16 bits: a plain truncation (or rounding) would give infinity
    assertThat(HalfFloat.fromBfloat16(HalfFloat.toBfloat16(Float.intBitsToFloat(0x7f800001))))
        .isNaN();
    assertThat(HalfFloat.fromBfloat16(HalfFloat.toBfloat16(Float.intBitsToFloat(0xffffffff))))
        .isNaN();
    assertThat(HalfFloat.fromBfloat16(HalfFloat.toBfloat16(Float.intBitsToFloat(0x7fbfffff))))
        .as("rounding the payload must not carry into the sign")
        .isNaN();
  }
}
