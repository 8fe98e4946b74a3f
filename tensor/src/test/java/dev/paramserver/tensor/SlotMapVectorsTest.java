package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.PlacementMap;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shared test vectors of the elastic placement (docs/explanation/elastic.md): every client
 * (this module, {@code clients/python}) must give the same slot for each (table, row, slots) of
 * {@code docs/reference/slot-vectors.tsv}, and the same row and block owners under the map of
 * {@code slot-vectors-map.pb}.
 */
class SlotMapVectorsTest {
  private static final Path DIR = Path.of("..", "docs", "reference");

  @Test
  void slotOfAndOwners_matchEverySharedVector() throws IOException {
    SlotMap map =
        SlotMap.fromProto(
            PlacementMap.parseFrom(Files.readAllBytes(DIR.resolve("slot-vectors-map.pb"))));
    assertThat(map.epoch()).isPositive();
    List<String> lines =
        Files.readAllLines(DIR.resolve("slot-vectors.tsv"), StandardCharsets.UTF_8);
    int[] checked = new int[3];
    for (String line : lines) {
      if (line.startsWith("#") || line.startsWith("kind\t") || line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\t", -1);
      assertThat(f).as(line).hasSize(5);
      int value = Integer.parseInt(f[4]);
      switch (f[0]) {
        case "slot" -> {
          long hash = ShardPlacement.tableHash(f[1]);
          assertThat(SlotMap.slotOf(hash, Long.parseLong(f[2]), Integer.parseInt(f[3])))
              .as(line)
              .isEqualTo(value);
          checked[0]++;
        }
        case "row" -> {
          assertThat(map.ownerOfRow(ShardPlacement.tableHash(f[1]), Long.parseLong(f[2])))
              .as(line)
              .isEqualTo(value);
          checked[1]++;
        }
        case "block" -> {
          assertThat(map.ownerOfBlock(f[1], Integer.parseInt(f[2]))).as(line).isEqualTo(value);
          checked[2]++;
        }
        default -> throw new AssertionError("unknown kind: " + line);
      }
    }
    assertThat(checked[0]).isGreaterThanOrEqualTo(150);
    assertThat(checked[1]).isGreaterThanOrEqualTo(150);
    assertThat(checked[2]).isGreaterThanOrEqualTo(20);
  }
}
