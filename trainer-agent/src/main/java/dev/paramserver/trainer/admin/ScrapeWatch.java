package dev.paramserver.trainer.admin;

import dev.paramserver.trainer.training.MetricsScrapes;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Notes when Prometheus last took this trainer's metrics ({@code /actuator/prometheus} answered),
 * so that a trainer that exits when the job is done can first wait for one scrape of its final
 * counters (see {@code paramserver.trainer.exit-linger}). A short job otherwise ends between two
 * scrapes and its trainers' last figures, or the trainers themselves, never reach Prometheus.
 */
@Component
public class ScrapeWatch extends OncePerRequestFilter implements MetricsScrapes {
  static final String PATH = "/actuator/prometheus";

  private final Object lock = new Object();
  // System.nanoTime() at the end of the last scrape answered; guarded by lock
  private long lastScrapeNanos;
  private boolean scraped;

  @Override
  protected boolean shouldNotFilter(HttpServletRequest request) {
    return !PATH.equals(request.getRequestURI());
  }

  @Override
  protected void doFilterInternal(
      HttpServletRequest request, HttpServletResponse response, FilterChain chain)
      throws ServletException, IOException {
    chain.doFilter(request, response);
    if (response.getStatus() < 300) {
      scraped(System.nanoTime());
    }
  }

  void scraped(long nanos) {
    synchronized (lock) {
      lastScrapeNanos = nanos;
      scraped = true;
      lock.notifyAll();
    }
  }

  @Override
  public boolean awaitScrapeAfter(long sinceNanos, Duration max) throws InterruptedException {
    long deadline = System.nanoTime() + max.toNanos();
    synchronized (lock) {
      while (!scraped || lastScrapeNanos - sinceNanos < 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        lock.wait(Math.max(1, left / 1_000_000));
      }
      return true;
    }
  }
}
