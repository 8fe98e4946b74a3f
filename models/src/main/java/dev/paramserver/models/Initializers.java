package dev.paramserver.models;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.zip.CRC32;

/** Deterministic initial values: the same seed and name give the same values on every trainer. */
public final class Initializers {
  private Initializers() {}

  /** Fills {@code dst} with the initial values of a dense parameter. */
  public static void fill(ParameterDef def, float[] dst, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed ^ nameHash(def.name()));
    ParameterDef.Init init = def.init();
    if (init instanceof ParameterDef.Normal n) {
      for (int i = 0; i < dst.length; i++) {
        dst[i] = (float) (gaussian(rnd) * n.stddev());
      }
    } else if (init instanceof ParameterDef.Uniform u) {
      for (int i = 0; i < dst.length; i++) {
        dst[i] = (float) ((rnd.nextDouble() * 2 - 1) * u.limit());
      }
    } else {
      Arrays.fill(dst, 0f);
    }
  }

  /** A model's initial parameters. */
  public static Parameters initial(Model model, long seed) {
    Parameters p = Parameters.zerosLike(model);
    for (ParameterDef def : model.parameters()) {
      if (!def.sparse()) {
        fill(def, p.dense(def.name()), seed);
      }
    }
    return p;
  }

  static long nameHash(String name) {
    CRC32 crc = new CRC32();
    crc.update(name.getBytes(StandardCharsets.UTF_8));
    return crc.getValue() * 0x9E3779B97F4A7C15L;
  }

  private static double gaussian(SplittableRandom rnd) {
    double u1 = rnd.nextDouble();
    double u2 = rnd.nextDouble();
    return Math.sqrt(-2 * Math.log(Math.max(u1, 1e-300))) * Math.cos(2 * Math.PI * u2);
  }
}
