package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shared test vectors of the sparse row routing rule ({@code docs/reference/routing.md}): every
 * client (this module, {@code clients/python}) must give the same owner for each (table, row,
 * pservers) of {@code docs/reference/routing-vectors.tsv}.
 */
class ShardPlacementVectorsTest {
  private static final Path VECTORS = Path.of("..", "docs", "reference", "routing-vectors.tsv");

  @Test
  void ownerOfRow_matchesEverySharedVector() throws IOException {
    List<String> lines = Files.readAllLines(VECTORS, StandardCharsets.UTF_8);
    int checked = 0;
    boolean nonAscii = false;
    boolean extremes = false;
    for (String line : lines) {
      if (line.startsWith("#") || line.startsWith("table\t") || line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\t", -1);
      assertThat(f).as(line).hasSize(4);
      long row = Long.parseLong(f[1]);
      assertThat(ShardPlacement.ownerOfRow(f[0], row, Integer.parseInt(f[2])))
          .as("ownerOfRow(%s, %s, %s)", f[0], f[1], f[2])
          .isEqualTo(Integer.parseInt(f[3]));
      nonAscii |= f[0].chars().anyMatch(c -> c > 127);
      extremes |= row == Long.MIN_VALUE;
      checked++;
    }
    assertThat(checked).isGreaterThanOrEqualTo(300);
    assertThat(nonAscii).as("vectors with non-ASCII table names").isTrue();
    assertThat(extremes).as("vectors with Long.MIN_VALUE").isTrue();
  }
}
