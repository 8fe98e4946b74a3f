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
  /**
   * Pages linked from the index that arrive with other branches (the psctl reference and run
   * tracking); they are not in this branch yet. Remove an entry once its page is merged: the test
   * then checks links to it like any other.
   */
  static final Set<String> ARRIVING_WITH_OTHER_BRANCHES =
      Set.of("docs/psctl.md", "docs/tracking.md");

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
        if (ARRIVING_WITH_OTHER_BRANCHES.contains(name)) {
          continue;
        }
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
    assertThat(linked).containsAll(ARRIVING_WITH_OTHER_BRANCHES);
  }

  @Test
  void arrivingPages_areStillMissingHere() {
    // once a page of the allow-list is merged, the entry must go, so that its links are checked
    for (String page : ARRIVING_WITH_OTHER_BRANCHES) {
      assertThat(ROOT.resolve(page))
          .as("%s exists now: remove it from ARRIVING_WITH_OTHER_BRANCHES", page)
          .doesNotExist();
    }
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
