package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link StaleDisks}: a killed soak's mounts are swept, a running one's and unowned ones kept. */
class StaleDisksTest {

  @Test
  void sweep_unmountsTheDisksOfAnEndedOwner_keepsThoseOfALiveOwnerOrOfNone(@TempDir Path dir)
      throws Exception {
    Process ended = new ProcessBuilder("true").start();
    assertThat(ended.waitFor(30, TimeUnit.SECONDS)).isTrue();
    // a reaped process (or, were its pid taken again, another process started later)
    String endedOwner = ended.pid() + " 1970-01-01T00:00:00Z";
    Path killed = dir.resolve("killed/disks");
    Path running = dir.resolve("running/disks");
    Path unowned = dir.resolve("unowned/disks");
    Assumptions.assumeTrue(tmpfs(killed.resolve("tmpfs-0")), "mounting needs root");
    try {
      assertThat(tmpfs(running.resolve("tmpfs-0"))).isTrue();
      assertThat(tmpfs(unowned.resolve("tmpfs-1"))).isTrue();
      Files.writeString(killed.resolve("owner"), endedOwner);
      Files.writeString(running.resolve("owner"), StaleDisks.thisProcess());

      StaleDisks.sweep("owner");

      assertThat(mounted(killed.resolve("tmpfs-0"))).isFalse();
      assertThat(mounted(running.resolve("tmpfs-0"))).isTrue();
      assertThat(mounted(unowned.resolve("tmpfs-1"))).isTrue();
    } finally {
      for (Path p :
          new Path[] {
            killed.resolve("tmpfs-0"), running.resolve("tmpfs-0"), unowned.resolve("tmpfs-1")
          }) {
        if (mounted(p)) {
          SoakDisks.quietly("umount", "-l", p.toString());
        }
      }
    }
  }

  private static boolean tmpfs(Path at) throws IOException, InterruptedException {
    Files.createDirectories(at);
    try {
      SoakDisks.run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", at.toString());
      return true;
    } catch (IOException notRoot) {
      return false;
    }
  }

  private static boolean mounted(Path at) throws IOException {
    return Files.readAllLines(Path.of("/proc/mounts")).stream()
        .anyMatch(line -> line.split(" ")[1].equals(at.toString()));
  }
}
