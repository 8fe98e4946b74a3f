package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.psctl.Psctl;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;
import picocli.CommandLine;

/**
 * The master's web console in a real headless Chromium (Debian's chromium and chromium-driver,
 * driven by Selenium with the packaged driver: nothing is downloaded), during a job on real
 * processes (one cluster for the class): log in, see the job progress and the curves fill, the
 * Scaling panel say the job was never scaled, see a killed pserver flagged and its restart in the
 * events, press "checkpoint" and see the checkpoint ages reset, see the job's serving replica with
 * its version and how far behind it is; {@code psctl status} (the replica too), {@code watch} and
 * {@code stop} against the same job. Screenshots go to {@code target/console-screenshots/}.
 */
class ConsoleBrowserTest {
  private static final Path SHOTS = Paths.get("target", "console-screenshots");

  @TempDir static Path dir;
  static LocalCluster cluster;
  static WebDriver browser;
  static String whyNoBrowser;

  @BeforeAll
  static void startClusterAndBrowser() throws Exception {
    // checked before the cluster starts: without a browser nothing starts, and every test is
    // skipped with the reason (an assumption failing here would hide it: surefire reports an
    // aborted class as 0 tests run)
    whyNoBrowser = missingBrowser();
    if (whyNoBrowser != null) {
      System.err.println("ConsoleBrowserTest skipped: " + whyNoBrowser);
      return;
    }
    DemoData.Result demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder()
                .train(12000)
                .test(2000)
                .shards(2)
                .recordsPerChunk(200)
                .build());
    // the run folder (logs of every process) stays under target/ for a look after a failure
    Path run = Paths.get("target", "console-run").toAbsolutePath();
    deleteRecursively(run);
    ClusterSpec.Builder b = Jobs.spec(run);
    // short leases, so that a killed pserver is lost within seconds; not so short that a process
    // loses its lease while etcd is starved on a loaded CI machine (4 s did: a restarted pserver
    // lost its lease twice around the checkpoint press and the ages never started again)
    for (Role r : new Role[] {Role.MASTER, Role.PSERVER, Role.TRAINER}) {
      b.property(r, "paramserver.etcd.lease-ttl", "8s");
    }
    // many passes: the job outlasts the test, which ends it with psctl stop
    // and one serving replica following the job: the console lists it
    b.jar(Role.SERVING, Jobs.jar(Role.SERVING));
    b.job("console")
        .masters(1)
        .pservers(2)
        .trainers(2)
        .serving(1)
        .property(Role.MASTER, "paramserver.master.passes", "2000")
        .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "5m")
        .property(
            Role.TRAINER,
            "paramserver.trainer.train-data",
            dir.resolve("data") + "/train-*.recordio")
        .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString());
    cluster = new LocalCluster(b.build());
    cluster.start();
    browser = chromium();
  }

  @AfterAll
  static void stop() {
    if (browser != null) {
      browser.quit();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private static void deleteRecursively(Path p) throws java.io.IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (var files = Files.walk(p)) {
      for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(f);
      }
    }
  }

  private static Path driverPath() {
    return Path.of(System.getProperty("chromedriver", "/usr/bin/chromedriver"));
  }

  private static Path browserPath() {
    return Path.of(System.getProperty("chromium", "/usr/bin/chromium"));
  }

  /**
   * Why the browser tests cannot run here: no driver or no browser, naming what is missing and how
   * to install it; null when both are installed (CI installs them through {@code
   * scripts/install-deps.sh}), and then the tests run and fail on any error.
   */
  static String missingBrowser() {
    Path driver = driverPath();
    Path binary = browserPath();
    if (!Files.isExecutable(driver)) {
      return "no chromedriver at "
          + driver
          + ": install it with 'sudo apt-get install -y chromium-driver'"
          + " (scripts/install-deps.sh does, unless INSTALL_BROWSER=0) or name another"
          + " with -Dchromedriver=PATH";
    }
    if (!Files.isExecutable(binary)) {
      return "no Chromium at "
          + binary
          + ": install it with 'sudo apt-get install -y chromium'"
          + " (scripts/install-deps.sh does, unless INSTALL_BROWSER=0) or name another"
          + " with -Dchromium=PATH";
    }
    return null;
  }

  @BeforeEach
  void skipWithoutBrowser() {
    Assumptions.assumeTrue(whyNoBrowser == null, () -> whyNoBrowser);
  }

  /** Headless Chromium through the chromedriver of Debian's chromium-driver package. */
  static WebDriver chromium() {
    Path driver = driverPath();
    Path binary = browserPath();
    ChromeOptions options = new ChromeOptions();
    options.setBinary(binary.toFile());
    options.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,2000");
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(driver.toFile()).build();
    return new ChromeDriver(service, options);
  }

  private static String masterUrl() {
    return "http://127.0.0.1:" + cluster.process(Role.MASTER, 0).httpPort();
  }

  private static WebDriverWait waitUpTo(Duration d) {
    WebDriverWait w = new WebDriverWait(browser, d);
    w.pollingEvery(Duration.ofMillis(250));
    // the tables are redrawn every second: an element found may be replaced before it is read
    w.ignoring(StaleElementReferenceException.class);
    return w;
  }

  private static String text(String id) {
    return browser.findElement(By.id(id)).getText();
  }

  private static List<WebElement> pserverRows() {
    return browser.findElements(By.cssSelector("#pservers tbody tr"));
  }

  private static List<WebElement> servingRows() {
    return browser.findElements(By.cssSelector("#serving-replicas tbody tr"));
  }

  private static WebElement pserverRow(int index) {
    return browser.findElement(By.cssSelector("#pservers tbody tr[data-index='" + index + "']"));
  }

  private static long points(String chart) {
    Object n =
        ((JavascriptExecutor) browser)
            .executeScript(
                "const c = window.paramserverConsole.charts[arguments[0]];"
                    + " return c ? c.data[1].filter(v => v !== null).length : 0;",
                chart);
    return ((Number) n).longValue();
  }

  private static void screenshot(String name) throws Exception {
    Files.createDirectories(SHOTS);
    Path shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE).toPath();
    Files.copy(shot, SHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
  }

  private static String psctl(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Psctl.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    assertThat(code).as("psctl %s: %s", String.join(" ", args), err).isZero();
    return out.toString();
  }

  @Test
  void console_showsTheJobLive_aKilledPserverAndItsRestart_andCheckpointsOnRequest()
      throws Exception {
    try {
      scenario();
    } catch (Throwable t) {
      // what the page and the master showed, for the report
      screenshot("failure");
      Files.writeString(
          SHOTS.resolve("failure-admin-job.json"),
          psctlOutput(
              "status", "--master", masterUrl(), "--token", cluster.adminToken(), "--json"));
      Object log =
          ((JavascriptExecutor) browser)
              .executeScript("return document.getElementById('updated').textContent");
      Files.writeString(SHOTS.resolve("failure-page.txt"), String.valueOf(log));
      throw t;
    }
  }

  private static String psctlOutput(String... args) {
    StringWriter out = new StringWriter();
    CommandLine cl = Psctl.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    cl.execute(args);
    return out.toString();
  }

  private static void scenario() throws Exception {
    // log in: the page asks for the token first
    browser.get(masterUrl() + "/");
    waitUpTo(Duration.ofSeconds(30)).until(d -> d.findElement(By.id("login-token")).isDisplayed());
    browser.findElement(By.id("login-token")).sendKeys("wrong");
    browser.findElement(By.id("login-button")).click();
    waitUpTo(Duration.ofSeconds(30)).until(d -> text("login-error").contains("wrong admin token"));
    browser.findElement(By.id("login-token")).sendKeys(cluster.adminToken());
    browser.findElement(By.id("login-button")).click();

    // the job's progress and the curves fill while it trains
    waitUpTo(Duration.ofMinutes(3)).until(d -> "RUNNING".equals(text("job-state")));
    waitUpTo(Duration.ofMinutes(3))
        .until(
            d ->
                points("chart-loss") >= 5
                    && points("chart-pass-loss") >= 2
                    && points("chart-pass-acc") >= 2
                    && pserverRows().size() == 2
                    && browser.findElements(By.cssSelector("#trainers tbody tr")).size() == 2);
    assertThat(text("job-pass")).matches("\\d+ of 2,000");
    assertThat(text("job-tasks")).contains("done");
    assertThat(text("job-rate")).isNotEqualTo("–");
    // the Scaling panel: a job never scaled is one line (placement epoch 0, the pservers it has),
    // without the epoch, the phase and the table of moves
    waitUpTo(Duration.ofSeconds(30))
        .until(
            d ->
                d.findElement(By.id("scaling")).isDisplayed()
                    && text("scaling-never").startsWith("placement epoch 0, never scaled"));
    assertThat(text("scaling-never")).isEqualTo("placement epoch 0, never scaled (2 pservers)");
    assertThat(browser.findElement(By.id("scaling-details")).isDisplayed()).isFalse();
    assertThat(browser.findElements(By.cssSelector("#moves tbody tr"))).isEmpty();
    // the serving replica registered itself: the console shows it serving a version, following
    // both shards, and how far behind the pservers it is
    waitUpTo(Duration.ofMinutes(2))
        .until(
            d ->
                d.findElement(By.id("serving")).isDisplayed()
                    && servingRows().size() == 1
                    && "SERVING"
                        .equals(servingRows().get(0).findElement(By.className("state")).getText())
                    && !servingRows()
                        .get(0)
                        .findElement(By.className("behind"))
                        .getAttribute("data-updates")
                        .isEmpty());
    // the row is redrawn every second: read both cells of one drawing (the wait retries a stale
    // one)
    List<String> replica =
        waitUpTo(Duration.ofSeconds(30))
            .until(
                d -> {
                  WebElement row = servingRows().get(0);
                  return List.of(
                      row.findElement(By.className("address")).getText(),
                      row.findElement(By.className("version")).getText());
                });
    assertThat(replica.get(0))
        .isEqualTo("127.0.0.1:" + cluster.process(Role.SERVING, 0).grpcPort());
    assertThat(Long.parseLong(replica.get(1).replace(",", ""))).isPositive();
    screenshot("console-running");

    // psctl against the same job: through etcd, and a watch of two lines
    String status =
        psctl(
            "status",
            "--timeout",
            "30",
            "--etcd",
            cluster.etcdEndpoint(),
            "--job",
            "console",
            "--token",
            cluster.adminToken());
    assertThat(status).contains("RUNNING  pass").contains("pservers:").contains("trainers:");
    assertThat(status).as("no scaling line for a job never scaled").doesNotContain("scaling:");
    assertThat(status)
        .contains("serving replicas:")
        .contains(
            "127.0.0.1:" + cluster.process(Role.SERVING, 0).grpcPort() + "  SERVING  FOLLOWING");
    String statusJson =
        psctl(
            "status",
            "--master",
            masterUrl(),
            "--token",
            cluster.adminToken(),
            "-o",
            "json",
            "--passes",
            "1");
    tools.jackson.databind.JsonNode serving =
        new tools.jackson.databind.ObjectMapper().readTree(statusJson).path("serving");
    assertThat(serving.size()).isEqualTo(1);
    assertThat(serving.get(0).path("sequences").size()).isEqualTo(2);
    assertThat(serving.get(0).path("connected").asInt()).isBetween(0, 2);
    String watch =
        psctl(
            "watch",
            "--master",
            masterUrl(),
            "--token",
            cluster.adminToken(),
            "--count",
            "2",
            "--no-bar");
    assertThat(watch.lines().toList()).hasSize(2).allMatch(l -> l.contains("RUNNING  pass"));

    // a killed pserver is flagged (down while its lease lives, then lost), then its restart (and
    // its re-initialisation by the trainers) shows in the events
    // the process killed holds the etcd index its status names (pservers claim the lowest free one)
    int killed = cluster.adminStatus(Role.PSERVER, 1).path("index").asInt();
    cluster.kill(Role.PSERVER, 1, false);
    waitUpTo(Duration.ofSeconds(90))
        .until(
            d ->
                pserverRow(killed).getAttribute("class").contains("down")
                    && pserverRow(killed)
                        .findElement(By.className("flags"))
                        .getText()
                        .matches("(?s).*(down|lost).*"));
    waitUpTo(Duration.ofSeconds(60))
        .until(d -> text("events").contains("pserver " + killed + " lost"));
    screenshot("console-pserver-down");
    cluster.restart(Role.PSERVER, 1);
    waitUpTo(Duration.ofMinutes(3))
        .until(
            d ->
                text("events").contains("pserver " + killed + " registered again")
                    && "SERVING"
                        .equals(pserverRow(killed).findElement(By.className("state")).getText()));
    screenshot("console-pserver-restarted");

    // checkpoint now (the periodic checkpoints are minutes apart): the ages start from zero, grow,
    // and start again from zero at the next press
    for (int press = 1; press <= 2; press++) {
      if (press == 2) {
        waitUpTo(Duration.ofMinutes(1)).until(d -> age(0) >= 4 && age(1) >= 4);
        screenshot("console-checkpoint-aged");
      }
      long pressed = System.nanoTime();
      browser.findElement(By.id("checkpoint-button")).click();
      waitUpTo(Duration.ofMinutes(1))
          .until(d -> text("action-result").contains("2 of 2 pservers checkpointed"));
      // a checkpoint written after the press is at most as old as the time since the press (a
      // second's margin for rounding); the one before it is older by the age it had then (at least
      // 4 s at the second press). Not "under 3 s": on a loaded machine the console's next sample of
      // a pserver may come later than that, and the young age is never shown
      waitUpTo(Duration.ofSeconds(30))
          .until(d -> sinceThePress(0, pressed) && sinceThePress(1, pressed));
      ((JavascriptExecutor) browser)
          .executeScript("document.getElementById('action-result').textContent = ''");
    }
    assertThat(text("events")).contains("checkpoint requested by the operator: 2 of 2");
    screenshot("console-checkpointed");

    // stop the job gracefully with psctl: the console shows it ended
    String stop = psctl("stop", "--master", masterUrl(), "--token", cluster.adminToken());
    assertThat(stop).contains("the job was stopped");
    JobStatusView end = cluster.awaitJobEnd(Duration.ofMinutes(1));
    assertThat(end.isFailed()).isTrue();
    waitUpTo(Duration.ofSeconds(30)).until(d -> "FAILED".equals(text("job-state")));
    assertThat(text("job-failure")).contains("stopped by the operator");
  }

  /** Whether pserver {@code index}'s checkpoint shown is one written after {@code pressed}. */
  private static boolean sinceThePress(int index, long pressed) {
    double a = age(index);
    return a >= 0 && a < (System.nanoTime() - pressed) / 1e9 + 1;
  }

  /** The checkpoint age of a pserver shown in the console, in seconds (-1: none yet). */
  private static double age(int index) {
    String s =
        pserverRow(index).findElement(By.className("checkpoint-age")).getAttribute("data-seconds");
    return s == null || s.isEmpty() ? -1 : Double.parseDouble(s);
  }
}
