package dev.paramserver.tensor;

/**
 * One block of a dense parameter: {@code length} elements from {@code offset} of the flattened
 * parameter.
 */
public record BlockSpec(String name, int block, long offset, int length) {
  public long bytes() {
    return 4L * length;
  }

  /** {@code name#block}, for messages and maps. */
  public String id() {
    return name + "#" + block;
  }
}
