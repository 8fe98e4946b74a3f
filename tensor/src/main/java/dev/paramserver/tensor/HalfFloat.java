package dev.paramserver.tensor;

/** IEEE 754 half precision (binary16) and bfloat16 conversions, round to nearest even. */
public final class HalfFloat {
  private HalfFloat() {}

  public static short toBfloat16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      return (short) ((bits >>> 16) | 0x40); // quiet NaN
    }
    int rounding = 0x7fff + ((bits >>> 16) & 1);
    return (short) ((bits + rounding) >>> 16);
  }

  public static float fromBfloat16(short h) {
    return Float.intBitsToFloat((h & 0xffff) << 16);
  }

  public static short toFloat16(float f) {
    int bits = Float.floatToRawIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int abs = bits & 0x7fffffff;
    if (abs >= 0x7f800000) { // Inf or NaN
      return (short) (sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
    }
    if (abs >= 0x477ff000) { // rounds to >= 65520: overflow to Inf
      return (short) (sign | 0x7c00);
    }
    if (abs < 0x38800000) { // subnormal half (or zero)
      if (abs < 0x33000000) { // below half of the smallest subnormal
        return (short) sign;
      }
      int exp = abs >>> 23;
      int mant = (abs & 0x7fffff) | 0x800000;
      int shift = 126 - exp; // 14..24
      int half = mant >>> shift;
      int rem = mant & ((1 << shift) - 1);
      int halfway = 1 << (shift - 1);
      if (rem > halfway || (rem == halfway && (half & 1) != 0)) {
        half++;
      }
      return (short) (sign | half);
    }
    int rebased = abs - 0x38000000; // exponent bias 127 -> 15
    int half = rebased >>> 13;
    int rem = rebased & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1) != 0)) {
      half++;
    }
    return (short) (sign | half);
  }

  public static float fromFloat16(short h) {
    int bits = h & 0xffff;
    int sign = (bits & 0x8000) << 16;
    int exp = (bits >>> 10) & 0x1f;
    int mant = bits & 0x3ff;
    if (exp == 0x1f) {
      return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
    }
    if (exp == 0) {
      if (mant == 0) {
        return Float.intBitsToFloat(sign);
      }
      float v = mant / 1024f / 16384f; // mant * 2^-24
      return sign != 0 ? -v : v;
    }
    return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }
}
