package dev.paramserver.it;

import dev.paramserver.launcher.Signals;
import dev.paramserver.testsupport.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The faults of {@link MoveFaultSoakTest}, each injected on the old owner ({@code from}) or the new
 * owner ({@code to}) of a slot move under way. Every pserver advertises a proxy of its own, so the
 * coordinator's calls and the old owner's MoveIn stream to the new owner pass through the proxies;
 * the test's client dials the pservers directly.
 */
final class MoveFaults {
  /** The kinds of fault; {@code -Dmovesoak.faults} names them. */
  enum Kind {
    /** SIGSTOP the old owner, SIGCONT it 1 to 6 s later. */
    PAUSE_OLD,
    /** SIGSTOP the new owner, SIGCONT it 1 to 6 s later. */
    PAUSE_NEW,
    /**
     * Partition old owner from new owner: the new owner's proxy holds every byte both ways for 1 to
     * 6 s (the coordinator's calls to the new owner too); held bytes are delivered on heal.
     */
    PARTITION_OLD_NEW,
    /**
     * Cut the old owner's proxy (every connection reset, new ones refused) for 300 to 800 ms: the
     * coordinator loses its MoveOut call and retries the move with a new attempt while the first
     * may still run.
     */
    CUT_COORDINATOR_TO_OLD,
    /** {@code kill -9} the new owner, then start it again (same checkpoint directory). */
    KILL_NEW,
    /** {@code kill -9} the old owner, then start it again (same checkpoint directory). */
    KILL_OLD
  }

  /** What the faults act on: the pservers by index. */
  interface Pservers {
    /** The process id of pserver {@code index} now. */
    long pid(int index);

    /** Kills pserver {@code index} with SIGKILL and starts it again; returns once it listens. */
    void killAndRestart(int index) throws Exception;

    /** The proxy pserver {@code index} advertises. */
    FaultProxy proxy(int index);
  }

  private final Pservers pservers;
  private final Random random;
  private final List<Kind> deck = new ArrayList<>();

  MoveFaults(Pservers pservers, Random random) {
    this.pservers = pservers;
    this.random = random;
  }

  /** The next kind among {@code kinds}, dealt from a shuffled deck of them. */
  Kind next(List<Kind> kinds) {
    if (deck.isEmpty()) {
      deck.addAll(kinds);
      Collections.shuffle(deck, random);
    }
    return deck.remove(deck.size() - 1);
  }

  /** How long a fault of {@code kind} lasts (0 for kills). */
  long millis(Kind kind) {
    return switch (kind) {
      case PAUSE_OLD, PAUSE_NEW, PARTITION_OLD_NEW -> 1_000 + random.nextInt(5_000);
      case CUT_COORDINATOR_TO_OLD -> 300 + random.nextInt(500);
      case KILL_NEW, KILL_OLD -> 0;
    };
  }

  /** Injects {@code kind} on the move from {@code from} to {@code to}, heals it; says what. */
  String inject(Kind kind, int from, int to, long millis) throws Exception {
    switch (kind) {
      case PAUSE_OLD -> pause(from, millis);
      case PAUSE_NEW -> pause(to, millis);
      case PARTITION_OLD_NEW -> {
        FaultProxy p = pservers.proxy(to);
        p.blackHole();
        try {
          Thread.sleep(millis);
        } finally {
          p.heal();
        }
      }
      case CUT_COORDINATOR_TO_OLD -> {
        pservers.proxy(from).cut(Duration.ofMillis(millis));
        Thread.sleep(millis);
      }
      case KILL_NEW -> pservers.killAndRestart(to);
      case KILL_OLD -> pservers.killAndRestart(from);
    }
    return String.format(Locale.ROOT, "%s (%d ms) on move %d->%d", kind, millis, from, to);
  }

  private void pause(int index, long millis) throws InterruptedException {
    long pid = pservers.pid(index);
    if (!Signals.send(pid, "STOP")) {
      throw new IllegalStateException("kill -STOP " + pid + " (pserver " + index + ") failed");
    }
    try {
      Thread.sleep(millis);
    } finally {
      Signals.send(pid, "CONT");
    }
  }

  static List<Kind> kinds(String names) {
    if (names.isBlank()) {
      return List.of(Kind.values());
    }
    List<Kind> kinds = new ArrayList<>();
    for (String n : names.split(",")) {
      kinds.add(Kind.valueOf(n.trim().toUpperCase(Locale.ROOT)));
    }
    return List.copyOf(kinds);
  }
}
