package dev.paramserver.testsupport;

import dev.paramserver.launcher.ListenPorts;

/** Free TCP ports on the loopback interface. */
public final class FreePorts {
  private FreePorts() {}

  /**
   * A port that was free on 127.0.0.1 a moment ago, below the kernel's ephemeral range ({@link
   * ListenPorts}): no outgoing connection takes it meanwhile, though another process may bind it;
   * tests accept that risk.
   */
  public static int next() {
    return ListenPorts.pick();
  }
}
