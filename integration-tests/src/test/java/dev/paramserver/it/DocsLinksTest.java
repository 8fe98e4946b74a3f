package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every link of the README and of docs/ resolves: a relative link names a file or directory of the
 * repository, and a {@code #anchor} names a heading of its Markdown file by GitHub's anchor rule.
 */
class DocsLinksTest {
  static final Path ROOT = DocsPaths.root();

  @Test
  void everyLink_inReadmeAndDocs_resolves() {
    Map<String, MarkdownFile> files = new HashMap<>();
    for (Path p : MarkdownFile.readmeAndDocs(ROOT)) {
      MarkdownFile f = new MarkdownFile(ROOT, p);
      files.put(f.name(), f);
    }
    List<String> broken = new ArrayList<>();
    int checked = 0;
    for (MarkdownFile f : files.values()) {
      for (MarkdownFile.Link link : f.links()) {
        String target = link.target();
        if (target.matches("^[a-z][a-z0-9+.-]*:.*")) {
          continue; // https:, mailto: ... are outside the repository
        }
        checked++;
        String where = f.name() + ":" + link.line() + " -> " + target;
        String pathPart = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
        String anchor = target.contains("#") ? target.substring(target.indexOf('#') + 1) : null;
        Path resolved =
            pathPart.isEmpty() ? f.path() : f.path().getParent().resolve(pathPart).normalize();
        if (!resolved.startsWith(ROOT)) {
          broken.add(where + " (outside the repository)");
          continue;
        }
        String name = ROOT.relativize(resolved).toString().replace('\\', '/');
        if (!Files.exists(resolved)) {
          broken.add(where + " (no such file: " + name + ")");
          continue;
        }
        if (anchor != null) {
          MarkdownFile page =
              files.computeIfAbsent(
                  name, n -> n.endsWith(".md") ? new MarkdownFile(ROOT, resolved) : null);
          if (page == null) {
            broken.add(where + " (an anchor into a file that is not Markdown)");
          } else if (!page.anchors().contains(anchor)) {
            broken.add(where + " (no heading with anchor #" + anchor + " in " + name + ")");
          }
        }
      }
    }
    assertThat(checked).as("links checked").isGreaterThan(50);
    assertThat(broken).as("broken links").isEmpty();
  }

  @Test
  void everyDocsPage_isLinkedFromTheIndex() {
    MarkdownFile index = new MarkdownFile(ROOT, ROOT.resolve("docs/README.md"));
    Set<String> linked = new java.util.TreeSet<>();
    for (MarkdownFile.Link link : index.links()) {
      String path = link.target().replaceFirst("#.*", "");
      if (!path.isEmpty() && !path.contains(":")) {
        Path p = index.path().getParent().resolve(path).normalize();
        linked.add(ROOT.relativize(p).toString().replace('\\', '/'));
      }
    }
    List<String> unlinked = new ArrayList<>();
    for (Path p : MarkdownFile.readmeAndDocs(ROOT)) {
      String name = ROOT.relativize(p).toString().replace('\\', '/');
      if (name.startsWith("docs/") && !name.equals("docs/README.md") && !linked.contains(name)) {
        unlinked.add(name);
      }
    }
    assertThat(unlinked).as("pages of docs/ that the index docs/README.md does not link").isEmpty();
  }

  @Test
  void slug_followsGitHubsRule() {
    assertThat(MarkdownFile.slug("Kubernetes (Helm)")).isEqualTo("kubernetes-helm");
    assertThat(MarkdownFile.slug("The main job: `scripts/run-local.sh`"))
        .isEqualTo("the-main-job-scriptsrun-localsh");
    assertThat(MarkdownFile.slug("2. Wire protocol and error reasons"))
        .isEqualTo("2-wire-protocol-and-error-reasons");
    assertThat(MarkdownFile.slug("Watch a job: the console and psctl"))
        .isEqualTo("watch-a-job-the-console-and-psctl");
  }

  @Test
  void readme_staysShort() {
    long lines = new MarkdownFile(ROOT, ROOT.resolve("README.md")).text().lines().count();
    assertThat(lines)
        .as(
            "README.md lines: keep it to what it is, set-up, quick start and links; the rest goes to docs/")
        .isLessThanOrEqualTo(250);
  }
}
