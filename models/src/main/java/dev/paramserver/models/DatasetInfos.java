package dev.paramserver.models;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.recordio.RecordIndex;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The {@code paramserver.v1.DatasetInfo} file beside a converted dataset: {@code PREFIX.dataset.pb}
 * for the files {@code PREFIX-00000.recordio}, ... or {@code PREFIX.recordio}.
 */
public final class DatasetInfos {
  /** The info file's suffix. */
  public static final String SUFFIX = RecordIndex.DATASET_INFO_SUFFIX;

  private static final Pattern SHARD = Pattern.compile("-\\d{5}\\.recordio$");

  private DatasetInfos() {}

  /** The info file for a {@code psctl convert --output} prefix. */
  public static Path forPrefix(String prefix) {
    String p = prefix.endsWith(".recordio") ? prefix.substring(0, prefix.length() - 9) : prefix;
    return Path.of(p + SUFFIX);
  }

  /** The info file that belongs to a data file (whether it exists or not). */
  public static Path forDataFile(Path file) {
    String name = file.getFileName().toString();
    String base = SHARD.matcher(name).replaceFirst("");
    if (base.equals(name) && name.endsWith(".recordio")) {
      base = name.substring(0, name.length() - 9);
    }
    return file.resolveSibling(base + SUFFIX);
  }

  public static DatasetInfo read(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file)) {
      return DatasetInfo.parseFrom(in);
    } catch (InvalidProtocolBufferException e) {
      throw new IOException(file + " is not a paramserver dataset info file: " + e.getMessage(), e);
    }
  }

  /** Writes atomically (a temp file, fsync, rename over {@code file}). */
  public static void write(Path file, DatasetInfo info) throws IOException {
    AtomicFiles.write(file, info);
  }

  /**
   * The info of the datasets the files belong to, if any has one.
   *
   * @throws IOException when two of the files' datasets disagree on label names or scaling
   */
  public static Optional<DatasetInfo> find(List<Path> files) throws IOException {
    Map<String, DatasetInfo> found = new LinkedHashMap<>();
    for (Path f : files) {
      Path info = forDataFile(f);
      if (!found.containsKey(info.toString()) && Files.isRegularFile(info)) {
        found.put(info.toString(), read(info));
      }
    }
    return agreed(found);
  }

  /**
   * The info of the datasets the files or objects the globs match belong to, local or {@code s3://}
   * (the info object beside the data objects, named by the same rule).
   *
   * @throws IOException when two of the datasets disagree on label names or scaling
   */
  public static Optional<DatasetInfo> findForGlobs(Storage storage, List<String> globs)
      throws IOException {
    if (globs.isEmpty()) {
      return Optional.empty();
    }
    Map<String, DatasetInfo> found = new LinkedHashMap<>();
    for (String location : storage.expandGlobs(globs)) {
      String info = forDataLocation(location);
      if (!found.containsKey(info) && storage.exists(info)) {
        try (InputStream in = storage.openStream(info)) {
          found.put(info, DatasetInfo.parseFrom(in));
        } catch (InvalidProtocolBufferException e) {
          throw new IOException(
              info + " is not a paramserver dataset info file: " + e.getMessage(), e);
        }
      }
    }
    return agreed(found);
  }

  /** The info location that belongs to a data file or object location (a path or a URI). */
  public static String forDataLocation(String location) {
    int slash = location.lastIndexOf('/');
    String dir = location.substring(0, slash + 1);
    String name = location.substring(slash + 1);
    String base = SHARD.matcher(name).replaceFirst("");
    if (base.equals(name) && name.endsWith(".recordio")) {
      base = name.substring(0, name.length() - 9);
    }
    return dir + base + SUFFIX;
  }

  private static Optional<DatasetInfo> agreed(Map<String, DatasetInfo> found) throws IOException {
    String firstPath = null;
    DatasetInfo first = null;
    for (Map.Entry<String, DatasetInfo> e : found.entrySet()) {
      if (first == null) {
        firstPath = e.getKey();
        first = e.getValue();
      } else if (!first.getLabelNamesList().equals(e.getValue().getLabelNamesList())
          || !first.getFeatureScaling().equals(e.getValue().getFeatureScaling())) {
        throw new IOException(
            "the data files belong to datasets with different label names or feature scaling: "
                + firstPath
                + " and "
                + e.getKey()
                + " (convert them with the same --statistics-from)");
      }
    }
    return Optional.ofNullable(first);
  }

  /**
   * {@link #find} over the local files the globs match; globs with a URI scheme ({@code s3://...})
   * are skipped, their infos are not read here.
   */
  public static Optional<DatasetInfo> findForGlobs(List<String> globs) throws IOException {
    List<String> local = globs.stream().filter(g -> !g.contains("://")).toList();
    return local.isEmpty() ? Optional.empty() : find(RecordIndex.expandGlobs(local));
  }

  /**
   * Checks that data to run a model on numbers its classes as the model does.
   *
   * @param modelLabels the model's label names (empty: none)
   * @param globs the data's globs
   * @throws IllegalArgumentException when both name their classes and the names differ
   */
  public static void checkLabels(List<String> modelLabels, List<String> globs) throws IOException {
    checkLabels(modelLabels, findForGlobs(globs));
  }

  /**
   * Like {@link #checkLabels(List, List)} for globs local or {@code s3://} (the info objects beside
   * the data objects are read too).
   */
  public static void checkLabels(Storage storage, List<String> modelLabels, List<String> globs)
      throws IOException {
    checkLabels(modelLabels, findForGlobs(storage, globs));
  }

  private static void checkLabels(List<String> modelLabels, Optional<DatasetInfo> data) {
    if (!modelLabels.isEmpty()
        && data.isPresent()
        && data.get().getLabelNamesCount() > 0
        && !data.get().getLabelNamesList().equals(modelLabels)) {
      throw new IllegalArgumentException(
          "the data names its classes "
              + data.get().getLabelNamesList()
              + ", the model "
              + modelLabels
              + ": convert the data with --statistics-from the training data's .dataset.pb");
    }
  }
}
