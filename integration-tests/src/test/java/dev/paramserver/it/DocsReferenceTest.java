package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.ErrorReason;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.ClassPathScanningCandidateComponentProvider;
import org.springframework.core.type.filter.AnnotationTypeFilter;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Reference tables of docs/ that list what the code defines hold exactly what it defines: the error
 * reasons of {@code errors.proto} and the admin endpoints of the services' controllers.
 */
class DocsReferenceTest {
  private static final Path ROOT = DocsPaths.root();

  @Test
  void errorReasonTable_isErrorsProto() {
    Set<String> documented = firstColumn("docs/reference/protocol.md", "## Error reasons");
    Set<String> defined =
        Arrays.stream(ErrorReason.values())
            .filter(r -> r != ErrorReason.UNRECOGNIZED && r != ErrorReason.ERROR_REASON_UNSPECIFIED)
            .map(Enum::name)
            .collect(Collectors.toCollection(TreeSet::new));
    assertThat(defined).hasSizeGreaterThan(10);
    assertThat(documented).as("reasons in docs/reference/protocol.md").isEqualTo(defined);
  }

  @Test
  void adminEndpointTable_isTheServicesControllers() throws Exception {
    Set<String> documented = firstColumn("docs/reference/admin-api.md", "## Admin");
    Set<String> served = new TreeSet<>();
    ClassPathScanningCandidateComponentProvider scan =
        new ClassPathScanningCandidateComponentProvider(false);
    scan.addIncludeFilter(new AnnotationTypeFilter(RestController.class));
    for (BeanDefinition bean : scan.findCandidateComponents("dev.paramserver")) {
      Class<?> type = Class.forName(bean.getBeanClassName());
      RequestMapping base = type.getAnnotation(RequestMapping.class);
      String prefix = base == null ? "" : first(base.value(), base.path());
      for (Method m : type.getDeclaredMethods()) {
        GetMapping get = m.getAnnotation(GetMapping.class);
        if (get != null) {
          served.add("GET " + prefix + first(get.value(), get.path()));
        }
        PostMapping post = m.getAnnotation(PostMapping.class);
        if (post != null) {
          served.add("POST " + prefix + first(post.value(), post.path()));
        }
        DeleteMapping delete = m.getAnnotation(DeleteMapping.class);
        if (delete != null) {
          served.add("DELETE " + prefix + first(delete.value(), delete.path()));
        }
      }
    }
    assertThat(served).as("admin endpoints of the controllers").hasSizeGreaterThan(5);
    assertThat(documented).as("endpoints in docs/reference/admin-api.md").isEqualTo(served);
  }

  private static String first(String[] value, String[] path) {
    String[] names = value.length > 0 ? value : path;
    return names.length == 0 ? "" : names[0];
  }

  /** The code spans that open the rows of the first table after a heading. */
  private static Set<String> firstColumn(String file, String heading) {
    String text = new MarkdownFile(ROOT, ROOT.resolve(file)).text();
    int at = text.indexOf(heading);
    assertThat(at).as("%s has a section %s", file, heading).isNotNegative();
    Set<String> out = new TreeSet<>();
    Matcher m = Pattern.compile("(?m)^\\| `([^`]+)` \\|").matcher(text.substring(at));
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }
}
