package dev.paramserver.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Unmounts the disks a killed soak left behind. A soak that ends (or fails) unmounts its own disks;
 * one killed (a timeout, SIGKILL, a CI run cut short) leaves its ext4, loop device and tmpfs
 * mounted under a temporary directory that no run cleans. {@link SoakDisks#mount} writes an owner
 * file naming its process (pid and start time) beside the disks; before mounting new ones it sweeps
 * the mounts of every disks directory whose owner is no longer running. Mounts with no owner file,
 * or whose owner still runs (another soak on the same machine), are left alone.
 */
final class StaleDisks {
  // a SoakDisks mount point: <root>/wal-<i> (the ext4 on its loop device) or <root>/tmpfs-<i>
  private static final Pattern MOUNT_POINT = Pattern.compile("(.*)/(wal|tmpfs)-\\d+");

  private StaleDisks() {}

  /** The owner file's content for this process: its pid and start time. */
  static String thisProcess() {
    ProcessHandle self = ProcessHandle.current();
    return self.pid() + " " + startOf(self).orElse("");
  }

  /** Unmounts the disks of every soak whose owner (named by {@code ownerFile}) has ended. */
  static void sweep(String ownerFile) {
    List<String[]> stale = new ArrayList<>();
    try (BufferedReader mounts = Files.newBufferedReader(Path.of("/proc/mounts"))) {
      for (String line = mounts.readLine(); line != null; line = mounts.readLine()) {
        String[] fields = line.split(" ");
        Matcher m = fields.length > 2 ? MOUNT_POINT.matcher(fields[1]) : null;
        if (m != null && m.matches() && ended(Path.of(m.group(1)).resolve(ownerFile))) {
          stale.add(new String[] {fields[0], fields[1], m.group(2)});
        }
      }
    } catch (IOException e) {
      return; // no /proc/mounts: nothing this class could have mounted
    }
    // the ext4s first (each frees its loop device), then the tmpfs under their images
    for (String[] mount : stale) {
      if (mount[2].equals("wal")) {
        System.out.println("SOAK unmounting a killed soak's disk " + mount[1]);
        SoakDisks.quietly("umount", "-l", mount[1]);
        if (mount[0].startsWith("/dev/loop")) {
          SoakDisks.quietly("losetup", "-d", mount[0]);
        }
      }
    }
    for (String[] mount : stale) {
      if (mount[2].equals("tmpfs")) {
        SoakDisks.quietly("umount", "-l", mount[1]);
      }
    }
  }

  /** Whether the owner file names a process that is no longer running (false without the file). */
  private static boolean ended(Path owner) {
    String[] content;
    try {
      content = Files.readString(owner).trim().split(" ", 2);
    } catch (IOException e) {
      return false;
    }
    long pid;
    try {
      pid = Long.parseLong(content[0]);
    } catch (NumberFormatException e) {
      return false;
    }
    String start = content.length > 1 ? content[1] : "";
    return ProcessHandle.of(pid)
        .map(p -> !p.isAlive() || !start.equals(startOf(p).orElse("")))
        .orElse(true);
  }

  private static Optional<String> startOf(ProcessHandle process) {
    return process.info().startInstant().map(Object::toString);
  }
}
