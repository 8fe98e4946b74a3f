package dev.paramserver.it;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A small disk of its own for each pserver's write-ahead log ({@code paramserver.pserver.wal.dir}),
 * to fail on command: an ext4 file system on a loop device whose image file lies on a tmpfs of its
 * own. Mounting needs root (the soak's machine and CI run as root); {@link #mount} says why not
 * otherwise, and the disk faults are then not drawn.
 *
 * <ul>
 *   <li>{@link #fill}: a full disk. A filler file takes the ext4's free space, so the log's next
 *       write fails with ENOSPC.
 *   <li>{@link #failFsync}: an fsync error. A filler takes the tmpfs under the image instead: the
 *       ext4 still accepts writes into the page cache, but writing them back fails, so the log's
 *       next fsync fails (ENOSPC or EIO) while its writes succeed. The ext4 is mounted with {@code
 *       discard}, so the image holds tmpfs pages only for live blocks and a new write's blocks need
 *       new ones, however long the soak has run.
 *   <li>{@link #empty}: removes the fillers; {@link #replace} (process stopped) makes a new empty
 *       file system, as an operator replaces a disk whose fsync failed (its pages may be gone).
 * </ul>
 */
final class SoakDisks implements AutoCloseable {
  // The image holds the live log (a segment per checkpoint interval, tens of MB at the soak's
  // push rate) and, per shard index, the log a pserver set aside when it became a backup (up to a
  // few segments, kept for an operator's forced takeover): 128 MB filled up by itself once after
  // 14 minutes of takeovers, a full disk no fault had made. The tmpfs holds only what the image's
  // live blocks take (discard), so the sizes cost memory only while a filler takes them.
  private static final String TMPFS_SIZE = "1280m";
  private static final String IMAGE_SIZE = "1G"; // below the tmpfs: it never fills by itself
  // names the process that mounted the disks under a root, so a later soak can unmount those of a
  // soak that was killed (see StaleDisks)
  private static final String OWNER_FILE = "owner";

  private final Path root;
  private final List<String> loops = new ArrayList<>();

  private SoakDisks(Path root) {
    this.root = root;
  }

  /**
   * Mounts {@code count} disks under {@code root}; throws {@link IOException} naming the failing
   * command (not root, no loop devices, no mount permission), after unmounting what was mounted.
   */
  static SoakDisks mount(Path root, int count) throws IOException, InterruptedException {
    StaleDisks.sweep(OWNER_FILE);
    SoakDisks disks = new SoakDisks(root);
    try {
      Files.createDirectories(root);
      Files.writeString(root.resolve(OWNER_FILE), StaleDisks.thisProcess());
      for (int i = 0; i < count; i++) {
        Files.createDirectories(disks.backing(i));
        Files.createDirectories(disks.walDir(i));
        run(
            "mount",
            "-t",
            "tmpfs",
            "-o",
            "size=" + TMPFS_SIZE,
            "tmpfs",
            disks.backing(i).toString());
        disks.loops.add(""); // mounted tmpfs, loop not yet attached
        run("truncate", "-s", IMAGE_SIZE, disks.image(i).toString());
        disks.makeFileSystem(i);
      }
    } catch (IOException | InterruptedException | RuntimeException e) {
      disks.close();
      throw e;
    }
    return disks;
  }

  /** The write-ahead log directory of pserver {@code i}, on its own disk. */
  Path walDir(int i) {
    return root.resolve("wal-" + i);
  }

  private Path backing(int i) {
    return root.resolve("tmpfs-" + i);
  }

  private Path image(int i) {
    return backing(i).resolve("disk.img");
  }

  private void makeFileSystem(int i) throws IOException, InterruptedException {
    run("mkfs.ext4", "-q", "-F", image(i).toString());
    String loop = run("losetup", "-f", "--show", image(i).toString()).trim();
    loops.set(i, loop);
    // discard: the blocks of a deleted log segment are punched out of the image, so the tmpfs
    // holds only what the log holds now. Without it a long soak wrote every block of the image
    // once, a full tmpfs then no longer failed any write-back, and an fsync fault did nothing
    run("mount", "-o", "discard", loop, walDir(i).toString());
  }

  /** A full disk: the ext4 of pserver {@code i} has no free byte left. */
  void fill(int i) throws IOException {
    fillUp(walDir(i).resolve("filler"));
  }

  /** An fsync error: the tmpfs under pserver {@code i}'s image is full. */
  void failFsync(int i) throws IOException {
    fillUp(backing(i).resolve("filler"));
  }

  /**
   * What each disk holds, for a failure report: its file system's use ({@code df}) and the size of
   * every file and directory in its log directory.
   */
  String usage() {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < loops.size(); i++) {
      out.append("disk ").append(i).append(":\n");
      try {
        out.append(run("df", "-k", walDir(i).toString(), backing(i).toString()));
        out.append(run("du", "-sk", "--apparent-size", walDir(i).resolve(".").toString()));
        try (java.util.stream.Stream<Path> files = Files.list(walDir(i))) {
          for (Path f : files.sorted().toList()) {
            out.append(run("du", "-sk", f.toString()));
          }
        }
      } catch (IOException e) {
        out.append(e.getMessage()).append('\n');
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return out.toString();
  }

  /** Removes the fillers of pserver {@code i}'s disk. */
  void empty(int i) throws IOException {
    Files.deleteIfExists(walDir(i).resolve("filler"));
    Files.deleteIfExists(backing(i).resolve("filler"));
  }

  /**
   * Repairs pserver {@code i}'s disk keeping what it holds (its log): the fillers are removed, the
   * file system is unmounted, checked and mounted again (a failed write-back may have left it with
   * errors). Its process must be stopped.
   */
  void repair(int i) throws IOException, InterruptedException {
    empty(i);
    run("umount", walDir(i).toString());
    run("losetup", "-d", loops.get(i));
    loops.set(i, "");
    // preen: fixes what it safely can; exit code 1 (errors corrected) is not a failure
    quietly("e2fsck", "-p", image(i).toString());
    String loop = run("losetup", "-f", "--show", image(i).toString()).trim();
    loops.set(i, loop);
    run("mount", "-o", "discard", loop, walDir(i).toString());
  }

  /** Replaces pserver {@code i}'s disk by an empty one; its process must be stopped. */
  void replace(int i) throws IOException, InterruptedException {
    empty(i);
    run("umount", walDir(i).toString());
    run("losetup", "-d", loops.get(i));
    loops.set(i, "");
    makeFileSystem(i);
  }

  private static void fillUp(Path filler) throws IOException {
    byte[] chunk = new byte[1 << 20];
    // appends: a second call takes what was freed since the first
    try (OutputStream out =
        Files.newOutputStream(
            filler,
            java.nio.file.StandardOpenOption.CREATE,
            java.nio.file.StandardOpenOption.APPEND)) {
      while (true) {
        out.write(chunk);
      }
    } catch (IOException full) {
      if (!Files.exists(filler)) {
        throw full;
      }
      // no space left: what was wanted
    }
  }

  @Override
  public void close() {
    for (int i = loops.size() - 1; i >= 0; i--) {
      quietly("umount", "-l", walDir(i).toString());
      if (!loops.get(i).isEmpty()) {
        quietly("losetup", "-d", loops.get(i));
      }
      quietly("umount", "-l", backing(i).toString());
    }
    loops.clear();
  }

  static void quietly(String... command) {
    try {
      run(command);
    } catch (IOException e) {
      System.out.println("SOAK disk clean-up: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Runs {@code command} (up to 60 s) and returns its output; throws naming it when it fails. */
  static String run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException(String.join(" ", command) + ": no end within 60 s");
    }
    String out =
        new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new IOException(String.join(" ", command) + " failed (" + p.exitValue() + "): " + out);
    }
    return out;
  }
}
